/* The decode GEMVs' rows of the BF16 table (gemv_mma.cu: M <= 8, 16 and 32 tokens; their order in
 * host/kernel_table.c). The model counts the padded tokens as work, at mma.sync's measured fraction (0.39). */
#include <stdio.h>

#include "gemm/host/kernel_row.h"

/* The TMA kernels' conditions on the operands (16-byte loads of B's rows and of A's) and at most `tokens` tokens. */
static int supports_gemv(const pl_gemm_problem *p, int tokens, char *why, size_t whylen)
{
    if (!pl_gemm_supports_tma(p, why, whylen))
        return 0;
    if (p->m > tokens) {
        snprintf(why, whylen, "a decode kernel: takes M <= %d; M = %d", tokens, p->m);
        return 0;
    }
    return 1;
}

static int supports_gemv8(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 8, why, whylen);
}

static int supports_gemv16(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 16, why, whylen);
}

static int supports_gemv32(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_gemv(p, 32, why, whylen);
}

const pl_gemm_kernel pl_gemm_row_gemv_mma_t8 = {
    .name = "gemv_mma_t8",
    .rung = "gemv_mma",
    .technique = "decode M <= 8: mma.sync fed from 16-byte global loads of B (no shared-memory stages), 16 rows of N "
                 "per CTA, K over 8 warps added in warp order",
    .tile_m = 8,
    .tile_n = 16,
    .tile_k = 64,
    .stages = 1,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_MMA,
    .flags = PL_GEMM_KERNEL_SMALL_M,
    .supports = supports_gemv8,
    .launch = pl_gemm_gemv_mma_t8,
    .model = PL_GEMM_MODEL_RESIDENT(0.39, 8),
};

const pl_gemm_kernel pl_gemm_row_gemv_mma_t16 = {
    .name = "gemv_mma_t16",
    .rung = "gemv_mma",
    .technique = "the streaming GEMV for M <= 16 (two n8 token tiles share each B fragment)",
    .tile_m = 16,
    .tile_n = 16,
    .tile_k = 64,
    .stages = 1,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_MMA,
    .flags = PL_GEMM_KERNEL_SMALL_M,
    .supports = supports_gemv16,
    .launch = pl_gemm_gemv_mma_t16,
    .model = PL_GEMM_MODEL_RESIDENT(0.39, 8),
};

const pl_gemm_kernel pl_gemm_row_gemv_mma_t32 = {
    .name = "gemv_mma_t32",
    .rung = "gemv_mma",
    .technique = "the streaming GEMV for M <= 32 (four n8 token tiles)",
    .tile_m = 32,
    .tile_n = 16,
    .tile_k = 64,
    .stages = 1,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_MMA,
    .flags = PL_GEMM_KERNEL_SMALL_M,
    .supports = supports_gemv32,
    .launch = pl_gemm_gemv_mma_t32,
    .model = PL_GEMM_MODEL_RESIDENT(0.39, 8),
};
