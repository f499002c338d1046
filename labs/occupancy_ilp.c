/* occupancy:ilp — y = a·x + b over n fp32, a memory-bound kernel that needs about bandwidth × latency bytes in
 * flight: at low occupancy with one 4-byte load per thread; the same occupancy with several 16-byte loads in flight
 * per thread (ILP); full occupancy with one load per thread (TLP); and right-sized 256-thread blocks under
 * __launch_bounds__(256, 8) with 4 loads each. Each variant's occupancy, from the occupancy API, goes to the log and
 * into its verification message. */
#include <stdio.h>

#include "common/affine_io.h"
#include "labs.h"
#include "perflab/perflab.h"
#include "occupancy/ilp.h"

#define INPUT_STREAM_ID 1
#define N_VARIANTS      4

typedef struct ilp_state {
    size_t n;
    int ilp;
    size_t reserve;  /* the low-occupancy variants' shared-memory reservation */
    pl_affine_io io; /* x, y, the float64 reference */
    int last;                        /* the variant just run (its index) */
    char occupancy[N_VARIANTS][160]; /* what the occupancy API said of each */
} ilp_state;

static const pl_param_def ilp_params[] = {
    PL_INT_PARAM("n", "256m", 1, 1e11, "fp32 elements of x and y", .small_value = "1000003"),
    PL_INT_PARAM("low_blocks", "2", 1, 16,
                 "resident 128-thread blocks per SM of the low-occupancy variants (2 = 8 warps of 64, 12.5%)"),
    PL_INT_PARAM("ilp", "8", 1, 16, "16-byte loads in flight per thread in the ilp variant: 1, 2, 4, 8 or 16"),
    PL_PARAMS_END,
};

static void ilp_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->flops = 2.0 * n;
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

/* the versions, reservations and names of the variants, in their order */
static const pl_ilp_version variant_version[N_VARIANTS] = {PL_ILP_SCALAR, PL_ILP_VECTOR, PL_ILP_SCALAR, PL_ILP_BOUNDED};
static const int variant_reserved[N_VARIANTS] = {1, 1, 0, 0};
static const char *const variant_name[N_VARIANTS] = {"baseline", "ilp", "occupancy", "launch_bounds"};

static int loads_in_flight(ilp_state *s, int k, int *bytes)
{
    switch (variant_version[k]) {
    case PL_ILP_SCALAR: *bytes = 4; return 1;
    case PL_ILP_VECTOR: *bytes = 16; return s->ilp;
    default: *bytes = 16; return PL_ILP_BOUNDED_LOADS;
    }
}

/* Before any work (in the parent, and again by the setup): only some ILP factors are compiled. */
static int ilp_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    const int ilp = (int)pl_param_int(p, "ilp");
    if (!pl_ilp_supported(ilp))
        return pl_params_refuse(err, errlen, "--ilp %d is not built; pass 1, 2, 4, 8 or 16", ilp);
    return 0;
}

static int ilp_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    ilp_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->ilp = (int)pl_param_int(p, "ilp");
    char refused[256];
    if (ilp_check_params(p, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "occupancy:ilp: %s", refused);
    const int low = (int)pl_param_int(p, "low_blocks");
    PL_CUDA(ctx, pl_ilp_reservation(low, s->ilp, &s->reserve));

    const int max_warps = ctx->device->max_threads_per_sm / 32;
    for (int k = 0; k < N_VARIANTS; k++) {
        const pl_ilp_version v = variant_version[k];
        const size_t smem = variant_reserved[k] ? s->reserve : 0;
        int blocks = 0, regs = 0, bytes = 0;
        PL_CUDA(ctx, pl_ilp_occupancy(v, s->ilp, smem, &blocks, &regs));
        const int warps = blocks * (int)pl_ilp_block_threads(v) / 32;
        const int loads = loads_in_flight(s, k, &bytes);
        if (variant_reserved[k] && blocks != low)
            return pl_fail(ctx,
                           "occupancy:ilp: a reservation of %zu bytes gives %d resident blocks, not the %d asked "
                           "for; pass another --low_blocks",
                           smem, blocks, low);
        snprintf(s->occupancy[k], sizeof s->occupancy[k],
                 "occupancy %d/%d warps per SM (%.1f%%: %d blocks of %u, %d registers, %zu B shared reserved), "
                 "%d x %d B loads in flight a thread",
                 warps, max_warps, 100.0 * warps / max_warps, blocks, pl_ilp_block_threads(v), regs, smem, loads,
                 bytes);
        printf("occupancy:ilp: %s: %s\n", variant_name[k], s->occupancy[k]);
    }

    PL_TRY(pl_affine_io_setup(ctx, s->n, INPUT_STREAM_ID, &s->io));
    *state = s;
    return 0;
}

static int ilp_poison(pl_ctx *ctx, void *state)
{
    ilp_state *s = state;
    return pl_affine_io_poison(ctx, &s->io);
}

static int ilp_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    ilp_state *s = state;
    PL_TRY(pl_affine_io_check(ctx, &s->io, v));
    if (v->passed) /* the occupancy goes with the result, into run.json */
        pl_verify_set(v, 1, "rel. L2 error %.2e; %s", v->rel_l2_error, s->occupancy[s->last]);
    return 0;
}

static int run_variant(pl_ctx *ctx, ilp_state *s, int k)
{
    s->last = k;
    PL_CUDA(ctx, pl_ilp_affine(variant_version[k], s->ilp, s->io.x, s->io.y, s->io.n, PL_AFFINE_A, PL_AFFINE_B,
                               variant_reserved[k] ? s->reserve : 0, ctx->stream));
    return 0;
}

static int run_baseline(pl_ctx *ctx, void *state)
{
    return run_variant(ctx, state, 0);
}

static int run_ilp(pl_ctx *ctx, void *state)
{
    return run_variant(ctx, state, 1);
}

static int run_occupancy(pl_ctx *ctx, void *state)
{
    return run_variant(ctx, state, 2);
}

static int run_bounded(pl_ctx *ctx, void *state)
{
    return run_variant(ctx, state, 3);
}

static const pl_variant ilp_variants[] = {
    PL_VARIANT("baseline", run_baseline,
               "low occupancy (shared-memory reservation: low_blocks x 128 threads per SM), one 4-byte load per "
               "thread"),
    PL_VARIANT("ilp", run_ilp,
               "the same low occupancy, `ilp` independent 16-byte loads per thread before the first store"),
    PL_VARIANT("occupancy", run_occupancy,
               "full occupancy (no reservation: 16 blocks of 128 per SM), one 4-byte load per thread"),
    PL_VARIANT("launch_bounds", run_bounded,
               "right-sized: 256-thread blocks, __launch_bounds__(256, 8) caps registers so 8 fit (full SM), "
               "4 x 16-byte loads per thread"),
    PL_VARIANTS_END,
};

const pl_target pl_target_occupancy_ilp = {
    .group = "occupancy",
    .name = "ilp",
    .summary = "y = a*x + b: low occupancy vs ILP (loads in flight) vs full occupancy vs __launch_bounds__",
    .req = {.needs_gpu = 1},
    .params = ilp_params,
    .variants = ilp_variants,
    .counters = ilp_counters,
    .setup = ilp_setup,
    .poison = ilp_poison,
    .check = ilp_check,
    .check_params = ilp_check_params,
};
