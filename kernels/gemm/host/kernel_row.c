/* The problem conditions that rows of several recipes share (gemm/host/kernel_row.h). */
#include <stdint.h>
#include <stdio.h>

#include "gemm/host/kernel_row.h"

int pl_gemm_supports_tma(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (!pl_gemm_problem_valid(p, why, whylen))
        return 0;
    if (p->b_layout != PL_GEMM_B_NK) {
        snprintf(why, whylen, "takes B N×K (K-major) only; B K×N goes to mma_sync");
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
