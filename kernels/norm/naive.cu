/* norm, version 1 — the plain multi-kernel way (the baseline of norm:rmsnorm and norm:layernorm).
 *
 * Technique: none on purpose. The statistics of each row go to memory from one kernel (a block per row, two-byte
 * loads, a shared-memory tree), and a second kernel, one thread per element, reads x again with the statistics
 * and the weight and writes y. x crosses HBM twice (LayerNorm's statistics kernel loops over its row twice, for
 * the mean and then the variance: the textbook two-pass, its second loop served mostly by L1/L2), and every
 * access moves two bytes. fused.cu is the same arithmetic in one pass. */
#include "common/rows.cuh"
#include "norm/norm_kernels.h"

#define NAIVE_THREADS 256
#define GRID_Y_MAX    65535

__global__ void __launch_bounds__(NAIVE_THREADS)
    rmsnorm_sumsq_kernel(const uint16_t *__restrict__ x, float *__restrict__ rinv, int cols, float eps)
{
    __shared__ float sh[NAIVE_THREADS];
    const uint16_t *xr = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = (int)threadIdx.x; c < cols; c += NAIVE_THREADS) {
        const float v = rows_bf16(xr[c]);
        acc += v * v;
    }
    acc = rows_block_tree(acc, sh, 0);
    if (threadIdx.x == 0)
        rinv[blockIdx.x] = rsqrtf(acc / (float)cols + eps);
}

/* grid: x over columns, y over rows (looping past the 65535 limit of gridDim.y) */
__global__ void __launch_bounds__(NAIVE_THREADS)
    rmsnorm_apply_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, const float *__restrict__ rinv,
                         uint16_t *__restrict__ y, int rows, int cols)
{
    const int c = (int)(blockIdx.x * NAIVE_THREADS + threadIdx.x);
    if (c >= cols)
        return;
    const float wc = rows_bf16(w[c]);
    for (int r = (int)blockIdx.y; r < rows; r += (int)gridDim.y) {
        const size_t i = (size_t)r * cols + c;
        y[i] = rows_to_bf16(rows_bf16(x[i]) * rinv[r] * wc);
    }
}

__global__ void __launch_bounds__(NAIVE_THREADS)
    layernorm_stats_kernel(const uint16_t *__restrict__ x, float2 *__restrict__ stats, int cols, float eps)
{
    __shared__ float sh[NAIVE_THREADS];
    const uint16_t *xr = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = (int)threadIdx.x; c < cols; c += NAIVE_THREADS)
        acc += rows_bf16(xr[c]);
    const float mean = rows_block_tree(acc, sh, 0) / (float)cols;
    acc = 0.0f;
    for (int c = (int)threadIdx.x; c < cols; c += NAIVE_THREADS) {
        const float d = rows_bf16(xr[c]) - mean;
        acc += d * d;
    }
    const float var = rows_block_tree(acc, sh, 0) / (float)cols;
    if (threadIdx.x == 0)
        stats[blockIdx.x] = make_float2(mean, rsqrtf(var + eps));
}

__global__ void __launch_bounds__(NAIVE_THREADS)
    layernorm_apply_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                           const uint16_t *__restrict__ b, const float2 *__restrict__ stats, uint16_t *__restrict__ y,
                           int rows, int cols)
{
    const int c = (int)(blockIdx.x * NAIVE_THREADS + threadIdx.x);
    if (c >= cols)
        return;
    const float wc = rows_bf16(w[c]), bc = rows_bf16(b[c]);
    for (int r = (int)blockIdx.y; r < rows; r += (int)gridDim.y) {
        const size_t i = (size_t)r * cols + c;
        const float2 st = stats[r];
        y[i] = rows_to_bf16(fmaf((rows_bf16(x[i]) - st.x) * st.y, wc, bc));
    }
}

static dim3 apply_grid(int rows, int cols)
{
    return dim3((unsigned)((cols + NAIVE_THREADS - 1) / NAIVE_THREADS),
                (unsigned)(rows < GRID_Y_MAX ? rows : GRID_Y_MAX));
}

extern "C" cudaError_t pl_rmsnorm_naive(const uint16_t *x, const uint16_t *w, uint16_t *y, float *rinv, int rows,
                                        int cols, float eps, cudaStream_t stream)
{
    if (rows < 1 || cols < 1 || !x || !w || !y || !rinv)
        return cudaErrorInvalidValue;
    rmsnorm_sumsq_kernel<<<(unsigned)rows, NAIVE_THREADS, 0, stream>>>(x, rinv, cols, eps);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    rmsnorm_apply_kernel<<<apply_grid(rows, cols), NAIVE_THREADS, 0, stream>>>(x, w, rinv, y, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_layernorm_naive(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                          float *stats, int rows, int cols, float eps, cudaStream_t stream)
{
    if (rows < 1 || cols < 1 || !x || !w || !b || !y || !stats || (uintptr_t)stats % 8 != 0)
        return cudaErrorInvalidValue;
    float2 *st = reinterpret_cast<float2 *>(stats);
    layernorm_stats_kernel<<<(unsigned)rows, NAIVE_THREADS, 0, stream>>>(x, st, cols, eps);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    layernorm_apply_kernel<<<apply_grid(rows, cols), NAIVE_THREADS, 0, stream>>>(x, w, b, st, y, rows, cols);
    return cudaGetLastError();
}
