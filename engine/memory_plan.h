/* Weights and the memory plan: the bytes of every weight tensor of a layer and of the model in bf16 or FP8, the
 * paged KV cache, the activations of one step, and the plan that checks their sum against the GPU's free memory
 * BEFORE anything is allocated (the free bytes are passed in, so the plan is computed and tested on the host).
 *
 * Weight layout, as the engine stores them (row-major [rows][cols], a GEMM's B operand [N][K]):
 *   attn_norm [hidden]; qkv [(heads + 2·kv_heads)·head_dim][hidden] (Q, K and V fused); q_norm, k_norm [head_dim]
 *   (qk-norm models); o [hidden][heads·head_dim]; mlp_norm [hidden];
 *   dense: gate_up [2·intermediate][hidden] (gate and up fused), down [hidden][intermediate];
 *   MoE: router [experts][hidden]; per expert gate_up [2·expert_intermediate][hidden], down [hidden][expert_inter];
 *   model: embedding [vocab][hidden], final_norm [hidden], lm_head [vocab][hidden] unless tied.
 * The norms, the router and the embedding table stay bf16 in every dtype; the GEMM weights (qkv, o, gate_up, down,
 * the experts' and the untied LM head) take the chosen dtype:
 *   bf16        2 bytes an element;
 *   fp8         e4m3, 1 byte an element and one fp32 scale per tensor (per expert for the experts);
 *   fp8-block   e4m3 and one fp32 scale per 128×128 block: ceil(rows/128)·ceil(cols/128) scales a tensor. */
#ifndef PERFLAB_ENGINE_MEMORY_PLAN_H
#define PERFLAB_ENGINE_MEMORY_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "attention/attention.h"
#include "engine/model_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_weight_dtype { PL_WEIGHTS_BF16, PL_WEIGHTS_FP8, PL_WEIGHTS_FP8_BLOCK } pl_weight_dtype;

#define PL_FP8_BLOCK 128
#define PL_GIB       (1024.0 * 1024.0 * 1024.0)

/* "bf16", "fp8", "fp8-block"; pl_weight_dtype_parse returns -1 for another name. */
const char *pl_weight_dtype_name(pl_weight_dtype dt);
int pl_weight_dtype_parse(const char *name, pl_weight_dtype *out);

/* One weight tensor: `copies` of [rows][cols] (copies = experts for an expert's tensor, else 1). */
typedef struct pl_weight_tensor {
    const char *name;
    int64_t rows, cols;
    int copies;
    int quantized; /* 1: takes the weight dtype; 0: always bf16 (norms, router, embedding) */
    int per_expert;
} pl_weight_tensor;

#define PL_MAX_LAYER_TENSORS 10

/* The tensors of one decoder layer of m, in the order above; returns how many (<= PL_MAX_LAYER_TENSORS). */
int pl_layer_tensors(const pl_model_config *m, pl_weight_tensor *out);

/* Bytes of one copy of t in dtype dt: the elements and, through *scales (may be NULL), the scale bytes included. */
uint64_t pl_tensor_bytes(const pl_weight_tensor *t, pl_weight_dtype dt, uint64_t *scales);

/* One layer's weights. A step that touches only some experts reads fixed + touched · expert bytes. */
typedef struct pl_layer_bytes {
    uint64_t params; /* elements, all experts */
    uint64_t fixed;  /* bytes read whatever the routing: norms, attention, router, or the dense MLP */
    uint64_t expert; /* one expert's bytes (gate_up and down with their scales); 0 for a dense layer */
    uint64_t scales; /* of the total, the FP8 scales' bytes */
    uint64_t total;  /* fixed + experts · expert */
} pl_layer_bytes;

void pl_layer_bytes_of(const pl_model_config *m, pl_weight_dtype dt, pl_layer_bytes *out);

/* The whole model's weights with `layers` layers (0: the config's). */
typedef struct pl_weight_bytes {
    pl_layer_bytes layer;
    int layers;
    uint64_t params;
    uint64_t embedding, final_norm, lm_head; /* lm_head 0 when tied */
    uint64_t layers_total, total;
} pl_weight_bytes;

void pl_weight_bytes_of(const pl_model_config *m, pl_weight_dtype dt, int layers, pl_weight_bytes *out);

/* The KV cache's dtype by name: "bf16" (PL_KV_BF16), "fp8" (PL_KV_FP8_E4M3); parse returns -1 for another name. */
const char *pl_kv_dtype_name(pl_kv_dtype dt);
int pl_kv_dtype_parse(const char *name, pl_kv_dtype *out);

/* The KV cache: one K and one V pool per layer, each [pages][page_size][kv_heads][head_dim] (engine/kv_pages.h),
 * bf16, or e4m3 with a float scale per (token, kv head) row beside each pool (PL_KV_FP8_E4M3: head_dim + 4 bytes a
 * row instead of 2·head_dim, 0.516x at head_dim 128). Bytes of one page in all layers, K and V (0 for an unknown
 * dtype). */
uint64_t pl_kv_page_bytes(const pl_model_config *m, int layers, int page_size, pl_kv_dtype kv_dtype);

/* The activations and workspace of one step, reused by every layer: at most max_tokens tokens a step (prefill) and
 * max_batch sequences (decode), contexts up to max_context tokens. Buffers: the residual stream and its norm
 * [T][hidden] ×2, qkv [T][(heads+2kv)·hd], the attention output [T][heads·hd], the MLP's unfused gate_up
 * [T][2·width] and its activation [T][width] (MoE: T·top_k rows, plus router logits fp32 [T][experts], the
 * routing (ids, weights, the permutation) and the gathered and expert outputs [T·top_k][hidden]), the attention's
 * workspace (prefill log-sum-exp [T][heads] fp32; decode partials per 256-token chunk: [B][heads][chunks][hd+2]
 * fp32), logits fp32 [B][vocab] and the sampled tokens. T = max(max_tokens, max_batch). */
uint64_t pl_activation_bytes(const pl_model_config *m, int max_batch, int max_tokens, int max_context);

typedef struct pl_plan_request {
    const pl_model_config *model;
    int layers; /* 0: the config's */
    pl_weight_dtype dtype;
    pl_kv_dtype kv_dtype; /* the KV cache's (PL_KV_BF16, 0, for a zeroed request) */
    int page_size;
    int pages;              /* KV pages; 0: as many as fit once the rest is placed */
    int max_batch;          /* sequences a decode step */
    int max_tokens;         /* tokens a prefill step */
    int max_context;        /* tokens a sequence; the cache must hold max_batch full sequences */
    uint64_t free_bytes;    /* the GPU's free memory (cudaMemGetInfo) */
    uint64_t reserve_bytes; /* kept free for the CUDA context's growth, cuBLAS workspaces and graphs */
} pl_plan_request;

typedef struct pl_plan {
    pl_weight_bytes weights;
    uint64_t page_bytes;     /* in the request's cache dtype */
    int pages, pages_needed; /* planned; the fewest that hold max_batch sequences of max_context */
    uint64_t kv_bytes, activation_bytes, reserve_bytes, total, free_bytes;
} pl_plan;

/* Places weights, activations, the reserve and the KV cache. 0: *out is the plan and total <= free_bytes. -1: it
 * does not fit (or the request is malformed), with one line in err naming what does not fit, by how much, and the
 * fix; *out is still filled with the figures. */
int pl_plan_make(const pl_plan_request *req, pl_plan *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
