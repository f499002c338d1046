/* fp32 transpose, out (cols × rows) = in (rows × cols)ᵀ, row-major both: versions 5 (transpose_ilp.cu) and 6
 * (transpose_tma.cu) of the lesson whose versions 1-4 are in transpose.h. Launchers enqueue one kernel on `stream`
 * and return cudaGetLastError(); none synchronizes. */
#ifndef PERFLAB_MEMORY_TRANSPOSE_FAST_H
#define PERFLAB_MEMORY_TRANSPOSE_FAST_H

#include <stddef.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tiles of side `side` along each dimension; -1 when a size is 0 or there are more than 2^31 - 1 tiles. */
int pl_transpose_tiles(size_t rows, size_t cols, unsigned side, unsigned *tiles_x, unsigned *tiles_y);

/* 5. 64×64 padded tiles, 16 loads in flight a thread. Any rows, cols >= 1. */
cudaError_t pl_transpose_f32_ilp(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);

/* 6. TMA tiles in and out, transposed shared-to-shared, persistent blocks. The plan holds the two tensor maps (for
 * these buffers and this shape) and the grid; make it once with pl_transpose_tma_prepare. */
typedef struct pl_transpose_tma_plan {
    CUtensorMap in_map, out_map;
    CUtensorMap copy_map; /* out seen as rows × cols: the copy control's destination */
    unsigned tiles_x, tiles_y, blocks;
} pl_transpose_tma_plan;

pl_kernel_needs pl_transpose_tma_needs(void);
/* Whether version 6 can take this shape: rows and cols multiples of 4, both buffers 16-byte aligned. */
int pl_transpose_tma_fits(const float *in, const float *out, size_t rows, size_t cols);
/* Encode the tensor maps, raise the kernel's shared-memory limit, size the persistent grid (blocks a SM × SMs).
 * cudaErrorInvalidValue when the shape does not fit; cudaErrorNotSupported without the driver's encoder. */
cudaError_t pl_transpose_tma_prepare(const float *in, float *out, size_t rows, size_t cols,
                                     pl_transpose_tma_plan *plan);
/* copy = 1: the control, the same pipeline copying in to out unchanged (no transpose). */
cudaError_t pl_transpose_f32_tma(const pl_transpose_tma_plan *plan, int copy, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
