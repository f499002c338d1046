/* Summary statistics of timing samples and the bootstrap interval of a ratio of medians. */
#ifndef PERFLAB_STATS_H
#define PERFLAB_STATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_stats {
    size_t n;
    double median; /* the headline */
    double mean, stdev, min, max;
    double p10, p25, p50, p75, p90, p99;
    double iqr;       /* p75 - p25 */
    double rel_noise; /* robust relative spread: (IQR / 1.349) / median, the stdev/mean of a normal law */
    double cv;        /* stdev / mean (classic, outlier-sensitive) */
} pl_stats;

/* Percentiles interpolate linearly between closest ranks (Hyndman-Fan type 7, as numpy's default).
 * Returns -1 when n == 0. */
int pl_stats_compute(const double *x, size_t n, pl_stats *out);
double pl_percentile_sorted(const double *sorted, size_t n, double p); /* p in [0, 100] */
/* Median of x (reordered in place; average of the two middle values when n is even). */
double pl_median_inplace(double *x, size_t n);

typedef struct pl_interval {
    double value; /* the point estimate */
    double lo, hi;
    double confidence; /* e.g. 0.95 */
    int significant;   /* 1 when [lo, hi] excludes 1 */
} pl_interval;

/* median(num) / median(den) with a percentile-bootstrap interval: both sample sets are resampled with
 * replacement, independently, `resamples` times from a seeded generator (reproducible).
 * Speedup of a variant = median(baseline) / median(variant): num = baseline samples, den = variant samples.
 * Returns -1 when either set is empty. */
int pl_bootstrap_ratio(const double *num, size_t n_num, const double *den, size_t n_den, int resamples,
                       double confidence, uint64_t seed, pl_interval *out);

/* A small, fast, seedable generator (xoshiro256**), for the bootstrap and for host self-tests. */
typedef struct pl_rng {
    uint64_t s[4];
} pl_rng;
void pl_rng_seed(pl_rng *r, uint64_t seed);
uint64_t pl_rng_next(pl_rng *r);
double pl_rng_uniform(pl_rng *r);             /* [0, 1) */
uint64_t pl_rng_below(pl_rng *r, uint64_t n); /* [0, n), unbiased */

#ifdef __cplusplus
}
#endif
#endif
