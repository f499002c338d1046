/* report.json and the tables of `perflab comm`, and what both fabric reports share. */
#include "comm/comm_report.h"

#include "core/files.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/table.h"

static json_t *stats_json(const pl_comm_point_result *p)
{
    if (!p->has_stats)
        return json_null();
    const pl_stats *s = &p->latency;
    return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "n", (json_int_t)s->n, "p50", pl_json_real(s->p50),
                     "p99", pl_json_real(s->p99), "max", pl_json_real(s->max), "min", pl_json_real(s->min), "mean",
                     pl_json_real(s->mean), "p90", pl_json_real(s->p90), "rel_noise", pl_json_real(s->rel_noise));
}

json_t *pl_comm_point_base_json(const pl_comm_point_result *p)
{
    json_t *j = json_object();
    json_object_set_new(j, "status", json_string(pl_point_status_name(p->status)));
    if (p->reason)
        json_object_set_new(j, "reason", json_string(p->reason));
    json_object_set_new(j, "ranks_reported", json_integer(p->ranks_reported));
    json_object_set_new(j, "latency_ms", stats_json(p));
    if (p->check.checked)
        json_object_set_new(j, "check",
                            json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:s}", "passed", p->check.passed,
                                      "dtype", pl_dtype_name(p->check.dtype), "elements", (json_int_t)p->check.elements,
                                      "wrong", (json_int_t)p->wrong, "unwritten", (json_int_t)p->check.unwritten,
                                      "nonfinite", (json_int_t)p->check.nonfinite, "rel_l2_error",
                                      pl_json_real(p->check.rel_l2_error), "tolerance",
                                      pl_json_real(p->check.tolerance), "max_abs_error",
                                      pl_json_real(p->check.max_abs_error), "message", p->check.message));
    json_object_set_new(j, "latch_gave_way", json_boolean(p->latch_gave_way));
    json_t *s = json_array();
    for (size_t i = 0; i < p->n_samples; i++)
        json_array_append_new(s, pl_json_real(p->samples_ms[i]));
    json_object_set_new(j, "samples_ms", s);
    return j;
}

json_t *pl_comm_common_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov,
                            const char *kind)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema_version", json_integer(PL_COMM_REPORT_SCHEMA));
    json_object_set_new(j, "kind", json_string(kind));
    json_object_set_new(j, "provenance", prov ? pl_provenance_to_json(prov) : json_null());
    json_t *set = json_object();
    json_object_set_new(set, "launch", json_string(r->mode ? r->mode : "unknown"));
    json_object_set_new(set, "ranks", json_integer(r->nranks));
    json_object_set_new(set, "iters", json_integer(job->iters));
    json_object_set_new(set, "warmup", json_integer(job->warmup));
    json_object_set_new(set, "seed", json_integer((json_int_t)job->seed));
    json_object_set_new(set, "register", json_string(pl_register_mode_name(job->reg)));
    json_object_set_new(set, "nccl_env", json_string(job->nccl_env ? job->nccl_env : ""));
    json_object_set_new(set, "nccl_version", json_integer(r->nccl_version));
    json_object_set_new(set, "timing",
                        json_string("CUDA events around every operation on every rank; the stream held by a latch "
                                    "until each chunk is enqueued; one untimed operation lines the ranks up first"));
    json_object_set_new(j, "settings", set);
    json_object_set_new(j, "ranks", json_deep_copy(r->ranks));
    json_object_set_new(j, "problems", json_deep_copy(r->problems));
    return j;
}

json_t *pl_comm_report_json(const pl_comm_job *job, const pl_comm_result *r, const pl_provenance *prov)
{
    json_t *j = pl_comm_common_json(job, r, prov, "comm");
    json_t *set = json_object_get(j, "settings");
    json_t *colls = json_array(), *dts = json_array();
    for (int c = 0; c < job->n_colls; c++)
        json_array_append_new(colls, json_string(pl_coll_name(job->colls[c])));
    for (int d = 0; d < job->n_dtypes; d++)
        json_array_append_new(dts, json_string(pl_dtype_name(job->dtypes[d])));
    json_object_set_new(set, "collectives", colls);
    json_object_set_new(set, "dtypes", dts);
    json_object_set_new(set, "op", json_string(pl_redop_name(job->op)));
    json_object_set_new(set, "root", json_integer(job->root));
    json_object_set_new(set, "alltoall_api", json_string(pl_comm_alltoall_api_used(job, r)));
    json_object_set_new(set, "bandwidth",
                        json_string("algbw = S / t(p50), S = the bytes nccl-tests counts; busbw = algbw * factor: "
                                    "allreduce 2(n-1)/n, allgather, reducescatter, alltoall (n-1)/n, broadcast and "
                                    "sendrecv 1"));
    json_t *pts = json_array();
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        pl_coll_layout L;
        pl_coll_layout_for(p->point.coll, p->point.nominal_bytes, pl_dtype_size(p->point.dtype), r->nranks, 0, &L);
        json_t *pj = json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:I}", "collective", pl_coll_name(p->point.coll),
                               "dtype", pl_dtype_name(p->point.dtype), "op",
                               pl_coll_reduces(p->point.coll) ? pl_redop_name(job->op) : "none", "in_place",
                               p->point.in_place, "size_bytes", (json_int_t)p->point.nominal_bytes, "count",
                               (json_int_t)L.count, "bytes", (json_int_t)L.bytes);
        const double p50 = p->has_stats ? p->latency.p50 : NAN;
        json_object_set_new(pj, "busbw_factor", pl_json_real(pl_coll_busbw_factor(p->point.coll, r->nranks)));
        json_object_set_new(pj, "algbw_gbps", pl_json_real(pl_algbw_gbps(L.bytes, p50)));
        json_object_set_new(pj, "busbw_gbps", pl_json_real(pl_busbw_gbps(p->point.coll, r->nranks, L.bytes, p50)));
        json_object_update_new(pj, pl_comm_point_base_json(p)); /* takes the object: no leak per point */
        json_array_append_new(pts, pj);
    }
    json_object_set_new(j, "points", pts);
    json_object_set_new(j, "failed_points", json_integer(r->failed_points));
    return j;
}

const char *pl_comm_alltoall_api_used(const pl_comm_job *job, const pl_comm_result *r)
{
    if (job->a2a_api == PL_A2A_AUTO)
        return r->has_native_alltoall ? "native" : "group";
    return pl_a2a_api_name(job->a2a_api);
}

static const char *us(double ms, char *buf, size_t len)
{
    if (isnan(ms))
        pl_snprintf(buf, len, "-");
    else
        pl_snprintf(buf, len, "%.2f", ms * 1e3);
    return buf;
}

/* The five figures of one placement: p50, p99, algbw, busbw, #wrong (or the status). */
static void placement_cells(pl_table *t, size_t row, size_t col, const pl_comm_point_result *p, int nranks)
{
    char a[32], b[32];
    if (!p) {
        for (int k = 0; k < 5; k++)
            pl_table_set(t, row, col + (size_t)k, "%s", k == 4 ? "n/a" : "");
        return;
    }
    if (p->status == PL_POINT_SKIPPED || p->status == PL_POINT_ERROR) {
        pl_table_set(t, row, col + 4, "%s", pl_point_status_name(p->status));
        return;
    }
    pl_coll_layout L;
    pl_coll_layout_for(p->point.coll, p->point.nominal_bytes, pl_dtype_size(p->point.dtype), nranks, 0, &L);
    const double p50 = p->latency.p50;
    pl_table_set(t, row, col, "%s", us(p50, a, sizeof a));
    pl_table_set(t, row, col + 1, "%s", us(p->latency.p99, b, sizeof b));
    pl_table_set(t, row, col + 2, "%.2f", pl_algbw_gbps(L.bytes, p50));
    pl_table_set(t, row, col + 3, "%.2f", pl_busbw_gbps(p->point.coll, nranks, L.bytes, p50));
    if (p->status == PL_POINT_OK)
        pl_table_set(t, row, col + 4, "%zu", p->wrong);
    else
        pl_table_set(t, row, col + 4, "%zu FAIL", p->wrong);
}

void pl_comm_emit_table(const pl_table *t, const char *title, pl_buf *text, pl_buf *markdown)
{
    if (text) {
        pl_buf_printf(text, "# %s\n", title);
        pl_table_text(t, text);
    }
    if (markdown) {
        pl_buf_printf(markdown, "### %s\n\n", title);
        pl_table_markdown(t, markdown);
    }
}

void pl_comm_report_tables(const pl_comm_job *job, const pl_comm_result *r, pl_buf *text, pl_buf *markdown)
{
    static const char *const cols[] = {">size (B)", ">count",        "type",          "redop",   ">time p50 (us)",
                                       ">p99 (us)", ">algbw (GB/s)", ">busbw (GB/s)", ">#wrong", ">in-place p50 (us)",
                                       ">p99 (us)", ">algbw (GB/s)", ">busbw (GB/s)", ">#wrong"};
    for (int d = 0; d < job->n_dtypes; d++) {
        for (int c = 0; c < job->n_colls; c++) {
            const pl_coll coll = job->colls[c];
            const int with_in = (job->placements & PL_PLACE_IN) && pl_coll_has_in_place(coll);
            const int with_out = (job->placements & PL_PLACE_OUT) != 0;
            pl_table *t = pl_table_new(sizeof cols / sizeof cols[0], cols);
            for (size_t s = 0; s < job->n_sizes; s++) {
                const pl_comm_point_result *out = NULL, *in = NULL;
                for (size_t i = 0; i < r->n_points; i++) {
                    const pl_comm_point *p = &r->points[i].point;
                    if (p->coll == coll && p->dtype == job->dtypes[d] && p->nominal_bytes == job->sizes[s]) {
                        if (p->in_place)
                            in = &r->points[i];
                        else
                            out = &r->points[i];
                    }
                }
                pl_coll_layout L;
                pl_coll_layout_for(coll, job->sizes[s], pl_dtype_size(job->dtypes[d]), r->nranks, 0, &L);
                size_t row = pl_table_row(t);
                pl_table_set(t, row, 0, "%zu", L.bytes ? L.bytes : job->sizes[s]);
                pl_table_set(t, row, 1, "%zu", L.count);
                pl_table_set(t, row, 2, "%s", pl_dtype_name(job->dtypes[d]));
                pl_table_set(t, row, 3, "%s", pl_coll_reduces(coll) ? pl_redop_name(job->op) : "none");
                placement_cells(t, row, 4, with_out ? out : NULL, r->nranks);
                placement_cells(t, row, 9, with_in ? in : NULL, r->nranks);
            }
            char title[256], root[64] = "";
            if (coll == PL_COLL_BROADCAST)
                pl_snprintf(root, sizeof root, ", root %d", job->root);
            if (coll == PL_COLL_ALLTOALL)
                pl_snprintf(root, sizeof root, ", %s",
                            strcmp(pl_comm_alltoall_api_used(job, r), "native") == 0 ? "ncclAlltoAll"
                                                                                     : "grouped ncclSend/ncclRecv");
            pl_snprintf(title, sizeof title, "%s, %d rank%s (%s), %s%s, %d iterations per rank", pl_coll_name(coll),
                        r->nranks, r->nranks == 1 ? "" : "s", r->mode, pl_dtype_name(job->dtypes[d]), root, job->iters);
            pl_comm_emit_table(t, title, text, markdown);
            if (text)
                pl_buf_append(text, "\n");
            if (markdown)
                pl_buf_append(markdown, "\n");
            pl_table_free(t);
        }
    }
}

int pl_comm_report_write(const char *dir, json_t *report, const char *markdown, char *err, size_t errlen)
{
    pl_report_file files[] = {
        {.name = "report.json", .json = report},
        {.name = "summary.md", .text = (char *)(markdown ? markdown : "")},
    };
    return pl_report_write_files(dir, files, 2, err, errlen);
}
