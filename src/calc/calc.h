/* perflab calc: the calculators, host code that needs no GPU (docs/calc.md states every formula).
 *   kv-cache        bytes of the KV cache per token, per sequence and in all (MHA, GQA, MQA, MLA; paged), and the
 *                   largest batch x tokens that fits a memory budget
 *   cost-per-token  energy and money per token from power and throughput (or from a run's measured power and time)
 *   precision       the error of each dtype against float64 on the same random inputs (precision.h) */
#ifndef PERFLAB_CALC_CALC_H
#define PERFLAB_CALC_CALC_H

#include <jansson.h>
#include <stddef.h>

#include "perflab/results.h"

#define PL_GB 1e9 /* the calculators' GB: 10^9 bytes, as GPU memory and datasheets count */

/* ---- kv-cache ---- */

/* A published model's attention shape (its config.json). */
typedef struct pl_kv_model {
    const char *name;
    int layers, hidden, heads, kv_heads, head_dim;
    int kv_latent_dim; /* MLA: the width cached per token and layer (kv_lora_rank + qk_rope_head_dim); 0: none */
    double params_b;   /* parameters, billions */
    const char *source;
} pl_kv_model;

extern const pl_kv_model pl_kv_models[];
extern const size_t pl_kv_model_count;
const pl_kv_model *pl_kv_model_find(const char *name);

typedef struct pl_kv_request {
    int layers, hidden, heads, kv_heads, head_dim, kv_latent_dim; /* 0: not given */
    long long tokens, batch, page_tokens;                         /* page_tokens 0: no paging */
    const char *dtype;                                            /* fp32 | bf16 | fp16 | fp8 | int8 | fp4 */
    double budget_gb;        /* the memory the cache may use before the reserves below; <= 0: none known */
    const char *budget_from; /* where budget_gb came from ("--gpu-mem-gb", "free memory of GPU 0 ...") */
    double kv_overhead_frac; /* the cache's own overhead (fragmentation, block tables) as a fraction of its size */
    double reserve_activations_gb, weights_gb;
} pl_kv_request;

typedef struct pl_kv_result {
    const char *layout; /* MHA, GQA, MQA or MLA */
    int kv_heads, head_dim;
    double dtype_bytes;
    double bytes_per_token_layer, bytes_per_token;
    long long tokens_padded; /* per sequence, rounded up to whole pages */
    double bytes_per_seq, bytes_total, bytes_total_with_overhead;
    double budget_bytes; /* for the cache: budget - activations - weights; NaN when no budget */
    int fits;
    long long max_batch;      /* at --tokens */
    long long max_tokens_seq; /* per sequence at --batch (whole pages) */
    long long max_tokens;     /* in all, over every sequence */
} pl_kv_result;

/* -1 with one line naming the bad or missing flag. */
int pl_kv_compute(const pl_kv_request *req, pl_kv_result *out, char *err, size_t errlen);
json_t *pl_kv_json(const pl_kv_request *req, const pl_kv_result *r);
/* The bytes of one element of a dtype name; 0 when unknown. */
double pl_calc_dtype_bytes(const char *dtype);

/* ---- cost-per-token ---- */

typedef struct pl_cost_request {
    double avg_power_w, throughput_tps; /* W, tokens/s */
    double electricity_per_kwh;         /* $ per kWh */
    double pue;                         /* facility power / IT power (>= 1) */
    double gpu_hour_cost;               /* $ per GPU-hour, amortized hardware (0: none) */
} pl_cost_request;

typedef struct pl_cost_result {
    double joules_per_token;          /* at the GPU */
    double facility_joules_per_token; /* x PUE */
    double kwh_per_mtok;
    double energy_per_mtok, hardware_per_mtok, total_per_mtok; /* $ per million tokens */
    double tokens_per_kwh;
} pl_cost_result;

int pl_cost_compute(const pl_cost_request *req, pl_cost_result *out, char *err, size_t errlen);
/* The power (mean of --profile minimal's telemetry) and throughput (tokens_per_iteration / median time) of one
 * variant of a run. -1 with one line when the run lacks either. */
int pl_cost_from_run(const pl_run *run, const char *target, const char *variant, double tokens_per_iteration,
                     double *power_w, double *throughput_tps, double *median_ms, char *err, size_t errlen);
json_t *pl_cost_json(const pl_cost_request *req, const pl_cost_result *r);

#endif
