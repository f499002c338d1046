/* The compute stage of streams:overlap: `iters` steps of a 32-bit linear congruential generator per element.
 * One integer multiply-add a step on a dependent chain; a block's 256 threads hold 256 chains and a multiprocessor
 * enough blocks to hide the multiply-add's latency, so the kernel runs at the integer multiply-add rate. The loop
 * is unrolled so that its control adds little; the compiler cannot fold a geometric recurrence with a run-time
 * count, so the work is really done. */
#include "common/grid.h"
#include "streams/streams_kernels.h"

#define LCG_BLOCK 256u

__global__ void __launch_bounds__(LCG_BLOCK)
    lcg_steps_kernel(const uint32_t *in, uint32_t *out, size_t n, int iters, uint32_t a, uint32_t c)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        uint32_t x = in[i];
#pragma unroll 8
        for (int k = 0; k < iters; k++)
            x = x * a + c;
        out[i] = x;
    }
}

extern "C" cudaError_t pl_lcg_steps_u32(const uint32_t *in, uint32_t *out, size_t n, int iters, uint32_t a, uint32_t c,
                                        cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const size_t blocks = (n + LCG_BLOCK - 1) / LCG_BLOCK;
    const unsigned grid = blocks > PL_MAX_GRID_X ? PL_MAX_GRID_X : (unsigned)blocks;
    lcg_steps_kernel<<<grid, LCG_BLOCK, 0, stream>>>(in, out, n, iters, a, c);
    return cudaGetLastError();
}
