/* perflab compare RUN_A RUN_B: targets and variants matched by name; the ratio of medians B/A with a bootstrap
 * interval; a verdict that needs both a real change (interval excludes 1) and a large one (beyond threshold). */
#include "core/run_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/expectations.h"
#include "core/util.h"

#define PL_COMPARE_RESAMPLES  2000
#define PL_COMPARE_CONFIDENCE 0.95

static const char *const verdict_names[PL_CMP_COUNT] = {
    [PL_CMP_FASTER] = "faster", [PL_CMP_SLOWER] = "slower", [PL_CMP_SAME] = "same",
    [PL_CMP_ONLY_A] = "only_a", [PL_CMP_ONLY_B] = "only_b", [PL_CMP_NOT_COMPARABLE] = "not_comparable",
};

const char *pl_compare_verdict_name(pl_compare_verdict v)
{
    return pl_name_of(verdict_names, PL_CMP_COUNT, (int)v);
}

typedef struct row_list {
    pl_compare_row *rows;
    size_t n, cap;
} row_list;

static pl_compare_row *add_row(row_list *l, const char *target, const char *variant, pl_compare_verdict verdict)
{
    pl_compare_row *r = pl_push(&l->rows, &l->n, &l->cap, sizeof *r);
    r->target = pl_strdup(target);
    r->variant = pl_strdup(variant);
    r->verdict = verdict;
    r->median_a_ms = r->median_b_ms = r->change = r->energy_ratio = NAN;
    r->ratio.value = r->ratio.lo = r->ratio.hi = NAN;
    return r;
}

static int is_timed(const pl_variant_result *v)
{
    return v->n_samples > 0 && v->samples_ms && (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED);
}

/* From the raw samples, so that a run whose statistics were not derived compares all the same. */
static double median_of(const pl_variant_result *v)
{
    if (!is_timed(v))
        return NAN;
    double *copy = pl_xmalloc(v->n_samples * sizeof *copy);
    memcpy(copy, v->samples_ms, v->n_samples * sizeof *copy);
    double m = pl_median_inplace(copy, v->n_samples);
    free(copy);
    return m;
}

static char *untimed_note(const char *side, const pl_variant_result *v)
{
    if (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED)
        return pl_strfmt("no samples in %s (status %s)", side, pl_status_name(v->status));
    if (v->reason && *v->reason)
        return pl_strfmt("not timed in %s: %s: %s", side, pl_status_name(v->status), v->reason);
    return pl_strfmt("not timed in %s: %s", side, pl_status_name(v->status));
}

/* B's joules per run over A's, where both have the figure (runs written before energy was recorded have none). */
static double energy_ratio(const pl_variant_result *va, const pl_variant_result *vb)
{
    if (!va->has_energy || !vb->has_energy)
        return NAN;
    const double a = va->energy.joules_per_run, b = vb->energy.joules_per_run;
    return isfinite(a) && isfinite(b) && a > 0 ? b / a : NAN;
}

static void judge(const pl_variant_result *va, const pl_variant_result *vb, double threshold, uint64_t seed,
                  pl_compare_row *r)
{
    /* ratio = median(B) / median(A): num = B's samples */
    pl_bootstrap_ratio(vb->samples_ms, vb->n_samples, va->samples_ms, va->n_samples, PL_COMPARE_RESAMPLES,
                       PL_COMPARE_CONFIDENCE, seed, &r->ratio);
    r->change = r->ratio.value - 1.0;
    if (r->ratio.significant && r->change > threshold) {
        r->verdict = PL_CMP_SLOWER;
    } else if (r->ratio.significant && r->change < -threshold) {
        r->verdict = PL_CMP_FASTER;
    } else {
        r->verdict = PL_CMP_SAME;
        if (r->ratio.significant)
            r->note =
                pl_strfmt("a real change of %+.2f%%, below the %.1f%% threshold", 100 * r->change, 100 * threshold);
        else
            r->note = pl_strfmt("within noise: the %.0f%% interval [%.3f, %.3f] of B/A contains 1",
                                100 * r->ratio.confidence, r->ratio.lo, r->ratio.hi);
    }
}

static void compare_pair(const pl_variant_result *va, const pl_variant_result *vb, const char *params_a,
                         const char *params_b, double threshold, uint64_t seed, pl_compare_row *r)
{
    r->median_a_ms = median_of(va);
    r->median_b_ms = median_of(vb);
    if (strcmp(params_a, params_b) != 0) {
        r->verdict = PL_CMP_NOT_COMPARABLE;
        r->note = pl_strfmt("parameters differ: A \"%s\", B \"%s\"", params_a, params_b);
    } else if (!is_timed(va) || !is_timed(vb)) {
        r->verdict = PL_CMP_NOT_COMPARABLE;
        r->note = !is_timed(va) ? untimed_note("A", va) : untimed_note("B", vb);
    } else {
        judge(va, vb, threshold, seed, r);
        r->energy_ratio = energy_ratio(va, vb);
    }
}

static void add_rows_of_a(const pl_run *a, const pl_run *b, double threshold, uint64_t seed, row_list *rows)
{
    for (size_t ti = 0; ti < a->n_targets; ti++) {
        const pl_target_result *ta = &a->targets[ti];
        const pl_target_result *tb = ta->name ? pl_run_find_target(b, ta->name) : NULL;
        char *params_a = pl_params_canonical(ta);
        char *params_b = tb ? pl_params_canonical(tb) : NULL;
        for (size_t vi = 0; vi < ta->n_variants; vi++) {
            const pl_variant_result *va = &ta->variants[vi];
            const pl_variant_result *vb = tb && va->name ? pl_target_find_variant(tb, va->name) : NULL;
            pl_compare_row *r = add_row(rows, ta->name, va->name, PL_CMP_ONLY_A);
            if (!vb) {
                r->median_a_ms = median_of(va);
                r->note = pl_strdup(tb ? "variant not in B" : "target not in B");
                continue;
            }
            /* a different seed per row keeps the rows' intervals independent, and all reproducible */
            compare_pair(va, vb, params_a, params_b, threshold, seed + rows->n, r);
        }
        free(params_a);
        free(params_b);
    }
}

static void add_rows_only_in_b(const pl_run *a, const pl_run *b, row_list *rows)
{
    for (size_t ti = 0; ti < b->n_targets; ti++) {
        const pl_target_result *tb = &b->targets[ti];
        const pl_target_result *ta = tb->name ? pl_run_find_target(a, tb->name) : NULL;
        for (size_t vi = 0; vi < tb->n_variants; vi++) {
            const pl_variant_result *vb = &tb->variants[vi];
            if (ta && vb->name && pl_target_find_variant(ta, vb->name))
                continue;
            pl_compare_row *r = add_row(rows, tb->name, vb->name, PL_CMP_ONLY_B);
            r->median_b_ms = median_of(vb);
            r->note = pl_strdup(ta ? "variant not in A" : "target not in A");
        }
    }
}

void pl_compare_runs(const pl_run *a, const pl_run *b, double threshold, uint64_t seed, pl_compare_result *out)
{
    if (!(threshold >= 0))
        threshold = PL_COMPARE_DEFAULT_THRESHOLD;
    row_list rows = {0};
    add_rows_of_a(a, b, threshold, seed, &rows);
    add_rows_only_in_b(a, b, &rows);
    memset(out, 0, sizeof *out);
    out->rows = rows.rows;
    out->n_rows = rows.n;
    for (size_t i = 0; i < rows.n; i++)
        out->counts[rows.rows[i].verdict]++;
}

int pl_compare_has_energy(const pl_compare_result *c)
{
    for (size_t i = 0; i < c->n_rows; i++)
        if (!isnan(c->rows[i].energy_ratio))
            return 1;
    return 0;
}

void pl_compare_result_free(pl_compare_result *r)
{
    for (size_t i = 0; i < r->n_rows; i++) {
        free(r->rows[i].target);
        free(r->rows[i].variant);
        free(r->rows[i].note);
    }
    free(r->rows);
    memset(r, 0, sizeof *r);
}
