/* The element-wise chain y = scale * GELU(x + bias[col]) over a bf16 matrix (rows x cols, row-major; bias has
 * cols elements; GELU in its tanh form), fp32 arithmetic, bf16 in and out. Two ways to run it: three kernels, one
 * per operation, each a full pass through memory with a bf16 intermediate (chain_unfused.cu), and one kernel that
 * does all three on the loaded values (chain_fused.cu). Both use the same 16-byte walk (chain.cuh), so the only
 * difference is the bytes moved: 6 row-sized transfers against 2.
 * Each launcher enqueues on `stream`, never synchronizes and returns the launch's cudaError_t;
 * cudaErrorInvalidValue without launching when rows or cols < 1, a pointer is NULL, or x, tmp or y is not 16-byte
 * aligned (cudaMalloc'd buffers are). Any cols works (vectors may straddle rows). */
#ifndef PERFLAB_FUSION_ELEMENTWISE_CHAIN_H
#define PERFLAB_FUSION_ELEMENTWISE_CHAIN_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tmp = x + bias; tmp = GELU(tmp) (in place); y = scale * tmp: three launches, two bf16 roundings more. */
cudaError_t pl_chain_unfused(const uint16_t *x, const uint16_t *bias, uint16_t *tmp, uint16_t *y, int rows, int cols,
                             float scale, cudaStream_t stream);

/* y = scale * GELU(x + bias): one launch. */
cudaError_t pl_chain_fused(const uint16_t *x, const uint16_t *bias, uint16_t *y, int rows, int cols, float scale,
                           cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
