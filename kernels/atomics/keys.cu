/* Keys for the histogram lesson, drawn from uniform random numbers already on the device: even, or by inverse
 * transform sampling of a cumulative distribution (a binary search in the CDF). */
#include "common/grid.h"
#include "atomics/keys.h"

#define THREADS 256

__global__ void __launch_bounds__(THREADS) keys_kernel(void *buf, size_t n, unsigned bins, const double *cdf)
{
    const size_t step = (size_t)gridDim.x * THREADS;
    for (size_t i = (size_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += step) {
        const float u = static_cast<const float *>(buf)[i];
        unsigned k;
        if (!cdf) {
            k = (unsigned)(u * (float)bins);
        } else {
            unsigned lo = 0, hi = bins - 1; /* the first k with u < cdf[k] lies in [lo, hi] */
            while (lo < hi) {
                const unsigned mid = (lo + hi) / 2;
                if ((double)u < cdf[mid])
                    hi = mid;
                else
                    lo = mid + 1;
            }
            k = lo;
        }
        static_cast<uint32_t *>(buf)[i] = k < bins ? k : bins - 1;
    }
}

extern "C" cudaError_t pl_keys_from_uniform(void *buf, size_t n, unsigned bins, const double *cdf, cudaStream_t stream)
{
    if (bins == 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    size_t grid = (n + THREADS - 1) / THREADS;
    if (grid > 65536)
        grid = 65536;
    keys_kernel<<<(unsigned)grid, THREADS, 0, stream>>>(buf, n, bins, cdf);
    return cudaGetLastError();
}
