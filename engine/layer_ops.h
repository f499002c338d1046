/* The engine's element-wise kernels: what a decoder layer needs between the library's GEMMs, norms and attention
 * and the library has no kernel for. Rows are tokens (a decode step's one token per sequence, or a prefill's
 * prompt tokens one after another). Every launcher enqueues on `stream`, never synchronises (graph capture works)
 * and returns the launch's error; cudaErrorInvalidValue for bad sizes.
 *
 * RoPE is the rotate-half form: pairs (i, i + head_dim/2) of each head turned by position · theta^(-2i/head_dim),
 * the frequency and the angle computed in double, the rotation in float (sincosf of the angle rounded once to
 * float: within one bf16 rounding of the exact rotation at positions up to 2^20). */
#ifndef PERFLAB_ENGINE_LAYER_OPS_H
#define PERFLAB_ENGINE_LAYER_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The QKV projection's output qkv [rows][(heads + 2·kv_heads)·head_dim] (q heads, then k, then v) turned into the
 * attention's inputs, in one kernel: q [rows][heads][head_dim] and RoPE(k) into the K pool at slots[row], v into
 * the V pool (pools [slots][kv_heads][head_dim]). k_out and v_out, when not NULL, also get RoPE(k) and v as
 * contiguous [rows][kv_heads][head_dim] (what a prefill's attention reads). */
cudaError_t pl_engine_rope_kv_write(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim, double theta,
                                    const int *positions, const int64_t *slots, uint16_t *q, uint16_t *k_cache,
                                    uint16_t *v_cache, uint16_t *k_out, uint16_t *v_out, cudaStream_t stream);

/* The same in two kernels, the way an eager framework runs it: RoPE of q and k into q [rows][heads][head_dim] and
 * k [rows][kv_heads][head_dim] (pl_engine_rope), then the cache write of k and qkv's v (pl_engine_kv_write; v also
 * contiguous into v_out [rows][kv_heads][head_dim] when v_out is not NULL). */
cudaError_t pl_engine_rope(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim, double theta,
                           const int *positions, uint16_t *q, uint16_t *k, cudaStream_t stream);
cudaError_t pl_engine_kv_write(const uint16_t *k, const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                               const int64_t *slots, uint16_t *k_cache, uint16_t *v_cache, uint16_t *v_out,
                               cudaStream_t stream);

/* The same two ways into an FP8 cache (kernels/attention/kv_fp8.h): the K row (RoPE'd and rounded to bf16, as the
 * bf16 cache holds it) and the V row of each kv head quantized to e4m3 into k8 / v8 ([slots][kv_heads][head_dim]
 * bytes) with the row's power-of-two scale into k_scale / v_scale ([slots][kv_heads] float); k_out and v_out (both
 * or neither) get the dequantized rows, the values the cache now means (a prefill's attention reads those, so that
 * it sees what a later decode step will). pl_engine_kv_write_fp8's k_out may be k itself (the unfused prefill's
 * contiguous k, dequantized in place). A block of head_dim / 2 threads a head, the row's largest magnitude found
 * by a block reduction. */
cudaError_t pl_engine_rope_kv_write_fp8(const uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim,
                                        double theta, const int *positions, const int64_t *slots, uint16_t *q,
                                        uint8_t *k8, uint8_t *v8, float *k_scale, float *v_scale, uint16_t *k_out,
                                        uint16_t *v_out, cudaStream_t stream);
cudaError_t pl_engine_kv_write_fp8(const uint16_t *k, const uint16_t *qkv, int rows, int heads, int kv_heads,
                                   int head_dim, const int64_t *slots, uint8_t *k8, uint8_t *v8, float *k_scale,
                                   float *v_scale, uint16_t *k_out, uint16_t *v_out, cudaStream_t stream);

/* A whole bf16 pool [slots][kv_heads][head_dim] quantized, row by row, into an FP8 pool q of the same shape and its
 * rows' scales [slots][kv_heads], as the KV writes above quantize a row (what the e2e: targets and the tests fill an
 * FP8 cache with: the same cache as a bf16 one, quantized). */
cudaError_t pl_engine_kv_quantize_fp8(const uint16_t *pool, size_t slots, int kv_heads, int head_dim, uint8_t *q,
                                      float *scale, cudaStream_t stream);

/* RMSNorm over head_dim of each query and key head of qkv [rows][(heads + 2·kv_heads)·head_dim], in place, before
 * RoPE (Qwen3's q_norm and k_norm): a head's elements times 1/sqrt(mean(x²) + eps) and the weight (q_norm
 * [head_dim] for the query heads, k_norm for the key heads), stored in bf16 as an eager framework stores the normed
 * q and k. The value heads are left as they are. A kernel of its own in every recipe (a warp a head). */
cudaError_t pl_engine_qk_norm(uint16_t *qkv, int rows, int heads, int kv_heads, int head_dim, const uint16_t *q_norm,
                              const uint16_t *k_norm, double eps, cudaStream_t stream);

/* out [rows][width] = SiLU(gu[:, :width]) · gu[:, width:], gu [rows][2·width] (gate first). */
cudaError_t pl_engine_swiglu(const uint16_t *gu, uint16_t *out, int rows, int width, cudaStream_t stream);

/* out[i] = x[i] + y[i] over n bf16 (fp32 sum, one rounding); out may be x. */
cudaError_t pl_engine_residual_add(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
