/* y = a*x + b over n floats with two mappings of threads to elements; both launch the same grid, so the only
 * difference between them is which addresses a warp touches together. */
#include "common/grid.h"
#include "memory/memory_kernels.h"

#define AFFINE_BLOCK 256u

/* One thread per item where the grid allows it. */
__global__ void __launch_bounds__(AFFINE_BLOCK)
    affine_f32_strided_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n, size_t stride,
                              size_t columns, float a, float b)
{
    const size_t threads = stride * columns;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < threads; t += step) {
        const size_t column = t / stride;
        const size_t row = t - column * stride; /* t % stride without a second division */
        const size_t i = row * columns + column;
        if (i < n) /* the last row is short when stride does not divide n */
            y[i] = fmaf(a, x[i], b);
    }
}

__global__ void __launch_bounds__(AFFINE_BLOCK)
    affine_f32_coalesced_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n, float a, float b)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = fmaf(a, x[i], b);
}

extern "C" cudaError_t pl_affine_f32_strided(const float *x, float *y, size_t n, size_t stride, float a, float b,
                                             cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if (stride == 0)
        return cudaErrorInvalidValue;
    const size_t columns = (n + stride - 1) / stride;
    affine_f32_strided_kernel<<<pl_grid_1d(stride * columns, AFFINE_BLOCK), AFFINE_BLOCK, 0, stream>>>(x, y, n, stride,
                                                                                                       columns, a, b);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_affine_f32_coalesced(const float *x, float *y, size_t n, float a, float b,
                                               cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    affine_f32_coalesced_kernel<<<pl_grid_1d(n, AFFINE_BLOCK), AFFINE_BLOCK, 0, stream>>>(x, y, n, a, b);
    return cudaGetLastError();
}
