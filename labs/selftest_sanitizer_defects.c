/* The sanitize label's own check: variants with a deliberate defect that each compute the right result on a GPU
 * without the tool (so verification passes and a plain run shows nothing), and that compute-sanitizer must
 * report: an out-of-bounds global write (memcheck), a shared-memory race from a missing __syncthreads
 * (racecheck) and a __syncwarp whose mask leaves out a lane that calls it (synccheck). tests/gpu/test_sanitize.c
 * runs it under each tool with that tool's defect alone (--defect) and fails when the tool reports nothing, so that
 * the label cannot check nothing unnoticed. Run only when named. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "selftest/sanitizer_defects.h"

/* 4000 bytes: not a multiple of 256, so that the stray word past the end stays in the allocation's granule */
#define DEFECT_N         1000
#define DEFECT_STREAM_ID 1

typedef struct defects_state {
    float *in, *out; /* device, DEFECT_N each: out has no room for out[DEFECT_N] on purpose */
    float *out_host;
    double *ref;
    const char *defect; /* --defect: the one variant that keeps its defect, or "all" */
} defects_state;

/* One tool's check runs its own defect alone (the others' variants then run the clean kernel): a memcheck error
 * ends the process's CUDA context, and a bad __syncwarp is undefined behaviour outside synccheck. */
static const pl_param_def defects_params[] = {
    {.name = "defect",
     .type = PL_PARAM_STRING,
     .default_value = "all",
     .help = "the variant that keeps its defect (the others run the clean kernel), or all",
     .choices = "all|oob_write|shared_race|syncwarp_mask"},
    {.name = NULL},
};

static int defects_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    defects_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->defect = pl_param_str(p, "defect");
    s->in = pl_device_alloc(ctx, DEFECT_N * sizeof(float));
    s->out = pl_device_alloc(ctx, DEFECT_N * sizeof(float));
    s->out_host = pl_host_alloc(ctx, DEFECT_N * sizeof(float));
    s->ref = pl_host_alloc(ctx, DEFECT_N * sizeof(double));
    if (!s->in || !s->out || !s->out_host || !s->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, s->in, DEFECT_N, -1.0f, 1.0f, DEFECT_STREAM_ID));
    for (size_t i = 0; i < DEFECT_N; i++)
        s->ref[i] = 2.0 * (double)pl_uniform_host(ctx->seed, DEFECT_STREAM_ID, i, -1.0f, 1.0f);
    *state = s;
    return 0;
}

static int defects_poison(pl_ctx *ctx, void *state)
{
    defects_state *s = state;
    return pl_poison(ctx, s->out, DEFECT_N * sizeof(float));
}

static int defects_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    defects_state *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, s->out, DEFECT_N * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->out_host, s->ref, DEFECT_N, PL_DTYPE_F32, 0, v);
    return 0;
}

/* The variant of each defect, by name (as --defect names it). */
static const char *const defect_variant[] = {
    [PL_DEFECT_NONE] = "baseline",
    [PL_DEFECT_OOB_WRITE] = "oob_write",
    [PL_DEFECT_SHARED_RACE] = "shared_race",
    [PL_DEFECT_SYNCWARP_MASK] = "syncwarp_mask",
};

static int launch(pl_ctx *ctx, void *state, pl_defect d)
{
    defects_state *s = state;
    if (strcmp(s->defect, "all") != 0 && strcmp(s->defect, defect_variant[d]) != 0)
        d = PL_DEFECT_NONE;
    PL_CUDA(ctx, pl_defect_scale(d, s->in, s->out, DEFECT_N, ctx->stream));
    return 0;
}

static int run_clean(pl_ctx *ctx, void *state)
{
    return launch(ctx, state, PL_DEFECT_NONE);
}

static int run_oob_write(pl_ctx *ctx, void *state)
{
    return launch(ctx, state, PL_DEFECT_OOB_WRITE);
}

static int run_shared_race(pl_ctx *ctx, void *state)
{
    return launch(ctx, state, PL_DEFECT_SHARED_RACE);
}

static int run_syncwarp_mask(pl_ctx *ctx, void *state)
{
    return launch(ctx, state, PL_DEFECT_SYNCWARP_MASK);
}

static const pl_variant defects_variants[] = {
    {.name = "baseline", .technique = "out = 2*in, no defect: compute-sanitizer reports nothing", .run = run_clean},
    {.name = "oob_write",
     .technique = "one thread writes out[n], past the end of the allocation: memcheck reports it",
     .run = run_oob_write},
    {.name = "shared_race",
     .technique = "reads another warp's shared-memory slot with no __syncthreads after its write: racecheck",
     .run = run_shared_race},
    {.name = "syncwarp_mask",
     .technique = "lane 16 calls __syncwarp with a mask that leaves it out: synccheck reports it",
     .run = run_syncwarp_mask},
    {.name = NULL},
};

const pl_target pl_target_selftest_sanitizer_defects = {
    .group = "selftest",
    .name = "sanitizer_defects",
    .summary = "the sanitize label's check: an out-of-bounds write, a shared-memory race and a bad __syncwarp that "
               "only compute-sanitizer sees",
    .req = {.needs_gpu = 1},
    .params = defects_params,
    .variants = defects_variants,
    .flags = PL_TARGET_SELFTEST,
    .setup = defects_setup,
    .poison = defects_poison,
    .check = defects_check,
};
