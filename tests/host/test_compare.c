/* perflab compare on constructed runs: matching by name, the bootstrap ratio, and the verdicts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/run_compare.h"
#include "core/util.h"
#include "testutil.h"

#define SEED 20240601u

static pl_target_result *add_target(pl_run *run, const char *name, const char *param_value)
{
    run->targets = pl_xrealloc(run->targets, (run->n_targets + 1) * sizeof *run->targets);
    pl_target_result *t = &run->targets[run->n_targets++];
    memset(t, 0, sizeof *t);
    t->name = pl_strdup(name);
    t->status = PL_STATUS_OK;
    if (param_value) {
        t->n_params = 1;
        t->params = pl_xcalloc(1, sizeof *t->params);
        t->params[0].name = pl_strdup("n");
        t->params[0].value = pl_strdup(param_value);
    }
    return t;
}

static double normal(pl_rng *rng, double mu, double sigma)
{
    double u1 = 1.0 - pl_rng_uniform(rng), u2 = pl_rng_uniform(rng);
    return mu + sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* n samples of N(median, rel_noise * median); n = 0 leaves the variant untimed. */
static pl_variant_result *add_variant(pl_target_result *t, const char *name, pl_status status, pl_rng *rng, size_t n,
                                      double median_ms, double rel_noise)
{
    t->variants = pl_xrealloc(t->variants, (t->n_variants + 1) * sizeof *t->variants);
    pl_variant_result *v = &t->variants[t->n_variants++];
    memset(v, 0, sizeof *v);
    v->name = pl_strdup(name);
    v->status = status;
    v->n_samples = n;
    v->samples_ms = n ? pl_xmalloc(n * sizeof *v->samples_ms) : NULL;
    for (size_t i = 0; i < n; i++)
        v->samples_ms[i] = normal(rng, median_ms, rel_noise * median_ms);
    return v;
}

/* A copy of the samples of a variant (to build identical sets in two runs). */
static void copy_samples(pl_variant_result *dst, const pl_variant_result *src)
{
    free(dst->samples_ms);
    dst->n_samples = src->n_samples;
    dst->samples_ms = pl_xmalloc(src->n_samples * sizeof *dst->samples_ms);
    memcpy(dst->samples_ms, src->samples_ms, src->n_samples * sizeof *dst->samples_ms);
}

static const pl_compare_row *row_of(const pl_compare_result *c, const char *target, const char *variant)
{
    for (size_t i = 0; i < c->n_rows; i++)
        if (!strcmp(c->rows[i].target, target) && !strcmp(c->rows[i].variant, variant))
            return &c->rows[i];
    ck_abort_msg("no row for %s/%s", target, variant);
    return NULL;
}

typedef struct pair {
    pl_run a, b;
    pl_compare_result cmp;
    pl_rng rng;
} pair;

static void pair_init(pair *p, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    pl_rng_seed(&p->rng, seed);
}

static void pair_free(pair *p)
{
    pl_run_free(&p->a);
    pl_run_free(&p->b);
    pl_compare_result_free(&p->cmp);
}

START_TEST(verdict_names)
{
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_FASTER), "faster");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_SLOWER), "slower");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_SAME), "same");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_ONLY_A), "only_a");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_ONLY_B), "only_b");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_NOT_COMPARABLE), "not_comparable");
    ck_assert_str_eq(pl_compare_verdict_name(PL_CMP_COUNT), "unknown");
}
END_TEST

START_TEST(identical_samples_are_the_same)
{
    pair p;
    pair_init(&p, 1);
    pl_variant_result *va =
        add_variant(add_target(&p.a, "m:x", "1k"), "baseline", PL_STATUS_OK, &p.rng, 100, 1.0, 0.02);
    pl_variant_result *vb = add_variant(add_target(&p.b, "m:x", "1k"), "baseline", PL_STATUS_OK, &p.rng, 0, 0, 0);
    copy_samples(vb, va);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    ck_assert_uint_eq(p.cmp.n_rows, 1);
    const pl_compare_row *r = &p.cmp.rows[0];
    ck_assert_int_eq(r->verdict, PL_CMP_SAME);
    ck_assert_double_eq(r->ratio.value, 1.0);
    ck_assert_double_eq(r->change, 0.0);
    ck_assert(!r->ratio.significant && r->ratio.lo <= 1.0 && r->ratio.hi >= 1.0);
    ck_assert_double_eq(r->median_a_ms, r->median_b_ms);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_SAME], 1);
    pair_free(&p);
}
END_TEST

START_TEST(twenty_percent_slower_is_slower)
{
    pair p;
    pair_init(&p, 2);
    add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 100, 1.0, 0.01);
    add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_UNVERIFIED, &p.rng, 100, 1.2, 0.01);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    const pl_compare_row *r = &p.cmp.rows[0];
    ck_assert_int_eq(r->verdict, PL_CMP_SLOWER);
    ck_assert_double_eq_tol(r->change, 0.2, 0.01);
    ck_assert(r->ratio.significant && r->ratio.lo > 1.15 && r->ratio.hi < 1.25);
    ck_assert_double_eq_tol(r->change, r->median_b_ms / r->median_a_ms - 1, 1e-12);
    ck_assert_double_eq(r->ratio.confidence, 0.95);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_SLOWER], 1);
    pair_free(&p);
}
END_TEST

START_TEST(twenty_percent_faster_is_faster)
{
    pair p;
    pair_init(&p, 3);
    add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 100, 1.0, 0.01);
    add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 100, 0.8, 0.01);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    ck_assert_int_eq(p.cmp.rows[0].verdict, PL_CMP_FASTER);
    ck_assert_double_eq_tol(p.cmp.rows[0].change, -0.2, 0.01);
    pair_free(&p);
}
END_TEST

START_TEST(small_real_change_is_the_same)
{
    /* 3% faster with 0.5% noise and 200 samples: real (significant) but below the 5% threshold */
    pair p;
    pair_init(&p, 4);
    add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 200, 1.0, 0.005);
    add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 200, 0.97, 0.005);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    const pl_compare_row *r = &p.cmp.rows[0];
    ck_assert(r->ratio.significant);
    ck_assert_int_eq(r->verdict, PL_CMP_SAME);
    ck_assert_ptr_nonnull(strstr(r->note, "below"));
    pl_compare_result_free(&p.cmp);
    /* with a 1% threshold the same change counts */
    pl_compare_runs(&p.a, &p.b, 0.01, SEED, &p.cmp);
    ck_assert_int_eq(p.cmp.rows[0].verdict, PL_CMP_FASTER);
    pair_free(&p);
}
END_TEST

START_TEST(large_change_within_noise_is_the_same)
{
    /* 10% apart on medians but 40% noise and few samples: the interval contains 1 */
    pair p;
    pair_init(&p, 5);
    add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 8, 1.0, 0.4);
    add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 8, 1.1, 0.4);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    const pl_compare_row *r = &p.cmp.rows[0];
    ck_assert(!r->ratio.significant);
    ck_assert_int_eq(r->verdict, PL_CMP_SAME);
    ck_assert_ptr_nonnull(strstr(r->note, "within noise"));
    pair_free(&p);
}
END_TEST

START_TEST(rows_only_in_one_run)
{
    pair p;
    pair_init(&p, 6);
    pl_target_result *t = add_target(&p.a, "m:x", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, &p.rng, 20, 1.0, 0.01);
    add_variant(t, "old_trick", PL_STATUS_OK, &p.rng, 20, 0.9, 0.01);
    add_variant(add_target(&p.a, "m:gone", NULL), "baseline", PL_STATUS_OK, &p.rng, 20, 2.0, 0.01);
    t = add_target(&p.b, "m:fresh", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, &p.rng, 20, 3.0, 0.01);
    t = add_target(&p.b, "m:x", NULL);
    add_variant(t, "new_trick", PL_STATUS_OK, &p.rng, 20, 0.5, 0.01);
    add_variant(t, "baseline", PL_STATUS_OK, &p.rng, 20, 1.0, 0.01);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);

    /* A's order first (m:x baseline, old_trick, m:gone), then B-only rows in B's order */
    ck_assert_uint_eq(p.cmp.n_rows, 5);
    static const char *const order[][2] = {{"m:x", "baseline"},
                                           {"m:x", "old_trick"},
                                           {"m:gone", "baseline"},
                                           {"m:fresh", "baseline"},
                                           {"m:x", "new_trick"}};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(p.cmp.rows[i].target, order[i][0]);
        ck_assert_str_eq(p.cmp.rows[i].variant, order[i][1]);
    }
    ck_assert_int_eq(p.cmp.rows[0].verdict, PL_CMP_SAME);
    const pl_compare_row *r = row_of(&p.cmp, "m:x", "old_trick");
    ck_assert_int_eq(r->verdict, PL_CMP_ONLY_A);
    ck_assert(r->median_a_ms > 0 && isnan(r->median_b_ms) && isnan(r->change));
    ck_assert_int_eq(row_of(&p.cmp, "m:gone", "baseline")->verdict, PL_CMP_ONLY_A);
    r = row_of(&p.cmp, "m:fresh", "baseline");
    ck_assert_int_eq(r->verdict, PL_CMP_ONLY_B);
    ck_assert(isnan(r->median_a_ms) && r->median_b_ms > 0);
    ck_assert_int_eq(row_of(&p.cmp, "m:x", "new_trick")->verdict, PL_CMP_ONLY_B);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_ONLY_A], 2);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_ONLY_B], 2);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_SAME], 1);
    pair_free(&p);
}
END_TEST

START_TEST(different_params_are_not_comparable)
{
    pair p;
    pair_init(&p, 7);
    add_variant(add_target(&p.a, "m:x", "1m"), "baseline", PL_STATUS_OK, &p.rng, 50, 1.0, 0.01);
    add_variant(add_target(&p.b, "m:x", "4m"), "baseline", PL_STATUS_OK, &p.rng, 50, 4.0, 0.01);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    const pl_compare_row *r = &p.cmp.rows[0];
    ck_assert_int_eq(r->verdict, PL_CMP_NOT_COMPARABLE);
    ck_assert_ptr_nonnull(strstr(r->note, "n=1m"));
    ck_assert_ptr_nonnull(strstr(r->note, "n=4m"));
    ck_assert_int_eq(p.cmp.counts[PL_CMP_NOT_COMPARABLE], 1);
    ck_assert_int_eq(p.cmp.counts[PL_CMP_SLOWER], 0);
    pair_free(&p);
}
END_TEST

START_TEST(untimed_side_is_not_comparable)
{
    pair p;
    pair_init(&p, 8);
    pl_target_result *ta = add_target(&p.a, "m:x", NULL), *tb = add_target(&p.b, "m:x", NULL);
    add_variant(ta, "baseline", PL_STATUS_OK, &p.rng, 50, 1.0, 0.01);
    pl_variant_result *v = add_variant(tb, "baseline", PL_STATUS_FAILED_VERIFICATION, &p.rng, 0, 0, 0);
    v->reason = pl_strdup("NaN at element 7");
    add_variant(ta, "tiled", PL_STATUS_OK, &p.rng, 0, 0, 0); /* ok but no samples (verify only) */
    add_variant(tb, "tiled", PL_STATUS_OK, &p.rng, 50, 1.0, 0.01);
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &p.cmp);
    const pl_compare_row *r = row_of(&p.cmp, "m:x", "baseline");
    ck_assert_int_eq(r->verdict, PL_CMP_NOT_COMPARABLE);
    ck_assert_ptr_nonnull(strstr(r->note, "failed_verification"));
    ck_assert_ptr_nonnull(strstr(r->note, "NaN at element 7"));
    ck_assert(r->median_a_ms > 0 && isnan(r->median_b_ms));
    r = row_of(&p.cmp, "m:x", "tiled");
    ck_assert_int_eq(r->verdict, PL_CMP_NOT_COMPARABLE);
    ck_assert_ptr_nonnull(strstr(r->note, "no samples in A"));
    ck_assert_int_eq(p.cmp.counts[PL_CMP_NOT_COMPARABLE], 2);
    pair_free(&p);
}
END_TEST

START_TEST(reproducible_for_a_seed)
{
    pair p;
    pair_init(&p, 9);
    add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 40, 1.0, 0.05);
    add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 40, 1.02, 0.05);
    pl_compare_result again = {0};
    pl_compare_runs(&p.a, &p.b, -1.0, SEED, &p.cmp); /* a negative threshold means the default */
    pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED, &again);
    ck_assert(p.cmp.rows[0].ratio.lo == again.rows[0].ratio.lo);
    ck_assert(p.cmp.rows[0].ratio.hi == again.rows[0].ratio.hi);
    ck_assert_int_eq(p.cmp.rows[0].verdict, again.rows[0].verdict);
    pl_compare_result_free(&again);
    pair_free(&p);
}
END_TEST

START_TEST(verdicts_on_random_shifts)
{
    /* clear-cut shifts must be called right; tiny ones must never be called faster/slower */
    pl_rng pick;
    pl_rng_seed(&pick, 4242);
    int checked = 0;
    for (int trial = 0; trial < 200; trial++) {
        double shift = 0.6 * pl_rng_uniform(&pick) - 0.3;
        double base = 0.01 + 10 * pl_rng_uniform(&pick);
        pair p;
        pair_init(&p, 100 + (uint64_t)trial);
        add_variant(add_target(&p.a, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 100, base, 0.01);
        add_variant(add_target(&p.b, "m:x", NULL), "baseline", PL_STATUS_OK, &p.rng, 100, base * (1 + shift), 0.01);
        pl_compare_runs(&p.a, &p.b, PL_COMPARE_DEFAULT_THRESHOLD, SEED + (uint64_t)trial, &p.cmp);
        pl_compare_verdict v = p.cmp.rows[0].verdict;
        if (shift > 0.08) {
            ck_assert_msg(v == PL_CMP_SLOWER, "shift %+.3f judged %s", shift, pl_compare_verdict_name(v));
            checked++;
        } else if (shift < -0.08) {
            ck_assert_msg(v == PL_CMP_FASTER, "shift %+.3f judged %s", shift, pl_compare_verdict_name(v));
            checked++;
        } else if (fabs(shift) < 0.03) {
            ck_assert_msg(v == PL_CMP_SAME, "shift %+.3f judged %s", shift, pl_compare_verdict_name(v));
            checked++;
        }
        pair_free(&p);
    }
    ck_assert_int_gt(checked, 120);
}
END_TEST

static Suite *compare_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("verdicts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, verdict_names);
    tcase_add_test(tc, identical_samples_are_the_same);
    tcase_add_test(tc, twenty_percent_slower_is_slower);
    tcase_add_test(tc, twenty_percent_faster_is_faster);
    tcase_add_test(tc, small_real_change_is_the_same);
    tcase_add_test(tc, large_change_within_noise_is_the_same);
    tcase_add_test(tc, rows_only_in_one_run);
    tcase_add_test(tc, different_params_are_not_comparable);
    tcase_add_test(tc, untimed_side_is_not_comparable);
    tcase_add_test(tc, reproducible_for_a_seed);
    tcase_add_test(tc, verdicts_on_random_shifts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(compare_suite());
}
