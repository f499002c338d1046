/* memory:coalescing — y = a*x + b over n floats, twice: the same bytes and the same arithmetic, with only the
 * mapping of threads to elements changed. A strided walk puts each lane of a warp in a different 32-byte
 * sector; the coalesced one gives a warp 32 consecutive words, whole 128-byte lines. */
#include "common/affine_io.h"
#include "labs.h"
#include "perflab/perflab.h"
#include "memory/memory_kernels.h"

#define INPUT_STREAM_ID 1 /* per-buffer seed stream of x */

typedef struct coalescing_state {
    size_t stride;
    pl_affine_io io; /* x, y, the float64 reference */
} coalescing_state;

static const pl_param_def coalescing_params[] = {
    PL_INT_PARAM("n", "64m", 1, 1e12, "fp32 elements in x and in y", .small_value = "100003"),
    PL_INT_PARAM("stride", "32", 2, 1048576,
                 "rows of the strided walk: neighbouring threads of the baseline touch elements this many rows apart"),
    PL_PARAMS_END,
};

static void coalescing_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->flops = 2.0 * n;
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

static int coalescing_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    coalescing_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->stride = (size_t)pl_param_int(p, "stride");
    PL_TRY(pl_affine_io_setup(ctx, (size_t)pl_param_int(p, "n"), INPUT_STREAM_ID, &s->io));
    *state = s;
    return 0;
}

static int coalescing_poison(pl_ctx *ctx, void *state)
{
    coalescing_state *s = state;
    return pl_affine_io_poison(ctx, &s->io);
}

static int coalescing_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    coalescing_state *s = state;
    return pl_affine_io_check(ctx, &s->io, v);
}

static int run_strided(pl_ctx *ctx, void *state)
{
    coalescing_state *s = state;
    const pl_affine_io *io = &s->io;
    PL_CUDA(ctx, pl_affine_f32_strided(io->x, io->y, io->n, s->stride, PL_AFFINE_A, PL_AFFINE_B, ctx->stream));
    return 0;
}

static int run_coalesced(pl_ctx *ctx, void *state)
{
    coalescing_state *s = state;
    const pl_affine_io *io = &s->io;
    PL_CUDA(ctx, pl_affine_f32_coalesced(io->x, io->y, io->n, PL_AFFINE_A, PL_AFFINE_B, ctx->stream));
    return 0;
}

static const pl_variant coalescing_variants[] = {
    PL_VARIANT("baseline", run_strided,
               "strided: neighbouring threads touch elements `stride` rows apart, one 4-byte word per 32-byte sector"),
    PL_VARIANT("coalesced", run_coalesced,
               "consecutive threads, consecutive elements: a warp reads whole 128-byte lines"),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_coalescing = {
    .group = "memory",
    .name = "coalescing",
    .summary = "y = a*x + b over n fp32: a strided thread-to-element mapping vs a coalesced one",
    .req = {.needs_gpu = 1},
    .params = coalescing_params,
    .variants = coalescing_variants,
    .flags = PL_TARGET_QUICK,
    .counters = coalescing_counters,
    .setup = coalescing_setup,
    .poison = coalescing_poison,
    .check = coalescing_check,
    .teardown = NULL,
};
