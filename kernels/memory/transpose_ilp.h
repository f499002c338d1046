/* fp32 transpose, out (cols × rows) = in (rows × cols)ᵀ, row-major both: version 5 of the lesson
 * (kernels/memory/transpose_ilp.cu), whose versions 1-4 are in transpose.h. The launcher enqueues one kernel on
 * `stream` and returns cudaGetLastError(); it does not synchronize. */
#ifndef PERFLAB_MEMORY_TRANSPOSE_ILP_H
#define PERFLAB_MEMORY_TRANSPOSE_ILP_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tiles of side `side` along each dimension; -1 when a size is 0 or there are more than 2^31 - 1 tiles. */
int pl_transpose_tiles(size_t rows, size_t cols, unsigned side, unsigned *tiles_x, unsigned *tiles_y);

/* 5. 64×64 padded tiles, 16 loads in flight a thread. Any rows, cols >= 1; cudaErrorInvalidValue when a size is 0
 * or the grid would have more than 2^31 - 1 blocks. */
cudaError_t pl_transpose_f32_ilp(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
