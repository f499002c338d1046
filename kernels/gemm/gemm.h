/* BF16 GEMM kernels: D = A·B (+ epilogue). A is M×K row-major; B is N×K row-major (K-major, the layout of a
 * linear layer's weights) or K×N row-major; accumulation in fp32; D is M×N row-major bf16. The epilogue, when
 * asked for, is D = GELU(A·B + bias) + residual, computed in fp32 before the one rounding to bf16.
 *
 * The kernel table lists every native kernel with its tile configuration, requirements and the problems it takes, so
 * that the labs (gemm:bf16 and friends) and the selector (perflab gemm) enumerate the same kernels: each row is
 * written beside its kernel's launcher (portable/<recipe>_rows.c, sm90/<recipe>_rows.c), the order in
 * gemm/host/kernel_table.c. Every launcher enqueues on `stream`, never synchronises (so it can be captured in a graph)
 * and returns the launch's cudaError_t. */
#ifndef PERFLAB_GEMM_H
#define PERFLAB_GEMM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_gemm_b_layout {
    PL_GEMM_B_NK = 0, /* B is N×K row-major: D = A·Bᵀ in storage terms (torch.nn.Linear's weight) */
    PL_GEMM_B_KN = 1, /* B is K×N row-major */
} pl_gemm_b_layout;

const char *pl_gemm_layout_name(pl_gemm_b_layout l); /* "nk" | "kn" */
int pl_gemm_layout_from_name(const char *name);      /* -1 when unknown */

typedef struct pl_gemm_epilogue {
    const uint16_t *bias;     /* N bf16 added to every row before the activation, or NULL */
    const uint16_t *residual; /* M×N bf16 added after the activation, or NULL */
    int gelu;                 /* GELU, tanh form: x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³))) */
} pl_gemm_epilogue;

typedef struct pl_gemm_problem {
    int m, n, k;
    pl_gemm_b_layout b_layout;
    const uint16_t *a; /* bf16 bits */
    const uint16_t *b;
    uint16_t *d;
    pl_gemm_epilogue epi;
} pl_gemm_problem;

enum pl_gemm_kernel_flags {
    /* A lower rung of the ladder, kept to teach: the selector leaves it out of its search (it would only
     * spend time losing). */
    PL_GEMM_KERNEL_TEACHING = 1u << 0,
    /* Splits K over the CTAs of a cluster (1-8, chosen at launch: gemm/host/splitk.h), added up in a fixed order. */
    PL_GEMM_KERNEL_SPLIT_K = 1u << 2,
    /* Computes Dᵀ = B·Aᵀ: tile_m (M) is wgmma's narrow N, tile_n (N) its 64 rows. */
    PL_GEMM_KERNEL_SWAP_AB = 1u << 3,
    /* Split-K sized for one CTA per SM (up to 16 CTAs a cluster) instead of three: fewer CTAs where tiles are
     * many, more splits where they are very few. */
    PL_GEMM_KERNEL_SPLIT_W1 = 1u << 5,
    /* Split-K with two consumer warpgroups and one CTA per SM, the split chosen by waves (pl_gemm_sk_split_waves). */
    PL_GEMM_KERNEL_SPLIT_WAVES = 1u << 7,
    /* Split-K with one consumer warpgroup and one CTA per SM, its ring as deep as the shared memory holds, the split
     * for one wave of whole clusters (pl_gemm_sk_split_deep). */
    PL_GEMM_KERNEL_SPLIT_DEEP = 1u << 8,
    /* A decode kernel: takes M <= tile_m only (one tile of tokens), streams B once. */
    PL_GEMM_KERNEL_SMALL_M = 1u << 4,
    /* Reads B K×N (N-major for wgmma: imm-trans-b 1; swapped, B is wgmma's A, imm-trans-a 1) and takes that layout
     * only; B N×K goes to its N×K twin, the row of the same name without _kn. */
    PL_GEMM_KERNEL_B_KN = 1u << 6,
    /* Less accurate than what it would be compared with: the FP8 kernel promoting every 512 K has 4× the error of
     * cuBLASLt's default FP8 GEMM (and of every-128-K promotion) on positive inputs (docs/perf/gemm.md, FP8
     * promotion). The selector leaves it out, as a teaching rung, so `perflab gemm --dtype fp8` compares like with
     * like; gemm:fp8 times it as a variant of its own. */
    PL_GEMM_KERNEL_LESS_ACCURATE = 1u << 9,
};

/* The kernels a search by measurement (perflab gemm's perflab provider) leaves out. */
#define PL_GEMM_KERNEL_UNSEARCHED (PL_GEMM_KERNEL_TEACHING | PL_GEMM_KERNEL_LESS_ACCURATE)

/* What the pick's roofline model (gemm/host/heuristic.h) knows of a kernel beyond its tiles: written in the kernel's
 * row (its recipe's rows file, gemm/host/kernel_row.h) from measurements, or predicted where the row says so. */
typedef struct pl_gemm_model {
    double eff;       /* fraction of the per-SM tensor rate its mainloop reaches with enough tiles */
    double fused_eff; /* the same with a fused epilogue (bias, residual or GELU) */
    double mem_eff;   /* fraction of the HBM rate its reads reach */
    int resident;     /* CTAs an SM holds at once */
    int persistent;   /* 1: loops over tiles (its epilogue is per tile, its pipeline fill once a CTA) */
} pl_gemm_model;

typedef struct pl_gemm_kernel {
    const char *name;      /* unique, e.g. "wgmma_ws_128x256x64_s4" */
    const char *rung;      /* the ladder step: naive, smem_tiled, mma_sync, wgmma_tma, wgmma_ws, wgmma_ws_cluster */
    const char *technique; /* one line: what this step adds */
    int tile_m, tile_n, tile_k, stages, cluster_m, threads; /* split-K: cluster_m 0, the split is chosen at launch */
    pl_kernel_needs needs;                                  /* compute capability and features (wgmma, TMA, clusters) */
    unsigned flags;
    /* 1 when the kernel computes p; else 0 with the reason (e.g. "needs K % 8 == 0 for TMA") in why. */
    int (*supports)(const pl_gemm_problem *p, char *why, size_t whylen);
    cudaError_t (*launch)(const pl_gemm_problem *p, cudaStream_t stream);
    pl_gemm_model model;
} pl_gemm_kernel;

/* What the kernel families need of the GPU (pl_kernel_needs initialisers for the kernel table). */
#define PL_GEMM_NEEDS_ANY                                                                                              \
    {                                                                                                                  \
        0, 0, 0                                                                                                        \
    }
#define PL_GEMM_NEEDS_MMA                                                                                              \
    {                                                                                                                  \
        80, 0, 0                                                                                                       \
    }
#define PL_GEMM_NEEDS_WGMMA                                                                                            \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA                                                                          \
    }
#define PL_GEMM_NEEDS_CLUSTER                                                                                          \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA | PL_KNEED_CLUSTERS                                                      \
    }

/* The BF16 kernels, in the table's order (where the model ties, the earlier one is picked). */
size_t pl_gemm_kernel_count(void);
const pl_gemm_kernel *pl_gemm_kernel_at(size_t i);
size_t pl_gemm_kernel_index(const pl_gemm_kernel *k);        /* k's place in the order; the count when not a row */
const pl_gemm_kernel *pl_gemm_kernel_find(const char *name); /* NULL when unknown */
/* The kernel every shape falls back to when a fast path cannot take it (mma_sync: any M, N, K, both layouts). */
const pl_gemm_kernel *pl_gemm_kernel_fallback(void);
/* The FP8 (e4m3) kernels, a table of their own (the one above is bf16): A and B of the pl_gemm_problem hold e4m3
 * bytes (B N×K), D bf16, both scales 1. gemm/fp8.h has the whole interface (tensor and block scales); the selector
 * enumerates this table for --dtype fp8. */
size_t pl_gemm_fp8_kernel_count(void);
const pl_gemm_kernel *pl_gemm_fp8_kernel_at(size_t i);
/* The one-call BF16 GEMM: picks a kernel for the current device (gemm/host/heuristic.h: a measured table, then a
 * roofline model) and launches it on `stream` (never synchronises):
 *     pl_gemm_problem p = {.m = M, .n = N, .k = K, .b_layout = PL_GEMM_B_NK, .a = A, .b = B, .d = D};
 *     cudaError_t e = pl_gemm_bf16(&p, stream);
 * cudaErrorInvalidValue for a bad problem (sizes < 1, missing pointers) or when no kernel takes it; else the launch's
 * error. */
cudaError_t pl_gemm_bf16(const pl_gemm_problem *p, cudaStream_t stream);
/* Argument checks common to every kernel: sizes >= 1, pointers present. 1 when fine. */
int pl_gemm_problem_valid(const pl_gemm_problem *p, char *why, size_t whylen);

/* ---- launchers, one per ladder file ---- */
cudaError_t pl_gemm_naive(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_smem_tiled(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_mma_sync(const pl_gemm_problem *p, cudaStream_t stream);
/* sm_90a only (compiled for that architecture alone): the caller checks the requirements first. */
cudaError_t pl_gemm_wgmma_tma_128x128(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x128(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256_s3(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_pp_128x128(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256_c2(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_pp_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream);
/* The cooperative kernel with 128×192 tiles (for tile counts that 128×256 quantizes badly). */
cudaError_t pl_gemm_wgmma_ws_128x192(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x192_c2(const pl_gemm_problem *p, cudaStream_t stream);
/* Tiles fitted to the shape: 192×176 with three consumer warpgroups in 2-CTA clusters, 128×176, and
 * 128×224 in 4-CTA clusters. The 176- and 224-column tiles store a fused D from registers. */
cudaError_t pl_gemm_wgmma_ws_192x176_c2(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x176(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x224_c4(const pl_gemm_problem *p, cudaStream_t stream);
/* 128×224 alone and in 2-CTA clusters (M ≈ 200 over N = 224·k) */
cudaError_t pl_gemm_wgmma_ws_128x224(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x224_c2(const pl_gemm_problem *p, cudaStream_t stream);
/* The warp-specialized kernels reading B K×N (N-major: 64-column TMA boxes, wgmma imm-trans-b 1; tile widths of
 * whole boxes): K % 8 == 0, N % 8 == 0, 16-byte aligned A and B. */
cudaError_t pl_gemm_wgmma_ws_128x128_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256_s3_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_pp_128x128_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x192_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x128_c2_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x256_c2_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_pp_128x128_c2_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_ws_128x192_c2_kn(const pl_gemm_problem *p, cudaStream_t stream);
/* Split-K, small tiles, A/B swapped for small M (wgmma_sk_sm90a.cu; gemm/host/splitk.h has the launcher with an
 * explicit split). */
cudaError_t pl_gemm_wgmma_sk_swap16(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap32(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap64(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap128(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x64(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x128(const pl_gemm_problem *p, cudaStream_t stream);
/* The same with the split sized for one CTA per SM (pl_gemm_sk_split_w1). */
cudaError_t pl_gemm_wgmma_sk_swap32_w1(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap64_w1(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x64_w1(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x128_w1(const pl_gemm_problem *p, cudaStream_t stream);
/* One CTA per SM with a deep ring (pl_gemm_sk_split_deep). */
cudaError_t pl_gemm_wgmma_sk_64x64_deep(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x128_deep(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap16_deep(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap32_deep(const pl_gemm_problem *p, cudaStream_t stream);
/* Swapped, two consumer warpgroups: 128 rows of N × 200 tokens (wgmma m64n200), split by waves. */
cudaError_t pl_gemm_wgmma_sk_swap200(const pl_gemm_problem *p, cudaStream_t stream);
/* Two consumer warpgroups (128×128 and 128×256 tiles), one CTA per SM, split by waves (pl_gemm_sk_split_waves). */
cudaError_t pl_gemm_wgmma_sk_128x128(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_128x256(const pl_gemm_problem *p, cudaStream_t stream);
/* The split-K kernels reading B K×N (N-major: as Y of the plain tiles, 64-column boxes; as X of the swapped ones,
 * 64-row boxes, wgmma imm-trans-a 1): K % 8 == 0, N % 8 == 0, 16-byte aligned A and B. */
cudaError_t pl_gemm_wgmma_sk_swap16_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap32_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap64_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap128_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x64_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x128_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x64_deep_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_64x128_deep_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap16_deep_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_swap32_deep_kn(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_wgmma_sk_128x128_kn(const pl_gemm_problem *p, cudaStream_t stream);
/* Decode: a streaming GEMV on mma.sync for M <= 8, 16, 32 tokens (gemv_mma.cu; sm_80+, B N×K, K % 8 == 0, A and B
 * 16-byte aligned). */
cudaError_t pl_gemm_gemv_mma_t8(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_gemv_mma_t16(const pl_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_gemm_gemv_mma_t32(const pl_gemm_problem *p, cudaStream_t stream);

/* ---- helpers around the kernels ---- */
/* out[i] = GELU(d[i] + bias[col]) + residual[i] over M×N bf16 (bias, residual may be NULL; gelu 0 skips it):
 * the unfused epilogue, a separate pass over D. 16-byte accesses when n % 8 == 0, else one element a thread. */
cudaError_t pl_gemm_bias_gelu(const uint16_t *d, uint16_t *out, int m, int n, const pl_gemm_epilogue *epi,
                              cudaStream_t stream);

/* ref[i] = GELU(ref[i] + bias[col]) + residual[i] in float64, stored back as fp32: the epilogue applied to an fp32
 * reference product. */
cudaError_t pl_gemm_epilogue_reference_f32(float *ref, int m, int n, const pl_gemm_epilogue *epi, cudaStream_t stream);

/* How an output compares with its fp32 reference, reduced on the device (no copy of the output comes back). */
typedef struct pl_gemm_diff {
    double err_sq, ref_sq; /* sums over the finite, written elements */
    double max_abs;        /* largest |out - ref| */
    unsigned long long max_index;
    unsigned long long nonfinite;  /* NaN/Inf written */
    unsigned long long unwritten;  /* still the poison pattern (all-ones bytes) */
    unsigned long long violations; /* elements beyond |out - ref| <= rtol·|ref| + atol */
} pl_gemm_diff;

/* `scratch` is device memory of at least pl_gemm_diff_scratch_bytes(); `out` holds fp16 bits when out_is_f16, else
 * bf16. Synchronises `stream` to read the result back. */
size_t pl_gemm_diff_scratch_bytes(void);
cudaError_t pl_gemm_compare(const uint16_t *out, int out_is_f16, const float *ref, size_t n, double rtol, double atol,
                            void *scratch, pl_gemm_diff *diff, cudaStream_t stream);
/* The same over rows × row_len elements, each element's absolute bound atol_row_rms · rms of its row of ref (a warp
 * per row): for outputs whose rows differ in scale, as a gradient row summed over many terms differs from one summed
 * over few. */
cudaError_t pl_gemm_compare_rows(const uint16_t *out, int out_is_f16, const float *ref, size_t rows, int row_len,
                                 double rtol, double atol_row_rms, void *scratch, pl_gemm_diff *diff,
                                 cudaStream_t stream);
/* sqrt(mean(ref²)) over n fp32 (synchronises). */
cudaError_t pl_gemm_rms_f32(const float *ref, size_t n, void *scratch, double *rms, cudaStream_t stream);

/* Element conversions for other input types: bf16 -> fp16 and bf16 -> fp8 e4m3 (saturating, round to nearest),
 * and e4m3 -> bf16 (exact: every e4m3 value is a bf16 value). */
cudaError_t pl_convert_bf16_to_f16(const uint16_t *in, uint16_t *out, size_t n, cudaStream_t stream);
cudaError_t pl_convert_bf16_to_e4m3(const uint16_t *in, uint8_t *out, size_t n, cudaStream_t stream);
cudaError_t pl_convert_e4m3_to_bf16(const uint8_t *in, uint16_t *out, size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
