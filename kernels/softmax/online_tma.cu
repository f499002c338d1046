/* softmax, version 4 — online_ex2's pass with its rows brought in by TMA bulk copies into a shared-memory ring (a
 * third optimized variant of softmax:rows).
 *
 * Technique: the register kernels have bytes in flight only between a block's loads and their arrival; a block
 * that reduces, exponentiates or stores has none. Here each block walks rows blockIdx.x, + gridDim.x, ... (as
 * many blocks as fit the GPU at once) through a ring of S row buffers in shared memory (common/rows_ring.cuh):
 * one thread issues one cp.async.bulk per row on the slot's mbarrier, S - 1 rows ahead of the row the block
 * computes, and refills a slot as soon as the row's reduction barrier shows that every thread has read it. The
 * arithmetic is online_ex2's (softmax_rows.cuh: ex2.approx, the maximum on packed pairs, one (max, sum)
 * reduction, the exponentials recomputed for the output), so the two compute exactly the same function.
 *
 * Rows must be 16-byte aligned and a multiple of 16 bytes (cols % 8 == 0, x 16-byte aligned) for the bulk copy,
 * shared by at least two warps (the refill waits for the reduction's block barrier), and S of them must fit in
 * shared memory: other shapes take online_ex2's kernel. */
#include "common/rows_ring.cuh"
#include "softmax/softmax_kernels.h"
#include "softmax/softmax_rows.cuh"

/* 40 registers: 6 blocks of 256 threads per SM, which a 2-slot ring of 16 KB rows (32 KB per block) also allows. */
template <int NV, int S>
__global__ void __maxnreg__(40) softmax_tma_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int rows,
                                                   int cols)
{
    extern __shared__ uint4 ring_buf[];
    __shared__ uint64_t full[S];
    __shared__ float2 red[32];
    const int t = (int)threadIdx.x, group = (int)blockDim.x;
    const size_t step = gridDim.x;
    const rows_ring r = rows_ring_start<S>(ring_buf, full, x, rows, cols, blockIdx.x, step);
    int i = 0;
    for (size_t row = blockIdx.x; row < (size_t)rows; row += step, i++) {
        const int s = i % S;
        uint4 v[NV];
        rows_ring_read<NV>(v, r, s, i / S, t, group, ROWS_NEG_INF);
        const float off = ex2_offset<NV>(v, group, red); /* its barriers: slot s is read */
        rows_ring_refill(r, s, x, rows, cols, row + S * step);
        ex2_store_row<NV>(v, rows_at_row(x, rows, cols, t, row), y, cols, off, group);
    }
}

/* ---- launchers ---- */

template <int NV, int S>
static cudaError_t softmax_tma_launch(const uint16_t *x, uint16_t *y, int rows, int cols, int threads,
                                      cudaStream_t stream)
{
    const size_t smem = (size_t)S * (size_t)cols * 2u;
    unsigned grid = 0;
    const cudaError_t err = rows_ring_grid(softmax_tma_kernel<NV, S>, threads, smem, rows, &grid);
    if (err != cudaSuccess)
        return err;
    softmax_tma_kernel<NV, S><<<grid, threads, smem, stream>>>(x, y, rows, cols);
    return cudaGetLastError();
}

template <int S>
static cudaError_t softmax_tma_stages(const uint16_t *x, uint16_t *y, int rows, int cols, const pl_rows_shape *sh,
                                      cudaStream_t stream)
{
    switch (sh->nv) {
    case 1: return softmax_tma_launch<1, S>(x, y, rows, cols, sh->group, stream);
    case 2: return softmax_tma_launch<2, S>(x, y, rows, cols, sh->group, stream);
    default: return softmax_tma_launch<4, S>(x, y, rows, cols, sh->group, stream);
    }
}

extern "C" cudaError_t pl_softmax_tma(const uint16_t *x, uint16_t *y, int rows, int cols, int nv, int stages,
                                      cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!x || !y || (((uintptr_t)x ^ (uintptr_t)y) & 15u) != 0 || ((uintptr_t)x & 1u) != 0 || stages < 0 || stages == 1 ||
        stages > PL_ROWS_RING_MAX_STAGES ||
        pl_rows_pick_shape(rows, cols, pl_rows_aligned(x, cols), nv, PL_SOFTMAX_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    const int st = stages ? stages : PL_ROWS_RING_STAGES;
    if (sh.nv < 1 || sh.nv > 4 || sh.group <= 32 || !rows_ring_fits(x, cols, st))
        return pl_softmax_online_ex2(x, y, rows, cols, nv, stream);
    switch (st) {
    case 2: return softmax_tma_stages<2>(x, y, rows, cols, &sh, stream);
    case 3: return softmax_tma_stages<3>(x, y, rows, cols, &sh, stream);
    default: return softmax_tma_stages<4>(x, y, rows, cols, &sh, stream);
    }
}
