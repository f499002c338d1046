/* FP8 GEMM, sm_90a: D (bf16) = scale · (A·B), A M×K and B N×K in e4m3, tensor or block scaling (gemm/fp8.h).
 *
 * The kernel is the warp-specialized persistent one of sm90_ws_scaled.cuh with 128×128 tiles and k-blocks of 128
 * e4m3 (one 128-byte swizzle row: 16 KB of A and 16 KB of B per stage, 6 stages): a TMA producer warpgroup, two
 * consumer warpgroups each issuing four wgmma m64n128k32 e4m3 per k-block into a fresh accumulator, which is
 * promoted into the fp32 accumulator (times the block's scales) every 128 K; a TMA-store epilogue. Why 128×128
 * and not the BF16 kernel's 128×256: the promotion keeps two accumulators per thread (part and total, 64 + 64
 * registers for m64n128), and the kernel's 168 registers per thread (384 threads, one CTA per SM) cannot hold
 * two m64n256 ones. Any M and N; K % 16 == 0 (TMA row pitch); D by TMA when N % 8 == 0.
 *
 * The _c2 launcher runs it in 2-CTA clusters (as the BF16 ladder's rung 6): the two CTAs take vertically adjacent
 * tiles, each loads half of their common B panel and multicasts it into both, and a consumer releases a stage on
 * both CTAs' "empty" barriers. Per CTA and k-block L2 then serves 16 KB of A and 8 KB of B instead of 16 + 16. */
#include <stdio.h>

#include "gemm/fp8.h"
#include "gemm/sm90_ws_scaled.cuh"

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
    if (p->scaling == PL_FP8_SCALING_BLOCK && (!p->scale_a || !p->scale_b)) {
        snprintf(why, whylen, "block scaling needs both scale tensors");
        return 0;
    }
    return 1;
}

template <int CLUSTER> static cudaError_t launch_fp8(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!pl_gemm_fp8_supports(p, why, sizeof why))
        return cudaErrorInvalidValue;
    CUtensorMap ta, tb, td;
    cudaError_t e = pl_tensor_map_2d(&ta, p->a, (uint64_t)p->m, (uint64_t)p->k, 1, SW_BM, 128);
    if (e == cudaSuccess) /* clustered, each CTA loads half of the B panel and multicasts it */
        e = pl_tensor_map_2d(&tb, p->b, (uint64_t)p->n, (uint64_t)p->k, 1, 128 / CLUSTER, 128);
    if (e != cudaSuccess)
        return e;
    sw_params sp = {};
    sp.o.d = p->d;
    sp.o.m = p->m;
    sp.o.n = p->n;
    sp.k_blocks = pl_fp8_kblocks(p->k);
    const int tiles_m = (p->m + SW_BM - 1) / SW_BM;
    sp.tile_rows = (tiles_m + CLUSTER - 1) / CLUSTER; /* in cluster units */
    sp.tile_cols = (p->n + 127) / 128;
    sw_store_map(&td, p->d, p->m, p->n, &sp.tma_store);
    if (!sp.tma_store)
        td = ta; /* unused */
    sp.scale_a = p->scale_a;
    sp.scale_b = p->scale_b;
    sp.lda = pl_fp8_scale_a_ld(p->m);
    sp.ldb = pl_fp8_scale_b_ld(p->k);
    sp.nblocks = pl_fp8_kblocks(p->n);
    const long long tiles = (long long)sp.tile_rows * sp.tile_cols;
    if (p->scaling == PL_FP8_SCALING_BLOCK)
        return sw_launch<128, SW_E4M3, SW_SCALE_BLOCK, CLUSTER>(ta, tb, td, sp, tiles, stream);
    return sw_launch<128, SW_E4M3, SW_SCALE_TENSOR, CLUSTER>(ta, tb, td, sp, tiles, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<1>(p, stream);
}

extern "C" cudaError_t pl_gemm_fp8_ws_c2(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    return launch_fp8<2>(p, stream);
}
