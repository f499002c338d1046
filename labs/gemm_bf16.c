/* gemm:bf16 — the GEMM ladder: D = A·B in bf16 with fp32 accumulation, from one thread per output to a
 * warp-specialized persistent WGMMA+TMA kernel with 2-CTA clusters, each rung verified against the same
 * reference and timed beside cuBLAS (the reference variant, so the table shows each rung's % of cuBLAS). */
#include "common/gemm_lab.h"
#include "labs.h"

static const pl_param_def bf16_params[] = {
    PL_INT_PARAM("m", "4096", 1, 1 << 20, "rows of A and D", .small_value = "300"),
    PL_INT_PARAM("n", "4096", 1, 1 << 20, "columns of D", .small_value = "392"),
    PL_INT_PARAM("k", "4096", 1, 1 << 20, "the reduction", .small_value = "136"),
    PL_CHOICE_PARAM("layout", "nk", "nk|kn", "B given N×K (K-major, linear-layer weights) or K×N"),
    PL_PARAMS_END,
};

static void bf16_counters(const pl_params *p, pl_counters *c)
{
    gemm_lab_counters(p, 0, c);
}

static int bf16_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    return gemm_lab_setup(ctx, p, 0, state);
}

#define NATIVE_RUN(fn, kernel)                                                                                         \
    static int fn(pl_ctx *ctx, void *state)                                                                            \
    {                                                                                                                  \
        return gemm_lab_native(ctx, state, kernel, 1);                                                                 \
    }

NATIVE_RUN(run_naive, "naive")
NATIVE_RUN(run_smem_tiled, "smem_tiled_64x64x16")
NATIVE_RUN(run_mma_sync, "mma_sync_128x128x32_s4")
NATIVE_RUN(run_wgmma_tma, "wgmma_tma_128x128x64_s3")
NATIVE_RUN(run_wgmma_ws, "wgmma_ws_128x256x64_s4")
NATIVE_RUN(run_wgmma_ws_cluster, "wgmma_ws_128x256x64_s4_c2")

static int run_cublas(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    return gemm_lab_cublas(ctx, lab, lab->p.d);
}

static const pl_variant bf16_variants[] = {
    PL_VARIANT("baseline", run_naive, "naive SIMT: one thread per output, K fp32 FMAs from global memory"),
    PL_VARIANT("smem_tiled", run_smem_tiled,
               "64×64 tiles staged in shared memory, 4×4 outputs per thread from registers (fp32 FMA)"),
    PL_VARIANT("mma_sync", run_mma_sync,
               "tensor cores: mma.sync m16n8k16 fed by ldmatrix from swizzled smem, 4-stage cp.async pipeline",
               .req = PL_GEMM_REQ_MMA),
    PL_VARIANT("wgmma_tma", run_wgmma_tma,
               "wgmma from 128B-swizzled smem filled by TMA on mbarriers, 3 stages, 2 CTAs/SM (B K×N or K%8: "
               "mma_sync)",
               .req = PL_GEMM_REQ_WGMMA),
    PL_VARIANT("wgmma_ws", run_wgmma_ws,
               "persistent warp-specialized: TMA producer warpgroup, 2 wgmma m64n256 consumers, setmaxnreg, "
               "4-stage mbarrier ring, tile scheduler (B K×N: its _kn twin)",
               .req = PL_GEMM_REQ_WGMMA),
    PL_VARIANT("wgmma_ws_cluster", run_wgmma_ws_cluster,
               "wgmma_ws with 2-CTA clusters: the shared B panel TMA-multicast, stages released through DSMEM (B "
               "K×N: its _kn twin)",
               .req = PL_GEMM_REQ_CLUSTER),
    PL_VARIANT("cublas", run_cublas, "cublasGemmEx, default algorithm: the library a user would call instead",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_gemm_bf16 = {
    .group = "gemm",
    .name = "bf16",
    .summary = "bf16 GEMM ladder (fp32 accumulate): naive -> smem tiles -> mma.sync -> WGMMA+TMA -> warp-specialized "
               "persistent -> clusters, vs cuBLAS",
    .flags = PL_TARGET_POWER_BOUND, /* sustained tensor-core work runs at the power limit */
    .req = {.needs_gpu = 1},
    .params = bf16_params,
    .variants = bf16_variants,
    .counters = bf16_counters,
    .setup = bf16_setup,
    .poison = gemm_lab_poison,
    .check = gemm_lab_check,
    .teardown = gemm_lab_teardown,
};
