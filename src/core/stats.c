#include "perflab/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pl_percentile_sorted(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return NAN;
    if (p <= 0)
        return sorted[0];
    if (p >= 100)
        return sorted[n - 1];
    double h = (double)(n - 1) * p / 100.0;
    size_t lo = (size_t)floor(h);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (h - (double)lo) * (sorted[hi] - sorted[lo]);
}

int pl_stats_compute(const double *x, size_t n, pl_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return -1;
    double *s = pl_xmalloc(n * sizeof *s);
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);

    /* Welford's update keeps the variance accurate when the samples are large and close together. */
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = s[i] - mean;
        mean += d / (double)(i + 1);
        m2 += d * (s[i] - mean);
    }
    out->n = n;
    out->mean = mean;
    out->stdev = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0.0;
    out->min = s[0];
    out->max = s[n - 1];
    out->p10 = pl_percentile_sorted(s, n, 10);
    out->p25 = pl_percentile_sorted(s, n, 25);
    out->p50 = pl_percentile_sorted(s, n, 50);
    out->p75 = pl_percentile_sorted(s, n, 75);
    out->p90 = pl_percentile_sorted(s, n, 90);
    out->p99 = pl_percentile_sorted(s, n, 99);
    out->median = out->p50;
    out->iqr = out->p75 - out->p25;
    out->rel_noise = out->median > 0 ? (out->iqr / 1.349) / out->median : 0.0;
    out->cv = mean > 0 ? out->stdev / mean : 0.0;
    free(s);
    return 0;
}

/* Hoare's selection: the k-th smallest, reordering x. Signed indices: j may step below lo. */
static double select_kth(double *x, size_t n, size_t k)
{
    long lo = 0, hi = (long)n - 1, kk = (long)k;
    while (lo < hi) {
        double pivot = x[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                double t = x[i];
                x[i] = x[j];
                x[j] = t;
                i++;
                j--;
            }
        }
        /* now x[lo..j] <= pivot <= x[i..hi], and everything strictly between equals the pivot */
        if (kk <= j)
            hi = j;
        else if (kk >= i)
            lo = i;
        else
            return x[kk];
    }
    return x[kk];
}

double pl_median_inplace(double *x, size_t n)
{
    if (n == 0)
        return NAN;
    double upper = select_kth(x, n, n / 2);
    if (n % 2)
        return upper;
    /* the lower middle is the largest of the elements left of n/2 after the selection */
    double lower = x[0];
    for (size_t i = 1; i < n / 2; i++)
        if (x[i] > lower)
            lower = x[i];
    return 0.5 * (lower + upper);
}

/* ---- the median of a resample ----
 * Up to PL_BOOTSTRAP_EXACT_MAX samples a resample is drawn (n indices) and its median selected: O(n) a resample.
 * Above, the same distribution is drawn in O(1) from the sorted samples: the k-th smallest of n indices drawn with
 * replacement is sorted[floor(n U)] with U the k-th order statistic of n uniforms, which is Beta(k, n + 1 - k)
 * distributed; the (k+1)-th follows as the smallest of the n - k uniforms above it. So a million samples take one
 * sort, not 2000 x 2 x a million draws. */
#define PL_BOOTSTRAP_EXACT_MAX 256

static double normal(pl_rng *rng)
{
    double u;
    do
        u = pl_rng_uniform(rng);
    while (u <= 0);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * pl_rng_uniform(rng));
}

/* Marsaglia and Tsang's method, shape >= 1 (ACM TOMS 26(3), 2000). */
static double gamma_draw(double shape, pl_rng *rng)
{
    const double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x, v;
        do {
            x = normal(rng);
            v = 1 + c * x;
        } while (v <= 0);
        v = v * v * v;
        const double u = pl_rng_uniform(rng);
        if (u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
            return d * v;
    }
}

static double sorted_at(const double *sorted, size_t n, double u)
{
    size_t i = (size_t)(u * (double)n);
    return sorted[i < n ? i : n - 1];
}

typedef struct resampler {
    const double *x;
    size_t n;
    double *sorted; /* large samples only */
} resampler;

static void resampler_init(resampler *r, const double *x, size_t n)
{
    r->x = x;
    r->n = n;
    r->sorted = NULL;
    if (n > PL_BOOTSTRAP_EXACT_MAX) {
        r->sorted = pl_xmalloc(n * sizeof *r->sorted);
        memcpy(r->sorted, x, n * sizeof *r->sorted);
        qsort(r->sorted, n, sizeof *r->sorted, cmp_double);
    }
}

static double resampled_median(const resampler *r, double *scratch, pl_rng *rng)
{
    const size_t n = r->n;
    if (!r->sorted) {
        for (size_t i = 0; i < n; i++)
            scratch[i] = r->x[pl_rng_below(rng, n)];
        return pl_median_inplace(scratch, n);
    }
    const size_t k = n / 2 + n % 2; /* the upper middle for odd n, the lower for even n (1-based) */
    const double a = gamma_draw((double)k, rng), b = gamma_draw((double)(n + 1 - k), rng);
    const double u = a / (a + b);
    if (n % 2)
        return sorted_at(r->sorted, n, u);
    double w;
    do
        w = pl_rng_uniform(rng);
    while (w <= 0);
    const double next = u + (1 - u) * (1 - pow(w, 1.0 / (double)(n - k)));
    return 0.5 * (sorted_at(r->sorted, n, u) + sorted_at(r->sorted, n, next));
}

int pl_bootstrap_ratio(const double *num, size_t n_num, const double *den, size_t n_den, int resamples,
                       double confidence, uint64_t seed, pl_interval *out)
{
    memset(out, 0, sizeof *out);
    if (n_num == 0 || n_den == 0)
        return -1;
    if (resamples < 100)
        resamples = 100;
    if (!(confidence > 0 && confidence < 1))
        confidence = 0.95;

    size_t nmax = n_num > n_den ? n_num : n_den;
    double *scratch = pl_xmalloc(nmax * sizeof *scratch);
    resampler rn, rd;
    resampler_init(&rn, num, n_num);
    resampler_init(&rd, den, n_den);
    memcpy(scratch, num, n_num * sizeof *scratch);
    double med_num = pl_median_inplace(scratch, n_num);
    memcpy(scratch, den, n_den * sizeof *scratch);
    double med_den = pl_median_inplace(scratch, n_den);

    double *ratios = pl_xmalloc((size_t)resamples * sizeof *ratios);
    pl_rng rng;
    pl_rng_seed(&rng, seed);
    for (int r = 0; r < resamples; r++) {
        double a = resampled_median(&rn, scratch, &rng);
        double b = resampled_median(&rd, scratch, &rng);
        ratios[r] = b > 0 ? a / b : INFINITY;
    }
    qsort(ratios, (size_t)resamples, sizeof *ratios, cmp_double);
    double tail = (1.0 - confidence) / 2.0 * 100.0;
    out->value = med_den > 0 ? med_num / med_den : INFINITY;
    out->lo = pl_percentile_sorted(ratios, (size_t)resamples, tail);
    out->hi = pl_percentile_sorted(ratios, (size_t)resamples, 100.0 - tail);
    out->confidence = confidence;
    out->significant = out->lo > 1.0 || out->hi < 1.0;
    free(ratios);
    free(scratch);
    free(rn.sorted);
    free(rd.sorted);
    return 0;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void pl_rng_seed(pl_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t pl_rng_next(pl_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double pl_rng_uniform(pl_rng *r)
{
    return (double)(pl_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t pl_rng_below(pl_rng *r, uint64_t n)
{
    if (n <= 1)
        return 0;
    /* rejection keeps every value equally likely */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
        x = pl_rng_next(r);
    } while (x >= limit);
    return x % n;
}
