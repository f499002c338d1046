/* e2e:moe_layer_decode — one mixture-of-experts decoder layer's decode step (engine/moe_layer.h: Qwen3-30B-A3B,
 * Mixtral-8x7B) for a batch of sequences over a paged KV cache, one named technique a variant over the one before:
 * PyTorch's way (the dense layer's eager attention half, cuBLAS's router, a loop of one cuBLAS GEMM per expert on
 * its gathered rows with the counts read back to the host), the library's grouped GEMM over device-side offsets, the
 * fused forms (the dense layer's fused attention half, the router with its top-k in one kernel, the residual in the
 * combine), the CUDA graph; against the floor: the layer's fixed weights, the weights of the experts the batch's
 * routing touches and the batch's KV cache read once at the copy rate, measured in the same process.
 * Counters: step_cost's FLOPs and bytes with the expected experts touched under uniform routing (the counters see
 * the parameters only); the setup prints the batch's actual count, which the floor reads. PyTorch's version of the
 * layer (a loop over experts and torch._grouped_mm, eager and compiled) is scripts/torch_engine_moe_layer.py. */
#include "common/e2e_layer.h"
#include "labs.h"

static const pl_param_def moe_params[] = {
    PL_TEXT_PARAM("model", "qwen3-30b-a3b", "a MoE model config (engine/model_config.c): qwen3-30b-a3b, mixtral-8x7b",
                  .small_value = "tiny-moe"),
    E2E_LAYER_SHAPE_PARAMS,
    E2E_DECODE_PARAMS,
    PL_PARAMS_END,
};

static void moe_counters(const pl_params *p, pl_counters *c)
{
    e2e_moe_counters(p, e2e_decode_seqs(p), e2e_decode_len(p), c);
}

static int moe_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return e2e_moe_check(p, e2e_decode_seqs(p), e2e_decode_len(p), gpu, err, errlen);
}

static int moe_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    return e2e_moe_setup(ctx, p, e2e_decode_seqs(p), e2e_decode_len(p), (e2e_layer **)state);
}

#define REQ_GROUPED                                                                                                    \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA                            \
    }

static const pl_variant moe_variants[] = {
    PL_VARIANT("baseline", e2e_moe_run_baseline,
               "PyTorch's way: the eager attention half (cuBLAS, a kernel per operation), cuBLAS's router into fp32 "
               "logits, a top-k kernel, the expert counts read back to the host and one cuBLAS GEMM per expert with "
               "tokens (gate_up, SwiGLU, down), the combine and a residual-add kernel",
               /* the host read synchronises the stream: no graph, and no latch holding the stream meanwhile */
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND),
    PL_VARIANT("grouped", e2e_moe_run_grouped,
               "+ the library's grouped GEMM (pl_grouped_gemm_bf16): every expert's gate_up in one launch and every "
               "down in another, the group sizes on the device (no host read, no per-expert launches)",
               .req = REQ_GROUPED),
    PL_VARIANT("fused", e2e_moe_run_fused,
               "+ the dense layer's fused attention half (rows_deep decode, perflab's GEMMs, one-pass RMSNorm, RoPE "
               "with the KV write, the residual in the O GEMM's epilogue), the router and its top-k in one kernel, "
               "the residual add in the combine",
               .req = REQ_GROUPED),
    PL_VARIANT("graph", e2e_layer_run_graph, "+ the fused step captured once as a CUDA graph: one launch a step",
               .req = REQ_GROUPED),
    PL_VARIANT("floor", e2e_layer_run_floor,
               "the layer's fixed weights, the weights of the experts the batch's routing touches and the batch's K "
               "and V pages read once, 16-byte streaming loads: the step's memory floor at this GPU's read rate",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_e2e_moe_layer_decode = {
    .group = "e2e",
    .name = "moe_layer_decode",
    .summary = "a mixture-of-experts decoder layer's decode step over a paged KV cache (expert loop, grouped GEMM, "
               "fused, graph) against its memory floor",
    .req = REQ_GROUPED, /* the setup runs the fused recipe (the grouped GEMM) for the graph */
    .params = moe_params,
    .variants = moe_variants,
    .counters = moe_counters,
    .setup = moe_setup,
    .poison = e2e_layer_poison,
    .check = e2e_layer_check_output,
    .teardown = e2e_layer_teardown,
    .check_params = moe_check_params,
};
