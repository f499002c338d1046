/* perflab report: one self-contained report.html (inline CSS and SVG, no script, no network; opens from disk and
 * parses as XML) over any mix of perflab folders: runs (run.json: provenance, the table, the roofline from the
 * ceilings the run recorded, per target the speedups with their 95% intervals and the measured counters; with
 * two runs or more, before/after from compare), gemm folders (comparison.json: TFLOP/s per shape and provider),
 * MoE readiness folders (report.json: the heatmaps), comm folders (report.json: busbw and p99 against size) and
 * profile folders (profile.json: the findings) and serve folders (report.json: the latency CDFs and the
 * throughput-latency curve) and scenario folders (report.json: each phase's status and headline). */
#ifndef PERFLAB_REPORT_HTML_H
#define PERFLAB_REPORT_HTML_H

#include <jansson.h>
#include <stddef.h>

#include "perflab/results.h"

typedef enum pl_report_kind {
    PL_INPUT_RUN,      /* run.json */
    PL_INPUT_GEMM,     /* comparison.json */
    PL_INPUT_MOE,      /* report.json of kind moe_readiness */
    PL_INPUT_COMM,     /* report.json of kind comm */
    PL_INPUT_PROFILE,  /* profile.json */
    PL_INPUT_SERVE,    /* report.json of kind serve */
    PL_INPUT_SCENARIO, /* report.json of kind scenario */
} pl_report_kind;

typedef struct pl_report_input {
    pl_report_kind kind;
    char *path;  /* the file read */
    char *label; /* the run id, or the folder's name */
    pl_run run;  /* PL_INPUT_RUN */
    json_t *doc; /* the others */
} pl_report_input;

/* What one report reads, refused before any chart is drawn (docs/report.md lists them): the inputs of one report;
 * a gemm comparison's providers and shapes; a MoE report's message sizes x skews cells and points; a comm
 * report's points and curves (collective, dtype, placement); a profile's variants. A run.json is bounded by
 * results_json.h's limits. */
#define PL_REPORT_MAX_INPUTS    64
#define PL_REPORT_MAX_PROVIDERS 64
#define PL_REPORT_MAX_SHAPES    4096
#define PL_REPORT_MAX_CELLS     4096
#define PL_REPORT_MAX_POINTS    16384
#define PL_REPORT_MAX_CURVES    64
#define PL_REPORT_MAX_VARIANTS  1024
#define PL_REPORT_MAX_RATES     64      /* a serve report's request rates */
#define PL_REPORT_MAX_SAMPLES   2000000 /* a serve report's TTFT and TPOT samples, all rates */

/* A folder (or the JSON file itself) by what it holds. -1 with one line naming the path and what was expected. */
int pl_report_input_load(const char *path, pl_report_input *out, char *err, size_t errlen);
void pl_report_input_free(pl_report_input *in);

/* The document (malloc'd). generated_at: an ISO 8601 time for the header. */
char *pl_html_report(const pl_report_input *inputs, size_t n, const char *generated_at);

#endif
