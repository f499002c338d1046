/* alloc:stream_ordered — a step that needs two temporary buffers of n floats: t1 = a1·x + b1, t2 = a2·t1 + b2,
 * y = a3·t2 + b3, then the temporaries are released. Three ways to get them:
 *  - cudaMalloc / cudaFree every step: each call goes to the driver, a fresh allocation maps pages, and cudaFree
 *    waits for the whole device to go idle before it returns (an implicit synchronisation every step);
 *  - cudaMallocFromPoolAsync / cudaFreeAsync from a memory pool whose release threshold keeps freed memory in the
 *    pool: allocation is ordered on the stream, a freed block is reused by the next step, nothing synchronises;
 *  - buffers allocated once at setup: the floor, with no allocation at all.
 *
 * Timing region (every variant the same): host-bound, no latch: from an event on the idle stream to the end of the
 * step's last kernel, with all the host's work inside it: the allocation calls, cudaFree's implicit device
 * synchronisation, the three launches. Outside it: creating the pool and allocating the once-allocated buffers
 * (setup), and the pool's first growth (warm-up). */
#include <stdint.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "launch/launch_kernels.h"

#define INPUT_STREAM_ID 1

/* the three affine maps of the step */
static const float step_a[3] = {1.5f, -0.75f, 0.5f};
static const float step_b[3] = {0.25f, 0.125f, -0.375f};

typedef struct alloc_state {
    size_t n;
    float *x, *y;             /* device input and output */
    float *t1_once, *t2_once; /* the once-allocated temporaries */
    float *y_host;
    double *ref;
    cudaMemPool_t pool; /* destroyed at teardown */
} alloc_state;

static const pl_param_def alloc_params[] = {
    PL_INT_PARAM("n", "4m", 1, 1e10,
                 "fp32 elements of the input, the output and "
                 "each of the two temporaries",
                 .small_value = "100003"),
    PL_PARAMS_END,
};

static void alloc_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->flops = 3 * 2.0 * n;
    c->bytes_read = 3 * 4.0 * n; /* x, t1, t2 */
    c->bytes_written = 3 * 4.0 * n;
    c->elements = n;
}

static int alloc_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    alloc_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    const size_t bytes = s->n * sizeof(float);
    s->x = pl_device_alloc(ctx, bytes);
    s->y = pl_device_alloc(ctx, bytes);
    s->t1_once = pl_device_alloc(ctx, bytes);
    s->t2_once = pl_device_alloc(ctx, bytes);
    s->y_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->x || !s->y || !s->t1_once || !s->t2_once || !s->y_host || !s->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, s->x, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->x, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->n; i++) {
        double v = (double)s->y_host[i];
        for (int k = 0; k < 3; k++)
            v = (double)step_a[k] * v + (double)step_b[k];
        s->ref[i] = v;
    }
    /* the pool: device memory of this GPU, and a release threshold of "never", so that memory freed by one step
     * stays in the pool for the next instead of going back to the driver at every synchronisation */
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ctx->device->ordinal;
    PL_CUDA(ctx, cudaMemPoolCreate(&s->pool, &props));
    uint64_t keep = UINT64_MAX;
    cudaError_t e = cudaMemPoolSetAttribute(s->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess) {
        cudaMemPoolDestroy(s->pool);
        return pl_fail_cuda(ctx, e, "cudaMemPoolSetAttribute(cudaMemPoolAttrReleaseThreshold)", __FILE__, __LINE__);
    }
    *state = s;
    return 0;
}

static void alloc_teardown(pl_ctx *ctx, void *state)
{
    alloc_state *s = state;
    if (s->pool)
        cudaMemPoolDestroy(s->pool);
    s->pool = NULL;
}

static int alloc_poison(pl_ctx *ctx, void *state)
{
    alloc_state *s = state;
    return pl_poison(ctx, s->y, s->n * sizeof(float));
}

static int alloc_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    alloc_state *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->y_host, s->y, s->n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->y_host, s->ref, s->n, PL_DTYPE_F32, 0.0, v);
    return 0;
}

/* the step's three kernels, with t1 and t2 wherever they came from */
static int enqueue_step(pl_ctx *ctx, const alloc_state *s, float *t1, float *t2)
{
    PL_CUDA(ctx, pl_tiny_affine_f32(s->x, t1, s->n, step_a[0], step_b[0], ctx->stream));
    PL_CUDA(ctx, pl_tiny_affine_f32(t1, t2, s->n, step_a[1], step_b[1], ctx->stream));
    PL_CUDA(ctx, pl_tiny_affine_f32(t2, s->y, s->n, step_a[2], step_b[2], ctx->stream));
    return 0;
}

static int run_malloc_free(pl_ctx *ctx, void *state)
{
    alloc_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    float *t1 = NULL, *t2 = NULL;
    PL_CUDA(ctx, cudaMalloc((void **)&t1, bytes));
    cudaError_t e = cudaMalloc((void **)&t2, bytes);
    if (e != cudaSuccess) {
        cudaFree(t1);
        return pl_fail_cuda(ctx, e, "cudaMalloc", __FILE__, __LINE__);
    }
    int rc = enqueue_step(ctx, s, t1, t2);
    /* cudaFree waits for the device to finish with them (and with everything else) */
    cudaError_t e1 = cudaFree(t1), e2 = cudaFree(t2);
    if (rc != 0)
        return -1;
    PL_CUDA(ctx, e1);
    PL_CUDA(ctx, e2);
    return 0;
}

static int run_pool(pl_ctx *ctx, void *state)
{
    alloc_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    float *t1 = NULL, *t2 = NULL;
    PL_CUDA(ctx, cudaMallocFromPoolAsync((void **)&t1, bytes, s->pool, ctx->stream));
    PL_CUDA(ctx, cudaMallocFromPoolAsync((void **)&t2, bytes, s->pool, ctx->stream));
    int rc = enqueue_step(ctx, s, t1, t2);
    /* freed in stream order: the memory returns to the pool once the kernels before the free are done */
    cudaError_t e1 = cudaFreeAsync(t1, ctx->stream), e2 = cudaFreeAsync(t2, ctx->stream);
    if (rc != 0)
        return -1;
    PL_CUDA(ctx, e1);
    PL_CUDA(ctx, e2);
    return 0;
}

static int run_once(pl_ctx *ctx, void *state)
{
    alloc_state *s = state;
    return enqueue_step(ctx, s, s->t1_once, s->t2_once);
}

static const pl_variant alloc_variants[] = {
    PL_VARIANT("baseline", run_malloc_free,
               "cudaMalloc + cudaFree of both temporaries every step: driver calls, page mapping and cudaFree's "
               "implicit device synchronisation inside the region (host-bound)",
               .flags = PL_VARIANT_HOST_BOUND | PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("stream_ordered", run_pool,
               "cudaMallocFromPoolAsync + cudaFreeAsync from a pool with release threshold UINT64_MAX: freed "
               "blocks are reused in stream order, nothing synchronises (host-bound)",
               .flags = PL_VARIANT_HOST_BOUND | PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("allocated_once", run_once,
               "both temporaries allocated once at setup: the step is its three launches alone (host-bound)",
               .flags = PL_VARIANT_HOST_BOUND | PL_VARIANT_NO_GRAPH),
    PL_VARIANTS_END,
};

const pl_target pl_target_alloc_stream_ordered = {
    .group = "alloc",
    .name = "stream_ordered",
    .summary = "a step with two temporaries: cudaMalloc/cudaFree vs a stream-ordered pool vs allocated once; timed "
               "as issued (allocation calls and cudaFree's sync inside, pool creation outside)",
    .req = {.needs_gpu = 1},
    .params = alloc_params,
    .variants = alloc_variants,
    .counters = alloc_counters,
    .setup = alloc_setup,
    .poison = alloc_poison,
    .check = alloc_check,
    .teardown = alloc_teardown,
};
