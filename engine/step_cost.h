/* Step counters, the floor: the FLOPs of a prefill or decode step and the fewest bytes it must move, per dense
 * layer, per MoE layer and for the whole model with its LM head, and the floor a step cannot beat on a GPU:
 * max(FLOPs / peak FLOP/s, bytes / memory bytes/s) for ceilings passed in.
 *
 * What is counted:
 *   FLOPs: 2·rows·K·N for every GEMM (qkv, o, gate_up, down, the router, each token's top_k experts, the LM head);
 *          attention 4·head_dim·heads per (query, key) pair it computes (Q·Kᵀ and P·V); norms, RoPE, softmax and
 *          the activation are left out (under 1% of a layer at these sizes).
 *   bytes: the weights the step reads once (a MoE layer: the fixed part and the experts the batch touches), the
 *          KV cache it reads once (decode: every sequence's cache_len tokens) and writes (one row per new token)
 *          in the batch's cache dtype (an FP8 cache: 1 byte an element plus a 4-byte scale a row),
 *          and the layer's input and output activations [tokens][hidden] bf16 (the rest can stay on chip).
 *          The model adds the embedding rows read, the final norm, the LM head and the fp32 logits written.
 * A prefill step computes the logits of each prompt's last token only. */
#ifndef PERFLAB_ENGINE_STEP_COST_H
#define PERFLAB_ENGINE_STEP_COST_H

#include <stdint.h>

#include "attention/attention.h"
#include "engine/memory_plan.h"
#include "engine/model_config.h"

typedef struct pl_step_cost {
    double flops;
    double weight_bytes, kv_read_bytes, kv_write_bytes, act_bytes;
    double bytes;           /* the sum of the four */
    double experts_touched; /* per MoE layer (expected or exact); 0 for a dense model */
} pl_step_cost;

typedef struct pl_ceilings {
    double flops_per_s; /* the peak of the step's math (bf16 or FP8 dense tensor cores) */
    double bytes_per_s; /* memory bandwidth (a measured copy rate) */
} pl_ceilings;

/* A batch for a step: n sequences; for prefill lens[b] is the prompt's length (its tokens, from an empty cache);
 * for decode lens[b] is the cache length the new token attends to (its own K/V included). routing (may be NULL):
 * for a MoE model the expert ids every token picked, [tokens][top_k], for an exact count of the experts touched;
 * NULL: the expected count under uniform routing. */
typedef struct pl_step_batch {
    int n;
    const int *lens;
    const int *routing;
    /* the KV cache's dtype: PL_KV_BF16 (0) 2 bytes an element; PL_KV_FP8_E4M3 1 byte an element and 4 bytes of scale
     * a (token, kv head) row (attention/kv_fp8.h), read and written alike */
    pl_kv_dtype kv_dtype;
} pl_step_batch;

/* Expected distinct experts when each of `tokens` tokens picks top_k distinct experts of `experts` uniformly:
 * E·(1 − (1 − k/E)^tokens). */
double pl_expected_experts(int experts, int top_k, int64_t tokens);
/* Distinct ids in routing[0..count) (ids in [0, experts)). */
int pl_distinct_experts(const int *routing, int64_t count, int experts);

/* One decoder layer's step (dense or MoE, from the config). 0, or -1 on a malformed batch. */
int pl_layer_prefill_cost(const pl_model_config *m, pl_weight_dtype dt, const pl_step_batch *b, pl_step_cost *out);
int pl_layer_decode_cost(const pl_model_config *m, pl_weight_dtype dt, const pl_step_batch *b, pl_step_cost *out);

/* The whole model with `layers` layers (0: the config's): layers · one layer + embedding, final norm, LM head. The
 * routing, if given, is taken as every layer's. */
int pl_model_prefill_cost(const pl_model_config *m, pl_weight_dtype dt, int layers, const pl_step_batch *b,
                          pl_step_cost *out);
int pl_model_decode_cost(const pl_model_config *m, pl_weight_dtype dt, int layers, const pl_step_batch *b,
                         pl_step_cost *out);

/* max(flops / flops_per_s, bytes / bytes_per_s), seconds. */
double pl_step_floor_s(const pl_step_cost *c, const pl_ceilings *ceil);

#endif
