/* The problem conditions that rows of several recipes share (gemm/host/kernel_row.h). */
#include <stdint.h>
#include <stdio.h>

#include "gemm/host/kernel_row.h"

/* What both layouts' TMA kernels need: B in `layout`, K % 8 == 0, 16-byte aligned A and B. */
static int supports_tma_layout(const pl_gemm_problem *p, pl_gemm_b_layout layout, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != layout) {
        snprintf(why, whylen, "%s",
                 layout == PL_GEMM_B_NK ? "takes B N×K (K-major) only; B K×N goes to the _kn kernels or mma_sync"
                                        : "takes B K×N only; B N×K goes to its N×K twin (the name without _kn)");
        return 0;
    }
    if (p->k % 8 != 0) {
        snprintf(why, whylen, "needs K %% 8 == 0 (TMA rows are 16-byte multiples); K = %d falls back to mma_sync",
                 p->k);
        return 0;
    }
    if ((uintptr_t)p->a % 16 != 0 || (uintptr_t)p->b % 16 != 0) {
        snprintf(why, whylen, "needs 16-byte aligned A and B (TMA)");
        return 0;
    }
    return 1;
}

int pl_gemm_supports_tma(const pl_gemm_problem *p, char *why, size_t whylen)
{
    return supports_tma_layout(p, PL_GEMM_B_NK, why, whylen);
}

int pl_gemm_supports_tma_kn(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!supports_tma_layout(p, PL_GEMM_B_KN, why, whylen))
        return 0;
    if (p->n % 8 != 0) {
        snprintf(why, whylen,
                 "B K×N needs N %% 8 == 0 (TMA rows of B are 16-byte multiples); N = %d falls back to mma_sync", p->n);
        return 0;
    }
    return 1;
}
