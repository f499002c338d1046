/* The current device's compute capability, for launchers that gate architecture-specific kernels on it. */
#ifndef PERFLAB_KERNELS_DEVICE_CC_H
#define PERFLAB_KERNELS_DEVICE_CC_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* major * 10 + minor of the current device: sm_90a code runs on 9.0 alone, sm_100a code on 10.0 alone. */
cudaError_t pl_current_cc(int *cc);

#ifdef __cplusplus
}
#endif

#endif
