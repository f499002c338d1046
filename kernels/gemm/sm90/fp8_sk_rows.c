/* The FP8 decode kernels' rows of the FP8 table (fp8_sk_sm90a.cu: swapped split-K, promotion every 128 K; their order
 * in host/kernel_table.c; how the one call runs them with a problem's own scales: fp8_ws_rows.c's launchers).
 *
 * What the pick's model knows of them, predicted (not yet run on a GPU): a CTA's mainloop is the BF16 swapped
 * split-K kernel's (wgmma m64nWk32 e4m3 reads 32 bytes of each row per k-step as m64nWk16 bf16 does, for twice the
 * FLOPs at twice the rate: PL_SK_EFF of gemm/host/splitk.h against the FP8 rate), less a fifth for the drain before
 * each k-block's promotion (wait_group 0: no wgmma group stays in flight across it; the other two CTAs of the SM run
 * meanwhile). At decode the model's memory term decides (tiles · split CTAs fill the SMs, so B streams at the HBM
 * rate), not this figure. */
#include <stdint.h>
#include <stdio.h>

#include "gemm/fp8.h"
#include "gemm/host/kernel_row.h"
#include "gemm/host/splitk.h"

/* A small-M kernel: beyond 4 tiles of tokens the 128-row kernels fit better. D 8-byte aligned (the fix-up stores
 * four bf16 at a time). */
static int supports_fp8_sk(const pl_gemm_problem *p, int tile, char *why, size_t whylen)
{
    if (!pl_gemm_fp8_row_supports(p, why, whylen))
        return 0;
    if ((uintptr_t)p->d % 8 != 0) {
        snprintf(why, whylen, "needs D 8-byte aligned (four bf16 a store)");
        return 0;
    }
    if (p->m > 4 * tile) {
        snprintf(why, whylen, "a small-M kernel: takes M <= %d (4 tiles of %d tokens); M = %d", 4 * tile, tile, p->m);
        return 0;
    }
    return 1;
}

static int supports_fp8_sk16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_fp8_sk(p, 16, why, whylen);
}

static int supports_fp8_sk32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_fp8_sk(p, 32, why, whylen);
}

static int supports_fp8_sk64(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_fp8_sk(p, 64, why, whylen);
}

PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_sk16, pl_gemm_fp8_sk_swap16)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_sk32, pl_gemm_fp8_sk_swap32)
PL_GEMM_FP8_ROW_LAUNCHER(launch_fp8_sk64, pl_gemm_fp8_sk_swap64)

#define FP8_SK_DRAIN 0.8 /* the promotion's drain, predicted */
/* tokens × 64 rows of N a CTA (tile_m is M, tile_n N), k-blocks of 128, three CTAs an SM, the split chosen at launch */
#define FP8_SK_TILE(w)                                                                                                 \
    .tile_m = (w), .tile_n = PL_SK_ROWS, .tile_k = 128, .stages = PL_SK_STAGES(w), .threads = PL_SK_THREADS,           \
    .needs = PL_GEMM_FP8_CLUSTER_NEEDS, .flags = PL_GEMM_KERNEL_SPLIT_K | PL_GEMM_KERNEL_SWAP_AB,                      \
    .model = PL_GEMM_MODEL_RESIDENT(PL_SK_EFF(w) * FP8_SK_DRAIN, PL_SK_CTAS_PER_SM)

const pl_gemm_kernel pl_gemm_row_fp8_sk_swap_16x64x128 = {
    .name = "fp8_sk_swap_16x64x128",
    .rung = "fp8_sk",
    .technique = "FP8 decode: Dᵀ = B·Aᵀ, 64 weight rows × 16 tokens a CTA (wgmma m64n16k32 e4m3), each k-block "
                 "promoted to fp32 with its scales, K split over a cluster, partials added in rank order",
    FP8_SK_TILE(16),
    .supports = supports_fp8_sk16,
    .launch = launch_fp8_sk16,
};

const pl_gemm_kernel pl_gemm_row_fp8_sk_swap_32x64x128 = {
    .name = "fp8_sk_swap_32x64x128",
    .rung = "fp8_sk",
    .technique = "the FP8 swapped split-K kernel with 32 tokens a CTA (wgmma m64n32k32 e4m3)",
    FP8_SK_TILE(32),
    .supports = supports_fp8_sk32,
    .launch = launch_fp8_sk32,
};

const pl_gemm_kernel pl_gemm_row_fp8_sk_swap_64x64x128 = {
    .name = "fp8_sk_swap_64x64x128",
    .rung = "fp8_sk",
    .technique = "the FP8 swapped split-K kernel with 64 tokens a CTA (wgmma m64n64k32 e4m3)",
    FP8_SK_TILE(64),
    .supports = supports_fp8_sk64,
    .launch = launch_fp8_sk64,
};
