/* fp32 copies: one 4-byte word per thread, and 16-byte words with several loads in flight per thread. */
#include <stdint.h>
#include "common/grid.h"
#include "memory/memory_kernels.h"

#define COPY_BLOCK 256u
/* float4 loads each thread issues before its first store: 64 bytes in flight per thread, so that a full SM
 * keeps far more bytes outstanding than latency x bandwidth requires. */
#define VEC16_PER_THREAD 4u

/* One thread per item where the grid allows it. */
__global__ void __launch_bounds__(COPY_BLOCK)
    copy_f32_scalar_kernel(const float *__restrict__ src, float *__restrict__ dst, size_t n)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        dst[i] = src[i];
}

/* Each block copies chunks of VEC16_PER_THREAD * blockDim float4: thread j takes float4 j, j + blockDim, ...
 * of the chunk, so that every load instruction of a warp covers 512 contiguous bytes. Eight blocks per SM
 * (2048 threads, a full Hopper or Blackwell SM): without the bound, sm_100a spends 64 registers and halves
 * the resident threads. */
__global__ void __launch_bounds__(COPY_BLOCK, 2048 / COPY_BLOCK)
    copy_f32_vec16_kernel(const float *__restrict__ src, float *__restrict__ dst, size_t n)
{
    const float4 *src4 = reinterpret_cast<const float4 *>(src);
    float4 *dst4 = reinterpret_cast<float4 *>(dst);
    const size_t n4 = n / 4;
    const size_t chunk = (size_t)VEC16_PER_THREAD * blockDim.x;
    const size_t step = chunk * gridDim.x;
    size_t first = blockIdx.x * chunk + threadIdx.x;

    /* Whole chunks: all loads first, then all stores. */
    for (; first + (VEC16_PER_THREAD - 1) * blockDim.x < n4; first += step) {
        float4 v[VEC16_PER_THREAD];
#pragma unroll
        for (unsigned k = 0; k < VEC16_PER_THREAD; k++)
            v[k] = src4[first + k * blockDim.x];
#pragma unroll
        for (unsigned k = 0; k < VEC16_PER_THREAD; k++)
            dst4[first + k * blockDim.x] = v[k];
    }
    /* The loop stops at the first chunk this thread cannot complete, and the next one (step >= chunk further)
     * starts beyond n4: one partial chunk at most. */
#pragma unroll
    for (unsigned k = 0; k < VEC16_PER_THREAD; k++)
        if (first + k * blockDim.x < n4)
            dst4[first + k * blockDim.x] = src4[first + k * blockDim.x];

    /* The last n % 4 elements, one per thread of the first block. */
    const size_t tail = n - n4 * 4;
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < tail)
        dst[n4 * 4 + t] = src[n4 * 4 + t];
}

extern "C" cudaError_t pl_copy_f32_scalar(const float *src, float *dst, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    copy_f32_scalar_kernel<<<pl_grid_1d(n, COPY_BLOCK), COPY_BLOCK, 0, stream>>>(src, dst, n);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_copy_f32_vec16_resident_blocks(unsigned *blocks)
{
    int device = 0, sms = 0, per_sm = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_f32_vec16_kernel, COPY_BLOCK, 0);
    if (err != cudaSuccess)
        return err;
    *blocks = (unsigned)sms * (unsigned)per_sm;
    return cudaSuccess;
}

extern "C" cudaError_t pl_copy_f32_vec16(const float *src, float *dst, size_t n, unsigned max_blocks,
                                         cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    /* A misaligned float4 access would trap on the device; refuse it here instead. */
    if (((uintptr_t)src | (uintptr_t)dst) % 16 != 0)
        return cudaErrorInvalidValue;
    unsigned grid = pl_grid_1d(n / 4, VEC16_PER_THREAD * COPY_BLOCK);
    if (max_blocks != 0 && grid > max_blocks)
        grid = max_blocks;
    copy_f32_vec16_kernel<<<grid, COPY_BLOCK, 0, stream>>>(src, dst, n);
    return cudaGetLastError();
}
