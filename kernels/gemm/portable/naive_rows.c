/* The naive kernel's row of the BF16 table (naive.cu; its order in host/kernel_table.c). */
#include <stdio.h>

#include "gemm/host/kernel_row.h"

/* The naive kernel's grid has one block row per 16 rows of D: gridDim.y caps M. */
static int supports_naive(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->m > 65535 * 16) {
        snprintf(why, whylen, "M = %d exceeds the naive kernel's grid (65535·16 rows)", p->m);
        return 0;
    }
    return 1;
}

const pl_gemm_kernel pl_gemm_row_naive = {
    .name = "naive",
    .rung = "naive",
    .technique = "one thread per output, K fp32 FMAs from global memory",
    .tile_m = 16,
    .tile_n = 16,
    .tile_k = 1,
    .stages = 1,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_ANY,
    .flags = PL_GEMM_KERNEL_TEACHING,
    .supports = supports_naive,
    .launch = pl_gemm_naive,
    .model = PL_GEMM_MODEL_FLOOR,
};
