/* norm:layernorm — y = (x - mean) / sqrt(var + eps) * w + b over each bf16 row (biased variance, as PyTorch), fp32
 * accumulation. The plain way in two kernels (mean and 1/std of each row to memory by the textbook two loops, then
 * a second pass over x) against one fused pass with the row in registers and a register two-pass for the
 * variance, the same pass with the row staged in shared memory by cp.async, the register pass with one reduction
 * of the moments about a shift instead of two, and cudaMemcpy of the same bytes as the ceiling. */
#include "common/rows_lab.h"
#include "labs.h"
#include "norm/norm_kernels.h"

typedef struct layernorm_state {
    rows_lab io; /* first: the shared poison/check/copy take the state */
    uint16_t *w, *w_host, *b, *b_host;
    float *stats; /* the baseline's (mean, 1/std) per row */
    float eps;
    int vpt;
} layernorm_state;

static const pl_param_def layernorm_params[] = {
    ROWS_LAB_SIZE_PARAMS("columns (hidden size; any, odd included)"),
    PL_FLOAT_PARAM("eps", "1e-5", 0, 1, "added to the variance"),
    ROWS_LAB_VPT_PARAM(8, "1, 2, 4 or 8"),
    PL_PARAMS_END,
};

/* per element: sum (1), (x - mean)^2 accumulated (3), ((x - mean) * rstd) * w + b (3) */
static void layernorm_counters(const pl_params *p, pl_counters *c)
{
    rows_lab_counters(p, 2, 7.0, c);
}

static void layernorm_reference(const void *state, double *ref)
{
    const layernorm_state *s = state;
    rows_ref_layernorm(s->io.x_host, s->w_host, s->b_host, (size_t)s->io.rows, (size_t)s->io.cols, (double)s->eps, ref);
}

/* Before any work, in the parent: x, y and the mean and rstd a row within the GPU's memory. */
static int layernorm_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return rows_lab_check_memory(p, gpu, 2.0 * sizeof(float), 0, err, errlen);
}

static int layernorm_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    layernorm_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->eps = (float)pl_param_float(p, "eps");
    s->vpt = (int)pl_param_int(p, "vpt");
    const size_t rows = (size_t)pl_param_int(p, "rows");
    /* x off-centre (mean 1): the mean must really be subtracted */
    PL_TRY(rows_lab_init(ctx, p, &s->io, -1.0f, 3.0f, 2 * rows * sizeof(float), layernorm_reference));
    PL_TRY(rows_lab_check_vpt(ctx, &s->io, s->vpt, PL_NORM_NV_MAX));
    s->w = rows_lab_vector(ctx, (size_t)s->io.cols, 0.5f, 1.5f, ROWS_STREAM_WEIGHT, &s->w_host);
    s->b = rows_lab_vector(ctx, (size_t)s->io.cols, -1.0f, 1.0f, ROWS_STREAM_BIAS, &s->b_host);
    s->stats = pl_device_alloc(ctx, 2 * rows * sizeof(float));
    if (!s->w || !s->b || !s->stats)
        return -1;
    *state = s;
    return 0;
}

static int run_naive(pl_ctx *ctx, void *state)
{
    layernorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx,
            pl_layernorm_naive(s->io.x, s->w, s->b, s->io.y, s->stats, s->io.rows, s->io.cols, s->eps, ctx->stream));
    return 0;
}

static int run_fused(pl_ctx *ctx, void *state)
{
    layernorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_layernorm_fused(s->io.x, s->w, s->b, s->io.y, s->io.rows, s->io.cols, s->eps, s->vpt, ctx->stream));
    return 0;
}

static int run_async(pl_ctx *ctx, void *state)
{
    layernorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_layernorm_async(s->io.x, s->w, s->b, s->io.y, s->io.rows, s->io.cols, s->eps, s->vpt, ctx->stream));
    return 0;
}

static int run_shifted(pl_ctx *ctx, void *state)
{
    layernorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx,
            pl_layernorm_shifted(s->io.x, s->w, s->b, s->io.y, s->io.rows, s->io.cols, s->eps, s->vpt, ctx->stream));
    return 0;
}

static const pl_variant layernorm_variants[] = {
    PL_VARIANT("baseline", run_naive,
               "two kernels: mean and 1/std of each row to memory (block per row, two loops over the row, 2-byte "
               "loads), then one thread per element reads x again"),
    PL_VARIANT("fused", run_fused,
               "one pass: a row per part-warp/warp/block by cols, 16-byte accesses, the row in registers (x read "
               "once), variance as a register two-pass"),
    PL_VARIANT("fused_async", run_async,
               "the same pass with the row staged in shared memory by cp.async instead of registers: 32 "
               "registers, room for 8 blocks of 256 per SM instead of 4"),
    PL_VARIANT("fused_shifted", run_shifted,
               "the register pass with one reduction instead of two: sums of x - k and (x - k)^2 about k = the "
               "row's first element, reduced together once; no per-element mask; 48 registers, 5 blocks of 256 per "
               "SM"),
    ROWS_LAB_COPY_VARIANT,
    PL_VARIANTS_END,
};

const pl_target pl_target_norm_layernorm = {
    .group = "norm",
    .name = "layernorm",
    .summary =
        "LayerNorm of bf16 rows: two kernels vs one fused pass (registers; cp.async staging; one shifted reduction), "
        "vs cudaMemcpy",
    .req = {.needs_gpu = 1},
    .params = layernorm_params,
    .variants = layernorm_variants,
    .counters = layernorm_counters,
    .setup = layernorm_setup,
    .poison = rows_lab_poison,
    .check = rows_lab_check,
    .check_params = layernorm_check_params,
};
