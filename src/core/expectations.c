/* Per-GPU expectations, the judgement: a run compared with them (met/improved/regressed/new/missing), and a run
 * merged into them (update). The files themselves: expectations_file.c. */
#include "core/expectations.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ---------------------------------------------------------------- parameters */

static int cmp_param_by_name(const void *a, const void *b)
{
    const pl_param_kv *x = *(const pl_param_kv *const *)a, *y = *(const pl_param_kv *const *)b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

char *pl_params_canonical(const pl_target_result *t)
{
    /* sorted by name: the same parameters always give the same text, whatever order they were stored in */
    const pl_param_kv **sorted = pl_xmalloc((t->n_params ? t->n_params : 1) * sizeof *sorted);
    for (size_t i = 0; i < t->n_params; i++)
        sorted[i] = &t->params[i];
    qsort(sorted, t->n_params, sizeof *sorted, cmp_param_by_name);
    pl_buf b = {0};
    for (size_t i = 0; i < t->n_params; i++)
        pl_buf_printf(&b, "%s%s=%s", i ? " " : "", sorted[i]->name ? sorted[i]->name : "",
                      sorted[i]->value ? sorted[i]->value : "");
    free(sorted);
    return b.data ? b.data : pl_strdup("");
}

/* ---------------------------------------------------------------- compare */

static int is_measured(const pl_variant_result *v)
{
    return (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED) && v->has_stats && v->stats.n > 0;
}

static double finite_or_zero(double x)
{
    return isfinite(x) && x > 0 ? x : 0.0;
}

typedef struct row_list {
    pl_expect_row *rows;
    size_t n, cap;
} row_list;

static pl_expect_row *add_row(row_list *l, const char *target, const char *variant, pl_expect_verdict verdict)
{
    pl_expect_row *r = pl_push(&l->rows, &l->n, &l->cap, sizeof *r);
    r->target = pl_strdup(target);
    r->variant = pl_strdup(variant);
    r->verdict = verdict;
    r->expected_ms = r->measured_ms = r->change = r->threshold = NAN;
    return r;
}

static char *status_note(pl_status status, const char *reason, const char *what)
{
    if (reason && *reason)
        return pl_strfmt("%s %s: %s", what, pl_status_name(status), reason);
    return pl_strfmt("%s %s", what, pl_status_name(status));
}

/* The measured median against the stored one: the noise-aware rule of expectations.h. */
static void judge(const pl_expect_entry *x, const pl_variant_result *v, pl_expect_row *r)
{
    double noise_run = finite_or_zero(v->stats.rel_noise), noise_stored = finite_or_zero(x->rel_noise);
    double noise = PL_EXPECT_NOISE_SIGMAS * sqrt(noise_run * noise_run + noise_stored * noise_stored);
    r->expected_ms = x->median_ms;
    r->measured_ms = v->stats.median;
    r->change = v->stats.median / x->median_ms - 1.0;
    r->threshold = x->tolerance > noise ? x->tolerance : noise;
    const char *bound = x->tolerance >= noise ? "tolerance" : "noise";
    if (r->change > r->threshold) {
        r->verdict = PL_EXPECT_REGRESSED;
        r->note = pl_strfmt("%.1f%% slower than expected; allowed %.1f%% (%s: tolerance %.1f%%, %.0f-sigma noise "
                            "%.1f%%)",
                            100 * r->change, 100 * r->threshold, bound, 100 * x->tolerance, PL_EXPECT_NOISE_SIGMAS,
                            100 * noise);
    } else if (r->change < -r->threshold) {
        r->verdict = PL_EXPECT_IMPROVED;
        r->note = pl_strfmt("%.1f%% faster than expected; store it with --update-expectations", -100 * r->change);
    } else {
        r->verdict = PL_EXPECT_MET;
    }
}

/* A host-timed variant's time is mostly the host's work: comparable only with a figure stored on the same host.
 * Nothing a virtual machine reports tells two hosts apart (all read host "vm", CPU "Intel(R) Xeon(R) Processor"),
 * so the user names a host they keep the same with PERFLAB_HOST_KEY; without a name on both sides, no gate. */
static int same_host(const pl_expect_entry *x, const pl_run *run)
{
    return x->host && run->prov.host_key && strcmp(x->host, run->prov.host_key) == 0;
}

static void not_gated(const pl_expect_entry *x, const pl_variant_result *v, const pl_run *run, pl_expect_row *r)
{
    r->verdict = PL_EXPECT_UNGATED;
    r->expected_ms = x->median_ms;
    r->change = v->stats.median / x->median_ms - 1.0;
    const char *cpu = run->prov.cpu ? run->prov.cpu : "unknown CPU";
    if (!x->host)
        r->note = pl_strfmt("host-bound: not gated (%+.1f%%; stored on an unnamed host, this run on %s; set "
                            "PERFLAB_HOST_KEY on a host that stays the same to gate it)",
                            100 * r->change, cpu);
    else
        r->note = pl_strfmt("host-bound: not gated (%+.1f%%; stored on host '%s', this run on %s%s%s%s)",
                            100 * r->change, x->host, run->prov.host_key ? "host '" : "an unnamed host, ",
                            run->prov.host_key ? run->prov.host_key : "", run->prov.host_key ? "', " : "", cpu);
}

static void compare_variant(const pl_expectations *e, const pl_run *run, const pl_target_result *t,
                            const char *params, const pl_variant_result *v, row_list *rows)
{
    const pl_expect_entry *x = pl_expectations_find(e, t->name, v->name);
    if (!is_measured(v)) {
        if (!x)
            return; /* neither measured nor expected: nothing to say */
        pl_expect_row *r = add_row(rows, t->name, v->name, PL_EXPECT_MISSING);
        r->expected_ms = x->median_ms;
        if (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED)
            r->note = pl_strfmt("not timed (status %s, no samples)", pl_status_name(v->status));
        else
            r->note = status_note(v->status, v->reason ? v->reason : t->reason, "not timed: status");
        return;
    }
    pl_expect_row *r = add_row(rows, t->name, v->name, PL_EXPECT_NEW);
    r->measured_ms = v->stats.median;
    if (!x) {
        r->note = pl_strdup("no expectation stored yet");
    } else if (x->params && strcmp(x->params, params) != 0) {
        r->note =
            pl_strfmt("measured with other parameters (stored \"%s\", now \"%s\"): not compared", x->params, params);
    } else if (v->host_timed && !same_host(x, run)) {
        not_gated(x, v, run, r);
    } else {
        judge(x, v, r);
    }
}

/* Stored variants of a target that the run has no result for at all (renamed, or the target did not run). */
static void add_absent_variants(const pl_expectations *e, const pl_target_result *t, row_list *rows)
{
    for (size_t i = 0; i < e->n_entries; i++) {
        const pl_expect_entry *x = &e->entries[i];
        if (strcmp(x->target, t->name) != 0 || pl_target_find_variant(t, x->variant))
            continue;
        pl_expect_row *r = add_row(rows, x->target, x->variant, PL_EXPECT_MISSING);
        r->expected_ms = x->median_ms;
        if (t->status != PL_STATUS_OK && t->status != PL_STATUS_UNVERIFIED)
            r->note = status_note(t->status, t->reason, "target status");
        else
            r->note = pl_strdup("no result for this variant in the run (renamed or removed?)");
    }
}

void pl_expectations_compare(const pl_expectations *e, const pl_run *run, pl_expect_report *out)
{
    row_list rows = {0};
    for (size_t ti = 0; ti < run->n_targets; ti++) {
        const pl_target_result *t = &run->targets[ti];
        if (!t->name)
            continue;
        char *params = pl_params_canonical(t);
        for (size_t vi = 0; vi < t->n_variants; vi++)
            if (t->variants[vi].name)
                compare_variant(e, run, t, params, &t->variants[vi], &rows);
        add_absent_variants(e, t, &rows);
        free(params);
    }

    /* replace whatever rows the report held; key, file and flags are the caller's to set */
    for (size_t i = 0; i < out->n_rows; i++) {
        free(out->rows[i].target);
        free(out->rows[i].variant);
        free(out->rows[i].note);
    }
    free(out->rows);
    out->rows = rows.rows;
    out->n_rows = rows.n;
    out->regressions = 0;
    for (size_t i = 0; i < rows.n; i++)
        out->regressions += rows.rows[i].verdict == PL_EXPECT_REGRESSED;
    out->present = 1;
}

/* ---------------------------------------------------------------- update */

static void replace_string(char **dst, const char *src)
{
    char *copy = pl_strdup(src);
    free(*dst);
    *dst = copy;
}

static pl_expect_entry *add_entry(pl_expectations *e, const char *target, const char *variant)
{
    pl_expect_entry *x = pl_push(&e->entries, &e->n_entries, NULL, sizeof *x);
    x->target = pl_strdup(target);
    x->variant = pl_strdup(variant);
    x->tolerance = PL_EXPECT_DEFAULT_TOLERANCE;
    return x;
}

size_t pl_expectations_update(pl_expectations *e, const pl_run *run)
{
    size_t written = 0;
    for (size_t ti = 0; ti < run->n_targets; ti++) {
        const pl_target_result *t = &run->targets[ti];
        char *params = pl_params_canonical(t);
        for (size_t vi = 0; vi < t->n_variants && t->name; vi++) {
            const pl_variant_result *v = &t->variants[vi];
            /* only verified results: an unverified kernel may be fast because it is wrong */
            if (!v->name || v->status != PL_STATUS_OK || !is_measured(v) || !(v->stats.median > 0))
                continue;
            pl_expect_entry *x = pl_expectations_find(e, t->name, v->name);
            if (!x)
                x = add_entry(e, t->name, v->name); /* an existing entry keeps its reviewed tolerance */
            x->median_ms = v->stats.median;
            x->rel_noise = finite_or_zero(v->stats.rel_noise);
            replace_string(&x->params, params);
            replace_string(&x->updated_at, run->prov.started_at);
            replace_string(&x->git_commit, run->prov.git_commit);
            replace_string(&x->host, v->host_timed ? run->prov.host_key : NULL);
            written++;
        }
        free(params);
    }
    if (written > 0) {
        e->schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
        if (!e->hardware_key)
            e->hardware_key = pl_strdup(run->prov.hardware_key);
        /* a run that lacks a field (an old run.json) leaves the stored one as it was */
        if (run->prov.n_gpus > 0 && run->prov.gpus[0].name)
            replace_string(&e->gpu_name, run->prov.gpus[0].name);
        if (run->prov.perflab_version)
            replace_string(&e->perflab_version, run->prov.perflab_version);
        if (run->prov.started_at)
            replace_string(&e->updated_at, run->prov.started_at);
        qsort(e->entries, e->n_entries, sizeof *e->entries, pl_expect_entry_cmp);
    }
    return written;
}

