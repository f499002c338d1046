/* softmax:rows — softmax over each bf16 row, fp32 arithmetic. Three passes in three kernels (max, sum of
 * exponentials, normalize: x read three times) against one fused online-softmax pass that reads the row once into
 * registers, the same pass with ex2.approx, a packed maximum and recomputed exponentials, and cudaMemcpy of the same
 * bytes as the ceiling. */
#include "common/rows_lab.h"
#include "labs.h"
#include "softmax/softmax_kernels.h"

typedef struct softmax_state {
    rows_lab io;            /* first: the shared poison/check/copy take the state */
    float *rowmax, *rowsum; /* the baseline's per-row statistics */
    int vpt;
} softmax_state;

static const pl_param_def softmax_params[] = {
    ROWS_LAB_SIZE_PARAMS("columns (any, odd included)"),
    ROWS_LAB_VPT_PARAM(4, "1, 2 or 4"),
    PL_PARAMS_END,
};

/* per element: max (1), exponent argument and exp (2), sum (1), scale (1) */
static void softmax_counters(const pl_params *p, pl_counters *c)
{
    rows_lab_counters(p, 0, 5.0, c);
}

static void softmax_reference(const void *state, double *ref)
{
    const softmax_state *s = state;
    rows_ref_softmax(s->io.x_host, (size_t)s->io.rows, (size_t)s->io.cols, ref);
}

/* Before any work, in the parent: x, y and the max and sum a row within the GPU's memory. */
static int softmax_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return rows_lab_check_memory(p, gpu, 2.0 * sizeof(float), 0, err, errlen);
}

static int softmax_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    softmax_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->vpt = (int)pl_param_int(p, "vpt");
    const size_t rows = (size_t)pl_param_int(p, "rows");
    /* logits over a range of e^8: the maximum matters */
    PL_TRY(rows_lab_init(ctx, p, &s->io, -4.0f, 4.0f, 2 * rows * sizeof(float), softmax_reference));
    PL_TRY(rows_lab_check_vpt(ctx, &s->io, s->vpt, PL_SOFTMAX_NV_MAX));
    s->rowmax = pl_device_alloc(ctx, rows * sizeof(float));
    s->rowsum = pl_device_alloc(ctx, rows * sizeof(float));
    if (!s->rowmax || !s->rowsum)
        return -1;
    *state = s;
    return 0;
}

static int run_three_pass(pl_ctx *ctx, void *state)
{
    softmax_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_softmax_three_pass(s->io.x, s->io.y, s->rowmax, s->rowsum, s->io.rows, s->io.cols, ctx->stream));
    return 0;
}

static int run_online(pl_ctx *ctx, void *state)
{
    softmax_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_softmax_online(s->io.x, s->io.y, s->io.rows, s->io.cols, s->vpt, ctx->stream));
    return 0;
}

static int run_online_ex2(pl_ctx *ctx, void *state)
{
    softmax_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_softmax_online_ex2(s->io.x, s->io.y, s->io.rows, s->io.cols, s->vpt, ctx->stream));
    return 0;
}

static const pl_variant softmax_variants[] = {
    PL_VARIANT("baseline", run_three_pass,
               "three kernels: row max, row sum of exp(x - max), normalize (x read three times, 2-byte accesses)"),
    PL_VARIANT("online_fused", run_online,
               "one pass: the row in registers (16-byte accesses), per-thread (max, sum) merged across the row "
               "in one online-softmax reduction, one exp per element"),
    PL_VARIANT("online_ex2", run_online_ex2,
               "the online pass with one FFMA + ex2.approx per exponent, the max on packed bf16 pairs, and the "
               "exponentials recomputed for the output instead of kept: 40 registers, 6 blocks of 256 per SM"),
    ROWS_LAB_COPY_VARIANT,
    PL_VARIANTS_END,
};

const pl_target pl_target_softmax_rows = {
    .group = "softmax",
    .name = "rows",
    .summary = "softmax of bf16 rows: three kernels vs one fused online pass in registers, against cudaMemcpy",
    .req = {.needs_gpu = 1},
    .params = softmax_params,
    .variants = softmax_variants,
    .counters = softmax_counters,
    .setup = softmax_setup,
    .poison = rows_lab_poison,
    .check = rows_lab_check,
    .check_params = softmax_check_params,
};
