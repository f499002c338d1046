/* One dense decoder layer's steps, decode and prefill, over the paged KV cache (kv_pages.h):
 *
 *   xn   = RMSNorm(x, attn_norm)
 *   qkv  = xn · qkvᵀ                  [rows][(H + 2·KV)·hd]
 *   q, k = RoPE(q, k at each row's position); k and v written to the row's cache slot
 *   a    = attention: decode, each sequence's new token over its paged cache; prefill, each prompt causally over
 *          its own tokens (prefill starts from an empty cache)
 *   h    = x + a · oᵀ
 *   xn   = RMSNorm(h, mlp_norm)
 *   gu   = xn · gate_upᵀ              [rows][2·I] (gate first)
 *   act  = SiLU(gate) · up
 *   out  = h + act · downᵀ
 *
 * How each operation runs is the recipe's choice (pl_layer_recipe), one named technique at a time, so that the
 * e2e: targets time what each one buys: the GEMMs through cuBLAS or perflab's own (pl_gemm_bf16, the library's
 * pick for the shape); the attention kernels simple or fast; the fused forms of the norm, the RoPE with the KV write
 * and the residual adds. Every intermediate is stored in bf16 (fp32 arithmetic within each kernel), as an eager
 * framework stores it. */
#ifndef PERFLAB_ENGINE_DENSE_LAYER_H
#define PERFLAB_ENGINE_DENSE_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "attention/attention.h"
#include "engine/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_layer_gemm {
    PL_LAYER_GEMM_CUBLAS = 0,  /* cublasGemmEx, default algorithm (the handle's stream is set by each step) */
    PL_LAYER_GEMM_PERFLAB = 1, /* pl_gemm_bf16: the library's pick for each shape */
} pl_layer_gemm;

typedef enum pl_layer_attention {
    /* decode: pl_decode_baseline (a CTA per query head walking its sequence); prefill: pl_attn_flash_mma */
    PL_LAYER_ATTN_SIMPLE = 0,
    /* decode: pl_decode_rows_deep (the GQA group on the tensor cores, tiles balanced over a persistent grid);
     * prefill: pl_attn_flash_wgmma_schedule on sm_90, flash_mma elsewhere */
    PL_LAYER_ATTN_FAST = 1,
} pl_layer_attention;

/* The dense layer's GEMM weights: bf16 (pl_gemm_bf16 or cuBLAS), or their FP8 e4m3 form (pl_dense_weights_add_fp8)
 * through the library's pl_gemm_fp8, the activations quantized before each GEMM into the workspace: with per-tensor
 * weight scales the activation gets one scale too (an amax over the GEMM's whole input, then the quantization: two
 * kernels and a memset), with 128×128 block scales each activation row gets one scale per 128 columns (1×128, one
 * kernel, no reduction across rows: gemm/fp8.h's block scaling takes A's scales so). The FP8 GEMMs have no
 * epilogue: the residual adds run as kernels of their own, whatever `fused` says. perflab's GEMMs only (gemm must
 * be PL_LAYER_GEMM_PERFLAB); the native FP8 kernels are sm_90a's. The dense layer only (MoE and tensor-parallel
 * steps refuse FP8 weights). */
typedef enum pl_layer_weights {
    PL_LAYER_WEIGHTS_BF16 = 0,
    PL_LAYER_WEIGHTS_FP8_TENSOR = 1, /* w->fp8[PL_FP8_SCALING_TENSOR], activations per tensor */
    PL_LAYER_WEIGHTS_FP8_BLOCK = 2,  /* w->fp8[PL_FP8_SCALING_BLOCK], activations 1×128 */
} pl_layer_weights;

typedef struct pl_layer_recipe {
    pl_layer_gemm gemm;
    pl_layer_attention attention;
    /* 0: RMSNorm in two kernels (pl_rmsnorm_naive), RoPE and the KV write as two kernels, each residual add a kernel
     * of its own. 1: the one-pass RMSNorm (pl_rmsnorm_fused), RoPE with the KV write in one kernel, and with
     * perflab's GEMMs the residual adds in the O and down GEMMs' epilogues (cuBLAS keeps the add kernel). */
    int fused;
    int sm_count;             /* the device's SMs (the fast decode kernel's grid) */
    cublasHandle_t cublas;    /* for PL_LAYER_GEMM_CUBLAS */
    pl_layer_weights weights; /* bf16 (0) or the FP8 form in a scaling */
} pl_layer_recipe;

/* The ladder the e2e: targets and the engine's tests walk, one named technique a step: the eager way (cuBLAS, the
 * simple attention kernels, nothing fused), + the fast attention kernels, + perflab's GEMMs, + the fused forms. */
enum {
    PL_LAYER_LADDER_BASELINE,
    PL_LAYER_LADDER_FAST_ATTENTION,
    PL_LAYER_LADDER_PERFLAB_GEMM,
    PL_LAYER_LADDER_FUSED,
    PL_LAYER_LADDER_STEPS
};
/* out[PL_LAYER_LADDER_STEPS]: the ladder's recipes for a device of sm_count SMs (cublas: the handle the first two
 * steps' GEMMs run on). */
void pl_layer_recipe_ladder(int sm_count, cublasHandle_t cublas, pl_layer_recipe *out);

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

/* One prefill step: `prompts` prompts from an empty cache, their tokens one after another; prompt p is rows
 * [starts[p], starts[p + 1]) (starts: host memory, prompts + 1 entries, starts[0] = 0). positions and slots are
 * device arrays of starts[prompts] entries: each token's index in its prompt and its cache slot. */
typedef struct pl_prefill_step {
    int prompts;
    const int *starts;
    const int *positions;
    const int64_t *slots;
} pl_prefill_step;

/* One layer's K and V pools (kv_pages.h), in the cache dtype `dtype`: PL_KV_BF16 (0, what a zeroed struct or {k, v}
 * gives): k and v, each [pages·page_size][kv_heads][head_dim] bf16. PL_KV_FP8_E4M3: k8 and v8, the same shape in
 * e4m3 bytes, and each row's power-of-two scale in k_scale and v_scale, [pages·page_size][kv_heads] float
 * (attention/kv_fp8.h); k and v unused. Every recipe takes either: the KV write quantizes (fused or not), the decode
 * attention converts (rows_deep_fp8 for the fast recipe, the baseline kernel for the simple one), and a prefill's
 * attention reads the dequantized rows, what a later decode reads. */
typedef struct pl_layer_kv {
    uint16_t *k, *v;
    pl_kv_dtype dtype;
    uint8_t *k8, *v8;
    float *k_scale, *v_scale;
} pl_layer_kv;

/* Bytes of the workspace a step of up to max_rows rows needs (decode: sequences; prefill: tokens), with any recipe
 * (256-byte aligned buffers; the FP8 weights' quantized activations included: max_rows · max(hidden, heads·head_dim,
 * intermediate) bytes and their scales). Within pl_activation_bytes(m, max_rows, ...), which the memory plan reserves,
 * save for the fast decode kernel's partial results (sm_count-sized). */
size_t pl_dense_workspace_bytes(const pl_model_config *m, int max_rows, int sm_count);

/* The layer's step: x [rows][hidden] bf16 is the residual stream in, out the residual stream after the layer (out
 * may be x itself; both 16-byte aligned); the new tokens' k/v are written into kv before the attention reads them.
 * Enqueues on `stream`, never synchronises (a CUDA graph can capture it once the library's GEMM pick for these
 * shapes has run once outside the capture); returns the first failing call's error (each launch is checked),
 * cudaErrorInvalidValue when the step is malformed (no rows, a workspace smaller than pl_dense_workspace_bytes, a
 * qk-norm or MoE model, a head_dim or GQA group the attention kernels do not take, a cache dtype other than
 * PL_KV_BF16 and PL_KV_FP8_E4M3 or an FP8 cache without its pools and scales; FP8 weights with cuBLAS GEMMs, not
 * made for the recipe's scaling, or a shape pl_gemm_fp8 does not take), cudaErrorNotSupported for a cuBLAS failure. */
cudaError_t pl_dense_layer_decode(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_decode_step *step,
                                  const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                  size_t workspace_bytes, cudaStream_t stream);
cudaError_t pl_dense_layer_prefill(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_prefill_step *step,
                                   const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                   size_t workspace_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
