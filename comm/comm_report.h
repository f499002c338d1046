/* What a fabric job reports: report.json (schema-versioned, with provenance, every rank, and per point the
 * latency percentiles, bandwidths, check and raw samples), tables in the style of nccl-tests, and for MoE
 * readiness the SLO verdicts and two SVG heatmaps (p99 latency and bandwidth over message size x skew). */
#ifndef PERFLAB_COMM_REPORT_H
#define PERFLAB_COMM_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "comm/result.h"
#include "comm/slo.h"
#include "core/util.h"
#include "perflab/results.h"

#define PL_COMM_REPORT_SCHEMA 1

/* Per point of a MoE sweep: the figures the SLOs judge, and the verdict. */
typedef struct pl_moe_point_figures {
    size_t bytes;          /* each rank's send buffer: elements * dtype size */
    size_t peer_bytes_max; /* the most bytes any rank sends to other ranks */
    double split_gini, split_max_mean, recv_gini, recv_max_mean;
    double p50_ms, p99_ms, max_ms;
    double bw_p50_gbps, bw_p99_gbps; /* bytes / latency at p50 and at p99 */
    pl_slo_verdict verdict;
    char why[256];
} pl_moe_point_figures;

typedef struct pl_moe_summary {
    pl_slo slo;
    pl_moe_point_figures *points; /* [n_points] */
    size_t n_points;
    size_t missed;
    pl_slo_verdict overall;
} pl_moe_summary;

/* The comm sweep. */
json_t *pl_comm_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov);
/* One nccl-tests-like table per collective and dtype: out-of-place and in-place side by side. */
void pl_comm_report_tables(const pl_comm_job *job, const pl_comm_result *r, pl_buf *text, pl_buf *markdown);

/* MoE readiness. */
void pl_moe_summarize(const pl_comm_job *job, const pl_comm_result *r, const pl_slo *slo, pl_moe_summary *s);
void pl_moe_summary_free(pl_moe_summary *s);
json_t *pl_moe_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s,
                           const pl_provenance *prov);
void pl_moe_report_table(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s, pl_buf *text,
                         pl_buf *markdown);
/* which: 0 = p99 latency, 1 = bandwidth at p50. malloc'd SVG (standalone). */
char *pl_moe_heatmap_svg(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s, int which);

/* "native" (ncclAlltoAll) or "group" (ncclSend/ncclRecv): what --alltoall-api resolved to. */
const char *pl_comm_alltoall_api_used(const pl_comm_job *job, const pl_comm_result *r);

/* A table with its title: "# title" and the table as text, "### title" and a Markdown table; either may be
 * NULL. */
struct pl_table;
void pl_comm_emit_table(const struct pl_table *t, const char *title, pl_buf *text, pl_buf *markdown);

/* Shared by both reports: settings, ranks and problems, and a point's latency/check. */
json_t *pl_comm_common_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov,
                            const char *kind);
json_t *pl_comm_point_base_json(const pl_comm_point_result *p);

/* report.json and summary.md (perflab comm), each atomically, into dir (created first). */
int pl_comm_report_write(const char *dir, json_t *report, const char *markdown, char *err, size_t errlen);
/* report.json, the two heatmaps and summary.md (perflab moe-readiness). */
int pl_moe_report_write(const char *dir, json_t *report, const char *markdown, const char *svg_latency,
                        const char *svg_bandwidth, char *err, size_t errlen);

#endif
