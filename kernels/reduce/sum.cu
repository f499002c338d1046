/* Sum of n values (fp32 or bf16 in, fp32 accumulation and out) in three versions; each adds one technique:
 *
 *  1. atomic      — every thread adds its element to the one result with a global atomicAdd. All n additions
 *                   serialize on one address in L2: the rate of one L2 atomic unit, not of HBM.
 *  2. smem_tree   — each block of 256 threads sums its 256 elements in a shared-memory tree (8 halving steps, a
 *                   barrier after each), then adds its sum with one atomicAdd: n/256 atomics.
 *  3. warp_vec16  — a grid of whole resident waves (the caller picks how many), each block given an equal
 *                   contiguous share of the input (blocks of a wave finish together; a later wave's blocks start
 *                   on the SMs that finish first, so a slower SM takes fewer shares); each thread sums sixteen-byte
 * vectors, four loads in flight at a time, into registers; warps combine with shuffles (no shared memory, no barrier
 * per step), each block writes one partial, and the last block to finish (a ticket counter) adds the few partials in a
 * fixed order. No atomic on the result: for a given grid (one per GPU model) the same input gives the same bits on
 * every run.
 *
 * The elements are read once from HBM in every version; they differ in what serializes after the load. */
#include <stdint.h>
#include <cuda_bf16.h>
#include "common/grid.h"
#include "reduce/reduce.h"

#define BLOCK     256
#define VEC_LOADS 4                           /* 16-byte loads in flight per thread */
#define STEP_VECS ((size_t)BLOCK * VEC_LOADS) /* vectors a block reads per step: 16 KiB */

/* element i as float */
template <int BF16> __device__ __forceinline__ float load_elem(const void *in, size_t i)
{
    if (BF16)
        return __bfloat162float(static_cast<const __nv_bfloat16 *>(in)[i]);
    return static_cast<const float *>(in)[i];
}

/* ---- 1. one atomic per element ---- */

template <int BF16> __global__ void __launch_bounds__(BLOCK) sum_atomic_kernel(const void *in, size_t n, float *out)
{
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        atomicAdd(out, load_elem<BF16>(in, i));
}

/* ---- 2. shared-memory tree, one atomic per block ---- */

template <int BF16> __global__ void __launch_bounds__(BLOCK) sum_tree_kernel(const void *in, size_t n, float *out)
{
    __shared__ float s[BLOCK];
    const unsigned t = threadIdx.x;
    const size_t i = (size_t)blockIdx.x * BLOCK + t;
    s[t] = i < n ? load_elem<BF16>(in, i) : 0.0f;
    __syncthreads();
    /* sequential addressing: the active threads read consecutive words (no bank conflict) */
    for (unsigned half = BLOCK / 2; half > 0; half >>= 1) {
        if (t < half)
            s[t] += s[t + half];
        __syncthreads();
    }
    if (t == 0)
        atomicAdd(out, s[0]);
}

/* ---- 3. 16-byte loads, warp shuffles, deterministic last-block pass ---- */

/* the sum of the 4 fp32 or 8 bf16 in one 16-byte vector */
template <int BF16> __device__ __forceinline__ float vec_sum(uint4 v)
{
    if (BF16) {
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
        float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
        float2 c = __bfloat1622float2(h[2]), d = __bfloat1622float2(h[3]);
        return ((a.x + a.y) + (b.x + b.y)) + ((c.x + c.y) + (d.x + d.y));
    }
    return (__uint_as_float(v.x) + __uint_as_float(v.y)) + (__uint_as_float(v.z) + __uint_as_float(v.w));
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

/* The block's sum in thread 0 (a fixed order: shuffles in each warp, then warp 0 over the warps' sums). */
__device__ __forceinline__ float block_sum(float v, float *warp_sums)
{
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? warp_sums[lane] : 0.0f;
    if (warp == 0)
        v = warp_sum(v);
    return v;
}

/* Workspace: the ticket counter in the first 16 bytes, then one float per block. */
#define WS_HEADER 16

template <int BF16>
__global__ void __launch_bounds__(BLOCK)
    sum_vec16_kernel(const void *__restrict__ in, size_t n, float *out, unsigned *ticket, float *partials)
{
    __shared__ float warp_sums[BLOCK / 32];
    __shared__ unsigned am_last;
    const size_t per_vec = BF16 ? 8 : 4;
    const size_t n_vec = n / per_vec;
    const uint4 *v16 = static_cast<const uint4 *>(in);
    /* this block's share: vectors [begin, end), equal to within 32 vectors, starting on a 512-byte boundary (a warp's
     * loads then cover whole 128-byte lines) */
    const size_t units = (n_vec + 31) / 32;
    const size_t begin = 32 * (units * blockIdx.x / gridDim.x);
    const size_t end = min(n_vec, 32 * (units * (blockIdx.x + 1) / gridDim.x));
    float acc = 0.0f;

    size_t i = begin + threadIdx.x;
    /* whole steps: VEC_LOADS independent loads before their sums, a warp's load covering 512 contiguous bytes */
    for (; i + (VEC_LOADS - 1) * BLOCK < end; i += STEP_VECS) {
        uint4 v[VEC_LOADS];
#pragma unroll
        for (int k = 0; k < VEC_LOADS; k++)
            v[k] = __ldcs(v16 + i + (size_t)k * BLOCK);
#pragma unroll
        for (int k = 0; k < VEC_LOADS; k++)
            acc += vec_sum<BF16>(v[k]);
    }
    /* the share's last partial step */
#pragma unroll
    for (int k = 0; k < VEC_LOADS; k++)
        if (i + (size_t)k * BLOCK < end)
            acc += vec_sum<BF16>(v16[i + (size_t)k * BLOCK]);
    /* the n % per_vec elements after the vectors, in the last block */
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x < n - n_vec * per_vec)
        acc += load_elem<BF16>(in, n_vec * per_vec + threadIdx.x);

    acc = block_sum(acc, warp_sums);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = acc;
        __threadfence(); /* the partial is visible device-wide before the ticket says so */
        am_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!am_last)
        return;

    /* The last block: every partial is written. Thread t adds partials t, t + BLOCK, ... in order, then the block
     * combines as above: the order depends on the grid alone. */
    __threadfence();
    float s = 0.0f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += BLOCK)
        s += __ldcg(partials + b); /* L2, not a stale L1 line */
    __syncthreads();               /* warp_sums is reused */
    s = block_sum(s, warp_sums);
    if (threadIdx.x == 0) {
        *out = s;
        *ticket = 0; /* ready for the next launch */
    }
}

/* ---- launchers ---- */

typedef void (*one_per_thread_kernel)(const void *, size_t, float *);

/* out = 0, then `k` with one thread per element (versions 1 and 2) */
static cudaError_t zero_then_launch(one_per_thread_kernel k, const void *in, size_t n, float *out, cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof(float), stream);
    if (e != cudaSuccess || n == 0)
        return e;
    if ((n + BLOCK - 1) / BLOCK > PL_MAX_GRID_X)
        return cudaErrorInvalidValue;
    k<<<pl_grid_1d(n, BLOCK), BLOCK, 0, stream>>>(in, n, out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_reduce_sum_atomic(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                            cudaStream_t stream)
{
    return zero_then_launch(dtype == PL_REDUCE_BF16 ? sum_atomic_kernel<1> : sum_atomic_kernel<0>, in, n, out, stream);
}

extern "C" cudaError_t pl_reduce_sum_smem_tree(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                               cudaStream_t stream)
{
    return zero_then_launch(dtype == PL_REDUCE_BF16 ? sum_tree_kernel<1> : sum_tree_kernel<0>, in, n, out, stream);
}

extern "C" cudaError_t pl_reduce_sum_warp_vec16_blocks(unsigned *blocks)
{
    int device = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) /* the two instantiations use the same resources */
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sum_vec16_kernel<0>, BLOCK, 0);
    if (e != cudaSuccess)
        return e;
    *blocks = (unsigned)(sms * per_sm);
    return *blocks > 0 ? cudaSuccess : cudaErrorInvalidConfiguration;
}

extern "C" size_t pl_reduce_sum_workspace_bytes(unsigned blocks)
{
    return WS_HEADER + (size_t)blocks * sizeof(float);
}

extern "C" cudaError_t pl_reduce_sum_warp_vec16(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                                unsigned blocks, void *workspace, size_t workspace_bytes,
                                                cudaStream_t stream)
{
    if ((uintptr_t)in % 16 != 0 || (uintptr_t)workspace % 16 != 0 || blocks == 0 || blocks > PL_MAX_GRID_X ||
        workspace_bytes < pl_reduce_sum_workspace_bytes(blocks))
        return cudaErrorInvalidValue;
    unsigned *ticket = static_cast<unsigned *>(workspace);
    float *partials = reinterpret_cast<float *>(static_cast<char *>(workspace) + WS_HEADER);
    if (dtype == PL_REDUCE_BF16)
        sum_vec16_kernel<1><<<blocks, BLOCK, 0, stream>>>(in, n, out, ticket, partials);
    else
        sum_vec16_kernel<0><<<blocks, BLOCK, 0, stream>>>(in, n, out, ticket, partials);
    return cudaGetLastError();
}
