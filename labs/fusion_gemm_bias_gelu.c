/* fusion:gemm_bias_gelu — D = GELU(A·B + bias) + residual. The unfused way writes the product to memory and reads
 * it back in a second kernel (3·M·N·2 extra bytes: the product written, read, and the residual read beside it);
 * the fused way applies bias, GELU and residual on chip before the one store (in the default kernel, by the
 * producer warpgroup's spare warps, while the consumers go on with the next tile's multiplies). Three
 * variants separate the two effects: cuBLAS + a separate pass (what a framework does), the native kernel + the
 * same pass, and the native kernel with the epilogue fused. */
#include "common/gemm_lab.h"
#include "labs.h"

#define FUSION_FLAGS (GEMM_LAB_EPILOGUE | GEMM_LAB_UNFUSED)

static const pl_param_def fusion_params[] = {
    PL_INT_PARAM("m", "8192", 1, 1 << 20, "tokens (rows of A and D)", .small_value = "300"),
    PL_INT_PARAM("n", "16384", 1, 1 << 20, "output features", .small_value = "392"),
    PL_INT_PARAM("k", "4096", 1, 1 << 20, "input features", .small_value = "136"),
    PL_BOOL_PARAM("residual", "true", "add an M×N residual after GELU"),
    /* by default the cooperative 128×256 kernel with a whole tile of epilogue buffers: fused, its consumers hand
     * the product to the epilogue warps and go on multiplying (docs/perf/gemm.md has the others' figures) */
    PL_CHOICE_PARAM("kernel", "wgmma_ws_128x256x64_s3",
                    "wgmma_ws_128x256x64_s4|wgmma_ws_128x256x64_s3|wgmma_pp_128x128x64_s5|wgmma_ws_128x128x64_s6",
                    "the native kernel (registry name) of native_unfused and fused"),
    PL_PARAMS_END,
};

static void fusion_counters(const pl_params *p, pl_counters *c)
{
    gemm_lab_counters(p, FUSION_FLAGS, c);
}

static int fusion_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    return gemm_lab_setup(ctx, p, FUSION_FLAGS, state);
}

static int run_cublas_then_pass(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    PL_TRY(gemm_lab_cublas(ctx, lab, lab->product));
    return gemm_lab_epilogue_pass(ctx, lab);
}

static int run_native_then_pass(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    PL_TRY(gemm_lab_native(ctx, lab, lab->kernel, 0));
    return gemm_lab_epilogue_pass(ctx, lab);
}

static int run_fused(pl_ctx *ctx, void *state)
{
    gemm_lab *lab = state;
    return gemm_lab_native(ctx, lab, lab->kernel, 1);
}

static const pl_variant fusion_variants[] = {
    PL_VARIANT("baseline", run_cublas_then_pass,
               "cuBLAS GEMM to memory, then a separate bias+GELU+residual kernel (16-byte accesses)"),
    PL_VARIANT("native_unfused", run_native_then_pass,
               "the native persistent WGMMA kernel (--kernel) to memory, then the same separate kernel",
               .req = PL_GEMM_REQ_WGMMA),
    PL_VARIANT("fused", run_fused,
               "the same native kernel, the epilogue fused: the consumers hand the bf16 product to the producer "
               "warpgroup's idle warps, which add bias, GELU and residual in shared memory and store with TMA",
               .req = PL_GEMM_REQ_WGMMA),
    PL_VARIANTS_END,
};

const pl_target pl_target_fusion_gemm_bias_gelu = {
    .group = "fusion",
    .name = "gemm_bias_gelu",
    .summary = "GEMM + bias + GELU + residual: cuBLAS and a separate kernel vs the epilogue fused in the kernel",
    .flags = PL_TARGET_POWER_BOUND, /* sustained tensor-core work runs at the power limit */
    .req = {.needs_gpu = 1},
    .params = fusion_params,
    .variants = fusion_variants,
    .counters = fusion_counters,
    .setup = fusion_setup,
    .poison = gemm_lab_poison,
    .check = gemm_lab_check,
    .teardown = gemm_lab_teardown,
};
