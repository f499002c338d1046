#include "perflab/results.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "core/results_json.h"
#include "core/util.h"

#define PL_BOOTSTRAP_RESAMPLES 2000

const char *const pl_status_names[PL_STATUS_COUNT] = {
    [PL_STATUS_OK] = "ok",
    [PL_STATUS_UNVERIFIED] = "unverified",
    [PL_STATUS_SKIPPED] = "skipped",
    [PL_STATUS_FAILED_VERIFICATION] = "failed_verification",
    [PL_STATUS_CRASHED] = "crashed",
    [PL_STATUS_TIMEOUT] = "timeout",
    [PL_STATUS_CUDA_ERROR] = "cuda_error",
    [PL_STATUS_ERROR] = "error",
    [PL_STATUS_NOT_RUN] = "not_run",
    [PL_STATUS_SLO_MISSED] = "slo_missed",
};

const char *pl_status_name(pl_status s)
{
    return pl_name_of(pl_status_names, PL_STATUS_COUNT, (int)s);
}

int pl_status_from_name(const char *name)
{
    return pl_index_of(pl_status_names, PL_STATUS_COUNT, name);
}

int pl_status_is_failure(pl_status s)
{
    switch (s) {
    case PL_STATUS_FAILED_VERIFICATION:
    case PL_STATUS_CRASHED:
    case PL_STATUS_TIMEOUT:
    case PL_STATUS_CUDA_ERROR:
    case PL_STATUS_ERROR:
    case PL_STATUS_SLO_MISSED: return 1;
    default: return 0;
    }
}

const char *const pl_expect_verdict_names[PL_EXPECT_COUNT] = {
    [PL_EXPECT_MET] = "met", [PL_EXPECT_IMPROVED] = "improved", [PL_EXPECT_REGRESSED] = "regressed",
    [PL_EXPECT_NEW] = "new", [PL_EXPECT_MISSING] = "missing", [PL_EXPECT_UNGATED] = "ungated",
};

const char *pl_expect_verdict_name(pl_expect_verdict v)
{
    return pl_name_of(pl_expect_verdict_names, PL_EXPECT_COUNT, (int)v);
}

static int has_timing(const pl_variant_result *v)
{
    return v->n_samples > 0 && (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED);
}

void pl_target_result_derive(pl_target_result *t, uint64_t seed)
{
    const pl_counters *c = &t->counters;
    double bytes = c->bytes_read + c->bytes_written;
    const pl_variant_result *ref = NULL;

    for (size_t i = 0; i < t->n_variants; i++) {
        pl_variant_result *v = &t->variants[i];
        v->has_stats = has_timing(v) && pl_stats_compute(v->samples_ms, v->n_samples, &v->stats) == 0;
        v->tflops = v->gbps = v->arithmetic_intensity = v->pct_of_reference = NAN;
        if (bytes > 0)
            v->arithmetic_intensity = c->flops / bytes;
        if (v->has_stats && v->stats.median > 0) {
            double s = v->stats.median * 1e-3;
            if (c->flops > 0)
                v->tflops = c->flops / s / 1e12;
            if (bytes > 0)
                v->gbps = bytes / s / 1e9;
        }
        if (v->has_energy)
            pl_energy_derive(&v->energy, c->elements);
        if (v->is_reference && v->has_stats && !ref)
            ref = v;
    }

    const pl_variant_result *base = t->n_variants > 0 && t->variants[0].has_stats ? &t->variants[0] : NULL;
    for (size_t i = 0; i < t->n_variants; i++) {
        pl_variant_result *v = &t->variants[i];
        v->has_speedup = 0;
        if (!v->has_stats)
            continue;
        if (ref && v != ref && v->stats.median > 0)
            v->pct_of_reference = 100.0 * ref->stats.median / v->stats.median; /* same work: time ratio */
        if (base && i > 0)
            v->has_speedup = pl_bootstrap_ratio(base->samples_ms, base->n_samples, v->samples_ms, v->n_samples,
                                                PL_BOOTSTRAP_RESAMPLES, 0.95, seed + i, &v->speedup) == 0;
    }
}

pl_status pl_target_result_rollup(const pl_target_result *t)
{
    /* the most serious status wins; order of seriousness: */
    static const pl_status order[] = {
        PL_STATUS_CRASHED,    PL_STATUS_TIMEOUT, PL_STATUS_CUDA_ERROR, PL_STATUS_ERROR, PL_STATUS_FAILED_VERIFICATION,
        PL_STATUS_UNVERIFIED, PL_STATUS_OK};
    if (t->n_variants == 0)
        return t->status;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (size_t i = 0; i < t->n_variants; i++)
            if (t->variants[i].status == order[k])
                return order[k];
    /* every variant skipped (requirements) or not run */
    for (size_t i = 0; i < t->n_variants; i++)
        if (t->variants[i].status == PL_STATUS_SKIPPED)
            return PL_STATUS_SKIPPED;
    return PL_STATUS_NOT_RUN;
}

void pl_run_free(pl_run *r)
{
    char *dir = r->run_dir;
    pl_run_fields_free(r); /* every member run.json holds (results_schema.c) */
    free(dir);
}

const pl_gpu_record *pl_run_gpu(const pl_run *r)
{
    if (r->prov.n_gpus == 0)
        return NULL;
    const int d = r->settings.device >= 0 && (size_t)r->settings.device < r->prov.n_gpus ? r->settings.device : 0;
    return &r->prov.gpus[d];
}

const pl_target_result *pl_run_find_target(const pl_run *r, const char *name)
{
    for (size_t i = 0; i < r->n_targets; i++)
        if (r->targets[i].name && strcmp(r->targets[i].name, name) == 0)
            return &r->targets[i];
    return NULL;
}

const pl_variant_result *pl_target_find_variant(const pl_target_result *t, const char *name)
{
    for (size_t i = 0; i < t->n_variants; i++)
        if (t->variants[i].name && strcmp(t->variants[i].name, name) == 0)
            return &t->variants[i];
    return NULL;
}
