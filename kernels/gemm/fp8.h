/* FP8 (e4m3) GEMM on Hopper: D (bf16, M×N) = scale · (A·B) with A M×K and B N×K (K-major, a linear layer's weight)
 * in e4m3, fp32 accumulation, and the scales applied on the fp32 accumulator. Two scalings, as in current FP8
 * recipes:
 *   tensor: one float per operand, D = sa·sb·(A·B);
 *   block:  A scaled per row and 128 columns (1×128, activations), B per 128×128 block (weights):
 *           D[m][n] = Σ_kb sa[m][kb] · sb[n/128][kb] · Σ_{k in kb} A[m][k]·B[n][k].
 * The scale layouts are the ones cuBLASLt takes on sm_90 (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F for A,
 * BLK128x128_32F for B), so the same buffers feed both:
 *   A: element (row, kb) at scale_a[kb · lda + row], lda = pl_fp8_scale_a_ld(M) (M rounded up to 4);
 *   B: element (nb, kb) at scale_b[nb · ldb + kb], ldb = pl_fp8_scale_b_ld(K) (⌈K/128⌉ rounded up to 4).
 * Also here: the quantizers that make such operands from bf16 (power-of-two scales, so that dequantizing to bf16
 * is exact), the dequantizer, and cuBLASLt's FP8 GEMM in the same row-major terms. */
#ifndef PERFLAB_GEMM_FP8_H
#define PERFLAB_GEMM_FP8_H

#include <stddef.h>
#include <stdint.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_FP8_BLOCK    128    /* the block of the block scaling, along K (and N for B) */
#define PL_FP8_E4M3_MAX 448.0f /* the largest finite e4m3 */

#ifdef __CUDACC__
#define PL_FP8_HD __host__ __device__
#else
#define PL_FP8_HD
#endif

typedef enum pl_fp8_scaling {
    PL_FP8_SCALING_TENSOR = 0, /* one float per operand */
    PL_FP8_SCALING_BLOCK = 1,  /* A 1×128, B 128×128 */
} pl_fp8_scaling;

static inline PL_FP8_HD int pl_fp8_kblocks(int k)
{
    return (k + PL_FP8_BLOCK - 1) / PL_FP8_BLOCK;
}
static inline PL_FP8_HD int pl_fp8_scale_a_ld(int m)
{
    return (m + 3) / 4 * 4;
}
static inline PL_FP8_HD int pl_fp8_scale_b_ld(int k)
{
    return (pl_fp8_kblocks(k) + 3) / 4 * 4;
}
/* Floats in the block scales of A (M×K) and of B (N×K). */
static inline size_t pl_fp8_scale_a_count(int m, int k)
{
    return (size_t)pl_fp8_kblocks(k) * (size_t)pl_fp8_scale_a_ld(m);
}
static inline size_t pl_fp8_scale_b_count(int n, int k)
{
    return (size_t)pl_fp8_kblocks(n) * (size_t)pl_fp8_scale_b_ld(k);
}

typedef struct pl_gemm_fp8_problem {
    int m, n, k;
    const uint8_t *a; /* e4m3, M×K row-major */
    const uint8_t *b; /* e4m3, N×K row-major */
    uint16_t *d;      /* bf16, M×N row-major */
    pl_fp8_scaling scaling;
    /* device memory. tensor: one float each (NULL reads as 1); block: the layouts above */
    const float *scale_a, *scale_b;
    /* tensor scaling: k-blocks of 128 per promotion to fp32, 1 or 4 (0: 1); block scaling promotes every k-block */
    int promote;
    /* cuBLASLt only (CUBLASLT_MATMUL_DESC_FAST_ACCUM): no promotion, the tensor core's reduced-precision sum over all
     * of K; the native kernels refuse it */
    int fast_accum;
} pl_gemm_fp8_problem;

#define PL_GEMM_FP8_NEEDS                                                                                              \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA | PL_KNEED_FP8                                                           \
    }
#define PL_GEMM_FP8_CLUSTER_NEEDS                                                                                      \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA | PL_KNEED_FP8 | PL_KNEED_CLUSTERS                                       \
    }

/* The one call: picks a native FP8 kernel for p on this GPU (gemm/host/heuristic.h, pl_gemm_fp8_pick: the model over
 * the FP8 kernels that take p's scaling and promotion) and launches it on `stream` (never synchronises).
 * cudaErrorInvalidValue where no native kernel takes p (pl_gemm_fp8_supports says why). */
cudaError_t pl_gemm_fp8(const pl_gemm_fp8_problem *p, cudaStream_t stream);

/* 1 when the native kernel takes p; else 0 with the reason: K % 16 == 0 (TMA rows are 16-byte multiples), A and
 * B 16-byte aligned, scales present and 16-byte aligned for block scaling. */
int pl_gemm_fp8_supports(const pl_gemm_fp8_problem *p, char *why, size_t whylen);

/* The native kernel (sm_90a; the caller checks the requirements): persistent and warp-specialized, a TMA producer
 * warpgroup, two consumer warpgroups issuing wgmma m64n192k32 e4m3 into an accumulator of their own that is added into
 * fp32 registers every 128 K (times the block's scales for block scaling); 128×192 tiles, k-blocks of 128, 4
 * stages; TMA-store epilogue. */
cudaError_t pl_gemm_fp8_ws(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* The same in 2-CTA clusters: vertically adjacent tiles share their B panel, each CTA loads half of it and
 * TMA-multicasts it into both (L2 serves 28 KB per CTA and k-block instead of 40). Needs clusters. */
cudaError_t pl_gemm_fp8_ws_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* The same with 128×128 tiles (6 stages), alone and in 2-CTA clusters: more tiles, fuller last waves where 128×192
 * leaves one short (4096³); promote must be 0 or 1. */
cudaError_t pl_gemm_fp8_ws_n128(const pl_gemm_fp8_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_fp8_ws_n128_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* 128×176 tiles (5 stages), tensor scaling only (cudaErrorInvalidValue for block scaling): fewer rounds where N's
 * tile columns of 192 leave a short last wave (4096³); promote must be 0 or 1. */
cudaError_t pl_gemm_fp8_ws_n176(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* 128×128 tiles whose consumers keep two promotion accumulators that alternate by k-block: k-block kb runs on the
 * tensor cores while kb - 1 is promoted, so no drain inside a tile (promotion every 128 K, both scalings; promote
 * must be 0 or 1). Alone and in 2-CTA clusters. */
cudaError_t pl_gemm_fp8_ws_two_parts(const pl_gemm_fp8_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_fp8_ws_two_parts_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* The same (no clusters) with the promotion off the critical path: every k-block's wgmma in two commit groups of
 * m64n96k32 (the tile's column halves, each into a half accumulator), one half promoted while the other is on the
 * tensor cores, in straight-line runs of 4 k-blocks; block scales come into each stage by bulk copy alongside A and
 * B. Promotes every 128 K with either scaling (promote must be 0 or 1). */
cudaError_t pl_gemm_fp8_ws_halves(const pl_gemm_fp8_problem *p, cudaStream_t stream);
/* The halves kernel in 2-CTA clusters (the B panel multicast as in pl_gemm_fp8_ws_c2). Needs clusters. */
cudaError_t pl_gemm_fp8_ws_halves_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream);

/* Decode (M = 1-128 tokens): split-K with A and B swapped (fp8_sk_sm90a.cu). Dᵀ = B·Aᵀ on CTAs of 64 rows of N
 * (wgmma's M) × TILE tokens (its narrow N: 16, 32 or 64), K split over a cluster of 1-16 CTAs and the fp32 partials
 * added in rank order (the same bits every run); promotion to fp32 every 128 K with either scaling, as
 * pl_gemm_fp8_ws (promote must be 0 or 1); D 8-byte aligned. Needs clusters. The split is pl_gemm_sk_split's over
 * k-blocks of 128 (about two CTAs an SM); pl_gemm_fp8_sk takes it explicitly (split 0: the rule's; 1-16, capped at the
 * k-block count) and tile 16, 32 or 64, cudaErrorInvalidValue otherwise. */
cudaError_t pl_gemm_fp8_sk(const pl_gemm_fp8_problem *p, int tile, int split, cudaStream_t stream);
cudaError_t pl_gemm_fp8_sk_swap16(const pl_gemm_fp8_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_fp8_sk_swap32(const pl_gemm_fp8_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_fp8_sk_swap64(const pl_gemm_fp8_problem *p, cudaStream_t stream);

/* ---- quantization (bf16 in, e4m3 out; scales are powers of two: 2^⌈log2(amax/448)⌉, 1 for an all-zero block) ---- */

/* One scale for all n elements: written to *scale on the device (no host round trip). amax_scratch: one unsigned
 * of device memory. */
cudaError_t pl_fp8_quantize_tensor(const uint16_t *x, size_t n, uint8_t *q, float *scale, unsigned *amax_scratch,
                                   cudaStream_t stream);
/* A rows×cols: one scale per row and 128 columns, at scale[kb · ld + row]. */
cudaError_t pl_fp8_quantize_rows(const uint16_t *x, int rows, int cols, uint8_t *q, float *scale, int ld,
                                 cudaStream_t stream);
/* `batch` matrices of rows×cols, one after another (an expert's weights each): one scale per 128×128 block of
 * each, at scale[(b · ⌈rows/128⌉ + nb) · ld + kb]. */
cudaError_t pl_fp8_quantize_blocks(const uint16_t *x, int batch, int rows, int cols, uint8_t *q, float *scale, int ld,
                                   cudaStream_t stream);

typedef enum pl_fp8_scale_kind {
    PL_FP8_SCALE_TENSOR = 0, /* scale[0] */
    PL_FP8_SCALE_ROWS = 1,   /* 1×128: scale[kb · ld + row] */
    PL_FP8_SCALE_BLOCKS = 2, /* 128×128: scale[(b · ⌈rows/128⌉ + nb) · ld + kb] */
} pl_fp8_scale_kind;

/* out = q · scale in bf16 (exact for power-of-two scales), `batch` matrices of rows×cols. */
cudaError_t pl_fp8_dequantize(const uint8_t *q, int batch, int rows, int cols, pl_fp8_scale_kind kind,
                              const float *scale, int ld, uint16_t *out, cudaStream_t stream);

/* x *= 2^e with e in [-max_exp, max_exp] drawn per block of block_rows × block_cols from (seed, block): inputs
 * whose magnitude varies from block to block, so that block scales differ and a scale applied to the wrong
 * block shows. Exact in bf16. */
cudaError_t pl_bf16_scale_blocks_pow2(uint16_t *x, int rows, int cols, int block_rows, int block_cols, int max_exp,
                                      uint64_t seed, cudaStream_t stream);

/* ---- cuBLASLt FP8 (the reference): A and B e4m3, D bf16, fp32 accumulation without fast accumulation (with it
 * where p->fast_accum) ---- */

typedef struct pl_fp8_cublaslt pl_fp8_cublaslt; /* descriptors and the algorithm chosen, for one problem */

/* Plans p with cuBLASLt's first heuristic algorithm (tensor scaling: scalar scale pointers; block scaling:
 * VEC128_32F for A and BLK128x128_32F for B, the layouts above). *out is NULL unless it returns
 * CUBLAS_STATUS_SUCCESS (CUBLAS_STATUS_NOT_SUPPORTED: no algorithm for this problem on this GPU). `workspace` is
 * device memory of workspace_bytes. */
cublasStatus_t pl_fp8_cublaslt_plan(cublasLtHandle_t lt, const pl_gemm_fp8_problem *p, void *workspace,
                                    size_t workspace_bytes, pl_fp8_cublaslt **out);
cublasStatus_t pl_fp8_cublaslt_run(const pl_fp8_cublaslt *plan, cudaStream_t stream);
void pl_fp8_cublaslt_free(pl_fp8_cublaslt *plan);

#ifdef __cplusplus
}
#endif
#endif
