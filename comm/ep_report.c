#include "comm/ep_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_report.h"
#include "comm/ep_plan.h"
#include "core/results_json.h"
#include "core/table.h"

void pl_ep_figures(const pl_comm_job *job, const pl_comm_result *r, pl_ep_point_figures *figs)
{
    memset(figs, 0, r->n_points * sizeof *figs);
    pl_ep_plan plan;
    int have = 0;
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point *p = &r->points[i].point;
        if (!have || plan.shape.tokens != p->ep_tokens || plan.shape.alpha != p->skew) {
            if (have)
                pl_ep_plan_free(&plan);
            const pl_ep_shape s = {.nranks = r->nranks,
                                   .tokens = p->ep_tokens,
                                   .hidden = job->ep_hidden,
                                   .topk = job->ep_topk,
                                   .experts = job->ep_experts,
                                   .alpha = p->skew,
                                   .seed = job->seed};
            char err[256];
            have = pl_ep_plan_make(&plan, &s, err, sizeof err) == 0;
        }
        if (!have)
            continue;
        const size_t rows = p->ep_phase == PL_EP_DISPATCH ? plan.dispatch_fabric_rows : plan.combine_fabric_rows;
        pl_ep_point_figures *f = &figs[i];
        f->fabric_bytes = rows * (size_t)job->ep_hidden * 2;
        f->bytes_per_rank = (double)f->fabric_bytes / r->nranks;
        f->expert_max_mean = plan.expert_max_mean;
        f->gbps_p50 = r->points[i].has_stats ? f->bytes_per_rank / (r->points[i].latency.median * 1e-3) / 1e9 : NAN;
    }
    if (have)
        pl_ep_plan_free(&plan);
}

json_t *pl_ep_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov)
{
    json_t *j = pl_comm_common_json(job, r, prov, "moe_ep");
    json_t *set = json_object_get(j, "settings");
    json_t *tokens = json_array(), *skews = json_array(), *impls = json_array();
    for (size_t i = 0; i < job->n_ep_tokens; i++)
        json_array_append_new(tokens, json_integer((json_int_t)job->ep_tokens[i]));
    for (size_t i = 0; i < job->n_skews; i++)
        json_array_append_new(skews, pl_json_real(job->skews[i]));
    for (int i = 0; i < job->n_ep_impls; i++)
        json_array_append_new(impls, json_string(pl_ep_impl_name(job->ep_impls[i])));
    json_object_set_new(set, "tokens_per_rank", tokens);
    json_object_set_new(set, "skews", skews);
    json_object_set_new(set, "variants", impls);
    json_object_set_new(set, "hidden", json_integer(job->ep_hidden));
    json_object_set_new(set, "topk", json_integer(job->ep_topk));
    json_object_set_new(set, "experts", json_integer(job->ep_experts));
    json_object_set_new(set, "expert",
                        json_string("stand-in: each expert-major row scaled by (1 + e % 8) / 8, untimed"));
    json_object_set_new(set, "bandwidth",
                        json_string("bytes every rank sent to other ranks in the phase, divided by the ranks, over "
                                    "the p50 latency: per-GPU fabric bandwidth, as DeepEP reports it"));
    pl_ep_point_figures *figs = pl_xcalloc(r->n_points + 1, sizeof *figs);
    pl_ep_figures(job, r, figs);
    json_t *pts = json_array();
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        json_t *pj =
            json_pack("{s:i, s:o, s:s, s:s, s:I, s:o, s:o, s:o}", "tokens", p->point.ep_tokens, "skew",
                      pl_json_real(p->point.skew), "variant", pl_ep_impl_name(p->point.ep_impl), "phase",
                      pl_ep_phase_name(p->point.ep_phase), "fabric_bytes", (json_int_t)figs[i].fabric_bytes,
                      "fabric_bytes_per_rank", pl_json_real(figs[i].bytes_per_rank), "gbps_p50",
                      pl_json_real(figs[i].gbps_p50), "expert_max_over_mean", pl_json_real(figs[i].expert_max_mean));
        json_object_update_new(pj, pl_comm_point_base_json(p));
        json_array_append_new(pts, pj);
    }
    free(figs);
    json_object_set_new(j, "points", pts);
    json_object_set_new(j, "failed_points", json_integer(r->failed_points));
    return j;
}

void pl_ep_report_table(const pl_comm_job *job, const pl_comm_result *r, pl_buf *text, pl_buf *markdown)
{
    static const char *const cols[] = {">tokens", ">skew",   "variant", "phase",   ">max/mean", ">MiB/rank",
                                       ">p50 us", ">p99 us", ">GB/s",   ">#wrong", "status"};
    pl_table *t = pl_table_new(sizeof cols / sizeof cols[0], cols);
    pl_ep_point_figures *figs = pl_xcalloc(r->n_points + 1, sizeof *figs);
    pl_ep_figures(job, r, figs);
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        const size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%d", p->point.ep_tokens);
        pl_table_set(t, row, 1, "%.2f", p->point.skew);
        pl_table_set(t, row, 2, "%s", pl_ep_impl_name(p->point.ep_impl));
        pl_table_set(t, row, 3, "%s", pl_ep_phase_name(p->point.ep_phase));
        pl_table_set(t, row, 4, "%.2f", figs[i].expert_max_mean);
        pl_table_set(t, row, 5, "%.2f", figs[i].bytes_per_rank / (1 << 20));
        if (p->has_stats) {
            pl_table_set(t, row, 6, "%.1f", p->latency.median * 1e3);
            pl_table_set(t, row, 7, "%.1f", p->latency.p99 * 1e3);
            pl_table_set(t, row, 8, "%.1f", figs[i].gbps_p50);
        }
        pl_table_set(t, row, 9, "%zu", p->wrong);
        pl_table_set(t, row, 10, "%s", pl_point_status_name(p->status));
    }
    free(figs);
    char title[160];
    pl_snprintf(title, sizeof title, "EP dispatch and combine: %d ranks, hidden %d, top-%d of %d experts, bf16",
                r->nranks, job->ep_hidden, job->ep_topk, job->ep_experts);
    pl_comm_emit_table(t, title, text, markdown);
    pl_table_free(t);
}
