/* FP8 GEMM, sm_90a: D (bf16) = scale · (A·B), A M×K and B N×K in e4m3, tensor or block scaling (gemm/fp8.h).
 *
 * The kernel is the warp-specialized persistent one of sm90_ws_scaled.cuh with 128×192 tiles and k-blocks of 128
 * e4m3 (one 128-byte swizzle row: 16 KB of A and 24 KB of B per stage, 4 stages): a TMA producer warpgroup, two
 * consumer warpgroups each issuing four wgmma m64n192k32 e4m3 per k-block into an accumulator of its own (`part`)
 * that is promoted into fp32 registers every k-block (128 K): for block scaling times sa[row][kb]·sb[n-block][kb] (a
 * 192-wide tile spans two 128-wide B blocks: each column takes its own), for tensor scaling as is, its one scale
 * multiplying the finished accumulator. Block scales come into each stage by bulk copy with its A and B (issued by
 * the producer, counted on the stage's barrier) and are read from shared memory: loaded from global memory a k-block
 * ahead instead, the block kernel ran 4% slower (H200, 2026-11-26). Tensor scaling may promote every 4 k-blocks
 * instead (`promote = 4`, 512 K: sw_mainloop_promote, straight-line groups with one wgmma group in flight and one drain
 * a group): 4% faster at 8192³ on an H200 (1208-1220 against 1160-1171 TFLOP/s, cuBLASLt 1217-1227), relative error
 * 1.7e-3 either way at K = 8192 on signed inputs (H200, 2026-11-27; docs/perf/gemm.md, FP8). The default stays every
 * k-block: on positive inputs (sums growing with K) every 128 K keeps 1.7e-3, cuBLASLt's default too, where every
 * 512 K gives 6.4e-3 at K = 8192 and no promotion 8.9e-2 (H100, 2026-11-27). The first promote = 4 build had
 * its wgmma in a branch, serialized by ptxas, and measured 1051 against 1174.
 * Why 128×192: the promotion keeps two accumulators per thread, 2 × 96 registers for m64n192, which fit the consumers'
 * 232 registers (setmaxnreg), where two m64n256 ones would not; per k-block the tile reads 104 KB of shared memory (TMA
 * writes 40, wgmma reads 64) for 768 tensor-core cycles, 139 B/clk against the SM's 128: 128×128 tiles needed 160 B/clk
 * (80 KB for 512). Any M and N; K % 16 == 0 (TMA row pitch); D by TMA when N % 8 == 0.
 *
 * The _c2 launcher runs it in 2-CTA clusters (as the BF16 ladder's rung 6): the two CTAs take vertically adjacent
 * tiles, each loads half of their common B panel and multicasts it into both, and a consumer releases a stage on
 * both CTAs' "empty" barriers. Per CTA and k-block L2 then serves 16 KB of A and 12 KB of B instead of 16 + 24.
 *
 * The consumer issues a tile's first k-block before it stores the previous tile (sw_consume_overlap: the wgmma write
 * `part`, the stores read the fp32 accumulator), so the tensor cores work through the epilogue: +3% for tensor
 * scaling, +4-5% for block scaling (H100, 2026-11-27). With block scales every consumer thread arrives on a stage's
 * empty barrier, each ordering its own reads of the stage's scale copies before the producer's next bulk copy.
 *
 * The _n128 launchers run 128×128 tiles, 6 stages: 1.5× the tiles of 128×192, so a fuller last wave where
 * the wide tile's is short (4096³: 704 tiles of 128×192 on 132 SMs are 5.33 waves, 1024 of 128×128 are 7.76), at 160
 * B/clk of shared memory per tensor cycle against the SM's 128 (the wide tile: 139). They promote every 128 K; the
 * 512-K promotion and the halves are the wide tile's only. The _n176 launcher (tensor scaling only: a 176-wide tile
 * may span three 128-wide B blocks) runs 128×176 tiles, 5 stages, its last 48 columns stored through a dense map of
 * their own: at 4096³, 24 tile columns × 32 rows = 768 tiles, 5.8 waves of 176 columns where 128×192 runs 5.3
 * waves (6 rounds) of 192. The _two_parts launchers run 128×128 tiles whose consumers keep two promotion
 * accumulators alternating by k-block (sw_mainloop_two_parts): k-block kb runs while kb - 1 is promoted, so no drain
 * inside a tile, at the 128-K interval (three 64-register accumulators, hence the narrower tile). Measured on an H100
 * (2026-11-27): the drain was worth 4-5% at 128 wide, and 128×128 runs 17% slower per tile than 128×192 at 8192³, so
 * they win only at small shapes (2048³). `perflab gemm --dtype fp8` times every width per shape.
 *
 * The _halves launcher promotes every k-block off the critical path: each k-block's wgmma go
 * in two commit groups of m64n96k32, the tile's two column halves, so that a consumer promotes one half while the
 * other is still on the tensor cores (sm90_ws_mainloops.cuh, sw_mainloop_halves). It reads A from shared memory twice a
 * k-block and is bound by it: since the epilogue overlap the one-group kernel is the faster block kernel
 * (`gemm:fp8`'s fp8_block; the halves are fp8_block_halves). */
#include <stdio.h>

#include "gemm/fp8.h"
#include "gemm/device/sm90_ws_scaled.cuh"

#define FP8_BN                  192 /* tile width: two m64n192 accumulators (part and total) fit 232 registers */
#define FP8_TENSOR_PROMOTE_LONG 4   /* promote = 4: k-blocks of 128 per promotion (512 K), tensor scaling only */
#define FP8_BN_NARROW           128 /* the _n128 launchers' tile width: more, smaller tiles (fuller last waves) */
#define FP8_BN_N176             176 /* the _n176 launcher's: tensor scaling, stored with a 48-column last subtile */

extern "C" int pl_gemm_fp8_supports(const pl_gemm_fp8_problem *p, char *why, size_t whylen)
{
    if (p->m < 1 || p->n < 1 || p->k < 1) {
        snprintf(why, whylen, "M, N and K must be at least 1 (got %d×%d×%d)", p->m, p->n, p->k);
        return 0;
    }
    if (!p->a || !p->b || !p->d) {
        snprintf(why, whylen, "A, B and D must be device pointers");
        return 0;
    }
    if (p->k % 16 != 0) {
        snprintf(why, whylen, "needs K %% 16 == 0 (TMA rows of e4m3 are 16-byte multiples); K = %d", p->k);
        return 0;
    }
    if ((uintptr_t)p->a % 16 != 0 || (uintptr_t)p->b % 16 != 0) {
        snprintf(why, whylen, "needs 16-byte aligned A and B (TMA)");
        return 0;
    }
    if ((size_t)p->m * (size_t)p->n > 0xffffffffu) {
        snprintf(why, whylen, "M·N exceeds 2^32 elements");
        return 0;
    }
    if (p->fast_accum) {
        snprintf(why, whylen, "fast accumulation (no promotion) is cuBLASLt's option; the native kernels promote");
        return 0;
    }
    if (p->promote != 0 && p->promote != 1 && p->promote != FP8_TENSOR_PROMOTE_LONG) {
        snprintf(why, whylen, "promote must be 0, 1 or %d k-blocks (got %d)", FP8_TENSOR_PROMOTE_LONG, p->promote);
        return 0;
    }
    if (p->scaling == PL_FP8_SCALING_BLOCK && (!p->scale_a || !p->scale_b)) {
        snprintf(why, whylen, "block scaling needs both scale tensors");
        return 0;
    }
    if (p->scaling == PL_FP8_SCALING_BLOCK && ((uintptr_t)p->scale_a % 16 != 0 || (uintptr_t)p->scale_b % 16 != 0)) {
        snprintf(why, whylen, "block scaling needs 16-byte aligned scale tensors (bulk copies)");
        return 0;
    }
    return 1;
}

template <int CLUSTER, int ACCS, int BN = FP8_BN>
static cudaError_t launch_fp8(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!pl_gemm_fp8_supports(p, why, sizeof why) || (ACCS != SW_ONE_PART && p->promote > 1))
        return cudaErrorInvalidValue; /* the halves and the two parts promote every k-block */
    if (BN % EPI_SUB != 0 && p->scaling == PL_FP8_SCALING_BLOCK)
        return cudaErrorInvalidValue; /* a 176-wide tile may span three 128-wide B blocks */
    CUtensorMap ta, tb, td, tt;
    cudaError_t e = pl_tensor_map_2d(&ta, p->a, (uint64_t)p->m, (uint64_t)p->k, 1, SW_BM, 128);
    if (e == cudaSuccess) /* clustered, each CTA loads half of the B panel and multicasts it */
        e = pl_tensor_map_2d(&tb, p->b, (uint64_t)p->n, (uint64_t)p->k, 1, BN / CLUSTER, 128);
    if (e != cudaSuccess)
        return e;
    sw_params sp = {};
    sw_set_out_and_scales(sp, p->d, p->m, p->n, p->k, p->scale_a, p->scale_b);
    sp.k_blocks = pl_fp8_kblocks(p->k);
    const int tiles_m = (p->m + SW_BM - 1) / SW_BM;
    sp.tile_rows = (tiles_m + CLUSTER - 1) / CLUSTER; /* in cluster units */
    sp.tile_cols = (p->n + BN - 1) / BN;
    sw_store_map(&td, p->d, p->m, p->n, &sp.tma_store);
    if (sp.tma_store && BN % EPI_SUB != 0) /* the tile's narrower last subtile leaves through a map of its own */
        sp.tma_store =
            pl_tensor_map_bf16_dense(&tt, p->d, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, BN % EPI_SUB) == cudaSuccess;
    if (!sp.tma_store)
        td = ta; /* unused */
    const CUtensorMap *tail = sp.tma_store && BN % EPI_SUB != 0 ? &tt : NULL;
    const long long tiles = (long long)sp.tile_rows * sp.tile_cols;
    if constexpr (ACCS != SW_ONE_PART) /* the halves (128×192) or the two parts (128×128), either scaling */
        return p->scaling == PL_FP8_SCALING_BLOCK
                   ? sw_launch<BN, SW_E4M3, SW_SCALE_BLOCK, CLUSTER, 1, ACCS>(ta, tb, td, sp, tiles, stream)
                   : sw_launch<BN, SW_E4M3, SW_SCALE_TENSOR, CLUSTER, 1, ACCS>(ta, tb, td, sp, tiles, stream);
    if constexpr (BN % EPI_SUB == 0)
        if (p->scaling == PL_FP8_SCALING_BLOCK)
            return sw_launch<BN, SW_E4M3, SW_SCALE_BLOCK, CLUSTER, 1>(ta, tb, td, sp, tiles, stream);
    if constexpr (BN == FP8_BN) /* the promotion every 512 K: the 128×192 tile only */
        if (p->promote == FP8_TENSOR_PROMOTE_LONG)
            return sw_launch<BN, SW_E4M3, SW_SCALE_TENSOR, CLUSTER, FP8_TENSOR_PROMOTE_LONG>(ta, tb, td, sp, tiles,
                                                                                             stream);
    if (p->promote > 1)
        return cudaErrorInvalidValue;
    return sw_launch<BN, SW_E4M3, SW_SCALE_TENSOR, CLUSTER, 1>(ta, tb, td, sp, tiles, stream, NULL, tail);
}

extern "C" cudaError_t pl_gemm_fp8_ws(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1, SW_ONE_PART>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<2, SW_ONE_PART>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_n128(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1, SW_ONE_PART, FP8_BN_NARROW>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_n128_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<2, SW_ONE_PART, FP8_BN_NARROW>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_two_parts(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1, SW_TWO_PARTS, FP8_BN_NARROW>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_two_parts_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<2, SW_TWO_PARTS, FP8_BN_NARROW>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_n176(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1, SW_ONE_PART, FP8_BN_N176>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_halves(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1, SW_HALVES>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_halves_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<2, SW_HALVES>(p, stream);
}
