/* fp32 matrix transpose, out (cols × rows) = in (rows × cols)ᵀ, row-major both, in four versions of one lesson
 * (kernels/memory/transpose.cu). Each launcher enqueues one kernel on `stream` and returns cudaGetLastError();
 * none synchronizes. Any rows, cols >= 1 work; cudaErrorInvalidValue when the grid would be too tall
 * (rows > 65535 × 32) or a size is 0. */
#ifndef PERFLAB_MEMORY_TRANSPOSE_H
#define PERFLAB_MEMORY_TRANSPOSE_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1. Reads coalesced, writes strided: a warp's 32 stores land in 32 rows of out. */
cudaError_t pl_transpose_f32_naive(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);
/* 2. A 32×32 tile through shared memory, read back by columns: 32-way bank conflicts. */
cudaError_t pl_transpose_f32_smem(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);
/* 3. The same tile padded to 33 words a row: conflict-free. */
cudaError_t pl_transpose_f32_padded(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);
/* 4. 64×64 tiles, 16-byte global loads and stores, the shared tile XOR-swizzled in 16-byte groups. The 16-byte
 * path needs rows and cols multiples of 4 and 16-byte aligned buffers; otherwise the same kernel moves single
 * words (correct at any size, slower). */
cudaError_t pl_transpose_f32_vec16(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
