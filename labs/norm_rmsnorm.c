/* norm:rmsnorm — y = x / sqrt(mean(x^2) + eps) * w over each bf16 row, fp32 accumulation. The plain way in two
 * kernels (1/rms of each row to memory, then a second pass over x) against one fused pass that reads the row once
 * into registers, and cudaMemcpy of the same bytes as the ceiling. */
#include "common/rows_lab.h"
#include "labs.h"
#include "norm/norm_kernels.h"

typedef struct rmsnorm_state {
    rows_lab io; /* first: the shared poison/check/copy take the state */
    uint16_t *w, *w_host;
    float *rinv; /* the baseline's per-row statistic */
    float eps;
    int vpt;
} rmsnorm_state;

static const pl_param_def rmsnorm_params[] = {
    ROWS_LAB_SIZE_PARAMS("columns (hidden size; any, odd included)"),
    PL_FLOAT_PARAM("eps", "1e-6", 0, 1, "added to mean(x^2)"),
    ROWS_LAB_VPT_PARAM(8, "1, 2, 4 or 8"),
    PL_PARAMS_END,
};

/* per element: x*x accumulated (2), then x * r * w (2) */
static void rmsnorm_counters(const pl_params *p, pl_counters *c)
{
    rows_lab_counters(p, 1, 4.0, c);
}

static void rmsnorm_reference(const void *state, double *ref)
{
    const rmsnorm_state *s = state;
    rows_ref_rmsnorm(s->io.x_host, s->w_host, (size_t)s->io.rows, (size_t)s->io.cols, (double)s->eps, ref);
}

/* Before any work, in the parent: x, y and the rstd a row within the GPU's memory. */
static int rmsnorm_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return rows_lab_check_memory(p, gpu, sizeof(float), 0, err, errlen);
}

static int rmsnorm_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    rmsnorm_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->eps = (float)pl_param_float(p, "eps");
    s->vpt = (int)pl_param_int(p, "vpt");
    const size_t rows = (size_t)pl_param_int(p, "rows");
    PL_TRY(rows_lab_init(ctx, p, &s->io, -2.0f, 2.0f, rows * sizeof(float), rmsnorm_reference));
    PL_TRY(rows_lab_check_vpt(ctx, &s->io, s->vpt, PL_NORM_NV_MAX));
    s->w = rows_lab_vector(ctx, (size_t)s->io.cols, 0.5f, 1.5f, ROWS_STREAM_WEIGHT, &s->w_host);
    s->rinv = pl_device_alloc(ctx, rows * sizeof(float));
    if (!s->w || !s->rinv)
        return -1;
    *state = s;
    return 0;
}

static int run_naive(pl_ctx *ctx, void *state)
{
    rmsnorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_rmsnorm_naive(s->io.x, s->w, s->io.y, s->rinv, s->io.rows, s->io.cols, s->eps, ctx->stream));
    return 0;
}

static int run_fused(pl_ctx *ctx, void *state)
{
    rmsnorm_state *s = state;
    s->io.ran_copy = 0;
    PL_CUDA(ctx, pl_rmsnorm_fused(s->io.x, s->w, s->io.y, s->io.rows, s->io.cols, s->eps, s->vpt, ctx->stream));
    return 0;
}

static const pl_variant rmsnorm_variants[] = {
    PL_VARIANT("baseline", run_naive,
               "two kernels: 1/rms of each row to memory (block per row, 2-byte loads, shared-memory tree), then "
               "one thread per element reads x again"),
    PL_VARIANT("fused", run_fused,
               "one pass: a row per part-warp/warp/block by cols, 16-byte accesses, the row held in registers "
               "(x read once), warp-shuffle reduction"),
    ROWS_LAB_COPY_VARIANT,
    PL_VARIANTS_END,
};

const pl_target pl_target_norm_rmsnorm = {
    .group = "norm",
    .name = "rmsnorm",
    .summary = "RMSNorm of bf16 rows: two kernels vs one fused register-resident pass, against cudaMemcpy",
    .req = {.needs_gpu = 1},
    .params = rmsnorm_params,
    .variants = rmsnorm_variants,
    .counters = rmsnorm_counters,
    .setup = rmsnorm_setup,
    .poison = rows_lab_poison,
    .check = rows_lab_check,
    .check_params = rmsnorm_check_params,
};
