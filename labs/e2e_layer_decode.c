/* e2e:layer_decode — one dense decoder layer's decode step (engine/dense_layer.h) for a batch of sequences over a
 * paged KV cache, one named technique a variant over the one before: the eager way (cuBLAS, a kernel per
 * operation, the simple decode kernel), the fast paged decode kernel, perflab's GEMMs, the fused forms, the CUDA
 * graph; against the floor: the layer's weights and the batch's KV cache read once at the copy rate, measured in the
 * same process. fp8_kv runs the fused step over the same cache quantized to e4m3 (kernels/attention/kv_fp8.h), checked
 * against the float64 reference over the FP8 cache's values and the baseline recipe over it; its floor is a reference
 * row of its own (floor_fp8_kv: the e4m3 pools and scales instead of the bf16 pools), since the counters (bytes,
 * hence GB/s) are the target's, the bf16 step's. fp8_weights runs the fused step with block-scaled FP8 weights
 * (e2e_layer_fp8w.c) over the bf16 cache, fp8_weights_kv_graph over the FP8 cache from a graph, each against the
 * float64 reference over the dequantized FP8 weights and 1×128-quantized GEMM inputs and against an unfused FP8-weight
 * step; their floors are reference rows of their own (floor_fp8_weights, floor_fp8_weights_kv). */
#include "common/e2e_layer.h"
#include "labs.h"

static const pl_param_def decode_params[] = {
    E2E_LAYER_COMMON_PARAMS,
    E2E_DECODE_PARAMS,
    PL_PARAMS_END,
};

static void decode_counters(const pl_params *p, pl_counters *c)
{
    e2e_layer_counters(p, 0, e2e_decode_seqs(p), e2e_decode_len(p), c);
}

static int decode_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return e2e_layer_check(p, 0, e2e_decode_seqs(p), e2e_decode_len(p), gpu, err, errlen);
}

static int decode_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    return e2e_layer_setup(ctx, p, 0, e2e_decode_seqs(p), e2e_decode_len(p), (e2e_layer **)state);
}

static const pl_variant decode_variants[] = {
    PL_VARIANT("baseline", e2e_layer_run_baseline,
               "the eager way: cuBLAS GEMMs, a kernel per operation (two-kernel RMSNorm, RoPE, KV write, residual "
               "adds, SwiGLU), a CTA per query head walking its paged cache"),
    PL_VARIANT("fast_attention", e2e_layer_run_fast_attention,
               "+ the paged decode kernel rows_deep: the GQA group on the tensor cores, the cache's tiles balanced "
               "over a persistent grid (attention:decode_paged)",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("perflab_gemm", e2e_layer_run_perflab_gemm,
               "+ perflab's GEMMs (pl_gemm_bf16, the library's pick for each shape: split-K decode kernels at "
               "small batch) instead of cuBLAS",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("fused", e2e_layer_run_fused,
               "+ one-pass RMSNorm, RoPE and the KV write in one kernel, the residual adds in the O and down GEMMs' "
               "epilogues",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("graph", e2e_layer_run_graph, "+ the fused step captured once as a CUDA graph: one launch a step",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("floor", e2e_layer_run_floor,
               "the layer's weights and the batch's K and V pages read once, 16-byte streaming loads: the step's "
               "memory floor at this GPU's read rate",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("fp8_kv", e2e_layer_run_fp8_kv,
               "the fused step over an FP8 (e4m3) KV cache, a power-of-two scale per (token, kv head) row: the KV "
               "write quantizes, rows_deep_fp8 reads half the cache bytes and converts to bf16 on chip",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("fp8_kv_graph", e2e_layer_run_fp8_kv_graph, "+ fp8_kv's step captured once as a CUDA graph",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("floor_fp8_kv", e2e_layer_run_floor_fp8_kv,
               "the FP8 variants' floor: the weights, the e4m3 K and V pages and their scales read once (the "
               "counters, per target, count the bf16 cache: judge fp8_kv against this row)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("fp8_weights", e2e_layer_run_fp8_weights,
               "the fused step with FP8 (e4m3) GEMM weights, 128x128 block scales (half the weight bytes): each GEMM "
               "input quantized 1x128 (a row's own scales, no reduction across rows), then pl_gemm_fp8; the residual "
               "adds as kernels (no FP8 epilogue)",
               .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90}),
    PL_VARIANT("fp8_weights_kv_graph", e2e_layer_run_fp8_weights_kv_graph,
               "FP8 weights over the FP8 cache, the step captured once as a CUDA graph",
               .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90}),
    PL_VARIANT("floor_fp8_weights", e2e_layer_run_floor_fp8_weights,
               "fp8_weights' floor: the e4m3 weights with their scales, the norms and the bf16 K and V pages read once",
               .flags = PL_VARIANT_REFERENCE, .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90}),
    PL_VARIANT("floor_fp8_weights_kv", e2e_layer_run_floor_fp8_weights_kv,
               "fp8_weights_kv_graph's floor: the e4m3 weights with their scales, the norms, the e4m3 K and V pages "
               "and their scales read once",
               .flags = PL_VARIANT_REFERENCE, .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90}),
    PL_VARIANTS_END,
};

const pl_target pl_target_e2e_layer_decode = {
    .group = "e2e",
    .name = "layer_decode",
    .summary = "a dense decoder layer's decode step over a paged KV cache, technique by technique, against its "
               "memory floor",
    .req = {.needs_gpu = 1},
    .params = decode_params,
    .variants = decode_variants,
    .counters = decode_counters,
    .setup = decode_setup,
    .poison = e2e_layer_poison,
    .check = e2e_layer_check_output,
    .teardown = e2e_layer_teardown,
    .check_params = decode_check_params,
};
