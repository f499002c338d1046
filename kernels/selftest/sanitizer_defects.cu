/* The deliberate defects of sanitizer_defects.h, one kernel each, over a clean kernel of the same computation. */
#include "selftest/sanitizer_defects.h"

#define DEFECT_THREADS 64 /* two warps: the race is between them */

__global__ void __launch_bounds__(DEFECT_THREADS) defect_none_kernel(const float *in, float *out, int n)
{
    const int i = blockIdx.x * DEFECT_THREADS + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
}

/* Launched with one thread more than n: that thread writes out[n]. */
__global__ void __launch_bounds__(DEFECT_THREADS) defect_oob_write_kernel(const float *in, float *out, int n)
{
    const int i = blockIdx.x * DEFECT_THREADS + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
    else if (i == n)
        out[n] = 0.0f; /* the defect */
}

__global__ void __launch_bounds__(DEFECT_THREADS) defect_shared_race_kernel(const float *in, float *out, int n)
{
    __shared__ int slot[DEFECT_THREADS];
    volatile int *s = slot; /* every access a real shared-memory access, in program order */
    const int t = threadIdx.x, i = blockIdx.x * DEFECT_THREADS + t;
    s[t] = 1;
    __syncthreads();
    s[t] = 2;                     /* the defect: no __syncthreads between this write... */
    const int seen = s[t ^ 32];   /* ...and the other warp's read of it; seen is 1 or 2 */
    if (i < n)
        out[i] = 2.0f * in[i] + (seen < 1 ? 1.0f : 0.0f); /* the same either way */
}

__global__ void __launch_bounds__(DEFECT_THREADS) defect_syncwarp_mask_kernel(const float *in, float *out, int n)
{
    const int lane = threadIdx.x & 31, i = blockIdx.x * DEFECT_THREADS + threadIdx.x;
    const unsigned low_half = __ballot_sync(0xffffffffu, lane < 16);
    const float v = i < n ? 2.0f * in[i] : 0.0f;
    if (lane <= 16)
        __syncwarp(low_half); /* the defect: lane 16 is not in the mask */
    if (i < n)
        out[i] = v;
}

extern "C" const char *pl_defect_kernel_name(pl_defect d)
{
    switch (d) {
    case PL_DEFECT_OOB_WRITE:
        return "defect_oob_write_kernel";
    case PL_DEFECT_SHARED_RACE:
        return "defect_shared_race_kernel";
    case PL_DEFECT_SYNCWARP_MASK:
        return "defect_syncwarp_mask_kernel";
    default:
        return "defect_none_kernel";
    }
}

extern "C" cudaError_t pl_defect_scale(pl_defect d, const float *in, float *out, int n, cudaStream_t stream)
{
    if (n < 1)
        return cudaErrorInvalidValue;
    const unsigned threads = (unsigned)n + (d == PL_DEFECT_OOB_WRITE ? 1u : 0u);
    const dim3 grid((threads + DEFECT_THREADS - 1) / DEFECT_THREADS), block(DEFECT_THREADS);
    switch (d) {
    case PL_DEFECT_OOB_WRITE:
        defect_oob_write_kernel<<<grid, block, 0, stream>>>(in, out, n);
        break;
    case PL_DEFECT_SHARED_RACE:
        defect_shared_race_kernel<<<grid, block, 0, stream>>>(in, out, n);
        break;
    case PL_DEFECT_SYNCWARP_MASK:
        defect_syncwarp_mask_kernel<<<grid, block, 0, stream>>>(in, out, n);
        break;
    default:
        defect_none_kernel<<<grid, block, 0, stream>>>(in, out, n);
        break;
    }
    return cudaGetLastError();
}
