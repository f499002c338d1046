/* A 5-point stencil over an fp32 grid, staged through shared memory tile by tile, three ways
 * (kernels/memory/async_prefetch.cu):
 *
 *   y[i][j] = a·x[i][j] + b·(x[i-1][j] + x[i+1][j] + x[i][j-1] + x[i][j+1]),   x = 0 outside the grid.
 *
 * The grid is rows × cols, row-major with a pitch of `ld` elements (ld >= cols, ld % 4 == 0: every row starts
 * 16-byte aligned, as cudaMallocPitch-style storage gives; the columns from cols to ld are never read or written).
 * A tile is 32 rows × 128 columns of y; its block stages the 34 × 136 box of x around it. Blocks are persistent:
 * block k takes tiles k, k + grid, k + 2·grid, ... The launchers enqueue one kernel and return cudaGetLastError(). */
#ifndef PERFLAB_MEMORY_ASYNC_PREFETCH_H
#define PERFLAB_MEMORY_ASYNC_PREFETCH_H

#include <stddef.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_STENCIL_MIN_STAGES 2
#define PL_STENCIL_MAX_STAGES 4

typedef struct pl_stencil_grid {
    size_t rows, cols, ld;
    float a, b;
} pl_stencil_grid;

typedef enum pl_stencil_version {
    PL_STENCIL_SYNC,     /* ordinary loads into one shared buffer, a barrier, compute, a barrier */
    PL_STENCIL_CP_ASYNC, /* `stages` buffers filled by cp.async 16-byte copies, stages - 1 tiles ahead */
    PL_STENCIL_TMA,      /* `stages` buffers filled by one TMA box copy each, completing on an mbarrier */
} pl_stencil_version;

/* What each version needs of the GPU (cp.async: sm_80; TMA: sm_90). */
pl_kernel_needs pl_stencil_needs(pl_stencil_version v);

/* Tiles of the grid (the most blocks worth launching). */
size_t pl_stencil_tiles(const pl_stencil_grid *g);

/* Raise the kernels' dynamic shared-memory limit (call once before launching), and say how many blocks of version v
 * with `stages` buffers fit on one SM (the occupancy API). */
cudaError_t pl_stencil_prepare(pl_stencil_version v, int stages, int *blocks_per_sm);

/* The tensor map the TMA version reads x through: a rows × cols fp32 box grid of 34 × 136 boxes, zeros outside. */
cudaError_t pl_stencil_tensor_map(CUtensorMap *map, const float *x, const pl_stencil_grid *g);

/* `blocks`: the persistent grid (0: one block per tile). stages: PL_STENCIL_MIN_STAGES..MAX (ignored by SYNC).
 * `map` is used by the TMA version only (x by the others). cudaErrorInvalidValue on a bad shape or stage count. */
cudaError_t pl_stencil_launch(pl_stencil_version v, const float *x, const CUtensorMap *map, float *y,
                              const pl_stencil_grid *g, int stages, unsigned blocks, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
