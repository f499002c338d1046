/* Row normalizations of bf16 rows (rows x cols, row-major) with fp32 accumulation: RMSNorm and LayerNorm, each as
 * the plain multi-kernel version (statistics to memory, then a separate normalizing pass that reads x again) and
 * as one fused pass (a row per part-warp, warp or block, 16-byte accesses, the row held in registers: x read
 * once); LayerNorm also as that pass with the row staged in shared memory by cp.async. Each launcher enqueues on
 * `stream`, never synchronizes, and returns the launch's cudaError_t; cudaErrorInvalidValue without launching when an
 * argument is unusable (named at each launcher).
 *
 *   rmsnorm:   y = x / sqrt(mean(x^2) + eps) * w
 *   layernorm: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b   (biased variance, as PyTorch)
 *
 * Any rows >= 1 and cols >= 1 work, cols % 8 != 0 included; x and y may share no bytes. */
#ifndef PERFLAB_NORM_KERNELS_H
#define PERFLAB_NORM_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Baseline (naive.cu): one block per row writes 1/rms of the row to rinv (rows floats), then a one-thread-per-element
 * kernel reads x again and writes y. Two-byte accesses, shared-memory tree reduction. */
cudaError_t pl_rmsnorm_naive(const uint16_t *x, const uint16_t *w, uint16_t *y, float *rinv, int rows, int cols,
                             float eps, cudaStream_t stream);

/* One fused pass (fused.cu). nv: 16-byte vectors per thread held in registers (0 picks by cols; 1, 2, 4,
 * 8; see common/rows.h). y must have x's alignment modulo 16 bytes (cudaMalloc'd buffers do). */
cudaError_t pl_rmsnorm_fused(const uint16_t *x, const uint16_t *w, uint16_t *y, int rows, int cols, float eps, int nv,
                             cudaStream_t stream);

/* Baseline (naive.cu): one block per row computes the mean, then (a second loop over x) the variance, and writes
 * (mean, 1/std) to stats (2 * rows floats); then a one-thread-per-element kernel reads x again. */
cudaError_t pl_layernorm_naive(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y, float *stats,
                               int rows, int cols, float eps, cudaStream_t stream);

/* One fused pass (fused.cu): mean, then the variance from the registers (a register two-pass). */
cudaError_t pl_layernorm_fused(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y, int rows, int cols,
                               float eps, int nv, cudaStream_t stream);

/* LayerNorm's pass with the row staged in shared memory by cp.async instead of registers (fused_async.cu): 32
 * registers, twice the blocks per SM. Same arguments and shapes as pl_layernorm_fused; rows beyond the shapes'
 * limit go to its looped kernel. */
cudaError_t pl_layernorm_async(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y, int rows, int cols,
                               float eps, int nv, cudaStream_t stream);

/* LayerNorm's register pass with one reduction instead of two (shifted.cu): each thread sums x - k and (x - k)^2
 * for k the row's first element, the group reduces the pair once; mean = k + S1/n, var = S2/n - (S1/n)^2. Same
 * arguments and shapes as pl_layernorm_fused; rows beyond the shapes' limit go to its looped kernel. */
cudaError_t pl_layernorm_shifted(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y, int rows,
                                 int cols, float eps, int nv, cudaStream_t stream);

/* The largest nv the fused norm kernels hold in registers. */
#define PL_NORM_NV_MAX 8

#ifdef __cplusplus
}
#endif
#endif
