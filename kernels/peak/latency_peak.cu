/* Latency: an empty kernel (launch overhead), and a pointer chase (one thread, each load's address the
 * previous load's value, so nothing overlaps) over local or peer memory. */
#include "peak/peak_kernels.h"

__global__ void empty_kernel(void)
{
}

extern "C" cudaError_t pl_empty_kernel(cudaStream_t stream)
{
    empty_kernel<<<1, 1, 0, stream>>>();
    return cudaGetLastError();
}

__global__ void chase_init_kernel(unsigned *next, size_t n, size_t stride)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        next[i] = (unsigned)((i + stride) % n);
}

extern "C" cudaError_t pl_chase_init(unsigned *next, size_t n, size_t stride, cudaStream_t stream)
{
    if (n == 0 || n > 0xFFFFFFFFu)
        return cudaErrorInvalidValue;
    chase_init_kernel<<<1024, 256, 0, stream>>>(next, n, stride);
    return cudaGetLastError();
}

__global__ void chase_kernel(const unsigned *next, unsigned start, int hops, unsigned *out)
{
    unsigned j = start;
    for (int h = 0; h < hops; h++)
        j = __ldcg(next + j); /* L2 at most: L1 must not serve a revisit */
    *out = j;
}

extern "C" cudaError_t pl_chase(const unsigned *next, unsigned start, int hops, unsigned *out, cudaStream_t stream)
{
    chase_kernel<<<1, 1, 0, stream>>>(next, start, hops, out);
    return cudaGetLastError();
}
