/* The MoE readiness report: per (message size, skew) the split's unevenness, p50/p99 latency, bandwidth at p50
 * and at p99, and the SLO verdict; overall verdict; report.json, a table and two heatmaps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_report.h"
#include "core/files.h"
#include "core/moe_heatmap.h"
#include "core/results_json.h"
#include "core/table.h"

void pl_moe_summarize(const pl_comm_job *job, const pl_comm_result *r, const pl_slo *slo, pl_moe_summary *s)
{
    memset(s, 0, sizeof *s);
    s->slo = *slo;
    s->n_points = r->n_points;
    s->points = pl_xcalloc(r->n_points + 1, sizeof *s->points);
    pl_slo_verdict *v = pl_xcalloc(r->n_points + 1, sizeof *v);
    const size_t elt = pl_dtype_size(job->moe_dtype);
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        pl_moe_point_figures *f = &s->points[i];
        pl_a2a_plan plan;
        pl_a2a_plan_make(&plan, job->skew_model, p->point.msg_bytes / elt, r->nranks, p->point.skew);
        f->bytes = plan.total_per_rank * elt;
        for (int src = 0; src < r->nranks; src++) {
            size_t peer = plan.total_per_rank - plan.counts[(size_t)src * (size_t)r->nranks + (size_t)src];
            if (peer * elt > f->peer_bytes_max)
                f->peer_bytes_max = peer * elt;
        }
        f->split_gini = plan.split_gini;
        f->split_max_mean = plan.split_max_mean;
        f->recv_gini = plan.recv_gini;
        f->recv_max_mean = plan.recv_max_mean;
        pl_a2a_plan_free(&plan);
        f->p50_ms = p->has_stats ? p->latency.p50 : NAN;
        f->p99_ms = p->has_stats ? p->latency.p99 : NAN;
        f->max_ms = p->has_stats ? p->latency.max : NAN;
        f->bw_p50_gbps = pl_algbw_gbps(f->bytes, f->p50_ms);
        f->bw_p99_gbps = pl_algbw_gbps(f->bytes, f->p99_ms);
        f->verdict = pl_slo_judge(slo, p->status == PL_POINT_OK, f->p99_ms, f->bw_p50_gbps, f->why, sizeof f->why);
        if (p->status != PL_POINT_OK && p->reason)
            pl_snprintf(f->why, sizeof f->why, "%s: %s", pl_point_status_name(p->status), p->reason);
        v[i] = f->verdict;
        s->missed += f->verdict == PL_SLO_MISS;
    }
    s->overall = pl_slo_overall(v, r->n_points);
    free(v);
}

void pl_moe_summary_free(pl_moe_summary *s)
{
    free(s->points);
    memset(s, 0, sizeof *s);
}

json_t *pl_moe_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s,
                           const pl_provenance *prov)
{
    json_t *j = pl_comm_common_json(job, r, prov, "moe_readiness");
    json_t *set = json_object_get(j, "settings");
    json_t *sizes = json_array(), *skews = json_array();
    for (size_t i = 0; i < job->n_msg_sizes; i++)
        json_array_append_new(sizes, json_integer((json_int_t)job->msg_sizes[i]));
    for (size_t i = 0; i < job->n_skews; i++)
        json_array_append_new(skews, json_real(job->skews[i]));
    json_object_set_new(set, "message_sizes", sizes);
    json_object_set_new(set, "skews", skews);
    json_object_set_new(set, "skew_model", json_string(pl_skew_model_name(job->skew_model)));
    json_object_set_new(set, "dtype", json_string(pl_dtype_name(job->moe_dtype)));
    json_object_set_new(set, "exchange",
                        json_string("grouped ncclSend/ncclRecv with each rank's unequal chunks; "
                                    "persistent device buffers"));
    json_object_set_new(set, "bandwidth", json_string("message bytes each rank sends / latency (at p50 and at p99)"));
    json_object_set_new(j, "slo",
                        json_pack("{s:o, s:o, s:s}", "max_p99_ms",
                                  s->slo.max_p99_ms > 0 ? json_real(s->slo.max_p99_ms) : json_null(), "min_bw_gbps",
                                  s->slo.min_bw_gbps > 0 ? json_real(s->slo.min_bw_gbps) : json_null(), "bw_judged_at",
                                  "p50"));
    json_t *pts = json_array();
    const size_t elt = pl_dtype_size(job->moe_dtype);
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        const pl_moe_point_figures *f = &s->points[i];
        pl_a2a_plan plan;
        pl_a2a_plan_make(&plan, job->skew_model, p->point.msg_bytes / elt, r->nranks, p->point.skew);
        json_t *row0 = json_array();
        for (int d = 0; d < r->nranks; d++)
            json_array_append_new(row0, json_integer((json_int_t)plan.counts[d]));
        pl_a2a_plan_free(&plan);
        json_t *pj = json_object();
        json_object_set_new(pj, "message_bytes", json_integer((json_int_t)p->point.msg_bytes));
        json_object_set_new(pj, "bytes", json_integer((json_int_t)f->bytes));
        json_object_set_new(pj, "skew", json_real(p->point.skew));
        json_object_set_new(pj, "split",
                            json_pack("{s:o, s:o, s:o, s:o, s:o, s:I}", "rank0_counts", row0, "gini",
                                      pl_json_real(f->split_gini), "max_over_mean", pl_json_real(f->split_max_mean),
                                      "recv_gini", pl_json_real(f->recv_gini), "recv_max_over_mean",
                                      pl_json_real(f->recv_max_mean), "peer_bytes_max", (json_int_t)f->peer_bytes_max));
        json_object_set_new(pj, "bw_gbps_p50", pl_json_real(f->bw_p50_gbps));
        json_object_set_new(pj, "bw_gbps_p99", pl_json_real(f->bw_p99_gbps));
        json_object_set_new(pj, "slo",
                            json_pack("{s:s, s:s}", "verdict", pl_slo_verdict_name(f->verdict), "why", f->why));
        json_object_update_new(pj, pl_comm_point_base_json(p)); /* takes the object: no leak per point */
        json_array_append_new(pts, pj);
    }
    json_object_set_new(j, "points", pts);
    json_object_set_new(j, "verdict",
                        json_pack("{s:s, s:I, s:I, s:I}", "overall", pl_slo_verdict_name(s->overall), "points",
                                  (json_int_t)s->n_points, "missed", (json_int_t)s->missed, "failed_points",
                                  (json_int_t)r->failed_points));
    return j;
}

static const char *ms_text(double ms, char *buf, size_t len)
{
    if (isnan(ms))
        pl_snprintf(buf, len, "-");
    else
        pl_snprintf(buf, len, "%.4f", ms);
    return buf;
}

void pl_moe_report_table(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s, pl_buf *text,
                         pl_buf *markdown)
{
    static const char *const cols[] = {">message",  ">skew",      ">gini",      ">max/mean", ">p50 (ms)", ">p99 (ms)",
                                       ">max (ms)", ">GB/s @p50", ">GB/s @p99", "check",     "SLO"};
    pl_table *t = pl_table_new(sizeof cols / sizeof cols[0], cols);
    char a[32];
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        const pl_moe_point_figures *f = &s->points[i];
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", pl_format_bytes(p->point.msg_bytes, a, sizeof a));
        pl_table_set(t, row, 1, "%.2f", p->point.skew);
        pl_table_set(t, row, 2, "%.3f", f->split_gini);
        pl_table_set(t, row, 3, "%.2f", f->split_max_mean);
        pl_table_set(t, row, 4, "%s", ms_text(f->p50_ms, a, sizeof a));
        pl_table_set(t, row, 5, "%s", ms_text(f->p99_ms, a, sizeof a));
        pl_table_set(t, row, 6, "%s", ms_text(f->max_ms, a, sizeof a));
        pl_table_set(t, row, 7, "%.2f", f->bw_p50_gbps);
        pl_table_set(t, row, 8, "%.2f", f->bw_p99_gbps);
        pl_table_set(t, row, 9, "%s", p->status == PL_POINT_OK ? "ok" : pl_point_status_name(p->status));
        pl_table_set(t, row, 10, "%s%s%s", pl_slo_verdict_name(f->verdict), f->why[0] ? ": " : "", f->why);
    }
    char head[512];
    pl_buf slo = {0};
    if (pl_slo_is_set(&s->slo)) {
        pl_buf_append(&slo, "SLO");
        if (s->slo.max_p99_ms > 0)
            pl_buf_printf(&slo, " p99 <= %g ms", s->slo.max_p99_ms);
        if (s->slo.min_bw_gbps > 0)
            pl_buf_printf(&slo, "%s GB/s @p50 >= %g", s->slo.max_p99_ms > 0 ? "," : "", s->slo.min_bw_gbps);
    } else {
        pl_buf_append(&slo, "no SLO set (--max-p99-ms, --min-bw-gbps): measured, not gated");
    }
    pl_snprintf(head, sizeof head, "MoE all-to-all readiness: %d rank%s (%s), %s, %s skew, %d iterations per rank; %s",
                r->nranks, r->nranks == 1 ? "" : "s", r->mode, pl_dtype_name(job->moe_dtype),
                pl_skew_model_name(job->skew_model), job->iters, slo.data);
    pl_buf_free(&slo);
    char verdict[256];
    pl_snprintf(verdict, sizeof verdict, "verdict: %s (%zu of %zu points missed)%s", pl_slo_verdict_name(s->overall),
                s->missed, s->n_points,
                r->nranks == 1 ? "; one rank: every byte stays on the GPU, no fabric was measured" : "");
    pl_comm_emit_table(t, head, text, markdown);
    if (text)
        pl_buf_printf(text, "%s\n", verdict);
    if (markdown)
        pl_buf_printf(markdown, "\n**%s**\n", verdict);
    pl_table_free(t);
}

char *pl_moe_heatmap_svg(const pl_comm_job *job, const pl_comm_result *r, const pl_moe_summary *s, int which)
{
    json_t *report = pl_moe_report_json(job, r, s, NULL);
    char *svg = pl_moe_heatmap_from_report(report, which, 1);
    json_decref(report);
    return svg;
}

int pl_moe_report_write(const char *dir, json_t *report, const char *markdown, const char *svg_latency,
                        const char *svg_bandwidth, char *err, size_t errlen)
{
    pl_report_file files[] = {
        {.name = "report.json", .json = report},
        {.name = "heatmap_p99_latency.svg", .text = (char *)svg_latency},
        {.name = "heatmap_bandwidth.svg", .text = (char *)svg_bandwidth},
        {.name = "summary.md", .text = (char *)(markdown ? markdown : "")},
    };
    return pl_report_write_files(dir, files, 4, err, errlen);
}
