/* The MoE layer's own kernels (moe_ops.cu): routing, grouping the tokens by expert, gathering their rows and
 * combining the experts' outputs back in token order. Every launcher enqueues on `stream`, never synchronises and
 * never reads the routing on the host (a CUDA graph can capture it), and returns the launch's error;
 * cudaErrorInvalidValue for bad sizes.
 *
 * Routing (Qwen3's and Mixtral's): each token's router logits in fp32 (rounding them to bf16 would let a
 * summation-order rounding flip an expert choice between two runs of the same step), its top_k experts by logit
 * (a tie goes to the lower expert id), and their weights the softmax over those top_k logits. This is Mixtral's
 * top-k then softmax and equally Qwen3's softmax over all experts then top-k renormalised (norm_topk_prob): the
 * common factor cancels. A token's slots are t·top_k + i, i = 0..top_k-1 in decreasing logit order. */
#ifndef PERFLAB_ENGINE_MOE_OPS_H
#define PERFLAB_ENGINE_MOE_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_MOE_MAX_EXPERTS 4096 /* the routing kernels keep a token's logits and the counts in shared memory */
#define PL_MOE_MAX_TOP_K   32

/* ids [rows][top_k] and weights [rows][top_k] from fp32 logits [rows][experts] (a warp a token). */
cudaError_t pl_moe_topk(const float *logits, int rows, int experts, int top_k, int *ids, float *weights,
                        cudaStream_t stream);

/* The router and the top-k in one kernel: each token's fp32 logits xn [rows][hidden] · routerᵀ (router
 * [experts][hidden] bf16) kept in shared memory, then the top-k as pl_moe_topk (a CTA a token). */
cudaError_t pl_moe_router_topk(const uint16_t *xn, const uint16_t *router, int rows, int hidden, int experts, int top_k,
                               int *ids, float *weights, cudaStream_t stream);

/* The tokens grouped by expert, in one CTA: counts[e] the slots routed to e, offsets [experts + 1] their prefix sums,
 * and the permutation: slot j (= t·top_k + i) goes to row row_of_slot[j] of the grouped rows, expert e's rows being
 * offsets[e] .. offsets[e+1] - 1 in increasing slot order (deterministic), and token_of_row[row] = its token. */
cudaError_t pl_moe_group(const int *ids, int rows, int top_k, int experts, int *counts, int *offsets, int *row_of_slot,
                         int *token_of_row, cudaStream_t stream);

/* xg [rows·top_k][hidden]: grouped row j is x's row token_of_row[j]. */
cudaError_t pl_moe_gather(const uint16_t *x, const int *token_of_row, int grouped_rows, int hidden, uint16_t *xg,
                          cudaStream_t stream);

/* out [rows][hidden] = (residual +) Σ_i weights[t·top_k + i] · y[row_of_slot[t·top_k + i]], summed in fp32 in slot
 * order and rounded once (residual NULL: the sum alone). out may be residual. */
cudaError_t pl_moe_combine(const uint16_t *y, const int *row_of_slot, const float *weights, int rows, int top_k,
                           int hidden, const uint16_t *residual, uint16_t *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
