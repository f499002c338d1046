/* Checking a copy on the device: the number of 32-bit words in which two buffers differ (the check of the
 * decode target's cudaMemcpyAsync ceiling, whose gigabytes should not travel to the host to be compared). */
#include "attention/attention.h"

__global__ void count_diff_kernel(const uint32_t *a, const uint32_t *b, size_t n, unsigned long long *count)
{
    unsigned long long c = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    for (int off = 16; off > 0; off >>= 1)
        c += __shfl_xor_sync(0xffffffffu, c, off);
    if ((threadIdx.x & 31) == 0 && c)
        atomicAdd(count, c);
}

extern "C" cudaError_t pl_attn_count_diff_u32(const uint32_t *a, const uint32_t *b, size_t n, unsigned long long *count,
                                              cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(count, 0, sizeof *count, stream);
    if (e != cudaSuccess || n == 0)
        return e;
    size_t blocks = (n + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    count_diff_kernel<<<(unsigned)blocks, 256, 0, stream>>>(a, b, n, count);
    return cudaGetLastError();
}
