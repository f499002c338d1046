/* y = a·x + b over n fp32, three ways of keeping enough bytes in flight to cover HBM latency:
 *
 *  1. scalar   — one 4-byte load per thread, 128-thread blocks, held to a few resident blocks per SM (low
 *                occupancy): a few KB in flight per SM, a fraction of what latency × bandwidth needs.
 *  2. vector   — the same blocks at the same occupancy, each thread issuing `ilp` independent 16-byte loads
 *                before its first store: instruction-level parallelism stands in for the missing warps.
 *  3. bounded  — right-sized: 256-thread blocks, 4 16-byte loads per thread, and __launch_bounds__(256, 8) so that
 *                the compiler keeps registers at 32 a thread and 8 blocks (the whole SM) fit; no reservation.
 *
 * The low occupancy of 1 and 2 is set by a dynamic shared-memory reservation the kernels never touch (as in
 * Volkov's "Better performance at lower occupancy"): it stands for whatever holds a real kernel's residency down. */
#include <stdint.h>
#include "common/grid.h"
#include "occupancy/ilp.h"

#define LOW_THREADS     128
#define BOUNDED_THREADS 256

/* ---- 1. one element per thread ---- */

__global__ void __launch_bounds__(LOW_THREADS)
    affine_scalar_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n, float a, float b)
{
    const size_t i = (size_t)blockIdx.x * LOW_THREADS + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + b;
}

/* ---- 2 and 3. ILP 16-byte loads per thread ---- */

/* Block b takes float4 chunk [b·ILP·T, (b+1)·ILP·T): thread t its vectors t, t + T, ... (a warp's loads cover 512
 * contiguous bytes). A whole chunk issues all ILP loads, then computes and stores; the last block takes the partial
 * chunk and the n % 4 elements after the vectors. */
template <int ILP, int T>
__device__ __forceinline__ void affine_chunk(const float *x, float *y, size_t n, float a, float b)
{
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float4 *y4 = reinterpret_cast<float4 *>(y);
    const size_t n4 = n / 4, first = (size_t)blockIdx.x * ILP * T + threadIdx.x;
    if ((size_t)(blockIdx.x + 1) * ILP * T <= n4) {
        float4 v[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++)
            v[k] = __ldcs(x4 + first + (size_t)k * T);
#pragma unroll
        for (int k = 0; k < ILP; k++)
            __stcs(y4 + first + (size_t)k * T,
                   make_float4(a * v[k].x + b, a * v[k].y + b, a * v[k].z + b, a * v[k].w + b));
        return;
    }
#pragma unroll
    for (int k = 0; k < ILP; k++) {
        const size_t i = first + (size_t)k * T;
        if (i < n4) {
            const float4 v = x4[i];
            y4[i] = make_float4(a * v.x + b, a * v.y + b, a * v.z + b, a * v.w + b);
        }
    }
    const size_t tail = n4 * 4 + threadIdx.x;
    if (tail < n)
        y[tail] = a * x[tail] + b;
}

template <int ILP>
__global__ void __launch_bounds__(LOW_THREADS)
    affine_vector_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n, float a, float b)
{
    affine_chunk<ILP, LOW_THREADS>(x, y, n, a, b);
}

__global__ void __launch_bounds__(BOUNDED_THREADS, 2048 / BOUNDED_THREADS)
    affine_bounded_kernel(const float *__restrict__ x, float *__restrict__ y, size_t n, float a, float b)
{
    affine_chunk<PL_ILP_BOUNDED_LOADS, BOUNDED_THREADS>(x, y, n, a, b);
}

/* ---- host side ---- */

extern "C" int pl_ilp_supported(int ilp)
{
    return ilp == 1 || ilp == 2 || ilp == 4 || ilp == 8 || ilp == 16;
}

extern "C" unsigned pl_ilp_block_threads(pl_ilp_version v)
{
    return v == PL_ILP_BOUNDED ? BOUNDED_THREADS : LOW_THREADS;
}

static const void *kernel_of(pl_ilp_version v, int ilp)
{
    if (v == PL_ILP_SCALAR)
        return (const void *)affine_scalar_kernel;
    if (v == PL_ILP_BOUNDED)
        return (const void *)affine_bounded_kernel;
    switch (ilp) {
    case 1: return (const void *)affine_vector_kernel<1>;
    case 2: return (const void *)affine_vector_kernel<2>;
    case 4: return (const void *)affine_vector_kernel<4>;
    case 8: return (const void *)affine_vector_kernel<8>;
    case 16: return (const void *)affine_vector_kernel<16>;
    default: return NULL;
    }
}

extern "C" cudaError_t pl_ilp_occupancy(pl_ilp_version v, int ilp, size_t smem_bytes, int *blocks_per_sm, int *regs)
{
    const void *k = kernel_of(v, ilp);
    if (!k)
        return cudaErrorInvalidValue;
    struct cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, k);
    if (e != cudaSuccess)
        return e;
    *regs = fa.numRegs;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, k, (int)pl_ilp_block_threads(v),
                                                         v == PL_ILP_BOUNDED ? 0 : smem_bytes);
}

extern "C" cudaError_t pl_ilp_reservation(int blocks_per_sm, int ilp, size_t *smem_bytes)
{
    const void *ks[2] = {kernel_of(PL_ILP_SCALAR, 1), kernel_of(PL_ILP_VECTOR, ilp)};
    int dev = 0, per_sm = 0, optin = 0, reserved = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
    if (e != cudaSuccess)
        return e;
    if (!ks[1] || blocks_per_sm < 1)
        return cudaErrorInvalidValue;
    /* the most that lets blocks_per_sm blocks fit (each also costs the per-block reservation of the system) */
    long bytes = per_sm / blocks_per_sm - reserved;
    if (bytes > optin)
        bytes = optin;
    bytes = bytes / 1024 * 1024;
    for (int i = 0; i < 2; i++) {
        e = cudaFuncSetAttribute(ks[i], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
        if (e != cudaSuccess)
            return e;
    }
    *smem_bytes = (size_t)bytes;
    return cudaSuccess;
}

static unsigned chunks(size_t n, size_t per_block)
{
    const size_t n4 = n / 4;
    /* whole chunks, plus one block for a partial chunk and the n % 4 elements after the vectors */
    const size_t blocks = n4 / per_block + (n4 % per_block != 0 || n % 4 != 0);
    return blocks > PL_MAX_GRID_X ? 0 : (unsigned)blocks;
}

extern "C" cudaError_t pl_ilp_affine(pl_ilp_version v, int ilp, const float *x, float *y, size_t n, float a, float b,
                                     size_t smem_bytes, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    if (v == PL_ILP_SCALAR) {
        const size_t blocks = (n + LOW_THREADS - 1) / LOW_THREADS;
        if (blocks > PL_MAX_GRID_X)
            return cudaErrorInvalidValue;
        affine_scalar_kernel<<<(unsigned)blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b);
        return cudaGetLastError();
    }
    if (((uintptr_t)x | (uintptr_t)y) % 16 != 0)
        return cudaErrorInvalidValue;
    const int loads = v == PL_ILP_BOUNDED ? PL_ILP_BOUNDED_LOADS : ilp;
    const unsigned blocks = chunks(n, (size_t)loads * pl_ilp_block_threads(v));
    if (blocks == 0)
        return cudaErrorInvalidValue;
    if (v == PL_ILP_BOUNDED) {
        affine_bounded_kernel<<<blocks, BOUNDED_THREADS, 0, stream>>>(x, y, n, a, b);
        return cudaGetLastError();
    }
    switch (ilp) {
    case 1: affine_vector_kernel<1><<<blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b); break;
    case 2: affine_vector_kernel<2><<<blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b); break;
    case 4: affine_vector_kernel<4><<<blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b); break;
    case 8: affine_vector_kernel<8><<<blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b); break;
    case 16: affine_vector_kernel<16><<<blocks, LOW_THREADS, smem_bytes, stream>>>(x, y, n, a, b); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
