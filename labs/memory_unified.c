/* memory:unified — a kernel that updates n floats in place (x = 0.5·x + 0.25) which live in host memory before and
 * after: the host produces them, the GPU transforms them, the host consumes them. Three ways to get them there and
 * back:
 *  - managed memory (cudaMallocManaged), first touch on the GPU: the kernel's loads fault, and the driver migrates
 *    the pages in while the kernel waits;
 *  - managed memory prefetched (cudaMemPrefetchAsync to the GPU before the kernel): bulk migration, no faults;
 *  - explicit: page-locked host memory, a device buffer, cudaMemcpyAsync in and out.
 * Both managed variants return the data with cudaMemPrefetchAsync to the host, so that they differ only in how the
 * data reaches the GPU, and every variant starts and ends with the data in host memory.
 *
 * Timing region: GPU time (latched): from host-resident to host-resident again, migration or copies both ways and
 * the kernel inside; allocation and the host's filling of the data outside.
 *
 * Managed memory beyond what the GPU holds over-subscribes it, which can hang the GPU: setup refuses any size over a
 * quarter of the GPU's free memory, before anything is allocated. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "launch/launch_kernels.h"

#define INPUT_STREAM_ID 1
#define UNIFIED_A       0.5f
#define UNIFIED_B       0.25f
#define FREE_FRACTION   4 /* the largest size is free memory / FREE_FRACTION */

typedef struct unified_state {
    size_t n;
    float *managed; /* cudaMallocManaged (freed at teardown) */
    float *pinned;  /* cudaHostAlloc (freed at teardown) */
    float *dev;     /* the explicit variant's device buffer */
    float *x0;      /* the data as the host produced it */
    double *ref;
    int last_managed; /* which buffer the last run updated: what check reads */
    int device;
} unified_state;

static const pl_param_def unified_params[] = {
    PL_INT_PARAM("n", "64m", 1, 64.0 * 1024 * 1024 * 1024, "fp32 elements (at most a quarter of the GPU's free memory)",
                 .small_value = "100003"),
    PL_PARAMS_END,
};

/* the bytes crossing the link: n floats in, n floats out */
static void unified_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->flops = 2.0 * n;
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

static void free_unified(unified_state *s)
{
    if (s->managed)
        cudaFree(s->managed);
    if (s->pinned)
        cudaFreeHost(s->pinned);
    s->managed = s->pinned = NULL;
}

static struct cudaMemLocation location_of(int device)
{
    struct cudaMemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id = device < 0 ? 0 : device;
    return loc;
}

/* Before any work, in the parent: the managed data and the explicit variant's device buffer, twice --n floats,
 * within 1/FREE_FRACTION of the GPU's whole memory (the setup checks its free memory again). */
static int unified_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const long long n = pl_param_int(p, "n");
    const double total = pl_gpu_memory_bytes(gpu), limit = total / FREE_FRACTION / 2 / sizeof(float);
    if (total > 0 && (double)n > limit)
        return pl_params_refuse(err, errlen,
                                "--n %lld (%.2f GiB, twice on the GPU) is over a quarter of its memory (%.2f GiB); "
                                "managed memory beyond what the GPU holds can hang it: use --n <= %lld",
                                n, 2.0 * (double)n * sizeof(float) / (1u << 30), total / (1u << 30), (long long)limit);
    return 0;
}

/* Refuse what could over-subscribe the GPU, before any allocation. */
static int unified_size_ok(pl_ctx *ctx, size_t n)
{
    size_t free_b = 0, total_b = 0;
    PL_CUDA(ctx, cudaMemGetInfo(&free_b, &total_b));
    /* the managed data, migrated, and the explicit variant's device buffer are on the GPU at once */
    const size_t limit = free_b / FREE_FRACTION / 2 / sizeof(float);
    if (n > limit)
        return pl_fail(ctx,
                       "memory:unified: --n %zu (%.2f GiB, twice on the GPU) is over a quarter of its free memory "
                       "(%.2f GiB); managed memory beyond what the GPU holds can hang it: use --n <= %zu",
                       n, 2.0 * (double)n * sizeof(float) / (1u << 30), (double)free_b / (1u << 30), limit);
    int concurrent = 0;
    PL_CUDA(ctx, cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, ctx->device->ordinal));
    if (!concurrent)
        return pl_fail(ctx,
                       "memory:unified: %s does not support concurrent managed access (page faults and "
                       "prefetch); this lab needs a Linux system with a Pascal or newer GPU",
                       ctx->device->name);
    return 0;
}

static int unified_alloc(pl_ctx *ctx, unified_state *s)
{
    const size_t bytes = s->n * sizeof(float);
    s->dev = pl_device_alloc(ctx, bytes);
    s->x0 = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->dev || !s->x0 || !s->ref)
        return -1;
    PL_CUDA(ctx, cudaMallocManaged((void **)&s->managed, bytes, cudaMemAttachGlobal));
    PL_CUDA(ctx, cudaHostAlloc((void **)&s->pinned, bytes, cudaHostAllocDefault));
    PL_TRY(pl_fill_uniform_f32(ctx, s->dev, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->x0, s->dev, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->n; i++)
        s->ref[i] = (double)UNIFIED_A * (double)s->x0[i] + (double)UNIFIED_B;
    /* the host writes the managed data: its pages start in host memory */
    memcpy(s->managed, s->x0, bytes);
    memcpy(s->pinned, s->x0, bytes);
    return 0;
}

static int unified_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    unified_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->device = ctx->device->ordinal;
    PL_TRY(unified_size_ok(ctx, s->n));
    if (unified_alloc(ctx, s) != 0) {
        free_unified(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void unified_teardown(pl_ctx *ctx, void *state)
{
    free_unified(state);
}

/* The data back to what the host produced (host writes: managed pages return to host memory), and the explicit
 * variant's device buffer poisoned, so that a copy or a kernel that did not happen shows. */
static int unified_poison(pl_ctx *ctx, void *state)
{
    unified_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    memcpy(s->managed, s->x0, bytes);
    memcpy(s->pinned, s->x0, bytes);
    return pl_poison(ctx, s->dev, bytes);
}

static int unified_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    unified_state *s = state;
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->last_managed ? s->managed : s->pinned, s->ref, s->n, PL_DTYPE_F32, 0.0, v);
    return 0;
}

static int update_managed(pl_ctx *ctx, unified_state *s, int prefetch)
{
    const size_t bytes = s->n * sizeof(float);
    s->last_managed = 1;
    if (prefetch)
        PL_CUDA(ctx, cudaMemPrefetchAsync(s->managed, bytes, location_of(s->device), 0, ctx->stream));
    PL_CUDA(ctx, pl_tiny_affine_f32(s->managed, s->managed, s->n, UNIFIED_A, UNIFIED_B, ctx->stream));
    PL_CUDA(ctx, cudaMemPrefetchAsync(s->managed, bytes, location_of(-1), 0, ctx->stream));
    return 0;
}

static int run_faults(pl_ctx *ctx, void *state)
{
    return update_managed(ctx, state, 0);
}

static int run_prefetch(pl_ctx *ctx, void *state)
{
    return update_managed(ctx, state, 1);
}

static int run_explicit(pl_ctx *ctx, void *state)
{
    unified_state *s = state;
    const size_t bytes = s->n * sizeof(float);
    s->last_managed = 0;
    PL_CUDA(ctx, cudaMemcpyAsync(s->dev, s->pinned, bytes, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, pl_tiny_affine_f32(s->dev, s->dev, s->n, UNIFIED_A, UNIFIED_B, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->pinned, s->dev, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    return 0;
}

static const pl_variant unified_variants[] = {
    PL_VARIANT("baseline", run_faults,
               "managed memory touched first by the kernel: GPU page faults migrate it in; prefetched back to "
               "the host",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("prefetch", run_prefetch,
               "managed memory, cudaMemPrefetchAsync to the GPU before the kernel: bulk migration, no faults",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("explicit", run_explicit,
               "page-locked host buffer and a device buffer: cudaMemcpyAsync in, kernel, cudaMemcpyAsync out"),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_unified = {
    .group = "memory",
    .name = "unified",
    .summary = "update host-resident data on the GPU: managed with page faults vs managed prefetched vs explicit "
               "copies; GPU time (latched) from host-resident to host-resident, allocation outside",
    .req = {.needs_gpu = 1},
    .params = unified_params,
    .variants = unified_variants,
    .counters = unified_counters,
    .setup = unified_setup,
    .poison = unified_poison,
    .check = unified_check,
    .teardown = unified_teardown,
    .check_params = unified_check_params,
};
