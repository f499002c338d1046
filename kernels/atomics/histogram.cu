/* Histogram of n uint32 keys, three versions; each adds one technique to the one before:
 *
 *  1. global    — one atomicAdd per key on the histogram in global memory. Atomics execute in L2; keys that
 *                 share a bin serialize there, so a skewed input (many keys in a few bins) slows it down most.
 *  1b. global_agg — the same with warp aggregation (see 3) in front of the global atomics: the technique alone,
 *                 where the atomics are the bottleneck.
 *  2. shared    — each block counts into its own copy of the bins in shared memory (privatization: shared
 *                 atomics, close to the SM), reading keys 16 bytes at a time, several loads in flight; at the end
 *                 it adds its non-zero bins to the global histogram: bins atomics per block instead of n in all.
 *  3. warp_agg  — before a shared atomic, the lanes of a warp holding the same key find each other
 *                 (__match_any_sync) and the lowest of them adds the group's size: one atomic per distinct key per
 *                 warp. Under skew, 32 lanes with one hot key become one atomic instead of 32 serialized ones.
 *
 * Blocks of 2 and 3 are one resident wave walking the keys with a grid stride, so that each block's merge of its
 * bins is paid once. */
#include <stdint.h>
#include "common/grid.h"
#include "atomics/histogram.h"

#define GLOBAL_THREADS 256
#define SHARED_THREADS 512
#define VEC_LOADS      4 /* uint4 loads in flight per thread per step */

/* ---- 1. global atomics ---- */

__global__ void __launch_bounds__(GLOBAL_THREADS)
    hist_global_kernel(const uint32_t *__restrict__ keys, size_t n, uint32_t *hist, unsigned bins)
{
    const size_t step = (size_t)gridDim.x * GLOBAL_THREADS;
    for (size_t i = (size_t)blockIdx.x * GLOBAL_THREADS + threadIdx.x; i < n; i += step) {
        const uint32_t k = keys[i];
        if (k < bins)
            atomicAdd(&hist[k], 1u);
    }
}

/* ---- 1b. global atomics behind warp aggregation ---- */

__global__ void __launch_bounds__(GLOBAL_THREADS)
    hist_global_agg_kernel(const uint32_t *__restrict__ keys, size_t n, uint32_t *hist, unsigned bins)
{
    const size_t step = (size_t)gridDim.x * GLOBAL_THREADS;
    const unsigned lane = threadIdx.x & 31u;
    /* the loop runs per warp (base is the warp's first key), so every lane reaches the match; lanes past n carry a
     * key no bin takes */
    for (size_t base = (size_t)blockIdx.x * GLOBAL_THREADS + (threadIdx.x & ~31u); base < n; base += step) {
        const size_t i = base + lane;
        const uint32_t k = i < n ? keys[i] : 0xffffffffu;
        const unsigned same = __match_any_sync(0xffffffffu, k);
        if (k < bins && lane == (unsigned)(__ffs(same) - 1))
            atomicAdd(&hist[k], (uint32_t)__popc(same));
    }
}

/* ---- 2 and 3. privatized shared bins (AGG = 1: with warp aggregation) ---- */

template <int AGG> __device__ __forceinline__ void count(uint32_t *bins_s, uint32_t k, unsigned bins)
{
    if (AGG) {
        /* every lane of the warp is here (the caller's loop is warp-uniform) */
        const unsigned same = __match_any_sync(0xffffffffu, k);
        const unsigned lane = threadIdx.x & 31u;
        if (k < bins && lane == (unsigned)(__ffs(same) - 1))
            atomicAdd(&bins_s[k], (uint32_t)__popc(same));
    } else if (k < bins) {
        atomicAdd(&bins_s[k], 1u);
    }
}

template <int AGG>
__global__ void __launch_bounds__(SHARED_THREADS)
    hist_shared_kernel(const uint32_t *__restrict__ keys, size_t n, uint32_t *hist, unsigned bins)
{
    extern __shared__ uint32_t bins_s[];
    for (unsigned b = threadIdx.x; b < bins; b += SHARED_THREADS)
        bins_s[b] = 0;
    __syncthreads();

    const uint4 *k4 = reinterpret_cast<const uint4 *>(keys);
    const size_t n4 = n / 4, warp_step = (size_t)gridDim.x * SHARED_THREADS;
    /* Steps of VEC_LOADS vectors per thread; a step starts only when the whole warp's vectors exist, so that the
     * loop is warp-uniform (the match in count() needs every lane). The rest is taken below without aggregation. */
    const size_t warp_base = ((size_t)blockIdx.x * SHARED_THREADS + (threadIdx.x & ~31u)) * VEC_LOADS;
    const unsigned lane = threadIdx.x & 31u;
    size_t base = warp_base;
    for (; base + 32 * VEC_LOADS <= n4; base += warp_step * VEC_LOADS) {
        uint4 v[VEC_LOADS];
#pragma unroll
        for (int j = 0; j < VEC_LOADS; j++)
            v[j] = __ldcs(k4 + base + j * 32 + lane); /* a warp reads 512 contiguous bytes per load */
#pragma unroll
        for (int j = 0; j < VEC_LOADS; j++) {
            count<AGG>(bins_s, v[j].x, bins);
            count<AGG>(bins_s, v[j].y, bins);
            count<AGG>(bins_s, v[j].z, bins);
            count<AGG>(bins_s, v[j].w, bins);
        }
    }
    /* The one partial step of the grid (its vectors), then the n % 4 keys after the vectors: plain shared atomics. */
    for (int j = 0; j < VEC_LOADS; j++) {
        const size_t i = base + j * 32 + lane;
        if (base < n4 && i < n4) {
            const uint4 v = k4[i];
            count<0>(bins_s, v.x, bins);
            count<0>(bins_s, v.y, bins);
            count<0>(bins_s, v.z, bins);
            count<0>(bins_s, v.w, bins);
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - n4 * 4)
        count<0>(bins_s, keys[n4 * 4 + threadIdx.x], bins);
    __syncthreads();

    for (unsigned b = threadIdx.x; b < bins; b += SHARED_THREADS) {
        const uint32_t c = bins_s[b];
        if (c)
            atomicAdd(&hist[b], c);
    }
}

/* ---- host side ---- */

static const void *kernel_of(pl_hist_version v)
{
    switch (v) {
    case PL_HIST_GLOBAL: return (const void *)hist_global_kernel;
    case PL_HIST_GLOBAL_AGG: return (const void *)hist_global_agg_kernel;
    case PL_HIST_SHARED: return (const void *)hist_shared_kernel<0>;
    case PL_HIST_WARP_AGG: return (const void *)hist_shared_kernel<1>;
    default: return NULL;
    }
}

extern "C" cudaError_t pl_hist_prepare(pl_hist_version v, unsigned bins, int *blocks_per_sm)
{
    const void *k = kernel_of(v);
    if (!k || bins == 0 || bins > PL_HIST_MAX_BINS)
        return cudaErrorInvalidValue;
    if (v == PL_HIST_GLOBAL || v == PL_HIST_GLOBAL_AGG)
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, k, GLOBAL_THREADS, 0);
    const size_t smem = (size_t)bins * sizeof(uint32_t);
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, k, SHARED_THREADS, smem);
    return e;
}

extern "C" cudaError_t pl_hist_launch(pl_hist_version v, const uint32_t *keys, size_t n, uint32_t *hist, unsigned bins,
                                      unsigned blocks, cudaStream_t stream)
{
    if (bins == 0 || bins > PL_HIST_MAX_BINS)
        return cudaErrorInvalidValue;
    cudaError_t e = cudaMemsetAsync(hist, 0, (size_t)bins * sizeof(uint32_t), stream);
    if (e != cudaSuccess || n == 0)
        return e;
    if (v == PL_HIST_GLOBAL || v == PL_HIST_GLOBAL_AGG) {
        size_t grid = (n + GLOBAL_THREADS - 1) / GLOBAL_THREADS;
        if (grid > PL_MAX_GRID_X)
            grid = PL_MAX_GRID_X;
        if (v == PL_HIST_GLOBAL_AGG)
            hist_global_agg_kernel<<<(unsigned)grid, GLOBAL_THREADS, 0, stream>>>(keys, n, hist, bins);
        else
            hist_global_kernel<<<(unsigned)grid, GLOBAL_THREADS, 0, stream>>>(keys, n, hist, bins);
        return cudaGetLastError();
    }
    if ((uintptr_t)keys % 16 != 0)
        return cudaErrorInvalidValue;
    size_t grid = (n / 4 + (size_t)SHARED_THREADS * VEC_LOADS - 1) / ((size_t)SHARED_THREADS * VEC_LOADS);
    if (blocks != 0 && grid > blocks)
        grid = blocks;
    if (grid == 0)
        grid = 1;
    if (grid > PL_MAX_GRID_X)
        grid = PL_MAX_GRID_X;
    const size_t smem = (size_t)bins * sizeof(uint32_t);
    if (v == PL_HIST_WARP_AGG)
        hist_shared_kernel<1><<<(unsigned)grid, SHARED_THREADS, smem, stream>>>(keys, n, hist, bins);
    else
        hist_shared_kernel<0><<<(unsigned)grid, SHARED_THREADS, smem, stream>>>(keys, n, hist, bins);
    return cudaGetLastError();
}
