/* Memory-bound kernels for the memory labs: an fp32 affine map with two thread-to-element mappings, an fp32 copy
 * with scalar and 16-byte accesses, and a bf16 row gather (an embedding lookup) with both access widths. Each launcher
 * enqueues one kernel on `stream` and returns cudaGetLastError(), so that a lab can PL_CUDA it; none synchronizes, so
 * all can be captured into a graph. */
#ifndef PERFLAB_MEMORY_KERNELS_H
#define PERFLAB_MEMORY_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = a*x[i] + b. The array is viewed as a stride x columns grid (columns = ceil(n/stride)) walked
 * column-major: thread t handles element (t % stride) * columns + t / stride, so neighbouring threads touch
 * elements `stride` rows apart. Every element exactly once, for any n and stride >= 1. */
cudaError_t pl_affine_f32_strided(const float *x, float *y, size_t n, size_t stride, float a, float b,
                                  cudaStream_t stream);

/* y[i] = a*x[i] + b with thread t handling element t: a warp reads and writes whole 128-byte lines. */
cudaError_t pl_affine_f32_coalesced(const float *x, float *y, size_t n, float a, float b, cudaStream_t stream);

/* dst[i] = src[i], one 4-byte load and store per thread. */
cudaError_t pl_copy_f32_scalar(const float *src, float *dst, size_t n, cudaStream_t stream);

/* How many blocks of pl_copy_f32_vec16 fit on the current device at once (one full wave): query it once at
 * setup and pass it as max_blocks, so that the timed launch makes no queries. */
cudaError_t pl_copy_f32_vec16_resident_blocks(unsigned *blocks);

/* dst[i] = src[i] with 16-byte (float4) loads and stores, several in flight per thread, and a scalar tail for
 * the last n % 4 elements. src and dst must be 16-byte aligned (cudaMalloc'd buffers are); otherwise it returns
 * cudaErrorInvalidValue without launching. The grid-stride grid is capped at max_blocks (0: no cap). */
cudaError_t pl_copy_f32_vec16(const float *src, float *dst, size_t n, unsigned max_blocks, cudaStream_t stream);

/* out row r (dim bf16) = table row ids[r], for r < rows; every id must lie in [0, rows of the table). One 2-byte
 * load and store per thread over the flat output. */
cudaError_t pl_gather_bf16_scalar(const uint16_t *table, const int32_t *ids, uint16_t *out, size_t rows, size_t dim,
                                  cudaStream_t stream);

/* The same gather, one warp per row with 16-byte accesses (4 in flight per lane) where the table row and the
 * output row share their offset within 16 bytes (every row when dim % 8 == 0 and both buffers are 16-byte aligned,
 * as cudaMalloc'd ones are), a 2-byte head and tail around them, 2-byte accesses for the other rows. */
cudaError_t pl_gather_bf16_warp_vec16(const uint16_t *table, const int32_t *ids, uint16_t *out, size_t rows, size_t dim,
                                      cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
