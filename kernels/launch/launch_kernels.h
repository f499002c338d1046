/* Tiny kernels for the launch labs: work so small that launching them costs more than running them. */
#ifndef PERFLAB_LAUNCH_KERNELS_H
#define PERFLAB_LAUNCH_KERNELS_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out[i] = a*in[i] + b for i < n; in may equal out (an in-place step of a chain). Enqueues one kernel on
 * `stream` (capturable) and returns cudaGetLastError(). */
cudaError_t pl_tiny_affine_f32(const float *in, float *out, size_t n, float a, float b, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
