/* fusion:elementwise_chain — y = scale * GELU(x + bias) over a bf16 matrix (GELU in its tanh form), fp32
 * arithmetic. Three kernels, one per operation, each a full trip through memory, against one fused kernel: the
 * same 16-byte walk in both, so the speedup is the bytes saved (12 per element against 4). cudaMemcpy of the fused
 * kernel's bytes is the ceiling. */
#include "common/rows_lab.h"
#include "fusion/elementwise_chain.h"
#include "labs.h"

typedef struct chain_state {
    rows_lab io; /* first: the shared poison/check/copy take the state */
    uint16_t *bias, *bias_host;
    uint16_t *tmp; /* the unfused chain's intermediate */
    float scale;
} chain_state;

static const pl_param_def chain_params[] = {
    ROWS_LAB_SIZE_PARAMS("columns (features; any, odd included)"),
    PL_FLOAT_PARAM("scale", "1.7", -1e6, 1e6, "the factor applied after GELU"),
    PL_PARAMS_END,
};

/* per element: bias add (1), GELU tanh form (8: cube, FMA, multiplies, tanh, add), scale (1) */
static void chain_counters(const pl_params *p, pl_counters *c)
{
    rows_lab_counters(p, 1, 10.0, c);
}

static void chain_reference(const void *state, double *ref)
{
    const chain_state *s = state;
    rows_ref_chain(s->io.x_host, s->bias_host, (size_t)s->io.rows, (size_t)s->io.cols, (double)s->scale, ref);
}

/* Before any work, in the parent: x, y and the the intermediate within the GPU's memory. */
static int chain_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return rows_lab_check_memory(p, gpu, 0, 2.0 /* tmp */, err, errlen);
}

static int chain_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    chain_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->scale = (float)pl_param_float(p, "scale");
    const size_t n = (size_t)pl_param_int(p, "rows") * (size_t)pl_param_int(p, "cols");
    PL_TRY(rows_lab_init(ctx, p, &s->io, -1.0f, 1.0f, n * sizeof(uint16_t), chain_reference));
    s->bias = rows_lab_vector(ctx, (size_t)s->io.cols, -1.0f, 1.0f, ROWS_STREAM_BIAS, &s->bias_host);
    s->tmp = pl_device_alloc(ctx, n * sizeof(uint16_t));
    if (!s->bias || !s->tmp)
        return -1;
    *state = s;
    return 0;
}

static int run_unfused(pl_ctx *ctx, void *state)
{
    chain_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_chain_unfused(s->io.x, s->bias, s->tmp, s->io.y, s->io.rows, s->io.cols, s->scale, ctx->stream));
    return 0;
}

static int run_fused(pl_ctx *ctx, void *state)
{
    chain_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_chain_fused(s->io.x, s->bias, s->io.y, s->io.rows, s->io.cols, s->scale, ctx->stream));
    return 0;
}

static const pl_variant chain_variants[] = {
    PL_VARIANT("baseline", run_unfused,
               "three kernels (bias add, GELU, scale), each a 16-byte pass through memory with a bf16 "
               "intermediate: 12 bytes per element"),
    PL_VARIANT("fused", run_fused,
               "one kernel, the three operations on the registers between one load and one store: 4 bytes per "
               "element"),
    ROWS_LAB_COPY_VARIANT,
    PL_VARIANTS_END,
};

const pl_target pl_target_fusion_elementwise_chain = {
    .group = "fusion",
    .name = "elementwise_chain",
    .summary = "bias + GELU + scale on bf16: three kernels vs one fused kernel (the bytes saved), against cudaMemcpy",
    .req = {.needs_gpu = 1},
    .params = chain_params,
    .variants = chain_variants,
    .counters = chain_counters,
    .setup = chain_setup,
    .poison = rows_lab_poison,
    .check = rows_lab_check,
    .check_params = chain_check_params,
};
