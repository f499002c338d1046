/* launch:graph_conditional — an iterate-until-converged loop: Jacobi sweeps over a tridiagonal system until no
 * element moves by more than `tol` (kernels/launch/jacobi.h). Each iteration is a sweep and a one-thread decision;
 * what differs is who acts on the decision:
 *  - baseline: the host. After every iteration it copies the decision back (to page-locked memory), waits for the
 *    stream, and launches the next iteration or stops: a GPU -> host -> GPU round trip per iteration;
 *  - graph_while: the GPU. A CUDA graph holds a conditional while node (CUDA 12.4+) whose body is the sweep and the
 *    decision; the decision kernel sets the node's condition with cudaGraphSetConditional, and the graph loops on
 *    the device with no host involvement until it is cleared.
 * Both start with the same two stream operations (the control block zeroed, the initial guess copied in).
 *
 * Timing region (both the same): host-bound, no latch: from an event on the idle stream to the end of the last
 * iteration, with the host's launches, read-backs and waits inside. Outside it: building and uploading the graph
 * (setup). The iteration count is checked against a float32 host replica of the loop (bit for bit the same
 * arithmetic), and the result against a float64 run of that many sweeps. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/graph_capture.h"
#include "launch/jacobi.h"

#define B_STREAM_ID 1
#define X_STREAM_ID 2
#define DIAG        2.2f /* diag·x[i] - (x[i-1] + x[i+1]) = b[i]: Jacobi contracts by about 2/2.2 a sweep */
#define OFF         -1.0f

typedef struct conv_state {
    size_t n;
    float tol;
    unsigned max_iterations;
    float inv_diag;
    float *b, *x_init, *x0, *x1;  /* device */
    pl_jacobi_ctrl *ctrl;         /* device */
    pl_jacobi_ctrl *ctrl_host;    /* page-locked: what the baseline reads back (freed at teardown) */
    unsigned expected_iterations; /* the float32 replica's count */
    float *out_host;
    double *ref;           /* float64, after expected_iterations sweeps */
    cudaGraphExec_t graph; /* destroyed at teardown */
} conv_state;

static const pl_param_def conv_params[] = {
    PL_INT_PARAM("n", "65536", 1, 1 << 26, "unknowns of the tridiagonal system", .small_value = "1000"),
    PL_FLOAT_PARAM("tol", "1e-5", 1e-6, 1, "stop when no element moves by more than this in a sweep"),
    PL_INT_PARAM("max-iterations", "10000", 1, 1000000, "stop after this many sweeps"),
    PL_PARAMS_END,
};

/* The fewest bytes any solver of the system must move: b and the initial guess read once, x written once. The
 * sweeps' own traffic scales with their number, which the data decides (the verification message reports it), so
 * GB/s here is that floor over the time, not the sweeps' bandwidth. */
static void conv_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->bytes_read = 8.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

/* One sweep on the host, in float, with the device's roundings. Returns the largest move. */
static float sweep_f32(const float *b, const float *in, float *out, size_t n, float inv_diag)
{
    float most = 0.0f;
    for (size_t i = 0; i < n; i++) {
        const float l = i > 0 ? in[i - 1] : 0.0f, r = i + 1 < n ? in[i + 1] : 0.0f;
        const float sum = l + r;
        const float v = fmaf(-OFF, sum, b[i]) * inv_diag;
        out[i] = v;
        const float move = fabsf(v - in[i]);
        most = move > most ? move : most;
    }
    return most;
}

/* The replica of the loop (its count), then that many sweeps in float64: the reference. */
static int conv_reference(pl_ctx *ctx, conv_state *s)
{
    const size_t n = s->n;
    float *b = pl_host_alloc(ctx, n * sizeof *b), *xa = pl_host_alloc(ctx, n * sizeof *xa),
          *xb = pl_host_alloc(ctx, n * sizeof *xb);
    double *da = pl_host_alloc(ctx, n * sizeof *da), *db = pl_host_alloc(ctx, n * sizeof *db);
    if (!b || !xa || !xb || !da || !db)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(b, s->b, n * sizeof *b, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(xa, s->x_init, n * sizeof *xa, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < n; i++)
        da[i] = (double)xa[i];
    unsigned it = 0;
    for (;;) {
        const float most = it & 1 ? sweep_f32(b, xb, xa, n, s->inv_diag) : sweep_f32(b, xa, xb, n, s->inv_diag);
        it++;
        if (!(most > s->tol && it < s->max_iterations))
            break;
    }
    s->expected_iterations = it;
    const double diag = (double)DIAG, off = (double)OFF;
    for (unsigned k = 0; k < it; k++) {
        const double *in = k & 1 ? db : da;
        double *out = k & 1 ? da : db;
        for (size_t i = 0; i < n; i++)
            out[i] = ((double)b[i] - off * ((i > 0 ? in[i - 1] : 0.0) + (i + 1 < n ? in[i + 1] : 0.0))) / diag;
    }
    const double *res = it & 1 ? db : da;
    memcpy(s->ref, res, n * sizeof *res);
    return 0;
}

/* The graph: one conditional while node, its body the sweep and the decision that sets the condition. */
static int build_while_graph(pl_ctx *ctx, conv_state *s)
{
    cudaGraph_t g = NULL;
    cudaStream_t st = NULL;
    int rc = -1;
    PL_CUDA(ctx, cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle handle;
    struct cudaGraphNodeParams np;
    memset(&np, 0, sizeof np);
    cudaGraphNode_t node;
    cudaGraph_t body = NULL;
    cudaError_t e = cudaGraphConditionalHandleCreate(&handle, g, 1, cudaGraphCondAssignDefault);
    if (e != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaGraphConditionalHandleCreate", __FILE__, __LINE__);
        goto out;
    }
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = handle;
    np.conditional.type = cudaGraphCondTypeWhile;
    np.conditional.size = 1;
    if ((e = cudaGraphAddNode(&node, g, NULL, NULL, 0, &np)) != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaGraphAddNode(conditional while)", __FILE__, __LINE__);
        goto out;
    }
    if ((e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
        goto out;
    }
    e = cudaStreamBeginCaptureToGraph(st, np.conditional.phGraph_out[0], NULL, NULL, 0,
                                      cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        pl_fail_cuda(ctx, e, "cudaStreamBeginCaptureToGraph", __FILE__, __LINE__);
        goto out;
    }
    cudaError_t e1 = pl_jacobi_sweep_f32(s->b, s->x0, s->x1, s->n, s->inv_diag, OFF, s->ctrl, st);
    cudaError_t e2 = pl_jacobi_decide(s->ctrl, s->tol, s->max_iterations, 1, handle, st);
    e = cudaStreamEndCapture(st, &body);
    if (e1 != cudaSuccess || e2 != cudaSuccess || e != cudaSuccess) {
        pl_fail_cuda(ctx,
                     e1 != cudaSuccess   ? e1
                     : e2 != cudaSuccess ? e2
                                         : e,
                     "capturing the while node's body", __FILE__, __LINE__);
        goto out;
    }
    if (pl_graph_instantiate_upload(ctx, g, &s->graph) != 0)
        goto out;
    rc = 0;
out:
    if (st)
        cudaStreamDestroy(st);
    cudaGraphDestroy(g);
    return rc;
}

static int conv_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    conv_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->tol = (float)pl_param_float(p, "tol");
    s->max_iterations = (unsigned)pl_param_int(p, "max-iterations");
    s->inv_diag = 1.0f / DIAG;
    const size_t bytes = s->n * sizeof(float);
    s->b = pl_device_alloc(ctx, bytes);
    s->x_init = pl_device_alloc(ctx, bytes);
    s->x0 = pl_device_alloc(ctx, bytes);
    s->x1 = pl_device_alloc(ctx, bytes);
    s->ctrl = pl_device_alloc(ctx, sizeof *s->ctrl);
    s->out_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->b || !s->x_init || !s->x0 || !s->x1 || !s->ctrl || !s->out_host || !s->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, s->b, s->n, -1.0f, 1.0f, B_STREAM_ID));
    PL_TRY(pl_fill_uniform_f32(ctx, s->x_init, s->n, -1.0f, 1.0f, X_STREAM_ID));
    PL_TRY(conv_reference(ctx, s));
    PL_CUDA(ctx, cudaHostAlloc((void **)&s->ctrl_host, sizeof *s->ctrl_host, cudaHostAllocDefault));
    if (build_while_graph(ctx, s) != 0) {
        cudaFreeHost(s->ctrl_host);
        return -1;
    }
    *state = s;
    return 0;
}

static void conv_teardown(pl_ctx *ctx, void *state)
{
    conv_state *s = state;
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    if (s->ctrl_host)
        cudaFreeHost(s->ctrl_host);
    s->graph = NULL;
    s->ctrl_host = NULL;
}

static int conv_poison(pl_ctx *ctx, void *state)
{
    conv_state *s = state;
    PL_TRY(pl_poison(ctx, s->x0, s->n * sizeof(float)));
    PL_TRY(pl_poison(ctx, s->x1, s->n * sizeof(float)));
    return pl_poison(ctx, s->ctrl, sizeof *s->ctrl);
}

static int conv_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    conv_state *s = state;
    pl_jacobi_ctrl c;
    PL_CUDA(ctx, cudaMemcpyAsync(&c, s->ctrl, sizeof c, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    /* after an odd number of sweeps the result is in x1 */
    PL_CUDA(ctx, cudaMemcpyAsync(s->out_host, c.iterations & 1 ? s->x1 : s->x0, s->n * sizeof(float),
                                 cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->out_host, s->ref, s->n, PL_DTYPE_F32, 0.0, v);
    if (c.iterations != s->expected_iterations)
        pl_verify_set(v, 0, "stopped after %u sweeps; the float32 replica of the loop needs %u", c.iterations,
                      s->expected_iterations);
    else if (v->passed) {
        char m[sizeof v->message];
        snprintf(m, sizeof m, "%u sweeps, as the float32 replica; %.200s", c.iterations, v->message);
        memcpy(v->message, m, sizeof m);
    }
    return 0;
}

/* the same start for both: nothing swept yet, the initial guess in x0 */
static int enqueue_reset(pl_ctx *ctx, conv_state *s)
{
    PL_CUDA(ctx, cudaMemsetAsync(s->ctrl, 0, sizeof *s->ctrl, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->x0, s->x_init, s->n * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

static int run_host_loop(pl_ctx *ctx, void *state)
{
    conv_state *s = state;
    PL_TRY(enqueue_reset(ctx, s));
    for (unsigned it = 0; it < s->max_iterations; it++) {
        PL_CUDA(ctx, pl_jacobi_sweep_f32(s->b, s->x0, s->x1, s->n, s->inv_diag, OFF, s->ctrl, ctx->stream));
        PL_CUDA(ctx, pl_jacobi_decide(s->ctrl, s->tol, s->max_iterations, 0, 0, ctx->stream));
        PL_CUDA(ctx, cudaMemcpyAsync(s->ctrl_host, s->ctrl, sizeof *s->ctrl, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        if (!s->ctrl_host->go_on)
            break;
    }
    return 0;
}

static int run_graph_while(pl_ctx *ctx, void *state)
{
    conv_state *s = state;
    PL_TRY(enqueue_reset(ctx, s));
    PL_CUDA(ctx, cudaGraphLaunch(s->graph, ctx->stream));
    return 0;
}

static const pl_variant conv_variants[] = {
    PL_VARIANT("baseline", run_host_loop,
               "the host decides: after each sweep it copies the decision back, synchronises and launches the "
               "next iteration (host-bound)",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("graph_while", run_graph_while,
               "the device decides: a CUDA graph with a conditional while node, set by cudaGraphSetConditional "
               "in the decision kernel; one cudaGraphLaunch (host-bound)",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND),
    PL_VARIANTS_END,
};

const pl_target pl_target_launch_graph_conditional = {
    .group = "launch",
    .name = "graph_conditional",
    .summary = "iterate until converged: the host reads a flag back after every sweep vs a graph's conditional while "
               "node; timed as issued (launches, read-backs and waits inside, graph build outside)",
    .req = {.needs_gpu = 1},
    .params = conv_params,
    .variants = conv_variants,
    .counters = conv_counters,
    .setup = conv_setup,
    .poison = conv_poison,
    .check = conv_check,
    .teardown = conv_teardown,
};
