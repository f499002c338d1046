/* Statistics on known distributions: hand-computed summaries, numpy-compatible percentiles, the robust noise
 * of a normal law, selection against sorting, bootstrap coverage and calibration, and the generator itself. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "perflab/stats.h"
#include "testutil.h"

#define EPS 1e-12

/* Box-Muller from pl_rng: one N(mu, sigma) draw (the second of the pair is dropped: clarity over speed). */
static double normal(pl_rng *rng, double mu, double sigma)
{
    double u1 = 1.0 - pl_rng_uniform(rng); /* (0, 1]: log(0) never happens */
    double u2 = pl_rng_uniform(rng);
    return mu + sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static double *normal_samples(pl_rng *rng, size_t n, double mu, double sigma)
{
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = normal(rng, mu, sigma);
    return x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- exact values */

START_TEST(single_sample)
{
    double x[] = {5.0};
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(x, 1, &s), 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_double_eq(s.median, 5.0);
    ck_assert_double_eq(s.mean, 5.0);
    ck_assert_double_eq(s.stdev, 0.0);
    ck_assert_double_eq(s.min, 5.0);
    ck_assert_double_eq(s.max, 5.0);
    ck_assert_double_eq(s.p10, 5.0);
    ck_assert_double_eq(s.p99, 5.0);
    ck_assert_double_eq(s.iqr, 0.0);
    ck_assert_double_eq(s.rel_noise, 0.0);
}
END_TEST

START_TEST(empty_set_is_an_error)
{
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(NULL, 0, &s), -1);
    ck_assert_uint_eq(s.n, 0);
}
END_TEST

START_TEST(odd_count)
{
    /* sorted: 1 1 3 4 5 (n = 5, type 7: h = (n-1) p/100 = 4 p/100)
     * mean 14/5 = 2.8; squared deviations 3.24 3.24 0.04 1.44 4.84 sum 12.8, /4 = 3.2, stdev = sqrt(3.2)
     * p10: h=0.4 -> 1 + 0.4 (1-1) = 1    p25: h=1 -> 1    p50: h=2 -> 3    p75: h=3 -> 4
     * p90: h=3.6 -> 4 + 0.6 (5-4) = 4.6  p99: h=3.96 -> 4.96
     * iqr 3; rel_noise = (3 / 1.349) / 3 = 1 / 1.349 */
    double x[] = {3, 1, 4, 1, 5};
    double copy[5];
    memcpy(copy, x, sizeof x);
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(x, 5, &s), 0);
    ck_assert_mem_eq(x, copy, sizeof x); /* the input is left as it was */
    ck_assert_double_eq_tol(s.median, 3.0, EPS);
    ck_assert_double_eq_tol(s.mean, 2.8, EPS);
    ck_assert_double_eq_tol(s.stdev, sqrt(3.2), EPS);
    ck_assert_double_eq(s.min, 1.0);
    ck_assert_double_eq(s.max, 5.0);
    ck_assert_double_eq_tol(s.p10, 1.0, EPS);
    ck_assert_double_eq_tol(s.p25, 1.0, EPS);
    ck_assert_double_eq_tol(s.p50, 3.0, EPS);
    ck_assert_double_eq_tol(s.p75, 4.0, EPS);
    ck_assert_double_eq_tol(s.p90, 4.6, EPS);
    ck_assert_double_eq_tol(s.p99, 4.96, EPS);
    ck_assert_double_eq_tol(s.iqr, 3.0, EPS);
    ck_assert_double_eq_tol(s.rel_noise, 1.0 / 1.349, EPS);
    ck_assert_double_eq_tol(s.cv, sqrt(3.2) / 2.8, EPS);
}
END_TEST

START_TEST(even_count)
{
    /* 10 20 30 40 (h = 3 p/100): median 25 (mean of the middle two)
     * p10: h=0.3 -> 13   p25: h=0.75 -> 17.5   p75: h=2.25 -> 32.5   p90: h=2.7 -> 37   p99: h=2.97 -> 39.7
     * deviations -15 -5 5 15: (225+25+25+225)/3 = 500/3 */
    double x[] = {40, 10, 30, 20};
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(x, 4, &s), 0);
    ck_assert_double_eq_tol(s.median, 25.0, EPS);
    ck_assert_double_eq_tol(s.mean, 25.0, EPS);
    ck_assert_double_eq_tol(s.stdev, sqrt(500.0 / 3.0), EPS);
    ck_assert_double_eq_tol(s.p10, 13.0, EPS);
    ck_assert_double_eq_tol(s.p25, 17.5, EPS);
    ck_assert_double_eq_tol(s.p75, 32.5, EPS);
    ck_assert_double_eq_tol(s.p90, 37.0, EPS);
    ck_assert_double_eq_tol(s.p99, 39.7, EPS);
    ck_assert_double_eq_tol(s.iqr, 15.0, EPS);
    ck_assert_double_eq_tol(s.rel_noise, (15.0 / 1.349) / 25.0, EPS);
}
END_TEST

START_TEST(two_samples)
{
    /* 1 3: h = p/100; p25 = 1.5, median 2, p75 = 2.5 */
    double x[] = {3, 1};
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(x, 2, &s), 0);
    ck_assert_double_eq_tol(s.median, 2.0, EPS);
    ck_assert_double_eq_tol(s.p25, 1.5, EPS);
    ck_assert_double_eq_tol(s.p75, 2.5, EPS);
    ck_assert_double_eq_tol(s.stdev, sqrt(2.0), EPS);
}
END_TEST

START_TEST(ties)
{
    /* 2 2 2 2 7: median 2, p75 (h=3) 2, iqr 0 -> no noise; p90: h=3.6 -> 2 + 0.6 * 5 = 5 */
    double x[] = {2, 7, 2, 2, 2};
    pl_stats s;
    ck_assert_int_eq(pl_stats_compute(x, 5, &s), 0);
    ck_assert_double_eq_tol(s.median, 2.0, EPS);
    ck_assert_double_eq_tol(s.p75, 2.0, EPS);
    ck_assert_double_eq_tol(s.iqr, 0.0, EPS);
    ck_assert_double_eq_tol(s.rel_noise, 0.0, EPS);
    ck_assert_double_eq_tol(s.p90, 5.0, EPS);
    ck_assert_double_eq_tol(s.mean, 3.0, EPS);
}
END_TEST

START_TEST(percentiles_match_numpy)
{
    /* numpy.percentile(range(1, 11), p) (linear, the default); h = 9 p/100, value = 1 + h:
     * p=33 -> h=2.97 -> 3.97;  p=50 -> 5.5;  p=12.5 -> h=1.125 -> 2.125;  p=99.9 -> h=8.991 -> 9.991;
     * p=0 -> 1;  p=100 -> 10. */
    double x[10];
    for (int i = 0; i < 10; i++)
        x[i] = i + 1;
    ck_assert_double_eq_tol(pl_percentile_sorted(x, 10, 33), 3.97, EPS);
    ck_assert_double_eq_tol(pl_percentile_sorted(x, 10, 50), 5.5, EPS);
    ck_assert_double_eq_tol(pl_percentile_sorted(x, 10, 12.5), 2.125, EPS);
    ck_assert_double_eq_tol(pl_percentile_sorted(x, 10, 99.9), 9.991, EPS);
    ck_assert_double_eq(pl_percentile_sorted(x, 10, 0), 1.0);
    ck_assert_double_eq(pl_percentile_sorted(x, 10, 100), 10.0);
    /* numpy.percentile([0.5, 2.0, 2.0, 9.0], 60): h = 1.8 -> 2.0 + 0.8 (2.0 - 2.0) = 2.0;
     * at 80: h = 2.4 -> 2.0 + 0.4 (9.0 - 2.0) = 4.8 */
    double y[] = {0.5, 2.0, 2.0, 9.0};
    ck_assert_double_eq_tol(pl_percentile_sorted(y, 4, 60), 2.0, EPS);
    ck_assert_double_eq_tol(pl_percentile_sorted(y, 4, 80), 4.8, EPS);
    ck_assert(isnan(pl_percentile_sorted(y, 0, 50)));
}
END_TEST

/* ---------------------------------------------------------------- known distributions */

START_TEST(rel_noise_of_a_normal_law)
{
    /* For N(mu, sigma), IQR = 1.349 sigma, so rel_noise estimates sigma/mu. Several seeds and shapes. */
    static const double shape[][2] = {{10.0, 0.5}, {1.0, 0.01}, {0.25, 0.02}};
    for (size_t k = 0; k < 3; k++) {
        pl_rng rng;
        pl_rng_seed(&rng, 1000 + k);
        double mu = shape[k][0], sigma = shape[k][1];
        size_t n = 100000;
        double *x = normal_samples(&rng, n, mu, sigma);
        pl_stats s;
        ck_assert_int_eq(pl_stats_compute(x, n, &s), 0);
        ck_assert_double_eq_tol(s.rel_noise, sigma / mu, 0.03 * sigma / mu);
        ck_assert_double_eq_tol(s.cv, sigma / mu, 0.03 * sigma / mu);
        ck_assert_double_eq_tol(s.median, mu, 0.02 * sigma);
        ck_assert_double_eq_tol(s.mean, mu, 0.02 * sigma);
        free(x);
    }
}
END_TEST

START_TEST(rel_noise_ignores_outliers)
{
    /* a few huge outliers (throttled samples) move cv, not rel_noise: that is why rel_noise drives stopping */
    pl_rng rng;
    pl_rng_seed(&rng, 7);
    size_t n = 10000;
    double *x = normal_samples(&rng, n, 1.0, 0.01);
    pl_stats clean, dirty;
    pl_stats_compute(x, n, &clean);
    for (size_t i = 0; i < n; i += 500)
        x[i] = 50.0;
    pl_stats_compute(x, n, &dirty);
    ck_assert_double_eq_tol(dirty.rel_noise, clean.rel_noise, 0.05 * clean.rel_noise);
    ck_assert_double_gt(dirty.cv, 10 * clean.cv);
    free(x);
}
END_TEST

START_TEST(median_of_uniform)
{
    pl_rng rng;
    pl_rng_seed(&rng, 42);
    size_t n = 100001;
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = pl_rng_uniform(&rng);
    pl_stats s;
    pl_stats_compute(x, n, &s);
    /* the standard error of the median of U(0,1) is 1/(2 sqrt(n)) ~ 0.0016 */
    ck_assert_double_eq_tol(s.median, 0.5, 0.008);
    ck_assert_double_eq_tol(s.p10, 0.1, 0.008);
    ck_assert_double_eq_tol(s.p90, 0.9, 0.008);
    ck_assert_double_eq_tol(s.iqr, 0.5, 0.01);
    ck_assert_double_eq(pl_median_inplace(x, n), s.median);
    free(x);
}
END_TEST

/* ---------------------------------------------------------------- selection */

static void check_median_against_sort(double *x, size_t n)
{
    double *sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double expected = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    double got = pl_median_inplace(x, n);
    ck_assert_msg(got == expected, "n=%zu: median %.17g, sorting says %.17g", n, got, expected);
    /* reordered, never lost: the same multiset */
    qsort(x, n, sizeof *x, cmp_double);
    ck_assert_mem_eq(x, sorted, n * sizeof *x);
    free(sorted);
}

START_TEST(median_inplace_matches_sorting)
{
    pl_rng rng;
    pl_rng_seed(&rng, 2024);
    size_t sizes[80], n_sizes = 0;
    for (size_t n = 1; n <= 70; n++)
        sizes[n_sizes++] = n;
    static const size_t big[] = {100, 101, 1000, 1001, 4096};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        sizes[n_sizes++] = big[i];
    for (int trial = 0; trial < 20; trial++) {
        for (size_t k = 0; k < n_sizes; k++) {
            size_t size = sizes[k];
            double *x = malloc(size * sizeof *x);
            /* alternate continuous values with a handful of distinct ones (many duplicates) */
            for (size_t i = 0; i < size; i++)
                x[i] = trial % 2 ? pl_rng_uniform(&rng) : (double)pl_rng_below(&rng, 1 + (uint64_t)trial % 5);
            check_median_against_sort(x, size);
            free(x);
        }
    }
}
END_TEST

START_TEST(median_inplace_on_adversarial_orders)
{
    /* sorted, reversed and constant arrays are where a naive quickselect goes wrong or quadratic */
    for (size_t n = 1; n <= 2001; n += 250) {
        double *x = malloc(n * sizeof *x);
        for (size_t i = 0; i < n; i++)
            x[i] = (double)i;
        check_median_against_sort(x, n);
        for (size_t i = 0; i < n; i++)
            x[i] = (double)(n - i);
        check_median_against_sort(x, n);
        for (size_t i = 0; i < n; i++)
            x[i] = 3.0;
        check_median_against_sort(x, n);
        free(x);
    }
    ck_assert(isnan(pl_median_inplace(NULL, 0)));
}
END_TEST

/* ---------------------------------------------------------------- bootstrap */

static pl_interval ratio_of_normals(uint64_t seed, size_t n, double mu_num, double mu_den, double rel_sigma)
{
    pl_rng rng;
    pl_rng_seed(&rng, seed);
    double *num = normal_samples(&rng, n, mu_num, rel_sigma * mu_num);
    double *den = normal_samples(&rng, n, mu_den, rel_sigma * mu_den);
    pl_interval iv;
    ck_assert_int_eq(pl_bootstrap_ratio(num, n, den, n, 2000, 0.95, seed ^ 0x5eed, &iv), 0);
    free(num);
    free(den);
    return iv;
}

START_TEST(bootstrap_point_estimate_is_the_ratio_of_medians)
{
    double num[] = {4, 6, 5};    /* median 5 */
    double den[] = {2, 1, 3, 2}; /* median 2 */
    pl_interval iv;
    ck_assert_int_eq(pl_bootstrap_ratio(num, 3, den, 4, 500, 0.9, 1, &iv), 0);
    ck_assert_double_eq_tol(iv.value, 2.5, EPS);
    ck_assert_double_eq_tol(iv.confidence, 0.9, EPS);
    ck_assert(iv.lo <= iv.value && iv.value <= iv.hi);
    ck_assert_int_eq(pl_bootstrap_ratio(num, 0, den, 4, 500, 0.9, 1, &iv), -1);
    ck_assert_int_eq(pl_bootstrap_ratio(num, 3, den, 0, 500, 0.9, 1, &iv), -1);
}
END_TEST

START_TEST(bootstrap_covers_the_true_ratio_and_narrows)
{
    /* true ratio of medians 12/10 = 1.2 */
    pl_interval few = ratio_of_normals(11, 50, 12.0, 10.0, 0.02);
    pl_interval many = ratio_of_normals(11, 800, 12.0, 10.0, 0.02);
    ck_assert_msg(few.lo <= 1.2 && 1.2 <= few.hi, "n=50: [%g, %g] misses 1.2", few.lo, few.hi);
    ck_assert_msg(many.lo <= 1.2 && 1.2 <= many.hi, "n=800: [%g, %g] misses 1.2", many.lo, many.hi);
    /* 16x the samples: about 4x narrower */
    ck_assert_double_lt(many.hi - many.lo, 0.5 * (few.hi - few.lo));
    ck_assert(few.significant && many.significant);
}
END_TEST

START_TEST(bootstrap_coverage_over_many_trials)
{
    /* A 95% interval covers the true ratio in about 95% of independent trials: 380 of 400, sd ~4.4. Both
     * bounds matter: a 90% interval (too narrow) covers ~360, a 99% one (too wide) ~396. */
    int covered = 0, trials = 400;
    for (int t = 0; t < trials; t++) {
        pl_rng rng;
        pl_rng_seed(&rng, 500 + (uint64_t)t);
        double *num = normal_samples(&rng, 60, 1.1, 0.033);
        double *den = normal_samples(&rng, 60, 1.0, 0.030);
        pl_interval iv;
        pl_bootstrap_ratio(num, 60, den, 60, 1000, 0.95, (uint64_t)t, &iv);
        covered += iv.lo <= 1.1 && 1.1 <= iv.hi;
        free(num);
        free(den);
    }
    ck_assert_msg(covered >= 372 && covered <= 392, "the true ratio was covered in %d of %d trials", covered, trials);
}
END_TEST

START_TEST(bootstrap_identical_distributions_are_not_significant)
{
    /* calibration: with no real difference a 95% interval excludes 1 about 5% of the time */
    int not_significant = 0;
    for (uint64_t t = 0; t < 100; t++) {
        pl_interval iv = ratio_of_normals(9000 + t, 100, 1.0, 1.0, 0.05);
        not_significant += !iv.significant;
    }
    ck_assert_msg(not_significant >= 90, "only %d of 100 identical pairs were judged the same", not_significant);
}
END_TEST

START_TEST(bootstrap_detects_a_ten_percent_shift)
{
    pl_interval iv = ratio_of_normals(77, 200, 1.1, 1.0, 0.01);
    ck_assert(iv.significant);
    ck_assert_double_eq_tol(iv.value, 1.1, 0.005);
    ck_assert_double_gt(iv.lo, 1.09);
    ck_assert_double_lt(iv.hi, 1.11);
    /* the other way round: a speedup below 1 */
    iv = ratio_of_normals(78, 200, 1.0, 1.1, 0.01);
    ck_assert(iv.significant && iv.hi < 1.0);
}
END_TEST

START_TEST(bootstrap_is_reproducible)
{
    pl_rng rng;
    pl_rng_seed(&rng, 3);
    double *a = normal_samples(&rng, 64, 1.0, 0.05);
    double *b = normal_samples(&rng, 64, 1.0, 0.05);
    pl_interval x, y, z;
    pl_bootstrap_ratio(a, 64, b, 64, 1000, 0.95, 123, &x);
    pl_bootstrap_ratio(a, 64, b, 64, 1000, 0.95, 123, &y);
    pl_bootstrap_ratio(a, 64, b, 64, 1000, 0.95, 124, &z);
    ck_assert(x.lo == y.lo && x.hi == y.hi && x.value == y.value);
    ck_assert_msg(x.lo != z.lo || x.hi != z.hi, "another seed gave the very same interval: is the seed used?");
    free(a);
    free(b);
}
END_TEST

/* A million samples a side took 237 s (2000 resamples x two million draws and selections); the order-statistic draw
 * above PL_BOOTSTRAP_EXACT_MAX samples makes it one sort a side. */
START_TEST(bootstrap_of_a_million_samples_is_fast)
{
    const size_t n = 1000000;
    pl_rng rng;
    pl_rng_seed(&rng, 5);
    double *a = normal_samples(&rng, n, 1.1, 0.05), *b = normal_samples(&rng, n, 1.0, 0.05);
    const double t0 = pl_now_s();
    pl_interval iv;
    ck_assert_int_eq(pl_bootstrap_ratio(a, n, b, n, 2000, 0.95, 9, &iv), 0);
    pl_stats st;
    ck_assert_int_eq(pl_stats_compute(a, n, &st), 0);
    const double took = pl_now_s() - t0;
    ck_assert_msg(took < 3.0, "a million samples took %.2f s", took); /* ~0.3 s; room for ASan on a loaded CI */
    ck_assert_msg(iv.lo < 1.1 && 1.1 < iv.hi && iv.hi - iv.lo < 0.002, "[%g, %g]", iv.lo, iv.hi);
    free(a);
    free(b);
}
END_TEST

/* The order-statistic draw is the same distribution as drawing the resample: its interval matches a brute-force
 * bootstrap of the same samples (odd and even n), and it covers the true ratio ~95% of the time. */
static double brute_quantile(const double *x, size_t n, int resamples, double q, pl_rng *rng)
{
    double *med = malloc((size_t)resamples * sizeof *med), *r = malloc(n * sizeof *r);
    for (int k = 0; k < resamples; k++) {
        for (size_t i = 0; i < n; i++)
            r[i] = x[pl_rng_below(rng, n)];
        qsort(r, n, sizeof *r, cmp_double);
        med[k] = n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    }
    qsort(med, (size_t)resamples, sizeof *med, cmp_double);
    const double v = pl_percentile_sorted(med, (size_t)resamples, q);
    free(med);
    free(r);
    return v;
}

START_TEST(bootstrap_order_statistics_match_resampling)
{
    for (size_t n = 600; n <= 601; n++) {
        pl_rng rng;
        pl_rng_seed(&rng, 40 + n);
        double *a = normal_samples(&rng, n, 1.0, 0.1), one = 1.0;
        pl_interval iv; /* against a constant 1: the interval is the bootstrap of a's median */
        pl_bootstrap_ratio(a, n, &one, 1, 4000, 0.90, 3, &iv);
        const double lo = brute_quantile(a, n, 4000, 5, &rng), hi = brute_quantile(a, n, 4000, 95, &rng);
        const double width = hi - lo;
        ck_assert_msg(fabs(iv.lo - lo) < 0.1 * width && fabs(iv.hi - hi) < 0.1 * width,
                      "n=%zu: [%g, %g] against resampling's [%g, %g]", n, iv.lo, iv.hi, lo, hi);
        free(a);
    }
    int covered = 0;
    for (int t = 0; t < 400; t++) {
        pl_rng rng;
        pl_rng_seed(&rng, 700 + (uint64_t)t);
        double *num = normal_samples(&rng, 400, 1.1, 0.033), *den = normal_samples(&rng, 400, 1.0, 0.030);
        pl_interval iv;
        pl_bootstrap_ratio(num, 400, den, 400, 1000, 0.95, (uint64_t)t, &iv);
        covered += iv.lo <= 1.1 && 1.1 <= iv.hi;
        free(num);
        free(den);
    }
    ck_assert_msg(covered >= 364 && covered <= 394, "the true ratio was covered in %d of 400 trials", covered);
}
END_TEST

/* ---------------------------------------------------------------- generator */

/* Pearson's chi-square of bucket counts against a uniform expectation. */
static double chi_square(const long *counts, int buckets, long total)
{
    double expected = (double)total / buckets, chi = 0;
    for (int i = 0; i < buckets; i++)
        chi += (counts[i] - expected) * (counts[i] - expected) / expected;
    return chi;
}

/* 99.9% quantile of chi-square with 9 degrees of freedom */
#define CHI2_9DF_999 27.877

START_TEST(rng_below_is_uniform)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        pl_rng rng;
        pl_rng_seed(&rng, seed);
        long counts[10] = {0}, out_of_range = 0;
        long total = 200000;
        for (long i = 0; i < total; i++) { /* one assertion after the loop: Check records every assertion passed */
            uint64_t v = pl_rng_below(&rng, 10);
            if (v < 10)
                counts[v]++;
            else
                out_of_range++;
        }
        ck_assert_msg(out_of_range == 0, "seed %llu: %ld values not below 10", (unsigned long long)seed, out_of_range);
        double chi = chi_square(counts, 10, total);
        ck_assert_msg(chi < CHI2_9DF_999, "seed %llu: chi-square %.1f", (unsigned long long)seed, chi);
    }
}
END_TEST

START_TEST(rng_below_has_no_modulo_bias)
{
    /* n = 2/3 of 2^64: a plain x % n would land in the lower half of [0, n) two times in three */
    uint64_t n = 0xAAAAAAAAAAAAAAAAull;
    pl_rng rng;
    pl_rng_seed(&rng, 99);
    long lower = 0, total = 100000, out_of_range = 0;
    for (long i = 0; i < total; i++) {
        uint64_t v = pl_rng_below(&rng, n);
        out_of_range += v >= n;
        lower += v < n / 2;
    }
    ck_assert_int_eq(out_of_range, 0);
    ck_assert_double_eq_tol((double)lower / total, 0.5, 0.01);
    ck_assert_uint_eq(pl_rng_below(&rng, 0), 0);
    ck_assert_uint_eq(pl_rng_below(&rng, 1), 0);
}
END_TEST

START_TEST(rng_uniform_in_unit_interval)
{
    pl_rng rng;
    pl_rng_seed(&rng, 5);
    long counts[10] = {0}, outside = 0;
    long total = 500000;
    double sum = 0;
    for (long i = 0; i < total; i++) {
        double u = pl_rng_uniform(&rng);
        if (u >= 0.0 && u < 1.0)
            counts[(int)(u * 10)]++;
        else
            outside++;
        sum += u;
    }
    ck_assert_msg(outside == 0, "%ld values outside [0, 1)", outside);
    ck_assert_double_lt(chi_square(counts, 10, total), CHI2_9DF_999);
    ck_assert_double_eq_tol(sum / total, 0.5, 0.002);
}
END_TEST

START_TEST(rng_is_seeded)
{
    pl_rng a, b, c;
    pl_rng_seed(&a, 17);
    pl_rng_seed(&b, 17);
    pl_rng_seed(&c, 18);
    int differs = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = pl_rng_next(&a);
        ck_assert_uint_eq(x, pl_rng_next(&b));
        differs += x != pl_rng_next(&c);
    }
    ck_assert_int_gt(differs, 95);
}
END_TEST

static Suite *stats_suite(void)
{
    Suite *s = suite_create("stats");
    TCase *exact = tcase_create("exact");
    tcase_set_timeout(exact, 60); /* well under a second alone; room for a loaded machine (ctest -j8) */
    tcase_add_test(exact, single_sample);
    tcase_add_test(exact, empty_set_is_an_error);
    tcase_add_test(exact, odd_count);
    tcase_add_test(exact, even_count);
    tcase_add_test(exact, two_samples);
    tcase_add_test(exact, ties);
    tcase_add_test(exact, percentiles_match_numpy);
    suite_add_tcase(s, exact);

    TCase *laws = tcase_create("distributions");
    tcase_set_timeout(laws, 60); /* well under a second alone; room for a loaded machine (ctest -j8) */
    tcase_add_test(laws, rel_noise_of_a_normal_law);
    tcase_add_test(laws, rel_noise_ignores_outliers);
    tcase_add_test(laws, median_of_uniform);
    tcase_add_test(laws, median_inplace_matches_sorting);
    tcase_add_test(laws, median_inplace_on_adversarial_orders);
    suite_add_tcase(s, laws);

    TCase *boot = tcase_create("bootstrap");
    tcase_set_timeout(boot, 120);
    tcase_add_test(boot, bootstrap_point_estimate_is_the_ratio_of_medians);
    tcase_add_test(boot, bootstrap_covers_the_true_ratio_and_narrows);
    tcase_add_test(boot, bootstrap_coverage_over_many_trials);
    tcase_add_test(boot, bootstrap_identical_distributions_are_not_significant);
    tcase_add_test(boot, bootstrap_detects_a_ten_percent_shift);
    tcase_add_test(boot, bootstrap_is_reproducible);
    tcase_add_test(boot, bootstrap_of_a_million_samples_is_fast);
    tcase_add_test(boot, bootstrap_order_statistics_match_resampling);
    suite_add_tcase(s, boot);

    TCase *rng = tcase_create("rng");
    tcase_set_timeout(rng, 60); /* well under a second alone; room for a loaded machine (ctest -j8) */
    tcase_add_test(rng, rng_below_is_uniform);
    tcase_add_test(rng, rng_below_has_no_modulo_bias);
    tcase_add_test(rng, rng_uniform_in_unit_interval);
    tcase_add_test(rng, rng_is_seeded);
    suite_add_tcase(s, rng);
    return s;
}

int main(void)
{
    return pl_run_suite(stats_suite());
}
