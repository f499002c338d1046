/* launch:cuda_graphs — a chain of `kernels` tiny dependent kernels, launched one by one and replayed from a
 * CUDA graph. The work is negligible; what is timed is the cost of getting each kernel onto the GPU. */
#include "labs.h"
#include "perflab/perflab.h"
#include "launch/launch_kernels.h"

#define INPUT_STREAM_ID 1 /* per-buffer seed stream of x */

typedef struct chain_state {
    int kernels;
    size_t elements;
    float *x, *y;               /* device: the chain's input and its in-place output */
    float *y_host;              /* the checked output, copied back */
    double *ref;                /* the chain applied to x in float64 */
    cudaGraphExec_t chain_exec; /* the chain captured at setup, destroyed at teardown */
} chain_state;

/* Link k computes y = a_k*y + b_k. a_k < 1 keeps values bounded over any length while x still shapes the
 * result after hundreds of links (0.9985^128 ~ 0.8); both vary with k so that a link dropped, repeated or
 * reordered changes the output well beyond the fp32 tolerance. */
static float chain_a(int k)
{
    return 0.999f - 0.0001f * (float)(k % 10);
}

static float chain_b(int k)
{
    return 0.001f * (float)(k % 7 - 3);
}

static const pl_param_def chain_params[] = {
    /* Beyond ~4096 links the contraction erases x from the result, and the check could no longer tell a
     * dropped link or a wrong input from a right one. */
    PL_INT_PARAM("kernels", "128", 100, 4096, "dependent kernels in the chain"),
    PL_INT_PARAM("elements", "1024", 1, 1048576, "fp32 elements each kernel updates (256 per block)"),
    PL_PARAMS_END,
};

static void chain_counters(const pl_params *p, pl_counters *c)
{
    const double kernels = (double)pl_param_int(p, "kernels");
    const double elements = (double)pl_param_int(p, "elements");
    c->flops = 2.0 * elements * kernels;
    c->bytes_read = 4.0 * elements; /* x once; the links in between stay in L2 */
    c->bytes_written = 4.0 * elements;
    c->elements = elements * kernels;
}

/* The whole chain on `stream`: the first link reads x, so that every run recomputes y from scratch. */
static int enqueue_chain(pl_ctx *ctx, const chain_state *s, cudaStream_t stream)
{
    for (int k = 0; k < s->kernels; k++)
        PL_CUDA(ctx, pl_tiny_affine_f32(k == 0 ? s->x : s->y, s->y, s->elements, chain_a(k), chain_b(k), stream));
    return 0;
}

/* Capture the chain on a stream of our own (ctx->stream may be the legacy stream, which cannot be captured)
 * and instantiate it. Cleans up after itself on failure, so that setup can simply return -1. */
static int build_chain_graph(pl_ctx *ctx, const chain_state *s, cudaGraphExec_t *exec_out)
{
    cudaStream_t capture_stream = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t err;
    int enqueued, rc = -1;

    PL_CUDA(ctx, cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking));
    err = cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess) {
        pl_fail_cuda(ctx, err, "cudaStreamBeginCapture", __FILE__, __LINE__);
        goto out;
    }
    enqueued = enqueue_chain(ctx, s, capture_stream);
    /* End the capture even after a failed launch, so that the stream leaves capture mode. */
    err = cudaStreamEndCapture(capture_stream, &graph);
    if (enqueued != 0)
        goto out;
    if (err != cudaSuccess) {
        pl_fail_cuda(ctx, err, "cudaStreamEndCapture", __FILE__, __LINE__);
        goto out;
    }
    err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess) {
        pl_fail_cuda(ctx, err, "cudaGraphInstantiate", __FILE__, __LINE__);
        exec = NULL;
        goto out;
    }
    /* Upload now, so that the first timed launch does not pay for it. */
    err = cudaGraphUpload(exec, ctx->stream);
    if (err != cudaSuccess) {
        pl_fail_cuda(ctx, err, "cudaGraphUpload", __FILE__, __LINE__);
        goto out;
    }
    rc = 0;
out:
    /* The executable graph needs neither the graph it came from nor the capture stream. */
    if (graph && (err = cudaGraphDestroy(graph)) != cudaSuccess && rc == 0)
        rc = pl_fail_cuda(ctx, err, "cudaGraphDestroy", __FILE__, __LINE__);
    if ((err = cudaStreamDestroy(capture_stream)) != cudaSuccess && rc == 0)
        rc = pl_fail_cuda(ctx, err, "cudaStreamDestroy", __FILE__, __LINE__);
    if (rc == 0)
        *exec_out = exec;
    else if (exec)
        (void)cudaGraphExecDestroy(exec); /* best effort: the first error is the one recorded */
    return rc;
}

static int chain_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    chain_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->kernels = (int)pl_param_int(p, "kernels");
    s->elements = (size_t)pl_param_int(p, "elements");
    const size_t bytes = s->elements * sizeof(float);
    s->x = pl_device_alloc(ctx, bytes);
    s->y = pl_device_alloc(ctx, bytes);
    s->y_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->elements * sizeof(double));
    if (!s->x || !s->y || !s->y_host || !s->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, s->x, s->elements, -1.0f, 1.0f, INPUT_STREAM_ID));

    /* The reference applies the same float coefficients in float64 to the input as the GPU holds it. */
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->x, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->elements; i++) {
        double y = (double)s->y_host[i];
        for (int k = 0; k < s->kernels; k++)
            y = (double)chain_a(k) * y + (double)chain_b(k);
        s->ref[i] = y;
    }

    /* Last, so that a failure above leaves no graph behind (the teardown may not run after a failed setup). */
    PL_TRY(build_chain_graph(ctx, s, &s->chain_exec));
    *state = s;
    return 0;
}

static int chain_poison(pl_ctx *ctx, void *state)
{
    chain_state *s = state;
    return pl_poison(ctx, s->y, s->elements * sizeof(float));
}

static int chain_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    chain_state *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->y, s->elements * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->y_host, s->ref, s->elements, PL_DTYPE_F32, 0.0, v);
    return 0;
}

static void chain_teardown(pl_ctx *ctx, void *state)
{
    chain_state *s = state;
    if (!s || !s->chain_exec)
        return;
    cudaError_t err = cudaGraphExecDestroy(s->chain_exec);
    if (err != cudaSuccess)
        pl_fail_cuda(ctx, err, "cudaGraphExecDestroy", __FILE__, __LINE__);
    s->chain_exec = NULL;
}

static int run_launches(pl_ctx *ctx, void *state)
{
    return enqueue_chain(ctx, state, ctx->stream);
}

PL_LAUNCH_RUN(run_graph, chain_state, cudaGraphLaunch(s->chain_exec, ctx->stream))

static const pl_variant chain_variants[] = {
    PL_VARIANT("baseline", run_launches, "one cudaLaunchKernel per kernel: the launch overhead is paid `kernels` times",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("graph", run_graph,
               "the same chain captured once into a CUDA graph at setup, replayed with one cudaGraphLaunch",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND),
    PL_VARIANTS_END,
};

const pl_target pl_target_launch_cuda_graphs = {
    .group = "launch",
    .name = "cuda_graphs",
    .summary = "a chain of tiny dependent kernels: one launch each vs one CUDA graph replay",
    .req = {.needs_gpu = 1},
    .params = chain_params,
    .variants = chain_variants,
    .flags = PL_TARGET_QUICK,
    .counters = chain_counters,
    .setup = chain_setup,
    .poison = chain_poison,
    .check = chain_check,
    .teardown = chain_teardown,
};
