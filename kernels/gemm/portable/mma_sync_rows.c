/* The mma.sync kernel's row of the BF16 table (mma_sync.cu; its order in host/kernel_table.c): the fallback every
 * shape can take (any M, N, K, both layouts), pl_gemm_kernel_fallback. Its mainloop efficiency, 0.39, measured on an
 * H200 (docs/perf/gemm.md), two CTAs an SM. */
#include "gemm/host/kernel_row.h"

const pl_gemm_kernel pl_gemm_row_mma_sync_128x128x32_s4 = {
    .name = "mma_sync_128x128x32_s4",
    .rung = "mma_sync",
    .technique = "mma.sync m16n8k16 tensor cores, ldmatrix from swizzled shared memory, 4-stage cp.async pipeline",
    .tile_m = 128,
    .tile_n = 128,
    .tile_k = 32,
    .stages = 4,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_MMA,
    .supports = pl_gemm_problem_valid,
    .launch = pl_gemm_mma_sync,
    .model = PL_GEMM_MODEL_RESIDENT(0.39, 2),
};
