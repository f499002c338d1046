/* Kernels with a deliberate defect that only compute-sanitizer sees (selftest:sanitizer_defects): each computes
 * out[i] = 2 * in[i] for i < n correctly on a GPU without the tool, so that a run proves nothing about them and a
 * sanitizer run must report them. The launchers enqueue on `stream` and return the launch's error; none
 * synchronizes. */
#ifndef PERFLAB_SANITIZER_DEFECTS_H
#define PERFLAB_SANITIZER_DEFECTS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_defect {
    /* none: the same computation, correct */
    PL_DEFECT_NONE,
    /* memcheck: one thread writes out[n], one element past the end of the n-element allocation. Keep n * 4 bytes
     * off a multiple of 256 (n = 1000): the allocation's granule then holds the stray word, and nothing else is
     * hit without the tool. */
    PL_DEFECT_OOB_WRITE,
    /* racecheck: each thread rewrites its shared-memory slot and reads the other warp's slot with no barrier in
     * between (a missing __syncthreads). Either order leaves the output as it should be. */
    PL_DEFECT_SHARED_RACE,
    /* synccheck: lanes 0..16 call __syncwarp with the mask of lanes 0..15: lane 16 is not in the mask it names
     * (invalid arguments). */
    PL_DEFECT_SYNCWARP_MASK,
} pl_defect;

/* The kernel names compute-sanitizer prints in its reports: "defect_<...>_kernel". */
const char *pl_defect_kernel_name(pl_defect d);

cudaError_t pl_defect_scale(pl_defect d, const float *in, float *out, int n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
