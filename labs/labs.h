/* Every target perflab ships, registered in one place. */
#ifndef PERFLAB_LABS_H
#define PERFLAB_LABS_H

#include "perflab/target.h"

extern const pl_target pl_target_memory_coalescing;
extern const pl_target pl_target_memory_vectorized_copy;
extern const pl_target pl_target_launch_cuda_graphs;
extern const pl_target pl_target_gemm_bf16;
extern const pl_target pl_target_fullstack_cluster_gemm;
extern const pl_target pl_target_fusion_gemm_bias_gelu;
extern const pl_target pl_target_selftest_sleep;
extern const pl_target pl_target_selftest_crash;
extern const pl_target pl_target_selftest_hang;
extern const pl_target pl_target_selftest_wrong;
extern const pl_target pl_target_selftest_noisy;
extern const pl_target pl_target_selftest_gpu_spin;
extern const pl_target pl_target_fullstack_moe_readiness;

/* Adds every target above to the registry (idempotent). */
void pl_labs_register_all(void);

#endif
