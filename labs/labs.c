#include "labs.h"
#include "perflab/registry.h"

void pl_labs_register_all(void)
{
    static const pl_target *const all[] = {
        &pl_target_memory_coalescing, &pl_target_memory_vectorized_copy, &pl_target_launch_cuda_graphs,
        &pl_target_gemm_bf16, &pl_target_fullstack_cluster_gemm, &pl_target_fusion_gemm_bias_gelu,
        &pl_target_selftest_gpu_spin, &pl_target_selftest_sleep,         &pl_target_selftest_crash,
        &pl_target_selftest_hang,     &pl_target_selftest_wrong,         &pl_target_selftest_noisy,
        &pl_target_fullstack_moe_readiness,
    };
    if (pl_registry_count() > 0)
        return;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pl_registry_add(all[i]);
}
