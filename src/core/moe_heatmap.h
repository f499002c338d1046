/* The MoE readiness heatmaps (p99 latency, bandwidth at p50) drawn from a report.json: what perflab moe-readiness
 * writes next to the report and what perflab report draws inline, from the one reading of the JSON. */
#ifndef PERFLAB_CORE_MOE_HEATMAP_H
#define PERFLAB_CORE_MOE_HEATMAP_H

#include <jansson.h>

/* which: 0 = p99 latency, 1 = bandwidth at p50. standalone: a whole SVG document (1) or an inline <svg> (0).
 * malloc'd; NULL when the report has no points. */
char *pl_moe_heatmap_from_report(json_t *report, int which, int standalone);

#endif
