/* One link of a chain of dependent tiny kernels: a few blocks, one fused multiply-add per element. */
#include "common/grid.h"
#include "launch/launch_kernels.h"

#define TINY_BLOCK 256u

/* No __restrict__: in and out alias in every link of the chain but the first. */
__global__ void __launch_bounds__(TINY_BLOCK)
    tiny_affine_f32_kernel(const float *in, float *out, size_t n, float a, float b)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        out[i] = fmaf(a, in[i], b);
}

extern "C" cudaError_t pl_tiny_affine_f32(const float *in, float *out, size_t n, float a, float b, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + TINY_BLOCK - 1) / TINY_BLOCK;
    unsigned grid = blocks > PL_MAX_GRID_X ? PL_MAX_GRID_X : (unsigned)blocks;
    tiny_affine_f32_kernel<<<grid, TINY_BLOCK, 0, stream>>>(in, out, n, a, b);
    return cudaGetLastError();
}
