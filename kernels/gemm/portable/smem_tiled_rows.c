/* The shared-memory tiled kernel's row of the BF16 table (smem_tiled.cu; its order in host/kernel_table.c). */
#include "gemm/host/kernel_row.h"

const pl_gemm_kernel pl_gemm_row_smem_tiled_64x64x16 = {
    .name = "smem_tiled_64x64x16",
    .rung = "smem_tiled",
    .technique = "64×64 tiles staged in shared memory, 4×4 outputs per thread in registers",
    .tile_m = 64,
    .tile_n = 64,
    .tile_k = 16,
    .stages = 1,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_ANY,
    .flags = PL_GEMM_KERNEL_TEACHING,
    .supports = pl_gemm_problem_valid,
    .launch = pl_gemm_smem_tiled,
    .model = PL_GEMM_MODEL_FLOOR,
};
