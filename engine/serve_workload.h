/* A synthetic serving workload: the requests of a `perflab serve` run, named as vLLM's serving benchmark
 * (`vllm bench serve`, benchmarks/benchmark_serving.py) names them, so the same workload can be set in both.
 *
 * Lengths (per request, input and output drawn independently):
 *   PL_SERVE_LEN_UNIFORM   vLLM's random dataset: an integer uniform in [floor(len·(1−r)), ceil(len·(1+r))], both
 *                          ends included, r = --random-range-ratio in [0, 1) (vLLM refuses r outside [0, 1); r = 0,
 *                          vLLM's default, gives the fixed length). Lengths are at least 1 (vLLM clamps outputs so;
 *                          a prompt needs one token to prefill).
 *                          vLLM subtracts the tokenizer's special tokens from the input length; there is no
 *                          tokenizer here, so the input length is the number of tokens the engine prefills.
 *   PL_SERVE_LEN_LOGNORMAL a long tail: round(exp(N(μ, σ²))) with μ = ln(len) − σ²/2 so the mean is len, σ =
 *                          lognormal_sigma (1.0 if 0), clamped to [1, 16·len]. Not a vLLM mode.
 * Arrivals (vLLM's --request-rate with burstiness 1): a Poisson process, exponential gaps of mean 1/rate seconds,
 *   the first request at its first gap; rate <= 0 or infinite ("inf") puts every request at t = 0.
 *
 * The generator is xoshiro256** (Blackman and Vigna, 2018) seeded by four outputs of SplitMix64 from the seed;
 * draws, in request order: input length, output length, arrival gap. Uniform doubles take the top 53 bits; integers
 * in a range use rejection (no modulo bias); normals use Box–Muller (one normal per pair of uniforms). The same seed
 * gives the same requests on every machine (integer arithmetic and IEEE double log/exp/sqrt/cos only). It is the
 * generator of include/perflab/stats.h's pl_rng, kept here under its own name because the engine links the
 * kernels alone (scripts/check_layout.py). */
#ifndef PERFLAB_ENGINE_SERVE_WORKLOAD_H
#define PERFLAB_ENGINE_SERVE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct pl_serve_rng {
    uint64_t s[4];
} pl_serve_rng;

void pl_serve_rng_seed(pl_serve_rng *r, uint64_t seed);
uint64_t pl_serve_rng_next(pl_serve_rng *r);
double pl_serve_rng_uniform(pl_serve_rng *r);                        /* [0, 1) */
int64_t pl_serve_rng_range(pl_serve_rng *r, int64_t lo, int64_t hi); /* [lo, hi], lo <= hi */
double pl_serve_rng_normal(pl_serve_rng *r);                         /* N(0, 1) */
double pl_serve_rng_exponential(pl_serve_rng *r, double rate);       /* mean 1 / rate */

typedef enum { PL_SERVE_LEN_UNIFORM = 0, PL_SERVE_LEN_LOGNORMAL = 1 } pl_serve_len_dist;

typedef struct pl_serve_workload_spec {
    int num_prompts;    /* --num-prompts */
    int input_len;      /* --random-input-len */
    int output_len;     /* --random-output-len */
    double range_ratio; /* --random-range-ratio, [0, 1) */
    pl_serve_len_dist dist;
    double lognormal_sigma; /* PL_SERVE_LEN_LOGNORMAL only; 0: 1.0 */
    double request_rate;    /* --request-rate, requests/s; <= 0 or INFINITY: all at t = 0 */
    uint64_t seed;          /* --seed */
} pl_serve_workload_spec;

typedef struct pl_serve_request {
    int id; /* its index, in arrival order */
    int input_len, output_len;
    double arrival_s; /* when the client sends it (before --max-concurrency holds it back) */
} pl_serve_request;

/* The interval a length is drawn from under PL_SERVE_LEN_UNIFORM, its low end at least min_len. */
void pl_serve_len_bounds(int len, double range_ratio, int min_len, int *lo, int *hi);

/* Fills out[0..spec->num_prompts). 0, or -1 with one line in err naming the bad field and its range. */
int pl_serve_workload_make(const pl_serve_workload_spec *spec, pl_serve_request *out, char *err, size_t errlen);

#endif
