/* softmax, version 1 — three passes in three kernels (the baseline of softmax:rows).
 *
 * Technique: none on purpose; the textbook decomposition. Kernel 1 reduces each row to its maximum (a block per
 * row, two-byte loads, a shared-memory tree), kernel 2 reads the row again for the sum of exp(x - max), kernel 3
 * reads it a third time, one thread per element, and writes exp(x - max) / sum. x crosses HBM three times and y
 * once: four row-sized transfers where online.cu needs two. */
#include "common/rows.cuh"
#include "softmax/softmax_kernels.h"

#define NAIVE_THREADS 256
#define GRID_Y_MAX    65535

__global__ void __launch_bounds__(NAIVE_THREADS)
    softmax_max_kernel(const uint16_t *__restrict__ x, float *__restrict__ rowmax, int cols)
{
    __shared__ float sh[NAIVE_THREADS];
    const uint16_t *xr = x + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = (int)threadIdx.x; c < cols; c += NAIVE_THREADS)
        m = fmaxf(m, rows_bf16(xr[c]));
    m = rows_block_tree(m, sh, 1);
    if (threadIdx.x == 0)
        rowmax[blockIdx.x] = m;
}

__global__ void __launch_bounds__(NAIVE_THREADS)
    softmax_sum_kernel(const uint16_t *__restrict__ x, const float *__restrict__ rowmax, float *__restrict__ rowsum,
                       int cols)
{
    __shared__ float sh[NAIVE_THREADS];
    const uint16_t *xr = x + (size_t)blockIdx.x * cols;
    const float m = rowmax[blockIdx.x];
    float s = 0.0f;
    for (int c = (int)threadIdx.x; c < cols; c += NAIVE_THREADS)
        s += expf(rows_bf16(xr[c]) - m);
    s = rows_block_tree(s, sh, 0);
    if (threadIdx.x == 0)
        rowsum[blockIdx.x] = s;
}

/* grid: x over columns, y over rows (looping past the 65535 limit of gridDim.y) */
__global__ void __launch_bounds__(NAIVE_THREADS)
    softmax_normalize_kernel(const uint16_t *__restrict__ x, const float *__restrict__ rowmax,
                             const float *__restrict__ rowsum, uint16_t *__restrict__ y, int rows, int cols)
{
    const int c = (int)(blockIdx.x * NAIVE_THREADS + threadIdx.x);
    if (c >= cols)
        return;
    for (int r = (int)blockIdx.y; r < rows; r += (int)gridDim.y) {
        const size_t i = (size_t)r * cols + c;
        y[i] = rows_to_bf16(expf(rows_bf16(x[i]) - rowmax[r]) / rowsum[r]);
    }
}

extern "C" cudaError_t pl_softmax_three_pass(const uint16_t *x, uint16_t *y, float *rowmax, float *rowsum, int rows,
                                             int cols, cudaStream_t stream)
{
    if (rows < 1 || cols < 1 || !x || !y || !rowmax || !rowsum)
        return cudaErrorInvalidValue;
    softmax_max_kernel<<<(unsigned)rows, NAIVE_THREADS, 0, stream>>>(x, rowmax, cols);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    softmax_sum_kernel<<<(unsigned)rows, NAIVE_THREADS, 0, stream>>>(x, rowmax, rowsum, cols);
    if ((err = cudaGetLastError()) != cudaSuccess)
        return err;
    const dim3 grid((unsigned)((cols + NAIVE_THREADS - 1) / NAIVE_THREADS),
                    (unsigned)(rows < GRID_Y_MAX ? rows : GRID_Y_MAX));
    softmax_normalize_kernel<<<grid, NAIVE_THREADS, 0, stream>>>(x, rowmax, rowsum, y, rows, cols);
    return cudaGetLastError();
}
