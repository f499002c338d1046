/* One dense decoder layer's decode step, the `baseline` way (one kernel per operation, launched one by one, as an
 * eager framework does), for a batch of B sequences of mixed cache lengths over the paged KV cache (kv_pages.h):
 *
 *   xn   = RMSNorm(x, attn_norm)                              pl_rmsnorm_fused
 *   qkv  = xn · qkvᵀ                  [B][(H + 2·KV)·hd]      pl_gemm_bf16
 *   q, k = RoPE(q, k at position pos[b]) (rotate-half pairs (i, i + hd/2), angle pos·theta^(-2i/hd));
 *          k and v written to cache slot slots[b]; q to [B][H][hd]          pl_engine_rope_kv_write
 *   a    = paged decode attention of q over the sequences' first seq_lens[b] tokens   pl_decode_baseline
 *   h    = x + a · oᵀ                                         pl_gemm_bf16, pl_engine_residual_add
 *   xn   = RMSNorm(h, mlp_norm)
 *   gu   = xn · gate_upᵀ              [B][2·I] (gate first)   pl_gemm_bf16
 *   act  = SiLU(gate) · up            [B][I]                  pl_engine_swiglu
 *   out  = h + act · downᵀ                                    pl_gemm_bf16, pl_engine_residual_add
 *
 * Every intermediate is stored in bf16 (fp32 arithmetic within each kernel), as the eager framework stores it; the
 * host reference (tests/gpu/test_engine_layer.c) rounds at the same points. */
#ifndef PERFLAB_ENGINE_DENSE_LAYER_H
#define PERFLAB_ENGINE_DENSE_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One decode step's batch, all device pointers. Sequence b's new token has index positions[b] (the number of
 * tokens its cache held before this step) and goes to cache slot slots[b] (pl_kv_slot of that token: page id ·
 * page_size + row); seq_lens[b] = positions[b] + 1; block_table is [batch][max_pages] (pl_kv_block_table). */
typedef struct pl_decode_step {
    int batch, page_size, max_pages;
    const int *positions;
    const int64_t *slots;
    const int *block_table;
    const int *seq_lens;
} pl_decode_step;

/* One layer's K and V pools, each [pages·page_size][kv_heads][head_dim] bf16 (kv_pages.h). */
typedef struct pl_layer_kv {
    uint16_t *k, *v;
} pl_layer_kv;

/* Bytes of the workspace a decode step of up to max_batch sequences needs (256-byte aligned buffers: xn, qkv, q,
 * the attention output, the projections' output, gate_up and the activation). Within pl_activation_bytes(m,
 * max_batch, ...), which the memory plan reserves. */
size_t pl_dense_decode_workspace_bytes(const pl_model_config *m, int max_batch);

/* The baseline decode step of one layer: x [batch][hidden] bf16 is the residual stream in, out the residual stream
 * after the layer (h is kept in out: out may be x itself; both 16-byte aligned); k/v of each new token are written
 * into kv before the attention reads them. Enqueues on `stream`, never synchronises; returns the first failing launch's
 * error (each launch is checked with cudaGetLastError), cudaErrorInvalidValue when the step is malformed (batch < 1,
 * a workspace smaller than pl_dense_decode_workspace_bytes, a qk-norm or MoE model, a head_dim or GQA group the
 * decode kernel does not take). */
cudaError_t pl_dense_layer_decode(const pl_dense_weights *w, const pl_decode_step *step, const pl_layer_kv *kv,
                                  const uint16_t *x, uint16_t *out, void *workspace, size_t workspace_bytes,
                                  cudaStream_t stream);

/* The element-wise kernels of the baseline layer (dense_layer.cu), for the layer and its tests. */
/* q [B][H][hd] = RoPE(qkv's q); K/V pools at slots[b] = RoPE(qkv's k), qkv's v. qkv is [B][(H + 2·KV)·hd]. */
cudaError_t pl_engine_rope_kv_write(const uint16_t *qkv, int batch, int heads, int kv_heads, int head_dim, double theta,
                                    const int *positions, const int64_t *slots, uint16_t *q, uint16_t *k_cache,
                                    uint16_t *v_cache, cudaStream_t stream);
/* out [rows][width] = SiLU(gu[:, :width]) · gu[:, width:], gu [rows][2·width]. */
cudaError_t pl_engine_swiglu(const uint16_t *gu, uint16_t *out, int rows, int width, cudaStream_t stream);
/* out[i] = x[i] + y[i] over n bf16 (fp32 sum, one rounding); out may be x. */
cudaError_t pl_engine_residual_add(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
