#include "hw/peak.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/nvml.h"
#include "core/util.h"

static const char *const group_names[] = {"memory", "cache", "compute", "tensor", "host", "launch", "p2p"};
#define N_GROUPS (sizeof group_names / sizeof group_names[0])

const char *pl_peak_group_names(void)
{
    return "memory, cache, compute, tensor, host, launch, p2p";
}

int pl_peak_parse_groups(const char *list, unsigned *groups, char *err, size_t errlen)
{
    *groups = 0;
    char *copy = pl_strdup(list), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        int i = pl_index_of(group_names, (int)N_GROUPS, tok);
        if (i >= 0) {
            *groups |= 1u << i;
            continue;
        }
        char sugg[128];
        if (pl_suggest(tok, group_names, N_GROUPS, 2, sugg, sizeof sugg) > 0)
            pl_snprintf(err, errlen, "--only: unknown group '%s' (did you mean %s?); the groups are %s", PL_ESC(tok),
                        sugg, pl_peak_group_names());
        else
            pl_snprintf(err, errlen, "--only: unknown group '%s'; the groups are %s", PL_ESC(tok),
                        pl_peak_group_names());
        rc = -1;
    }
    if (rc == 0 && *groups == 0) {
        pl_snprintf(err, errlen, "--only needs at least one group: %s", pl_peak_group_names());
        rc = -1;
    }
    free(copy);
    return rc;
}

void pl_peak_options_default(pl_peak_options *o, int quick)
{
    memset(o, 0, sizeof *o);
    o->quick = quick;
    o->groups = PL_PEAK_ALL;
    o->gemm_n = 8192;
    o->hbm_bytes = (size_t)(quick ? 512 : 1024) << 20;
    o->host_bytes = (size_t)(quick ? 64 : 256) << 20;
    o->p2p_bytes = (size_t)(quick ? 64 : 256) << 20;
}

static const pl_hw_task tasks[] = {
    {"memory", pl_peak_task_memory},           {"cache", pl_peak_task_cache},
    {"compute", pl_peak_task_compute},         {"tensor_micro", pl_peak_task_tensor_micro},
    {"tensor_blas", pl_peak_task_tensor_blas}, {"host", pl_peak_task_host},
    {"launch", pl_peak_task_launch},           {"p2p", pl_peak_task_p2p},
};

const pl_hw_task *pl_peak_tasks(size_t *count)
{
    *count = sizeof tasks / sizeof tasks[0];
    return tasks;
}

json_t *pl_peak_figure(const char *id, const char *group, const char *label, const char *unit, const char *counted,
                       const char *method, const char *datasheet)
{
    json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "group", group, "label", label, "unit", unit, "method",
                          method);
    if (counted)
        json_object_set_new(f, "counted", json_string(counted));
    if (datasheet)
        json_object_set_new(f, "datasheet_key", json_string(datasheet));
    return f;
}

void pl_peak_set_value(json_t *f, double value, const pl_stats *st, double sm_clock_mhz)
{
    json_object_set_new(f, "status", json_string("ok"));
    json_object_set_new(f, "value", json_real(value));
    if (st) {
        json_object_set_new(f, "median_ms", json_real(st->median));
        json_object_set_new(f, "noise", json_real(st->rel_noise));
        json_object_set_new(f, "samples", json_integer((json_int_t)st->n));
    }
    if (!isnan(sm_clock_mhz))
        json_object_set_new(f, "sm_clock_mhz", json_real(sm_clock_mhz));
}

void pl_peak_set_status(json_t *f, const char *status, const char *reason)
{
    json_object_set_new(f, "status", json_string(status));
    json_object_set_new(f, "reason", json_string(reason));
}

void pl_peak_set_reference(json_t *f, double value, const char *source)
{
    json_object_set_new(f, "reference_value", json_real(value));
    json_object_set_new(f, "reference_source", json_string(source));
}

void pl_peak_settings(pl_hw_gpu *g, const pl_peak_options *o, int tuning)
{
    pl_run_settings *s = &g->settings;
    if (tuning) { /* enough to rank configurations that differ by a few percent */
        s->warmup = 1;
        s->min_samples = 5;
        s->min_time_s = 0.02;
        s->max_time_s = 0.15;
    } else if (o->quick) {
        s->warmup = 2;
        s->min_samples = 5;
        s->min_time_s = 0.05;
        s->max_time_s = 0.3;
    } else {
        s->warmup = 2;
        s->min_samples = 10;
        s->min_time_s = 0.1;
        s->max_time_s = 1.0;
    }
}

int pl_peak_measure_into(pl_hw_gpu *g, int (*run)(pl_ctx *, void *), void *state, unsigned variant_flags,
                         pl_sample_pool *pool)
{
    pl_variant v = {.name = "peak", .technique = "", .run = run, .flags = variant_flags | PL_VARIANT_NO_GRAPH};
    pl_variant_result r;
    memset(&r, 0, sizeof r);
    int rc = pl_measure_variant(&g->env, &v, state, &r);
    if (rc == 0 && r.n_samples == 0)
        rc = pl_fail(&g->ctx, "no samples were kept");
    for (size_t i = 0; rc == 0 && i < r.n_samples; i++) {
        pl_reserve(&pool->x, &pool->cap, pool->n + 1, sizeof *pool->x);
        pool->x[pool->n++] = r.samples_ms[i];
    }
    free(r.samples_ms);
    free(r.stop_reason);
    return rc;
}

int pl_peak_measure(pl_hw_gpu *g, int (*run)(pl_ctx *, void *), void *state, unsigned variant_flags, pl_stats *st)
{
    pl_sample_pool pool = {0};
    int rc = pl_peak_measure_into(g, run, state, variant_flags, &pool);
    if (rc == 0)
        pl_stats_compute(pool.x, pool.n, st);
    free(pool.x);
    return rc;
}

double pl_peak_sm_clock(const pl_hw_gpu *g)
{
    char why[8];
    const pl_nvml *n = pl_nvml_get(why, sizeof why);
    pl_nvml_device d;
    unsigned mhz;
    if (n && n->device_get_clock_info && pl_nvml_device_for_bus_id(g->dev.pci_bus_id, &d) == 0 &&
        n->device_get_clock_info(d, PL_NVML_CLOCK_SM, &mhz) == 0)
        return mhz;
    return NAN;
}

pl_hw_gpu *pl_peak_gpu(pl_hw_child *c, int ordinal)
{
    char why[512];
    pl_hw_gpu *g = pl_hw_gpu_get(c, ordinal, why, sizeof why);
    if (!g) {
        json_t *f = pl_peak_figure(c->task, c->task, c->task, "", NULL, "", NULL);
        pl_peak_set_status(f, "failed", why);
        pl_hw_emit(c, f);
    }
    return g;
}

int pl_peak_run_group(pl_hw_child *c, unsigned group, const char *label, int (*figures)(pl_hw_child *c, pl_hw_gpu *g))
{
    const pl_peak_options *o = c->user;
    if (!(o->groups & group))
        return 0;
    pl_hw_gpu *g = pl_peak_gpu(c, o->device);
    if (!g)
        return 0;
    g->ctx.error[0] = '\0';
    pl_peak_settings(g, o, 0);
    int rc = figures(c, g);
    pl_free_all(&g->ctx);
    if (rc == 0)
        return 0;
    json_t *f = pl_peak_figure(c->task, c->task, label, "", NULL, "", NULL);
    pl_peak_set_status(f, "failed", g->ctx.error);
    pl_hw_emit(c, f);
    return pl_hw_context_ok() ? 0 : -1;
}
