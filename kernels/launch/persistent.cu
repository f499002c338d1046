/* launch:persistent's kernels — a stencil wavefront of small dependent items (kernels/launch/persistent.h).
 *
 * Version 1, one kernel per step: the kernel boundary is the dependency. Every step pays a launch, and no tile of
 * step k+1 starts before the last tile of step k is done.
 * Version 2, one persistent kernel: blocks stay resident and pull (step, tile) items from a queue head in global
 * memory (atomicAdd); an item waits (acquire loads) until the three tiles of the previous step it reads have been
 * published (release stores of a per-tile step counter), so a tile runs ahead as soon as its own neighbours are
 * done. Items are numbered step-major, so every item's dependencies were taken by blocks that are already running:
 * the queue cannot deadlock, whatever the grid. Data written by other blocks is read with ld.global.cg (from L2),
 * never from a possibly stale L1 line. */
#include <stdint.h>

#include "launch/persistent.h"

#define TILE PL_STENCIL_TILE

/* The queue: head, blocks that have left, then one step counter per tile (steps published so far). */
#define Q_HEAD     0
#define Q_EXITED   1
#define Q_PROGRESS 2

template <bool FROM_L2> __device__ __forceinline__ float load_in(const float *p)
{
    return FROM_L2 ? __ldcg(p) : *p;
}

/* y[i] of one step, with zeros outside [0, n) */
template <bool FROM_L2>
__device__ __forceinline__ float stencil_point(const float *in, size_t i, size_t n, float a, float c)
{
    const float l = i > 0 ? load_in<FROM_L2>(in + i - 1) : 0.0f;
    const float r = i + 1 < n ? load_in<FROM_L2>(in + i + 1) : 0.0f;
    return fmaf(a, load_in<FROM_L2>(in + i), c * (l + r));
}

__global__ void __launch_bounds__(TILE)
    stencil_step_kernel(const float *x, float *p0, float *p1, size_t n, int k, const float *coef)
{
    const float *in = k == 0 ? x : ((k - 1) & 1 ? p1 : p0);
    float *out = (k & 1) ? p1 : p0;
    const size_t i = (size_t)blockIdx.x * TILE + threadIdx.x;
    if (i < n)
        out[i] = stencil_point<false>(in, i, n, coef[2 * k], coef[2 * k + 1]);
}

extern "C" cudaError_t pl_stencil_step_f32(const float *x, float *p0, float *p1, size_t n, int k, const float *coef,
                                           cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    stencil_step_kernel<<<(unsigned)((n + TILE - 1) / TILE), TILE, 0, stream>>>(x, p0, p1, n, k, coef);
    return cudaGetLastError();
}

__device__ __forceinline__ unsigned load_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release(unsigned *p, unsigned v)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__global__ void __launch_bounds__(TILE) stencil_persistent_kernel(const float *x, float *p0, float *p1, size_t n,
                                                                  int steps, const float *coef, unsigned *queue)
{
    unsigned *progress = queue + Q_PROGRESS;
    const unsigned tiles = (unsigned)((n + TILE - 1) / TILE);
    const unsigned items = tiles * (unsigned)steps;
    __shared__ unsigned s_item;
    for (;;) {
        if (threadIdx.x == 0)
            s_item = atomicAdd(queue + Q_HEAD, 1u);
        __syncthreads();
        const unsigned item = s_item;
        if (item >= items)
            break; /* the same value in every thread: the block leaves together */
        const unsigned k = item / tiles, j = item % tiles;
        /* three threads wait for the three tiles of step k-1 this item reads */
        if (k > 0 && threadIdx.x < 3) {
            const int t = (int)j - 1 + (int)threadIdx.x;
            if (t >= 0 && t < (int)tiles)
                while (load_acquire(progress + t) < k)
                    ;
        }
        __syncthreads(); /* the acquires happen before every thread's loads below */
        const float *in = k == 0 ? x : ((k - 1) & 1 ? p1 : p0);
        float *out = (k & 1) ? p1 : p0;
        const size_t i = (size_t)j * TILE + threadIdx.x;
        if (i < n)
            out[i] = stencil_point<true>(in, i, n, coef[2 * k], coef[2 * k + 1]);
        __syncthreads();      /* every store of the tile is made before it is published (and s_item may be reused) */
        if (threadIdx.x == 0) /* a release at GPU scope: the block's stores, ordered by the barrier, go first */
            store_release(progress + j, k + 1);
    }
    /* the last block out leaves the queue zeroed for the next launch (the others no longer touch it) */
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(queue + Q_EXITED, 1u) == gridDim.x - 1) {
            for (unsigned t = 0; t < tiles; t++)
                progress[t] = 0;
            queue[Q_HEAD] = 0;
            queue[Q_EXITED] = 0;
            __threadfence();
        }
    }
}

extern "C" size_t pl_stencil_queue_bytes(size_t n)
{
    return (Q_PROGRESS + (n + TILE - 1) / TILE) * sizeof(unsigned);
}

extern "C" cudaError_t pl_stencil_persistent_max_blocks(unsigned *blocks)
{
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, stencil_persistent_kernel, TILE, 0);
    *blocks = e == cudaSuccess ? (unsigned)(sms * per_sm) : 0;
    return e;
}

extern "C" cudaError_t pl_stencil_persistent_f32(const float *x, float *p0, float *p1, size_t n, int steps,
                                                 const float *coef, void *queue, unsigned blocks, cudaStream_t stream)
{
    if (n == 0 || steps <= 0)
        return cudaSuccess;
    if (blocks == 0)
        return cudaErrorInvalidValue;
    stencil_persistent_kernel<<<blocks, TILE, 0, stream>>>(x, p0, p1, n, steps, coef, (unsigned *)queue);
    return cudaGetLastError();
}
