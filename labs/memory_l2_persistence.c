/* memory:l2_persistence — a chain of `kernels` launches, each streaming its own x and y and re-reading one hot
 * buffer h: y_k = x_k + a_k·h (h repeated along x). Without a policy L2 evicts h while the streams pass through it, so
 * every launch reads h from HBM again; evict-first hints on the streams protect h somewhat; an L2 access-policy window
 * over h with persisting hits, in a set-aside part of L2 (cudaLimitPersistingL2CacheSize), keeps it there. The
 * set-aside and the persisting lines are reset in teardown, so nothing leaks past this target. */
#include <stdio.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "memory/l2_persistence.h"

#define INPUT_STREAM_ID 1
#define HOT_STREAM_ID   2

typedef struct l2_state {
    size_t hot, stream; /* elements of h, and of each launch's x and y */
    int kernels;
    float *h, *x, *y; /* device; x and y hold kernels × stream */
    float *h_host, *x_host, *y_host;
    double *ref;
    size_t set_aside; /* what cudaDeviceGetLimit reports after the request */
    pl_l2_window window;
    int limit_set; /* teardown resets it */
} l2_state;

static const pl_param_def l2_params[] = {
    PL_INT_PARAM("hot", "6m", 1, 1e10,
                 "fp32 elements of the hot buffer h (6m = 24 MiB: under the persisting maximum of an H100/H200)",
                 .small_value = "100003"),
    PL_INT_PARAM("stream", "6m", 1, 1e10, "fp32 elements each launch streams (reads from its x, writes to its y)",
                 .small_value = "250007"),
    PL_INT_PARAM("kernels", "8", 1, 1024, "launches in the chain (each with its own x and y, all with h)",
                 .small_value = "3"),
    PL_PARAMS_END,
};

/* the coefficient of launch k */
static float coef(int k)
{
    return 0.5f + 0.125f * (float)k;
}

static void l2_counters(const pl_params *p, pl_counters *c)
{
    const double hot = (double)pl_param_int(p, "hot"), stream = (double)pl_param_int(p, "stream");
    const double k = (double)pl_param_int(p, "kernels");
    /* the fewest bytes: h once (it can stay on chip), every x read and every y written */
    c->bytes_read = 4.0 * (hot + k * stream);
    c->bytes_written = 4.0 * k * stream;
    c->flops = 2.0 * k * stream;
    c->elements = k * stream;
}

static int l2_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    l2_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->hot = (size_t)pl_param_int(p, "hot");
    s->stream = (size_t)pl_param_int(p, "stream");
    s->kernels = (int)pl_param_int(p, "kernels");
    const size_t total = s->stream * (size_t)s->kernels, hot_bytes = s->hot * sizeof(float);
    s->h = pl_device_alloc(ctx, hot_bytes);
    s->x = pl_device_alloc(ctx, total * sizeof(float));
    s->y = pl_device_alloc(ctx, total * sizeof(float));
    s->h_host = pl_host_alloc(ctx, hot_bytes);
    s->x_host = pl_host_alloc(ctx, total * sizeof(float));
    s->y_host = pl_host_alloc(ctx, total * sizeof(float));
    s->ref = pl_host_alloc(ctx, total * sizeof(double));
    if (!s->h || !s->x || !s->y || !s->h_host || !s->x_host || !s->y_host || !s->ref)
        return -1;

    /* The set-aside: as much of h as the device allows to persist. The window covers h (up to the largest window);
     * when the set-aside is smaller than the window, only that fraction of its lines is marked persisting (the rest
     * would evict each other). */
    size_t max_persist = 0, max_window = 0;
    PL_CUDA(ctx, pl_l2_limits(&max_persist, &max_window));
    if (max_persist == 0 || max_window == 0)
        return pl_fail(ctx,
                       "memory:l2_persistence: this GPU has no persisting L2 (max persisting size %zu, max window "
                       "%zu)",
                       max_persist, max_window);
    PL_CUDA(ctx, cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, hot_bytes < max_persist ? hot_bytes : max_persist));
    s->limit_set = 1;
    PL_CUDA(ctx, cudaDeviceGetLimit(&s->set_aside, cudaLimitPersistingL2CacheSize));
    s->window.base = s->h;
    s->window.bytes = hot_bytes < max_window ? hot_bytes : max_window;
    s->window.hit_ratio = s->set_aside >= s->window.bytes ? 1.0f : (float)s->set_aside / (float)s->window.bytes;
    printf("memory:l2_persistence: L2 %zu B; hot buffer %zu B; persisting set-aside %zu B (device maximum %zu B); "
           "window %zu B, hit ratio %.3f\n",
           ctx->device->l2_bytes, hot_bytes, s->set_aside, max_persist, s->window.bytes, s->window.hit_ratio);

    PL_TRY(pl_fill_uniform_f32(ctx, s->h, s->hot, -1.0f, 1.0f, HOT_STREAM_ID));
    PL_TRY(pl_fill_uniform_f32(ctx, s->x, total, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->h_host, s->h, hot_bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->x_host, s->x, total * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (int k = 0; k < s->kernels; k++)
        for (size_t i = 0; i < s->stream; i++) {
            const size_t at = (size_t)k * s->stream + i;
            s->ref[at] = (double)s->x_host[at] + (double)coef(k) * (double)s->h_host[i % s->hot];
        }
    *state = s;
    return 0;
}

static void l2_teardown(pl_ctx *ctx, void *state)
{
    l2_state *s = state;
    /* demote every persisting line and give the set-aside back to normal use */
    cudaError_t e = cudaCtxResetPersistingL2Cache();
    if (s->limit_set && e == cudaSuccess)
        e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    if (e != cudaSuccess)
        fprintf(stderr, "memory:l2_persistence: resetting the persisting L2 failed: %s\n", cudaGetErrorString(e));
}

static int l2_poison(pl_ctx *ctx, void *state)
{
    l2_state *s = state;
    return pl_poison(ctx, s->y, s->stream * (size_t)s->kernels * sizeof(float));
}

static int l2_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    l2_state *s = state;
    const size_t total = s->stream * (size_t)s->kernels;
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->y, total * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->y_host, s->ref, total, PL_DTYPE_F32, 0.0, v);
    return 0;
}

static int run_chain(pl_ctx *ctx, l2_state *s, pl_l2_policy policy, int evict_first)
{
    pl_l2_window w = s->window;
    w.policy = policy;
    for (int k = 0; k < s->kernels; k++) {
        const size_t at = (size_t)k * s->stream;
        PL_CUDA(ctx,
                pl_l2_hot_axpy(s->x + at, s->h, s->y + at, s->stream, s->hot, coef(k), evict_first, &w, ctx->stream));
    }
    return 0;
}

static int run_plain(pl_ctx *ctx, void *state)
{
    return run_chain(ctx, state, PL_L2_NORMAL, 0);
}

static int run_evict_first(pl_ctx *ctx, void *state)
{
    return run_chain(ctx, state, PL_L2_NORMAL, 1);
}

static int run_persisting(pl_ctx *ctx, void *state)
{
    return run_chain(ctx, state, PL_L2_PERSISTING, 0);
}

static const pl_variant l2_variants[] = {
    PL_VARIANT("baseline", run_plain,
               "no persistence: h under L2's default replacement (a normal-property window, which also demotes "
               "lines an earlier run left persisting)"),
    PL_VARIANT("evict_first", run_evict_first,
               "evict-first cache hints on the streams (ld.global.cs / st.global.cs), h left to L2's default"),
    PL_VARIANT("persisting", run_persisting,
               "an access-policy window over h on each launch: hits persist in the set-aside L2 "
               "(cudaLimitPersistingL2CacheSize), misses stream"),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_l2_persistence = {
    .group = "memory",
    .name = "l2_persistence",
    .summary = "a chain re-reading a hot buffer beside streams: default L2 vs evict-first vs a persisting window",
    .req = {.needs_gpu = 1},
    .params = l2_params,
    .variants = l2_variants,
    .counters = l2_counters,
    .setup = l2_setup,
    .poison = l2_poison,
    .check = l2_check,
    .teardown = l2_teardown,
};
