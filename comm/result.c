#include "comm/result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"

static const char *const status_names[] = {
    [PL_POINT_OK] = "ok",
    [PL_POINT_FAILED_VERIFICATION] = "failed_verification",
    [PL_POINT_ERROR] = "error",
    [PL_POINT_SKIPPED] = "skipped",
};

const char *pl_point_status_name(pl_point_status s)
{
    return pl_name_of(status_names, 4, (int)s);
}

pl_dtype pl_comm_point_dtype(const pl_comm_job *job, const pl_comm_point *p)
{
    return job->kind == PL_JOB_MOE ? job->moe_dtype : job->kind == PL_JOB_EP ? PL_DTYPE_BF16 : p->dtype;
}

/* Per point while merging: the check sums. */
typedef struct merge {
    size_t elements, wrong, nonfinite, unwritten;
    double err2, ref2, max_abs;
    char *skipped;
} merge;

static size_t jsize(json_t *o, const char *k)
{
    return (size_t)json_integer_value(json_object_get(o, k));
}

static void add_point(pl_comm_result *r, merge *m, json_t *msg)
{
    size_t idx = jsize(msg, "point");
    if (idx >= r->n_points)
        return;
    pl_comm_point_result *p = &r->points[idx];
    json_t *check = json_object_get(msg, "check");
    const char *skipped = json_string_value(json_object_get(check, "skipped"));
    p->ranks_reported++;
    if (skipped) {
        free(m[idx].skipped);
        m[idx].skipped = pl_strdup(skipped);
        return;
    }
    json_t *s = json_object_get(msg, "samples_ms");
    p->samples_ms = pl_xrealloc(p->samples_ms, (p->n_samples + json_array_size(s) + 1) * sizeof *p->samples_ms);
    for (size_t i = 0; i < json_array_size(s); i++)
        p->samples_ms[p->n_samples++] = json_number_value(json_array_get(s, i));
    m[idx].elements += jsize(check, "elements");
    m[idx].wrong += jsize(check, "wrong");
    m[idx].nonfinite += jsize(check, "nonfinite");
    m[idx].unwritten += jsize(check, "unwritten");
    double e2 = pl_json_get_real(check, "err2"), r2 = pl_json_get_real(check, "ref2"),
           ma = pl_json_get_real(check, "max_abs");
    m[idx].err2 += isnan(e2) ? 0 : e2;
    m[idx].ref2 += isnan(r2) ? 0 : r2;
    if (ma > m[idx].max_abs)
        m[idx].max_abs = ma;
    p->latch_gave_way |= json_is_true(json_object_get(msg, "latch_gave_way"));
}

static void finish_point(const pl_comm_job *job, pl_comm_result *r, pl_comm_point_result *p, const merge *m,
                         const char *missing_why)
{
    const pl_dtype dt = pl_comm_point_dtype(job, &p->point);
    if (m->skipped && p->ranks_reported == r->nranks) {
        p->status = PL_POINT_SKIPPED;
        p->reason = pl_strdup(m->skipped);
        return;
    }
    if (p->ranks_reported < r->nranks) {
        p->status = PL_POINT_ERROR;
        p->reason = pl_strfmt("%d of %d ranks reported this point: %s", p->ranks_reported, r->nranks, missing_why);
        return;
    }
    p->has_stats = pl_stats_compute(p->samples_ms, p->n_samples, &p->latency) == 0;
    pl_verification *v = &p->check;
    v->checked = 1;
    v->dtype = dt;
    v->tolerance = pl_default_tolerance(dt);
    v->elements = m->elements;
    v->nonfinite = m->nonfinite;
    v->unwritten = m->unwritten;
    v->max_abs_error = m->max_abs;
    v->rel_l2_error = m->ref2 > 0 ? sqrt(m->err2 / m->ref2) : (m->err2 > 0 ? INFINITY : 0);
    p->wrong = m->wrong;
    if (dt == PL_DTYPE_I32)
        v->passed = m->wrong == 0;
    else if (job->kind == PL_JOB_EP) /* rows bit for bit; combined outputs within the bound of each element */
        v->passed = m->wrong == 0 && m->nonfinite == 0 && m->unwritten == 0;
    else
        v->passed = m->nonfinite == 0 && m->unwritten == 0 && v->rel_l2_error <= v->tolerance;
    if (v->passed)
        pl_snprintf(v->message, sizeof v->message, "%zu elements over %d ranks: rel L2 %.2g, %zu differ", m->elements,
                    r->nranks, v->rel_l2_error, m->wrong);
    else
        pl_snprintf(v->message, sizeof v->message,
                    "%zu of %zu elements wrong (%zu unwritten, %zu NaN/Inf), rel L2 %.3g > %.1g, max |err| %.3g",
                    m->wrong, m->elements, m->unwritten, m->nonfinite, v->rel_l2_error, v->tolerance, m->max_abs);
    p->status = v->passed ? PL_POINT_OK : PL_POINT_FAILED_VERIFICATION;
    if (!v->passed)
        p->reason = pl_strdup(v->message);
}

void pl_comm_result_build(pl_comm_result *r, const pl_comm_job *job, const pl_comm_outcome *out)
{
    memset(r, 0, sizeof *r);
    r->nranks = job->nranks;
    r->mode = out->mode;
    r->n_points = pl_comm_job_npoints(job);
    r->points = pl_xcalloc(r->n_points + 1, sizeof *r->points);
    for (size_t i = 0; i < r->n_points; i++)
        pl_comm_job_point(job, i, &r->points[i].point);
    r->ranks = json_array();
    for (int i = 0; i < r->nranks; i++)
        json_array_append_new(r->ranks, json_null());
    r->problems = json_array();
    if (out->error[0])
        json_array_append_new(r->problems, json_string(out->error));
    merge *m = pl_xcalloc(r->n_points + 1, sizeof *m);
    size_t n = json_array_size(out->messages);
    for (size_t i = 0; i < n; i++) {
        json_t *msg = json_array_get(out->messages, i);
        const char *t = json_string_value(json_object_get(msg, "t"));
        int rank = (int)json_integer_value(json_object_get(msg, "rank"));
        if (!t)
            continue;
        if (strcmp(t, "point") == 0)
            add_point(r, m, msg);
        else if (strcmp(t, "rank") == 0 && rank >= 0 && rank < r->nranks)
            json_array_set(r->ranks, (size_t)rank, msg);
        else if (strcmp(t, "rank_error") == 0)
            json_array_append_new(r->problems,
                                  json_sprintf("rank %d: %s", rank, json_string_value(json_object_get(msg, "reason"))));
        else if (strcmp(t, "child_error") == 0 || strcmp(t, "garbled") == 0) {
            const char *why = json_string_value(json_object_get(msg, "reason"));
            json_array_append_new(r->problems,
                                  json_sprintf("GPU process %d: %s",
                                               (int)json_integer_value(json_object_get(msg, "process")),
                                               why ? why : json_string_value(json_object_get(msg, "text"))));
        } else if (strcmp(t, "process_end") == 0 && !json_is_true(json_object_get(msg, "clean")))
            json_array_append_new(r->problems, json_sprintf("GPU process %d %s",
                                                            (int)json_integer_value(json_object_get(msg, "process")),
                                                            json_string_value(json_object_get(msg, "description"))));
    }
    json_t *r0 = json_array_get(r->ranks, 0);
    r->nccl_version = (int)json_integer_value(json_object_get(r0, "nccl_version"));
    r->has_native_alltoall = json_is_true(json_object_get(r0, "has_ncclAlltoAll"));
    for (size_t i = 0; i < json_array_size(r->ranks); i++) { /* keep what describes the rank */
        json_t *rk = json_array_get(r->ranks, i);
        json_object_del(rk, "t");
        json_object_del(rk, "process");
    }
    const char *why =
        json_array_size(r->problems) ? json_string_value(json_array_get(r->problems, 0)) : "a rank stopped before it";
    for (size_t i = 0; i < r->n_points; i++) {
        finish_point(job, r, &r->points[i], &m[i], why);
        if (r->points[i].status == PL_POINT_ERROR || r->points[i].status == PL_POINT_FAILED_VERIFICATION)
            r->failed_points++;
        free(m[i].skipped);
    }
    free(m);
}

void pl_comm_result_free(pl_comm_result *r)
{
    for (size_t i = 0; i < r->n_points; i++) {
        free(r->points[i].reason);
        free(r->points[i].samples_ms);
    }
    free(r->points);
    json_decref(r->ranks);
    json_decref(r->problems);
    memset(r, 0, sizeof *r);
}
