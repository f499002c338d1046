/* One mixture-of-experts decoder layer's decode step over the paged KV cache (kv_pages.h), Qwen3-MoE and Mixtral:
 *
 *   h    = x + attention(RMSNorm(x, attn_norm))·oᵀ   the dense layer's attention half (dense_layer.h), with the
 *                                                    qk-norm (an RMSNorm of each q and k head) where the model has it
 *   xn   = RMSNorm(h, mlp_norm)
 *   ids, weights = top_k of xn · routerᵀ (fp32 logits), softmax over the chosen logits (moe_ops.h)
 *   the tokens grouped by expert (counts, offsets, a permutation in slot order), xn's rows gathered in that order
 *   gu   = xg · gate_up[e]ᵀ (each row by its expert's weights), act = SiLU(gate) · up, y = act · down[e]ᵀ
 *   out  = h + Σ_i weights[t][i] · y[row of (t, i)]
 *
 * The recipe (pl_moe_recipe) names how each operation runs: the attention half and the norms exactly as the dense
 * layer's recipe (pl_layer_recipe); the experts' GEMMs either
 *   PL_MOE_EXPERTS_LOOP: PyTorch's way, one GEMM a expert with tokens on its gathered rows (cuBLAS or
 *     pl_gemm_bf16 as the layer recipe's gemm), the gate_up GEMM, SwiGLU and down GEMM of each expert in turn. The
 *     expert counts are read back to the host for it: this recipe alone synchronises `stream` (once a step) and
 *     cannot be captured in a CUDA graph;
 *   PL_MOE_EXPERTS_GROUPED: the library's grouped GEMM (gemm/grouped.h, pl_grouped_gemm_bf16, sm_90), one launch
 *     for the gate_up GEMMs of every expert and one for the down GEMMs: the group sizes stay on the device (the
 *     offsets), the launch's row count is rows·top_k, known on the host. No host read: graph-capturable.
 * and with `fused` the router and the top-k in one kernel and the residual add in the combine (one rounding);
 * unfused, the router is cuBLAS's GEMM into fp32 logits then a top-k kernel, and the combine's sum is rounded to bf16
 * before a residual-add kernel. Every intermediate is stored in bf16 except the logits and the routing weights
 * (fp32), as an eager framework stores them. */
#ifndef PERFLAB_ENGINE_MOE_LAYER_H
#define PERFLAB_ENGINE_MOE_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/dense_layer.h"
#include "engine/moe_ops.h"
#include "engine/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_moe_experts {
    PL_MOE_EXPERTS_LOOP = 0,    /* a GEMM a expert with tokens, the counts read back on the host */
    PL_MOE_EXPERTS_GROUPED = 1, /* pl_grouped_gemm_bf16 over device offsets (sm_90) */
} pl_moe_experts;

typedef struct pl_moe_recipe {
    pl_layer_recipe layer; /* the attention half, the norms, the loop's GEMMs, the fused forms; cublas is needed
                              for cuBLAS GEMMs and for the unfused router */
    pl_moe_experts experts;
} pl_moe_recipe;

/* Bytes of the workspace a step of up to max_rows rows needs (decode: sequences; prefill: tokens), with any recipe. */
size_t pl_moe_workspace_bytes(const pl_model_config *m, int max_rows, int sm_count);

/* The layer's decode step (as pl_dense_layer_decode): x [batch][hidden] bf16 in, out the residual stream after the
 * layer (out may be x; both 16-byte aligned). Enqueues on `stream` and never synchronises, except the loop recipe's
 * one read of the expert counts (above). Returns the first failing call's error; cudaErrorInvalidValue when the
 * step is malformed (no rows, a workspace smaller than pl_moe_workspace_bytes, a dense model, more than
 * PL_MOE_MAX_EXPERTS experts or PL_MOE_MAX_TOP_K per token, a head_dim or GQA group the attention kernels do not
 * take, cuBLAS needed and no handle); cudaErrorNotSupported for a cuBLAS failure, or (before
 * any launch) the grouped recipe on a GPU other than sm_90 or on shapes the grouped GEMM does not take
 * (pl_grouped_gemm_supports: hidden and the expert width multiples of 8). */
cudaError_t pl_moe_layer_decode(const pl_moe_weights *w, const pl_moe_recipe *r, const pl_decode_step *step,
                                const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                size_t workspace_bytes, cudaStream_t stream);

/* The layer's prefill step (as pl_dense_layer_prefill: each prompt's tokens attend causally to the prompt's own,
 * which start at position 0), then every token through its experts as in decode. The same errors as decode; also
 * cudaErrorInvalidValue for malformed prompt starts or a prompt the flash attention kernels do not take. */
cudaError_t pl_moe_layer_prefill(const pl_moe_weights *w, const pl_moe_recipe *r, const pl_prefill_step *step,
                                 const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                 size_t workspace_bytes, cudaStream_t stream);

/* Where the last step's routing lies in the workspace (device pointers): ids and weights [rows][top_k], counts
 * [experts], offsets [experts + 1]; rows and sm_count the step's batch and its recipe's sm_count (the workspace's
 * layout depends on both). For checks and counters (the experts the batch touched). */
typedef struct pl_moe_routing_view {
    const int *ids;
    const float *weights;
    const int *counts, *offsets;
} pl_moe_routing_view;

void pl_moe_routing_in(const pl_model_config *m, int rows, int sm_count, const void *workspace,
                       pl_moe_routing_view *out);

#ifdef __cplusplus
}
#endif
#endif
