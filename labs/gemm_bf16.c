/* gemm:bf16 — the GEMM ladder: D = A·B in bf16 with fp32 accumulation, from one thread per output to a
 * warp-specialized persistent WGMMA+TMA kernel with 2-CTA clusters, each rung verified against the same
 * reference and timed beside cuBLAS (the reference variant, so the table shows each rung's % of cuBLAS). */
#include "common/gemm_lab.h"
#include "labs.h"

static const pl_param_def bf16_params[] = {
    {.name = "m", .type = PL_PARAM_INT, .default_value = "4096", .help = "rows of A and D", .min = 1, .max = 1 << 20, .small_value = "300"},
    {.name = "n", .type = PL_PARAM_INT, .default_value = "4096", .help = "columns of D", .min = 1, .max = 1 << 20, .small_value = "392"},
    {.name = "k", .type = PL_PARAM_INT, .default_value = "4096", .help = "the reduction", .min = 1, .max = 1 << 20, .small_value = "136"},
    {.name = "layout",
     .type = PL_PARAM_STRING,
     .default_value = "nk",
     .help = "B given N×K (K-major, linear-layer weights) or K×N",
     .choices = "nk|kn"},
    {.name = NULL},
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
    {.name = "baseline",
     .technique = "naive SIMT: one thread per output, K fp32 FMAs from global memory",
     .run = run_naive},
    {.name = "smem_tiled",
     .technique = "64×64 tiles staged in shared memory, 4×4 outputs per thread from registers (fp32 FMA)",
     .run = run_smem_tiled},
    {.name = "mma_sync",
     .technique = "tensor cores: mma.sync m16n8k16 fed by ldmatrix from swizzled smem, 4-stage cp.async pipeline",
     .run = run_mma_sync,
     .req = PL_GEMM_REQ_MMA},
    {.name = "wgmma_tma",
     .technique = "wgmma from 128B-swizzled smem filled by TMA on mbarriers, 3 stages, 2 CTAs/SM (B K×N or K%8: "
                  "mma_sync)",
     .run = run_wgmma_tma,
     .req = PL_GEMM_REQ_WGMMA},
    {.name = "wgmma_ws",
     .technique = "persistent warp-specialized: TMA producer warpgroup, 2 wgmma m64n256 consumers, setmaxnreg, "
                  "4-stage mbarrier ring, tile scheduler",
     .run = run_wgmma_ws,
     .req = PL_GEMM_REQ_WGMMA},
    {.name = "wgmma_ws_cluster",
     .technique = "wgmma_ws with 2-CTA clusters: the shared B panel TMA-multicast, stages released through DSMEM",
     .run = run_wgmma_ws_cluster,
     .req = PL_GEMM_REQ_CLUSTER},
    {.name = "cublas",
     .technique = "cublasGemmEx, default algorithm: the library a user would call instead",
     .run = run_cublas,
     .flags = PL_VARIANT_REFERENCE},
    {.name = NULL},
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
