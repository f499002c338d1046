/* Sum of n values (fp32 or bf16 in, fp32 accumulation and out) in three versions; each adds one technique:
 *
 *  1. atomic      — every thread adds its element to the one result with a global atomicAdd. All n additions
 *                   serialize on one address in L2: the rate of one L2 atomic unit, not of HBM.
 *  2. smem_tree   — each block of 256 threads sums its 256 elements in a shared-memory tree (8 halving steps, a
 *                   barrier after each), then adds its sum with one atomicAdd: n/256 atomics.
 *  3. warp_vec16  — each thread sums 16 sixteen-byte vectors (four loads in flight at a time) into registers; warps
 *                   combine with shuffles (no shared memory, no barrier per step), each block writes one partial,
 *                   and the last block to finish (a ticket counter) adds the partials in a fixed order. No atomic
 *                   on the result: the same input gives the same bits on every run.
 *
 * The elements are read once from HBM in every version; they differ in what serializes after the load. */
#include <stdint.h>
#include <cuda_bf16.h>
#include "reduce/reduce.h"

#define BLOCK      256
#define MAX_GRID   2147483647u
#define VEC_LOADS  4 /* 16-byte loads in flight per thread */
#define VEC_ITERS  4 /* rounds of VEC_LOADS per block chunk: 16 vectors, 256 bytes a thread, 64 KiB a block */
#define CHUNK_VECS ((size_t)BLOCK * VEC_LOADS * VEC_ITERS)

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
    const size_t first = (size_t)blockIdx.x * CHUNK_VECS + threadIdx.x;
    float acc = 0.0f;

    if ((size_t)(blockIdx.x + 1) * CHUNK_VECS <= n_vec) {
        /* a whole chunk: no bounds checks; VEC_LOADS independent loads before their sums */
#pragma unroll
        for (int it = 0; it < VEC_ITERS; it++) {
            uint4 v[VEC_LOADS];
#pragma unroll
            for (int k = 0; k < VEC_LOADS; k++)
                v[k] = __ldcs(v16 + first + (size_t)(it * VEC_LOADS + k) * BLOCK);
#pragma unroll
            for (int k = 0; k < VEC_LOADS; k++)
                acc += vec_sum<BF16>(v[k]);
        }
    } else {
        /* the last, partial chunk: the vectors that exist, then the n % per_vec elements after them */
        for (int j = 0; j < VEC_LOADS * VEC_ITERS; j++) {
            const size_t k = first + (size_t)j * BLOCK;
            if (k < n_vec)
                acc += vec_sum<BF16>(v16[k]);
        }
        const size_t tail = n_vec * per_vec + threadIdx.x;
        if (tail < n)
            acc += load_elem<BF16>(in, tail);
    }

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

static unsigned grid_for(size_t items, size_t per_block)
{
    size_t blocks = (items + per_block - 1) / per_block;
    if (blocks == 0)
        blocks = 1;
    return blocks > MAX_GRID ? MAX_GRID : (unsigned)blocks;
}

extern "C" cudaError_t pl_reduce_sum_atomic(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                            cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof(float), stream);
    if (e != cudaSuccess)
        return e;
    if (n == 0)
        return cudaSuccess;
    if (dtype == PL_REDUCE_BF16)
        sum_atomic_kernel<1><<<grid_for(n, BLOCK), BLOCK, 0, stream>>>(in, n, out);
    else
        sum_atomic_kernel<0><<<grid_for(n, BLOCK), BLOCK, 0, stream>>>(in, n, out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_reduce_sum_smem_tree(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                               cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(out, 0, sizeof(float), stream);
    if (e != cudaSuccess)
        return e;
    if (n == 0)
        return cudaSuccess;
    if ((n + BLOCK - 1) / BLOCK > MAX_GRID)
        return cudaErrorInvalidValue;
    if (dtype == PL_REDUCE_BF16)
        sum_tree_kernel<1><<<grid_for(n, BLOCK), BLOCK, 0, stream>>>(in, n, out);
    else
        sum_tree_kernel<0><<<grid_for(n, BLOCK), BLOCK, 0, stream>>>(in, n, out);
    return cudaGetLastError();
}

static size_t vec16_blocks(size_t n, pl_reduce_dtype dtype)
{
    const size_t per_vec = dtype == PL_REDUCE_BF16 ? 8 : 4;
    const size_t n_vec = n / per_vec;
    /* whole chunks, plus one block for the partial chunk and the n % per_vec elements after the vectors (the
     * only block that takes the bounds-checked path); n = 0 gives that one block, which writes 0 */
    return n_vec / CHUNK_VECS + (n_vec % CHUNK_VECS != 0 || n % per_vec != 0 || n_vec == 0);
}

extern "C" size_t pl_reduce_sum_workspace_bytes(size_t n, pl_reduce_dtype dtype)
{
    return WS_HEADER + vec16_blocks(n, dtype) * sizeof(float);
}

extern "C" cudaError_t pl_reduce_sum_warp_vec16(const void *in, pl_reduce_dtype dtype, size_t n, float *out,
                                                void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    const size_t blocks = vec16_blocks(n, dtype);
    if ((uintptr_t)in % 16 != 0 || (uintptr_t)workspace % 16 != 0 || blocks > MAX_GRID ||
        workspace_bytes < pl_reduce_sum_workspace_bytes(n, dtype))
        return cudaErrorInvalidValue;
    unsigned *ticket = static_cast<unsigned *>(workspace);
    float *partials = reinterpret_cast<float *>(static_cast<char *>(workspace) + WS_HEADER);
    if (dtype == PL_REDUCE_BF16)
        sum_vec16_kernel<1><<<(unsigned)blocks, BLOCK, 0, stream>>>(in, n, out, ticket, partials);
    else
        sum_vec16_kernel<0><<<(unsigned)blocks, BLOCK, 0, stream>>>(in, n, out, ticket, partials);
    return cudaGetLastError();
}
