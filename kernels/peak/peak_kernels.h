/* Kernels that measure the ceilings of one GPU (perflab peak): device memory read, write and copy with 16-byte
 * accesses, L2 and shared-memory reads, FP32/FP64 FMA rates, the mma.sync and wgmma tensor-core rates, an
 * empty kernel for launch latency and a pointer chase for load latency; plus the device-side checks that
 * verify each of them. Every launcher enqueues on `stream` and returns the launch's error. */
#ifndef PERFLAB_PEAK_KERNELS_H
#define PERFLAB_PEAK_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "common/device_cc.h" /* pl_current_cc */

#ifdef __cplusplus
extern "C" {
#endif

#define PL_PEAK_BLOCK 256 /* threads per block of the streaming kernels */

/* ---- device memory: n floats (16-byte aligned buffers; n need not be a multiple of 4) ---- */
typedef struct pl_stream_config {
    int unroll;    /* 16-byte accesses each thread issues before using any: 2, 4 or 8 */
    int waves;     /* grid: 0 = one chunk per thread, no loop; k = k x the resident blocks, grid-stride */
    int streaming; /* evict-first hints (ld.global.cs / st.global.cs) instead of the default caching */
} pl_stream_config;

/* Blocks of the given configuration resident on the current device at once (one wave). */
cudaError_t pl_stream_resident_blocks(int op, const pl_stream_config *c, unsigned *blocks);
/* The grid a launch of n floats uses. */
unsigned pl_stream_grid(size_t n, const pl_stream_config *c, unsigned resident_blocks);
enum { PL_STREAM_READ, PL_STREAM_WRITE, PL_STREAM_COPY };
/* Read every element; each block writes the sum of what it read to partial[blockIdx.x]. */
cudaError_t pl_stream_read(const float *src, size_t n, const pl_stream_config *c, unsigned grid, float *partial,
                           cudaStream_t stream);
cudaError_t pl_stream_write(float *dst, size_t n, float value, const pl_stream_config *c, unsigned grid,
                            cudaStream_t stream);
cudaError_t pl_stream_copy(const float *src, float *dst, size_t n, const pl_stream_config *c, unsigned grid,
                           cudaStream_t stream);

/* Checks: *sum = the sum of x in float64 (a plain reference reduction); *count += the elements of a that differ
 * from b (or, when b is NULL, from value), bit for bit. */
cudaError_t pl_check_sum_f64(const float *x, size_t n, double *sum, cudaStream_t stream);
cudaError_t pl_check_count_mismatches(const float *a, const float *b, float value, size_t n, unsigned long long *count,
                                      cudaStream_t stream);

/* ---- L2: `passes` reads over n floats (a working set well inside L2), bypassing L1 (ld.global.cg) ---- */
cudaError_t pl_l2_read(const float *buf, size_t n, int passes, unsigned grid, float *partial, cudaStream_t stream);

/* ---- shared memory: each thread reads PL_SMEM_UNROLL 16-byte words per iteration, conflict-free ---- */
#define PL_SMEM_BLOCK  1024
#define PL_SMEM_UNROLL 8
cudaError_t pl_smem_read(int iterations, unsigned grid, float *out, cudaStream_t stream);
double pl_smem_read_bytes(int iterations, unsigned grid);
/* What out[thread] must hold after pl_smem_read (computed on the host the way the kernel does). */
float pl_smem_read_expected(int iterations, unsigned thread_in_block);

/* ---- CUDA-core FMA: each thread runs PL_FMA_CHAINS independent chains x = x * b + c ---- */
#define PL_FMA_BLOCK  256
#define PL_FMA_CHAINS 8
cudaError_t pl_fma_f32(int iterations, unsigned grid, float b, float c, float *out, cudaStream_t stream);
cudaError_t pl_fma_f64(int iterations, unsigned grid, double b, double c, double *out, cudaStream_t stream);
double pl_fma_flops(int iterations, unsigned grid);
/* What out[thread] must hold (the host re-runs the thread's chains with the same correctly rounded FMAs). */
float pl_fma_f32_expected(int iterations, unsigned thread, float b, float c);
double pl_fma_f64_expected(int iterations, unsigned thread, double b, double c);

/* ---- tensor cores, legacy warp-level mma.sync m16n8k16 bf16 -> f32 ---- */
#define PL_MMA_BLOCK 256
#define PL_MMA_ACCS  4 /* independent accumulators per warp */
/* a: 16x16 row-major bf16 bits, b: 8x16 (n rows of k) bf16 bits; d: the 16x8 sum of block 0's warp 0's
 * PL_MMA_ACCS accumulators after `iterations` accumulations of a*b each (PL_MMA_ACCS * iterations * a*b). */
cudaError_t pl_mma_bf16(const uint16_t *a, const uint16_t *b, int iterations, unsigned grid, float *d,
                        cudaStream_t stream);
double pl_mma_bf16_flops(int iterations, unsigned grid);

/* ---- tensor cores, sm_90a warpgroup wgmma m64n128k16 bf16 -> f32, A from registers, B from shared memory ---- */
#define PL_WGMMA_BLOCK 128
#define PL_WGMMA_N     128
/* a: 64x16 row-major bf16 bits, b: 128x16 (n rows of k); d: block 0's 64x128 result after `iterations`
 * accumulations. Returns cudaErrorNoKernelImageForDevice on anything but sm_90. */
cudaError_t pl_wgmma_bf16(const uint16_t *a, const uint16_t *b, int iterations, unsigned grid, float *d,
                          cudaStream_t stream);
double pl_wgmma_bf16_flops(int iterations, unsigned grid);

/* ---- latency ---- */
cudaError_t pl_empty_kernel(cudaStream_t stream);
/* next[i] = (i + stride) % n for every i: a chain of loads each to a new line. */
cudaError_t pl_chase_init(unsigned *next, size_t n, size_t stride, cudaStream_t stream);
/* One thread follows `hops` links from `start` and writes where it ended to *out. */
cudaError_t pl_chase(const unsigned *next, unsigned start, int hops, unsigned *out, cudaStream_t stream);

/* ---- inputs for the GEMMs: convert float32 to the operand type, rounding to nearest ---- */
enum { PL_CONVERT_BF16, PL_CONVERT_F16, PL_CONVERT_E4M3, PL_CONVERT_TF32 };
cudaError_t pl_convert_f32(const float *src, void *dst, size_t n, int to, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
