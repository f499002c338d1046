/* launch:persistent — `steps` dependent steps of a 3-point stencil over `elements` floats, cut into work items of
 * 256 elements (a tile of one step): item (k, j) needs items (k-1, j-1..j+1). Each item is a few hundred
 * nanoseconds of work, so launching is what costs:
 *  - baseline: one kernel per step (a launch each, and a full barrier between steps);
 *  - persistent: one launch; resident blocks pull items from a device-side queue and wait only for the three
 *    items each one depends on;
 *  - graph [reference]: the baseline's kernels captured once into a CUDA graph, replayed with one launch.
 *
 * Timing region (every variant the same): host-bound, no latch: from an event on the idle stream to the end of the
 * last step, with the host's launch calls inside (the lesson is their cost). Outside it: building the graph and
 * zeroing the queue (setup). */
#include "labs.h"
#include "perflab/perflab.h"
#include "common/graph_capture.h"
#include "launch/persistent.h"

#define INPUT_STREAM_ID 1

typedef struct persistent_state {
    int steps;
    size_t n;
    float *x, *p0, *p1; /* device: input, the two step buffers */
    float *coef;        /* device: (a_k, c_k) per step */
    void *queue;
    unsigned blocks;
    float *out_host;
    double *ref;
    cudaGraphExec_t graph; /* destroyed at teardown */
} persistent_state;

static const pl_param_def persistent_params[] = {
    PL_INT_PARAM("steps", "128", 1, 1024, "dependent steps of the stencil", .small_value = "37"),
    PL_INT_PARAM("elements", "8192", 1, 1048576, "fp32 elements of each step (items of 256)", .small_value = "1000"),
    PL_INT_PARAM("blocks", "0", 0, 1e6,
                 "blocks of the persistent kernel (0: four per tile, at most what the GPU holds at once)"),
    PL_PARAMS_END,
};

/* a_k + 2·c_k = 0.98: the stencil contracts (values stay bounded over any number of steps) while the input still
 * shapes the result; a_k varies with k so that a step read from the wrong buffer changes the output */
static float coef_a(int k)
{
    return 0.5f + 0.002f * (float)(k % 5);
}

static float coef_c(int k)
{
    return 0.5f * (0.98f - coef_a(k));
}

static void persistent_counters(const pl_params *p, pl_counters *c)
{
    const double steps = (double)pl_param_int(p, "steps"), n = (double)pl_param_int(p, "elements");
    c->flops = 4.0 * n * steps;
    c->bytes_read = 4.0 * n; /* x once; the steps in between stay in L2 */
    c->bytes_written = 4.0 * n;
    c->elements = n * steps;
}

static int enqueue_steps(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    persistent_state *s = arg;
    for (int k = 0; k < s->steps; k++)
        PL_CUDA(ctx, pl_stencil_step_f32(s->x, s->p0, s->p1, s->n, k, s->coef, stream));
    return 0;
}

static float *result_of(const persistent_state *s)
{
    return ((s->steps - 1) & 1) ? s->p1 : s->p0;
}

static int persistent_reference(pl_ctx *ctx, persistent_state *s)
{
    const size_t n = s->n;
    double *cur = pl_host_alloc(ctx, n * sizeof *cur), *next = pl_host_alloc(ctx, n * sizeof *next);
    float *coef = pl_host_alloc(ctx, 2 * (size_t)s->steps * sizeof *coef);
    if (!cur || !next || !coef)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, s->x, n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    for (int k = 0; k < s->steps; k++) {
        coef[2 * k] = coef_a(k);
        coef[2 * k + 1] = coef_c(k);
    }
    PL_CUDA(ctx,
            cudaMemcpyAsync(s->coef, coef, 2 * (size_t)s->steps * sizeof *coef, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < n; i++)
        cur[i] = (double)s->out_host[i];
    for (int k = 0; k < s->steps; k++) {
        const double a = (double)coef[2 * k], c = (double)coef[2 * k + 1];
        for (size_t i = 0; i < n; i++)
            next[i] = a * cur[i] + c * ((i > 0 ? cur[i - 1] : 0.0) + (i + 1 < n ? cur[i + 1] : 0.0));
        double *t = cur;
        cur = next;
        next = t;
    }
    for (size_t i = 0; i < n; i++)
        s->ref[i] = cur[i];
    return 0;
}

static int persistent_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    persistent_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->steps = (int)pl_param_int(p, "steps");
    s->n = (size_t)pl_param_int(p, "elements");
    const size_t bytes = s->n * sizeof(float), tiles = (s->n + PL_STENCIL_TILE - 1) / PL_STENCIL_TILE;
    s->x = pl_device_alloc(ctx, bytes);
    s->p0 = pl_device_alloc(ctx, bytes);
    s->p1 = pl_device_alloc(ctx, bytes);
    s->coef = pl_device_alloc(ctx, 2 * (size_t)s->steps * sizeof(float));
    s->queue = pl_device_alloc(ctx, pl_stencil_queue_bytes(s->n));
    s->out_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->x || !s->p0 || !s->p1 || !s->coef || !s->queue || !s->out_host || !s->ref)
        return -1;
    PL_CUDA(ctx, cudaMemsetAsync(s->queue, 0, pl_stencil_queue_bytes(s->n), ctx->stream));
    PL_TRY(pl_fill_uniform_f32(ctx, s->x, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_TRY(persistent_reference(ctx, s));

    unsigned most = 0;
    PL_CUDA(ctx, pl_stencil_persistent_max_blocks(&most));
    const long long asked = pl_param_int(p, "blocks");
    if (asked > (long long)most)
        return pl_fail(ctx,
                       "launch:persistent: --blocks %lld is more than the %u blocks %s holds at once; use "
                       "--blocks <= %u (or 0)",
                       asked, most, ctx->device->name, most);
    s->blocks = asked > 0 ? (unsigned)asked : (4 * tiles < most ? (unsigned)(4 * tiles) : most);
    /* last: a failure above leaves no graph behind (the teardown does not run after a failed setup) */
    PL_TRY(pl_capture_graph(ctx, enqueue_steps, s, &s->graph));
    *state = s;
    return 0;
}

static void persistent_teardown(pl_ctx *ctx, void *state)
{
    persistent_state *s = state;
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    s->graph = NULL;
}

static int persistent_poison(pl_ctx *ctx, void *state)
{
    persistent_state *s = state;
    PL_TRY(pl_poison(ctx, s->p0, s->n * sizeof(float)));
    return pl_poison(ctx, s->p1, s->n * sizeof(float));
}

static int persistent_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    persistent_state *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, result_of(s), s->n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->out_host, s->ref, s->n, PL_DTYPE_F32, 0.0, v);
    return 0;
}

static int run_launches(pl_ctx *ctx, void *state)
{
    return enqueue_steps(ctx, state, ctx->stream);
}

static int run_persistent(pl_ctx *ctx, void *state)
{
    persistent_state *s = state;
    PL_CUDA(ctx,
            pl_stencil_persistent_f32(s->x, s->p0, s->p1, s->n, s->steps, s->coef, s->queue, s->blocks, ctx->stream));
    return 0;
}

PL_LAUNCH_RUN(run_graph, persistent_state, cudaGraphLaunch(s->graph, ctx->stream))

static const pl_variant persistent_variants[] = {
    PL_VARIANT("baseline", run_launches,
               "one kernel launch per step: `steps` launches, a full barrier between steps (host-bound)",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("persistent", run_persistent,
               "one launch of resident blocks pulling (step, tile) items from a device queue, each waiting only "
               "for its three inputs (host-bound)",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND),
    PL_VARIANT("graph", run_graph,
               "the baseline's kernels captured once into a CUDA graph, replayed with one cudaGraphLaunch "
               "(host-bound)",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND | PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_launch_persistent = {
    .group = "launch",
    .name = "persistent",
    .summary = "a wavefront of tiny dependent items: one kernel per step vs a persistent kernel with a device queue, "
               "CUDA graph as reference; timed as issued (launch calls inside, graph build outside)",
    .req = {.needs_gpu = 1},
    .params = persistent_params,
    .variants = persistent_variants,
    .counters = persistent_counters,
    .setup = persistent_setup,
    .poison = persistent_poison,
    .check = persistent_check,
    .teardown = persistent_teardown,
};
