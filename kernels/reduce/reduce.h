/* Sum of n fp32 or bf16 values into one fp32 (kernels/reduce/sum.cu, and CUB's DeviceReduce::Sum in sum_cub.cu).
 * Every launcher enqueues its work on `stream` and returns the first error; none synchronizes. */
#ifndef PERFLAB_REDUCE_H
#define PERFLAB_REDUCE_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_reduce_dtype { PL_REDUCE_F32, PL_REDUCE_BF16 } pl_reduce_dtype;

/* 1. out = sum: a memset of out, then one global atomicAdd per element. */
cudaError_t pl_reduce_sum_atomic(const void *in, pl_reduce_dtype dtype, size_t n, float *out, cudaStream_t stream);

/* 2. out = sum: a memset of out, then a shared-memory tree per block of 256 elements and one atomicAdd per block. */
cudaError_t pl_reduce_sum_smem_tree(const void *in, pl_reduce_dtype dtype, size_t n, float *out, cudaStream_t stream);

/* 3. out = sum, deterministic for a given `blocks`: an equal share of the input per block, 16-byte loads, warp
 * shuffles, one partial per block, the last block to finish adds the partials in a fixed order. `blocks`: one resident
 * wave from pl_reduce_sum_warp_vec16_blocks (query it once), or a multiple of it. The workspace holds pl_reduce_sum_workspace_bytes(blocks)
 * bytes, zeroed once before its first use (the kernel leaves it ready for the next launch); `in` must be 16-byte
 * aligned. */
cudaError_t pl_reduce_sum_warp_vec16_blocks(unsigned *blocks);
size_t pl_reduce_sum_workspace_bytes(unsigned blocks);
cudaError_t pl_reduce_sum_warp_vec16(const void *in, pl_reduce_dtype dtype, size_t n, float *out, unsigned blocks,
                                     void *workspace, size_t workspace_bytes, cudaStream_t stream);

/* The reference: cub::DeviceReduce::Sum (fp32 accumulation and output for either input type). Query the
 * temporary storage once (temp = NULL), then pass it to every call. */
cudaError_t pl_reduce_sum_cub(const void *in, pl_reduce_dtype dtype, size_t n, float *out, void *temp,
                              size_t *temp_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
