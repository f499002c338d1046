/* The split-K WGMMA kernels (wgmma_sk_sm90a.cu) in the terms host code shares with them: their CTA shape, stages
 * and residency, the rule that splits K over a cluster, and the launcher with an explicit split. Plain C.
 *
 * A CTA computes a 64 × TILE block of X·Yᵀ (X, Y both K-major): X = A and Y = B (a 64 × TILE tile of D), or, swapped,
 * X = B and Y = A (a TILE × 64 tile of D computed as Dᵀ = B·Aᵀ, so that the wide N fills wgmma's 64 rows and a small
 * M becomes its narrow N). The S CTAs of a cluster split K between them and add their fp32 partial tiles through
 * distributed shared memory in rank order 0, 1, …, S-1: the same bits every run. */
#ifndef PERFLAB_GEMM_SPLITK_H
#define PERFLAB_GEMM_SPLITK_H

#include <cuda_runtime_api.h>

#include "gemm/gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_SK_ROWS           64  /* rows of X per CTA: wgmma's M */
#define PL_SK_BK             64  /* K per stage: one 128-byte swizzle row of bf16 */
#define PL_SK_THREADS        160 /* one consumer warpgroup (warps 0-3) and one producer warp (warp 4) */
#define PL_SK_CTAS_PER_SM    3   /* shared memory and registers are sized for three resident CTAs */
#define PL_SK_PORTABLE_SPLIT 8   /* the portable cluster size: the default kernels' largest split */
#define PL_SK_MAX_SPLIT      16  /* a non-portable cluster (sm_90 allows 16): the _w1 kernels' largest split */
#define PL_SK_MIN_KBLOCKS    4   /* a split gets at least this many k-blocks (256 K) */
#define PL_SK_WG2             0x1000 /* pl_gemm_wgmma_sk's tile | PL_SK_WG2: two consumer warpgroups (128 rows) */
#define PL_SK_DEEP            0x2000 /* pl_gemm_wgmma_sk's tile | PL_SK_DEEP: one CTA an SM, the ring fills its memory */
/* The stages of a kernel with one CTA an SM (two warpgroups, or a deep ring) and `rows` rows of X: as many as the
 * largest dynamic shared memory holds beside 1 KB of alignment and 16 pairs of barriers, at most 16. */
#define PL_SK_SMEM_LIMIT 232448 /* the largest dynamic shared memory a block may ask for on sm_90 */
#define PL_SK_RING_FIT(rows, tile) ((PL_SK_SMEM_LIMIT - 1024 - 16 * 16) / (((rows) + (tile)) * PL_SK_BK * 2))
#define PL_SK_RING_STAGES(rows, tile) (PL_SK_RING_FIT(rows, tile) > 16 ? 16 : PL_SK_RING_FIT(rows, tile))
/* Pipeline stages per TILE width (stage = 8 KB of X + TILE·128 B of Y): 60-72 KB a CTA, three a SM. */
#define PL_SK_STAGES(tile) ((tile) <= 16 ? 6 : (tile) <= 32 ? 5 : (tile) <= 64 ? 4 : 3)

/* What the pick's model is told of a one-warpgroup split-K kernel of tile width W (wgmma m64nW), predicted: it is fed
 * by shared memory, 2 KB of X and W·32 B of Y per k-step (k16 bf16, k32 e4m3: 32 bytes of each row either way) at
 * 128 B/clk against W/2 clocks of tensor work, so eff ≈ min(0.75, (W/2) / (16 + W/4)) · 0.95. */
#define PL_SK_FEED(w) (((w) / 2.0) / (16 + (w) / 4.0))
#define PL_SK_EFF(w)  ((PL_SK_FEED(w) < 0.75 ? PL_SK_FEED(w) : 0.75) * 0.95)

/* The split S (CTAs of a cluster sharing one output tile's K) for `tiles` output tiles of `k_blocks` k-blocks on
 * `sms` SMs: the one that puts nearest PL_SK_SPLIT_CTAS_PER_SM CTAs on each SM (tiles·S ≈ 2·sms), at most
 * PL_SK_PORTABLE_SPLIT, each split at least PL_SK_MIN_KBLOCKS k-blocks; 1 when the tiles alone fill the GPU.
 * Measured (H100 and H200, 2026-11-26, every split 1-16 of the 3-CTA kernels on six few-tile long-K shapes of
 * 16-128 tiles): the fastest split put 128-288 CTAs on the 132 SMs; three an SM (384-432) ran 21-43% slower. */
#define PL_SK_SPLIT_CTAS_PER_SM 2
int pl_gemm_sk_split(long long tiles, int k_blocks, int sms);
/* The _w1 kernels' split: clusters of one CTA per SM (tiles·S ≤ sms), up to PL_SK_MAX_SPLIT, each split at least
 * PL_SK_MIN_KBLOCKS k-blocks. Measured on the H200 (2026-11-23): with 32 tiles a split of 8 (256 CTAs) beat 12
 * (384) by 30-50%; with 4-9 tiles 16 beat 8 by 4-5%. */
int pl_gemm_sk_split_w1(long long tiles, int k_blocks, int sms);

/* The deep-ring kernels' split: one CTA an SM (tiles·S ≤ sms), up to PL_SK_PORTABLE_SPLIT, each split at least
 * PL_SK_MIN_KBLOCKS k-blocks. */
int pl_gemm_sk_split_deep(long long tiles, int k_blocks, int sms);

/* The two-warpgroup kernels' split (128-row tiles, one CTA per SM, all the shared memory as stages): S in 1-8
 * minimizing waves · (k-blocks per split + PL_SK_WAVE_OVERHEAD_KB), where waves = ceil(tiles·S / sms), each split at
 * least PL_SK_MIN_KBLOCKS k-blocks; the smaller S on a tie. Splitting then serves both few tiles (the SMs idle) and
 * a last wave nearly empty (mixtral 384×14336: 168 tiles of 128×256 are 2 waves unsplit, 4 thirds split by 3). */
#define PL_SK_WAVE_OVERHEAD_KB 4 /* a CTA's fill, fix-up and store, in k-blocks of mainloop */
int pl_gemm_sk_split_waves(long long tiles, int k_blocks, int sms);

/* The split-K kernel with TILE = `tile` (swapped: 16, 32, 64 or 128, 16, 32 or 64 | PL_SK_DEEP, and
 * 200 | PL_SK_WG2: 128 rows of N × 200 tokens; not: 64 or 128, or 128 | PL_SK_WG2 and 256 | PL_SK_WG2 for the
 * two-warpgroup 128×128 and 128×256 tiles, whose split is at most 8) and a split of `split` CTAs
 * (1-16, capped at the k-block count; over 8 a non-portable cluster; 0: pl_gemm_sk_split's). cudaErrorInvalidValue
 * for another tile, a split over 16, or a grid past 65535 tiles in a dimension. Takes B N×K, K % 8 == 0, 16-byte
 * aligned A and B. */
cudaError_t pl_gemm_wgmma_sk(const pl_gemm_problem *p, int tile, int swap, int split, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
