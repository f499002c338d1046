/* The WGMMA + TMA kernel's row of the BF16 table (wgmma_tma_sm90a.cu; its order in host/kernel_table.c). Its
 * mainloop efficiency, 0.65, measured on an H200 (docs/perf/gemm.md), two CTAs an SM. */
#include "gemm/host/kernel_row.h"

const pl_gemm_kernel pl_gemm_row_wgmma_tma_128x128x64_s3 = {
    .name = "wgmma_tma_128x128x64_s3",
    .rung = "wgmma_tma",
    .technique = "wgmma m64n128k16 from 128B-swizzled shared memory filled by TMA on mbarriers, 3 stages, 2 CTAs/SM",
    .tile_m = 128,
    .tile_n = 128,
    .tile_k = 64,
    .stages = 3,
    .cluster_m = 1,
    .threads = 256,
    .needs = PL_GEMM_NEEDS_WGMMA,
    .supports = pl_gemm_supports_tma,
    .launch = pl_gemm_wgmma_tma_128x128,
    .model = PL_GEMM_MODEL_RESIDENT(0.65, 2),
};
