/* The seeded generator and the requests of a synthetic serving workload. */
#include "engine/serve_workload.h"

#include "engine/mix64.h"

#include <math.h>
#include <stdio.h>

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void pl_serve_rng_seed(pl_serve_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = pl_splitmix64(&seed);
}

uint64_t pl_serve_rng_next(pl_serve_rng *r)
{
    uint64_t *s = r->s;
    const uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double pl_serve_rng_uniform(pl_serve_rng *r)
{
    return (double)(pl_serve_rng_next(r) >> 11) * 0x1.0p-53;
}

int64_t pl_serve_rng_range(pl_serve_rng *r, int64_t lo, int64_t hi)
{
    const uint64_t span = (uint64_t)(hi - lo) + 1; /* 0 means the whole 64-bit range */
    if (span == 0)
        return (int64_t)pl_serve_rng_next(r);
    const uint64_t limit = UINT64_MAX - UINT64_MAX % span; /* draws at or past it would bias the low values */
    uint64_t x;
    do
        x = pl_serve_rng_next(r);
    while (x >= limit);
    return lo + (int64_t)(x % span);
}

double pl_serve_rng_normal(pl_serve_rng *r)
{
    const double u1 = 1.0 - pl_serve_rng_uniform(r), u2 = pl_serve_rng_uniform(r); /* u1 in (0, 1] */
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

double pl_serve_rng_exponential(pl_serve_rng *r, double rate)
{
    return -log(1.0 - pl_serve_rng_uniform(r)) / rate;
}

void pl_serve_len_bounds(int len, double range_ratio, int min_len, int *lo, int *hi)
{
    int a = (int)floor(len * (1.0 - range_ratio)), b = (int)ceil(len * (1.0 + range_ratio));
    a = a < min_len ? min_len : a;
    *lo = a;
    *hi = b < a ? a : b;
}

static int draw_len(pl_serve_rng *r, const pl_serve_workload_spec *spec, int len, int min_len)
{
    if (spec->dist == PL_SERVE_LEN_LOGNORMAL) {
        const double sigma = spec->lognormal_sigma > 0 ? spec->lognormal_sigma : 1.0;
        const double x = round(exp(log((double)len) - 0.5 * sigma * sigma + sigma * pl_serve_rng_normal(r)));
        const double cap = 16.0 * len;
        return x < 1 ? 1 : x > cap ? (int)cap : (int)x;
    }
    int lo, hi;
    pl_serve_len_bounds(len, spec->range_ratio, min_len, &lo, &hi);
    return (int)pl_serve_rng_range(r, lo, hi);
}

static int bad(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return -1;
}

int pl_serve_workload_make(const pl_serve_workload_spec *spec, pl_serve_request *out, char *err, size_t errlen)
{
    if (spec->num_prompts < 1)
        return bad(err, errlen, "--num-prompts must be at least 1");
    if (spec->input_len < 1 || spec->output_len < 1)
        return bad(err, errlen, "--random-input-len and --random-output-len must be at least 1");
    if (!(spec->range_ratio >= 0.0 && spec->range_ratio < 1.0))
        return bad(err, errlen,
                   "--random-range-ratio must be in [0, 1) (vLLM's range: lengths in [len*(1-r), len*(1+r)])");
    if (spec->dist != PL_SERVE_LEN_UNIFORM && spec->dist != PL_SERVE_LEN_LOGNORMAL)
        return bad(err, errlen, "the length distribution must be uniform or lognormal");
    if (spec->dist == PL_SERVE_LEN_LOGNORMAL && !(spec->lognormal_sigma >= 0.0 && spec->lognormal_sigma <= 4.0))
        return bad(err, errlen, "the lognormal sigma must be in [0, 4] (0: 1.0)");
    if (spec->request_rate != spec->request_rate)
        return bad(err, errlen, "--request-rate must be a number of requests per second or inf");
    const int burst = spec->request_rate <= 0.0 || isinf(spec->request_rate);
    pl_serve_rng r;
    pl_serve_rng_seed(&r, spec->seed);
    double t = 0.0;
    for (int i = 0; i < spec->num_prompts; i++) {
        out[i].id = i;
        out[i].input_len = draw_len(&r, spec, spec->input_len, 1);
        out[i].output_len = draw_len(&r, spec, spec->output_len, 1);
        t += burst ? 0.0 : pl_serve_rng_exponential(&r, spec->request_rate);
        out[i].arrival_s = t;
    }
    return 0;
}
