/* bf16 embedding lookups, out row r = table row ids[r]: one 2-byte element per thread, and one warp per row with
 * 16-byte accesses, several in flight per lane. */
#include <stdint.h>
#include "common/grid.h"
#include "memory/memory_kernels.h"

#define GATHER_BLOCK 256u
#define ROW_WARPS    (GATHER_BLOCK / 32u) /* rows a block of the warp kernel copies at once */
/* 16-byte loads each lane issues before its first store: 64 bytes in flight per lane, as in the vec16 copy. */
#define VEC_PER_LANE 4u

/* Element e of the output is column e % dim of row e / dim: the plain flat mapping, one 2-byte load and store. */
__global__ void __launch_bounds__(GATHER_BLOCK)
    gather_bf16_scalar_kernel(const uint16_t *__restrict__ table, const int32_t *__restrict__ ids,
                              uint16_t *__restrict__ out, size_t rows, size_t dim)
{
    const size_t n = rows * dim;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += step) {
        const size_t r = e / dim;
        out[e] = table[(size_t)ids[r] * dim + (e - r * dim)];
    }
}

/* One warp copies the n bf16 of src to dst. 16-byte accesses need src and dst at the same offset within 16 bytes
 * (a row starts at id * dim * 2 bytes in the table and r * dim * 2 in the output, so with dim % 8 != 0 only some
 * rows qualify): then a 2-byte head up to the boundary, the 16-byte body, a 2-byte tail; otherwise 2-byte accesses
 * throughout, still coalesced across the warp. */
__device__ static void warp_copy_row(const uint16_t *__restrict__ src, uint16_t *__restrict__ dst, size_t n,
                                     unsigned lane)
{
    const unsigned src_off = (unsigned)((uintptr_t)src & 15u);
    size_t head = n, nvec = 0;
    if (src_off == (unsigned)((uintptr_t)dst & 15u)) {
        head = ((16u - src_off) & 15u) / 2u;
        head = head < n ? head : n;
        nvec = (n - head) / 8u;
    }
    for (size_t i = lane; i < head; i += 32)
        dst[i] = src[i];

    const uint4 *src4 = reinterpret_cast<const uint4 *>(src + head);
    uint4 *dst4 = reinterpret_cast<uint4 *>(dst + head);
    size_t v = lane;
    /* Whole chunks of VEC_PER_LANE * 32 vectors: all loads first, then all stores. */
    for (; v + (VEC_PER_LANE - 1) * 32u < nvec; v += VEC_PER_LANE * 32u) {
        uint4 x[VEC_PER_LANE];
#pragma unroll
        for (unsigned k = 0; k < VEC_PER_LANE; k++)
            x[k] = src4[v + k * 32u];
#pragma unroll
        for (unsigned k = 0; k < VEC_PER_LANE; k++)
            dst4[v + k * 32u] = x[k];
    }
    /* The loop stops at the first chunk that is not whole; the vectors left all lie in it. */
#pragma unroll
    for (unsigned k = 0; k < VEC_PER_LANE; k++)
        if (v + k * 32u < nvec)
            dst4[v + k * 32u] = src4[v + k * 32u];

    for (size_t i = head + nvec * 8u + lane; i < n; i += 32)
        dst[i] = src[i];
}

/* Warp w of the grid copies rows w, w + warps, ...; the id is one broadcast load a row. */
__global__ void __launch_bounds__(GATHER_BLOCK)
    gather_bf16_warp_vec16_kernel(const uint16_t *__restrict__ table, const int32_t *__restrict__ ids,
                                  uint16_t *__restrict__ out, size_t rows, size_t dim)
{
    const unsigned lane = threadIdx.x & 31u;
    const size_t step = (size_t)gridDim.x * ROW_WARPS;
    for (size_t r = (size_t)blockIdx.x * ROW_WARPS + threadIdx.x / 32u; r < rows; r += step)
        warp_copy_row(table + (size_t)ids[r] * dim, out + r * dim, dim, lane);
}

extern "C" cudaError_t pl_gather_bf16_scalar(const uint16_t *table, const int32_t *ids, uint16_t *out, size_t rows,
                                             size_t dim, cudaStream_t stream)
{
    if (rows == 0 || dim == 0)
        return cudaSuccess;
    gather_bf16_scalar_kernel<<<pl_grid_1d(rows * dim, GATHER_BLOCK), GATHER_BLOCK, 0, stream>>>(table, ids, out, rows,
                                                                                                 dim);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_gather_bf16_warp_vec16(const uint16_t *table, const int32_t *ids, uint16_t *out, size_t rows,
                                                 size_t dim, cudaStream_t stream)
{
    if (rows == 0 || dim == 0)
        return cudaSuccess;
    gather_bf16_warp_vec16_kernel<<<pl_grid_1d(rows, ROW_WARPS), GATHER_BLOCK, 0, stream>>>(table, ids, out, rows, dim);
    return cudaGetLastError();
}
