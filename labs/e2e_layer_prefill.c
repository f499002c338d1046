/* e2e:layer_prefill — one dense decoder layer's prefill of a batch of prompts from an empty cache
 * (engine/dense_layer.h), one named technique a variant over the one before: the eager way (cuBLAS, a kernel per
 * operation, FlashAttention-2 on mma.sync), the wgmma flash kernel, perflab's GEMMs, the fused forms, the CUDA
 * graph. Compute-bound: the table's TFLOP/s is the figure to read against the GPU's tensor peak. */
#include "common/e2e_layer.h"
#include "labs.h"

static const pl_param_def prefill_params[] = {
    E2E_LAYER_COMMON_PARAMS,
    PL_INT_PARAM("prompts", "1", 1, 4096, "prompts in the step", .small_value = "3"),
    PL_INT_PARAM("prompt-len", "4096", 1, 1 << 20, "tokens a prompt holds", .small_value = "77"),
    PL_PARAMS_END,
};

static int seqs(const pl_params *p)
{
    return (int)pl_param_int(p, "prompts");
}

static int len(const pl_params *p)
{
    return (int)pl_param_int(p, "prompt-len");
}

static void prefill_counters(const pl_params *p, pl_counters *c)
{
    e2e_layer_counters(p, 1, seqs(p), len(p), c);
}

static int prefill_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return e2e_layer_check(p, 1, seqs(p), len(p), gpu, err, errlen);
}

static int prefill_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    return e2e_layer_setup(ctx, p, 1, seqs(p), len(p), (e2e_layer **)state);
}

static const pl_variant prefill_variants[] = {
    PL_VARIANT("baseline", e2e_layer_run_baseline,
               "the eager way: cuBLAS GEMMs, a kernel per operation (two-kernel RMSNorm, RoPE, KV write, residual "
               "adds, SwiGLU), FlashAttention-2 on mma.sync per prompt"),
    PL_VARIANT("fast_attention", e2e_layer_run_fast_attention,
               "+ the wgmma flash kernel (attention:flash_fwd's flash_wgmma) on sm_90; the same elsewhere"),
    PL_VARIANT("perflab_gemm", e2e_layer_run_perflab_gemm,
               "+ perflab's GEMMs (pl_gemm_bf16, the library's pick for each shape) instead of cuBLAS"),
    PL_VARIANT("fused", e2e_layer_run_fused,
               "+ one-pass RMSNorm, RoPE and the KV write in one kernel, the residual adds in the O and down GEMMs' "
               "epilogues"),
    PL_VARIANT("graph", e2e_layer_run_graph, "+ the fused step captured once as a CUDA graph: one launch a step"),
    PL_VARIANT("fp8_weights", e2e_layer_run_fp8_weights,
               "the fused step with FP8 (e4m3) GEMM weights, 128x128 block scales: each GEMM input quantized 1x128, "
               "then pl_gemm_fp8 (FP8 tensor cores: twice the bf16 rate); the residual adds as kernels",
               .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90}),
    PL_VARIANTS_END,
};

const pl_target pl_target_e2e_layer_prefill = {
    .group = "e2e",
    .name = "layer_prefill",
    .summary = "a dense decoder layer's prefill of a batch of prompts, technique by technique",
    .req = {.needs_gpu = 1, .min_cc = 80},
    .params = prefill_params,
    .variants = prefill_variants,
    .counters = prefill_counters,
    .setup = prefill_setup,
    .poison = e2e_layer_poison,
    .check = e2e_layer_check_output,
    .teardown = e2e_layer_teardown,
    .check_params = prefill_check_params,
    .flags = PL_TARGET_POWER_BOUND,
};
