/* PL_STEP(call): inside a function returning cudaError_t, run a call that returns cudaError_t (a launcher), then
 * the last launch error, and return the first failure. The engine's steps chain launches with it. */
#ifndef PERFLAB_ENGINE_CUDA_STEP_H
#define PERFLAB_ENGINE_CUDA_STEP_H

#include <cuda_runtime_api.h>

#define PL_STEP(call)                                                                                                  \
    do {                                                                                                               \
        cudaError_t pl_step_e_ = (call);                                                                               \
        if (pl_step_e_ == cudaSuccess)                                                                                 \
            pl_step_e_ = cudaGetLastError();                                                                           \
        if (pl_step_e_ != cudaSuccess)                                                                                 \
            return pl_step_e_;                                                                                         \
    } while (0)

#endif
