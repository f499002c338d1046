/* y = a·x + b over n fp32, a memory-bound kernel in three shapes for the occupancy/ILP lesson
 * (kernels/occupancy/ilp.cu). Bytes in flight per SM = resident threads × loads in flight per thread × bytes per
 * load (Little's law wants about bandwidth × latency of them); the three shapes get there differently. The
 * launchers enqueue one kernel and return cudaGetLastError(). */
#ifndef PERFLAB_OCCUPANCY_ILP_H
#define PERFLAB_OCCUPANCY_ILP_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_ilp_version {
    PL_ILP_SCALAR,  /* one 4-byte load per thread, 128-thread blocks */
    PL_ILP_VECTOR,  /* `ilp` 16-byte loads per thread issued before the first store, 128-thread blocks */
    PL_ILP_BOUNDED, /* 4 16-byte loads per thread, 256-thread blocks under __launch_bounds__(256, 8) */
} pl_ilp_version;

#define PL_ILP_BOUNDED_LOADS 4

/* ilp values the VECTOR version is built for: 1, 2, 4, 8, 16 */
int pl_ilp_supported(int ilp);

/* Threads per block of a version. */
unsigned pl_ilp_block_threads(pl_ilp_version v);

/* The dynamic shared memory (never touched by the kernel) that holds SCALAR or VECTOR to `blocks_per_sm` resident
 * blocks per SM: the controlled variable of the lesson, a stand-in for what holds a heavy kernel's residency down
 * (its registers or its tiles). Sets the kernels' shared-memory limit accordingly. */
cudaError_t pl_ilp_reservation(int blocks_per_sm, int ilp, size_t *smem_bytes);

/* Resident blocks per SM (the occupancy API) and registers per thread of version v with `smem_bytes` of dynamic
 * shared memory. */
cudaError_t pl_ilp_occupancy(pl_ilp_version v, int ilp, size_t smem_bytes, int *blocks_per_sm, int *regs);

/* x and y 16-byte aligned for VECTOR and BOUNDED (cudaErrorInvalidValue otherwise); any n. smem_bytes is
 * ignored by BOUNDED. */
cudaError_t pl_ilp_affine(pl_ilp_version v, int ilp, const float *x, float *y, size_t n, float a, float b,
                          size_t smem_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
