/* Softmax over each row of a bf16 matrix (rows x cols, row-major), fp32 arithmetic, bf16 out:
 * y[r][c] = exp(x[r][c] - max_r) / sum_c' exp(x[r][c'] - max_r). Each launcher enqueues on `stream`, never
 * synchronizes, and returns the launch's cudaError_t (cudaErrorInvalidValue without launching when an argument is
 * unusable). Any rows >= 1 and cols >= 1 work. */
#ifndef PERFLAB_SOFTMAX_KERNELS_H
#define PERFLAB_SOFTMAX_KERNELS_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Baseline (three_pass.cu): three kernels, three reads of x. The row maxima to rowmax (rows floats), the sums of
 * exp(x - max) to rowsum (rows floats), then one thread per element normalizes. */
cudaError_t pl_softmax_three_pass(const uint16_t *x, uint16_t *y, float *rowmax, float *rowsum, int rows, int cols,
                                  cudaStream_t stream);

/* One fused pass (online.cu): each thread's (max, sum of exponentials) over the vectors it holds in registers,
 * merged across the row's threads in one reduction (online softmax); x read once. nv: 16-byte vectors per thread
 * (0 picks by cols; 1, 2, 4). Rows longer than 1024 * PL_SOFTMAX_NV_MAX vectors stream through the online
 * recurrence and read the row a second time to write it. y must have x's alignment modulo 16 bytes. */
cudaError_t pl_softmax_online(const uint16_t *x, uint16_t *y, int rows, int cols, int nv, cudaStream_t stream);

/* online_fused's pass with ex2.approx (log2(e) folded into one FFMA per exponent), the thread's maximum on packed
 * bf16 pairs, and the exponentials recomputed for the output instead of kept in registers (online_ex2.cu): 40
 * registers. Same arguments and shapes as pl_softmax_online; longer rows go to its looped kernel. */
cudaError_t pl_softmax_online_ex2(const uint16_t *x, uint16_t *y, int rows, int cols, int nv, cudaStream_t stream);

/* The largest nv the fused kernel holds in registers (it keeps the exponentials as fp32: 32 per vector pair). */
#define PL_SOFTMAX_NV_MAX 4

#ifdef __cplusplus
}
#endif
#endif
