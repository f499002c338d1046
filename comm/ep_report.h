/* What `perflab moe-readiness --ep` reports: report.json (the fabric reports' common part, then per point the token
 * count, skew, variant, phase, the bytes that crossed the fabric, latency, bandwidth and check) and a table. The bytes
 * come from the plan (comm/ep_plan.h), rebuilt here from the job's seed. Host code. */
#ifndef PERFLAB_COMM_EP_REPORT_H
#define PERFLAB_COMM_EP_REPORT_H

#include <jansson.h>

#include "comm/result.h"
#include "core/util.h"
#include "perflab/results.h"

/* One point's fabric figures: bytes every rank together sent to other ranks in the point's phase, and per rank. */
typedef struct pl_ep_point_figures {
    size_t fabric_bytes;
    double bytes_per_rank;
    double gbps_p50; /* bytes_per_rank / p50 latency (DeepEP's per-GPU bandwidth) */
    double expert_max_mean;
} pl_ep_point_figures;

/* figs[n_points], NULL-free; the plans of a job whose ranks could not be planned give zeros. */
void pl_ep_figures(const pl_comm_job *job, const pl_comm_result *r, pl_ep_point_figures *figs);
json_t *pl_ep_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov);
void pl_ep_report_table(const pl_comm_job *job, const pl_comm_result *r, pl_buf *text, pl_buf *markdown);

#endif
