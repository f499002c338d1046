/* Grouped GEMM, the matrix work of a mixture-of-experts layer: G groups (experts), group g multiplies its rows of A
 * (the tokens routed to it, rows offsets[g] .. offsets[g+1] - 1 of one M×K matrix) by its own B_g (N×K, K-major)
 * into the same rows of D (M×N, bf16), fp32 accumulation. The group sizes vary and may be 0; they live on the
 * device (the offsets), so that one launch does every group with no host round trip. BF16, or FP8 e4m3 with block
 * scales (A 1×128 per token, each B_g 128×128: the layouts of gemm/fp8.h, B's blocks counted per group). */
#ifndef PERFLAB_GEMM_GROUPED_H
#define PERFLAB_GEMM_GROUPED_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_grouped_gemm_problem {
    int groups, n, k;
    int rows;           /* rows of A and D: the sum of the group sizes (0 allowed: nothing to do) */
    const int *offsets; /* device: groups + 1 nondecreasing row offsets, offsets[0] = 0, offsets[groups] = rows */
    const void *a;      /* rows × K: bf16 bits or e4m3 */
    const void *b;      /* groups × N × K, group after group */
    uint16_t *d;        /* rows × N bf16 */
    /* fp8 only (device): A's 1×128 scales at scale_a[kb · lda + row], lda = pl_fp8_scale_a_ld(rows); B's 128×128
     * scales at scale_b[(g · ⌈N/128⌉ + nb) · ldb + kb], ldb = pl_fp8_scale_b_ld(K) */
    const float *scale_a, *scale_b;
    /* 1: a consumer warpgroup whose 64 rows of a tile all lie past its group's end (the padding of a group's last
     * tile row) issues no wgmma for that tile, leaving the tensor cores to the other; 0: it computes them unstored */
    int skip_idle;
    /* 2: CTAs in pairs (2-CTA clusters) that take vertically adjacent tiles of a group and share their B panel, each
     * loading half and multicasting it (a third less L2 → SM traffic; a group with an odd tile row count runs its
     * last tile row in pairs side by side that share A); 1: one CTA a tile; 0: the measured choice
     * (pl_grouped_gemm_cluster_of; where it picks pairs for bf16 and D takes TMA stores, pl_grouped_gemm_bf16 runs
     * the tokens-as-N kernel, pl_grouped_gemm_bf16_t, whose CTAs also go in pairs) */
    int cluster;
} pl_grouped_gemm_problem;

/* The measured choice of cluster = 0: pairs for bf16 when the groups average PL_GROUPED_PAIR_ROWS rows or more (H100,
 * docs/perf/moe.md: E = 8 of N = 14336, 2048 rows a group, +5-9% in pairs over one CTA a tile; E = 64 of N = 1536,
 * 256 rows a group, −9 to −11% while half its groups padded a pair, −1 to −2% with their odd last tile rows run side
 * by side), one CTA a tile for fp8 (pairs lose at E = 8: 966-1007 against 1023-1054). */
#define PL_GROUPED_PAIR_ROWS 1024

#define PL_GROUPED_GEMM_NEEDS                                                                                          \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA                                                                          \
    }

/* 1 when the native kernel takes p (fp8: e4m3 with block scales; else bf16); else 0 with the reason: K % 8 == 0
 * for bf16, K % 16 == 0 for fp8 (TMA row pitch), 16-byte aligned A and B, G·N and rows·N within range. */
int pl_grouped_gemm_supports(const pl_grouped_gemm_problem *p, int fp8, char *why, size_t whylen);

/* The CTAs a tile of p takes: p->cluster when set, else the measured choice above (1 or 2). */
int pl_grouped_gemm_cluster_of(const pl_grouped_gemm_problem *p, int fp8);

/* One persistent launch (sm_90a; the caller checks the requirements): the tile scheduler walks (group, tile)
 * pairs from the device offsets. bf16: 128×256 tiles, k-blocks of 64, 4 stages; fp8: 128×192 tiles, k-blocks of
 * 128 promoted to fp32 with their block scales, 4 stages. */
cudaError_t pl_grouped_gemm_bf16(const pl_grouped_gemm_problem *p, cudaStream_t stream);
cudaError_t pl_grouped_gemm_fp8(const pl_grouped_gemm_problem *p, cudaStream_t stream);
/* fp8 with the promotion off the critical path (gemm/fp8.h, pl_gemm_fp8_ws_halves). */
cudaError_t pl_grouped_gemm_fp8_halves(const pl_grouped_gemm_problem *p, cudaStream_t stream);

/* The tokens as wgmma's N (grouped_t_sm90a.cu): tiles of 256 weights × up to 192 tokens computed as Dᵀ, an expert's
 * tokens cut into an even number of tiles of nearly equal width in steps of 8, so that fewer than 8 rows past an
 * expert's end are computed (the 128-row tiles above compute up to 127), and the tile count chosen on the device to
 * fill the last wave; CTA pairs share the weights (p->cluster and p->skip_idle are not read). Takes what
 * pl_grouped_gemm_supports takes for bf16; where N % 8 != 0 or D is not 16-byte aligned (no TMA stores) it runs
 * pl_grouped_gemm_bf16 instead. */
cudaError_t pl_grouped_gemm_bf16_t(const pl_grouped_gemm_problem *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
