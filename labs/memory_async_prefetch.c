/* memory:async_prefetch — a 5-point stencil over an fp32 grid, staged through shared memory tile by tile:
 * synchronous loads, a multi-stage cp.async pipeline, and TMA box copies completing on mbarriers; same tiles, same
 * threads, same persistent grid. A copy of the same bytes is the ceiling. */
#include <stdio.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/copy_ceiling.h"
#include "common/kernel_req.h"
#include "memory/async_prefetch.h"

#define INPUT_STREAM_ID 1
#define STENCIL_A       0.5f
#define STENCIL_B       0.125f

typedef struct stencil_state {
    pl_stencil_grid g;
    size_t elems;    /* rows × ld */
    float *x, *y;    /* device, pitched */
    CUtensorMap map; /* x as the TMA version reads it */
    int have_map;
    unsigned blocks; /* the persistent grid: SMs × blocks_per_sm */
    int stages;
    float *x_host;  /* the input as the GPU holds it */
    float *y_host;  /* the output copied back (pitched) */
    float *y_valid; /* its rows × cols */
    double *ref;    /* rows × cols */
    int last_is_copy;
} stencil_state;

static const pl_param_def stencil_params[] = {
    PL_INT_PARAM("rows", "16384", 1, 1e9, "rows of the grid", .small_value = "333"),
    PL_INT_PARAM("cols", "16384", 1, 1e9, "columns of the grid (rows are stored with a pitch rounded up to 4 elements)",
                 .small_value = "1001"),
    PL_INT_PARAM("blocks_per_sm", "2", 1, 16,
                 "blocks of 128 threads per SM in the persistent grid, the same for every variant (the pipelined ones "
                 "fit at most 3 with 4 stages)"),
    PL_INT_PARAM("stages", "4", PL_STENCIL_MIN_STAGES, PL_STENCIL_MAX_STAGES,
                 "shared-memory buffers of the cp.async and TMA pipelines (tiles in flight: stages - 1 and stages)"),
    PL_PARAMS_END,
};

static size_t pitch_of(size_t cols)
{
    return (cols + 3) / 4 * 4;
}

static void stencil_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "rows") * (double)pl_param_int(p, "cols");
    c->flops = 6.0 * n; /* 4 adds, 2 multiplies (the a·x as an FMA would count 2: the floor is bytes anyway) */
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

/* The stencil in float64 on the host, zeros outside the grid. */
static void reference(stencil_state *s)
{
    const pl_stencil_grid *g = &s->g;
    const float *x = s->x_host;
    for (size_t i = 0; i < g->rows; i++)
        for (size_t j = 0; j < g->cols; j++) {
            const double up = i > 0 ? x[(i - 1) * g->ld + j] : 0.0;
            const double down = i + 1 < g->rows ? x[(i + 1) * g->ld + j] : 0.0;
            const double left = j > 0 ? x[i * g->ld + j - 1] : 0.0;
            const double right = j + 1 < g->cols ? x[i * g->ld + j + 1] : 0.0;
            s->ref[i * g->cols + j] = (double)g->a * x[i * g->ld + j] + (double)g->b * (up + down + left + right);
        }
}

static const char *const version_names[] = {"sync", "cp_async", "tma"};

/* Before any work (in the parent, and again by the setup): a grid the kernels index, x and y in the GPU. */
static int stencil_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const long long rows = pl_param_int(p, "rows"), cols = pl_param_int(p, "cols");
    const double elems = (double)rows * (double)pitch_of((size_t)cols);
    if (rows >= (1ll << 31) || elems > (double)((size_t)1 << 34))
        return pl_params_refuse(err, errlen,
                                "a %lld x %lld grid is too large (at most 2^34 elements, rows < 2^31); pass smaller "
                                "--rows/--cols",
                                rows, cols);
    return pl_check_device_memory(gpu, 2.0 * 4.0 * elems, "pass smaller --rows/--cols", err, errlen);
}

static int stencil_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    char refused[256];
    if (stencil_check_params(p, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "memory:async_prefetch: %s", refused);
    stencil_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->g.rows = (size_t)pl_param_int(p, "rows");
    s->g.cols = (size_t)pl_param_int(p, "cols");
    s->g.ld = pitch_of(s->g.cols);
    s->g.a = STENCIL_A;
    s->g.b = STENCIL_B;
    s->stages = (int)pl_param_int(p, "stages");
    const int per_sm = (int)pl_param_int(p, "blocks_per_sm");
    s->elems = s->g.rows * s->g.ld;

    /* each version's residency with these stages: the grid is the same for all, but say what fits */
    for (int v = PL_STENCIL_SYNC; v <= PL_STENCIL_TMA; v++) {
        int fit = 0;
        PL_CUDA(ctx, pl_stencil_prepare((pl_stencil_version)v, s->stages, &fit));
        printf("memory:async_prefetch: %s: %d block(s) of 128 threads fit per SM with %d stage(s); the grid asks "
               "for %d\n",
               version_names[v], fit, v == PL_STENCIL_SYNC ? 1 : s->stages, per_sm);
        if (fit < per_sm)
            return pl_fail(ctx,
                           "memory:async_prefetch: --blocks_per_sm %d but only %d block(s) of the %s version "
                           "fit on an SM with --stages %d; pass a smaller --blocks_per_sm or fewer --stages",
                           per_sm, fit, version_names[v], s->stages);
    }
    s->blocks = (unsigned)(ctx->device->sm_count * per_sm);

    const size_t bytes = s->elems * sizeof(float);
    s->x = pl_device_alloc(ctx, bytes);
    s->y = pl_device_alloc(ctx, bytes);
    s->x_host = pl_host_alloc(ctx, bytes);
    s->y_host = pl_host_alloc(ctx, bytes);
    s->y_valid = pl_host_alloc(ctx, s->g.rows * s->g.cols * sizeof(float));
    s->ref = pl_host_alloc(ctx, s->g.rows * s->g.cols * sizeof(double));
    if (!s->x || !s->y || !s->x_host || !s->y_host || !s->y_valid || !s->ref)
        return -1;
    /* the padding columns get random values too: a kernel that reads them instead of zeros fails the check */
    PL_TRY(pl_fill_uniform_f32(ctx, s->x, s->elems, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->x_host, s->x, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    cudaError_t e = pl_stencil_tensor_map(&s->map, s->x, &s->g);
    s->have_map = e == cudaSuccess;
    if (!s->have_map)
        printf("memory:async_prefetch: no tensor map (%s): the tma variant will fail\n", cudaGetErrorString(e));
    reference(s);
    *state = s;
    return 0;
}

static int stencil_poison(pl_ctx *ctx, void *state)
{
    stencil_state *s = state;
    return pl_poison(ctx, s->y, s->elems * sizeof(float));
}

static int stencil_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    stencil_state *s = state;
    const size_t bytes = s->elems * sizeof(float);
    if (s->last_is_copy)
        return pl_copy_ceiling_check(ctx, s->y, s->x_host, bytes, s->y_host, v);
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->y, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->g.rows; i++)
        memcpy(s->y_valid + i * s->g.cols, s->y_host + i * s->g.ld, s->g.cols * sizeof(float));
    pl_verify_f32(s->y_valid, s->ref, s->g.rows * s->g.cols, PL_DTYPE_F32, 0.0, v);
    return 0;
}

static int run_version(pl_ctx *ctx, stencil_state *s, pl_stencil_version v)
{
    s->last_is_copy = 0;
    if (v == PL_STENCIL_TMA && !s->have_map)
        return pl_fail(ctx, "memory:async_prefetch: the driver could not encode the tensor map the tma variant needs");
    PL_CUDA(ctx, pl_stencil_launch(v, s->x, &s->map, s->y, &s->g, s->stages, s->blocks, ctx->stream));
    return 0;
}

static int run_sync(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_STENCIL_SYNC);
}

static int run_cp_async(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_STENCIL_CP_ASYNC);
}

static int run_tma(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_STENCIL_TMA);
}

static int run_copy(pl_ctx *ctx, void *state)
{
    stencil_state *s = state;
    s->last_is_copy = 1;
    PL_CUDA(ctx, cudaMemcpyAsync(s->y, s->x, s->elems * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

static const pl_variant stencil_variants[] = {
    PL_VARIANT("baseline", run_sync,
               "synchronous staging: 16-byte loads into one shared buffer, barrier, compute, barrier, next tile"),
    PL_VARIANT("cp_async", run_cp_async,
               "cp.async ring of `stages` buffers: tiles k+1..k+stages-1 in flight while tile k is computed",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("tma", run_tma,
               "TMA ring: one cp.async.bulk.tensor box copy per tile, completing on the buffer's mbarrier; zeros "
               "outside the grid from the copy engine",
               .req = {.needs_gpu = 1, .min_cc = 90, .features = PL_FEAT_TMA}),
    PL_VARIANT("cuda_memcpy", run_copy,
               "cudaMemcpyAsync device-to-device of the grid's bytes: the ceiling (checked as a copy)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_async_prefetch = {
    .group = "memory",
    .name = "async_prefetch",
    .summary = "5-point stencil staged through shared memory: synchronous loads vs cp.async pipeline vs TMA",
    .req = {.needs_gpu = 1},
    .params = stencil_params,
    .variants = stencil_variants,
    .counters = stencil_counters,
    .setup = stencil_setup,
    .poison = stencil_poison,
    .check = stencil_check,
    .check_params = stencil_check_params,
};
