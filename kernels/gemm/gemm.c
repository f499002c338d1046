/* The BF16 GEMM problem (its layouts' names, its argument checks) and the one calls, pl_gemm_bf16 and pl_gemm_fp8, that
 * pick a kernel for the current device (gemm/host/heuristic.h) and launch it. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "gemm/fp8.h"
#include "gemm/gemm.h"
#include "gemm/host/heuristic.h"
#include "gemm/tune.h"
#include "gemm/host/kernel_row.h"

static const char *const layout_names[] = {"nk", "kn"};

const char *pl_gemm_layout_name(pl_gemm_b_layout l)
{
    return (unsigned)l < 2 ? layout_names[l] : "unknown";
}

int pl_gemm_layout_from_name(const char *name)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(name, layout_names[i]) == 0)
            return i;
    return -1;
}

int pl_gemm_problem_valid(const pl_gemm_problem *p, char *why, size_t whylen)
{
    if (p->m < 1 || p->n < 1 || p->k < 1) {
        snprintf(why, whylen, "M, N and K must be at least 1 (got %d×%d×%d)", p->m, p->n, p->k);
        return 0;
    }
    if (!p->a || !p->b || !p->d) {
        snprintf(why, whylen, "A, B and D must be device pointers");
        return 0;
    }
    if ((size_t)p->m * (size_t)p->n > (size_t)UINT_MAX) {
        snprintf(why, whylen, "M·N = %zu exceeds 2^32 elements", (size_t)p->m * (size_t)p->n);
        return 0;
    }
    return 1;
}

cudaError_t pl_gemm_bf16(const pl_gemm_problem *p, cudaStream_t stream)
{
    pl_gemm_gpu g;
    cudaError_t e = pl_gemm_gpu_query(&g);
    if (e != cudaSuccess)
        return e;
    pl_gemm_pick pick;
    if (pl_gemm_bf16_pick(p, &g, &pick) != 0)
        return cudaErrorInvalidValue;
    if (!pick.tuned && pl_gemm_autotune_on()) { /* the first call of this class: time the candidates, then run */
        enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
        if ((e = cudaStreamIsCapturing(stream, &capturing)) != cudaSuccess)
            return e;
        pl_gemm_tune_result r;
        if (capturing == cudaStreamCaptureStatusNone) {
            if ((e = pl_gemm_bf16_tune(p, stream, NULL, &r)) != cudaSuccess)
                return e;
            return r.kernel->launch(p, stream);
        }
    }
    return pick.kernel->launch(p, stream);
}

cudaError_t pl_gemm_fp8(const pl_gemm_fp8_problem *p, cudaStream_t stream)
{
    pl_gemm_gpu g;
    cudaError_t e = pl_gemm_gpu_query(&g);
    if (e != cudaSuccess)
        return e;
    pl_gemm_pick pick;
    if (pl_gemm_fp8_pick(p, &g, &pick) != 0)
        return cudaErrorInvalidValue;
    return pl_gemm_fp8_row_launch(pick.kernel, p, stream);
}
