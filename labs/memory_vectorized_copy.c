/* memory:vectorized_copy — copy n fp32 with 4-byte accesses, with 16-byte accesses several in flight per thread,
 * and with cudaMemcpyAsync, the ceiling the two kernels are judged against. */
#include "labs.h"
#include "perflab/perflab.h"
#include "memory/memory_kernels.h"

#define INPUT_STREAM_ID 1 /* per-buffer seed stream of src */

typedef struct copy_state {
    size_t n;
    float *src, *dst;      /* device */
    float *dst_host;       /* the checked output, copied back */
    double *ref;           /* the input as the GPU holds it, in float64 for pl_verify_f32 */
    unsigned vec16_blocks; /* one full wave of the vec16 kernel, queried once */
} copy_state;

static const pl_param_def copy_params[] = {
    PL_INT_PARAM("n", "256m", 1, 1e12, "fp32 elements to copy", .small_value = "100003"),
    PL_PARAMS_END,
};

/* FLOPs and the fewest bytes the work must move, from the parameters alone */
static void copy_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

/* before any work, in the parent: both buffers must fit in the GPU's memory */
static int copy_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return pl_check_device_memory(gpu, 2.0 * 4.0 * (double)pl_param_int(p, "n"), "pass a smaller --n", err, errlen);
}

/* allocate (tracked: the harness frees it), random inputs, the reference */
static int copy_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    copy_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    const size_t bytes = s->n * sizeof(float);
    s->src = pl_device_alloc(ctx, bytes);
    s->dst = pl_device_alloc(ctx, bytes);
    s->dst_host = pl_host_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, s->n * sizeof(double));
    if (!s->src || !s->dst || !s->dst_host || !s->ref)
        return -1;
    PL_CUDA(ctx, pl_copy_f32_vec16_resident_blocks(&s->vec16_blocks));
    PL_TRY(pl_fill_uniform_f32(ctx, s->src, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->dst_host, s->src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->n; i++)
        s->ref[i] = (double)s->dst_host[i];
    *state = s;
    return 0;
}

static int copy_poison(pl_ctx *ctx, void *state)
{
    copy_state *s = state;
    return pl_poison(ctx, s->dst, s->n * sizeof(float));
}

static int copy_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    copy_state *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->dst_host, s->dst, s->n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(s->dst_host, s->ref, s->n, PL_DTYPE_F32, 0.0, v); /* 0: fp32's default tolerance, not exact */
    if (v->passed && v->max_abs_error != 0.0) /* a copy moves bits: any difference is a wrong element */
        pl_verify_set(v, 0, "element %zu differs from its input by %.3g: a copy is exact", v->max_error_index,
                      v->max_abs_error);
    return 0;
}

/* the variants: the timed work, once, enqueued on ctx->stream (s: the state) */
PL_LAUNCH_RUN(run_scalar, copy_state, pl_copy_f32_scalar(s->src, s->dst, s->n, ctx->stream))
PL_LAUNCH_RUN(run_vec16, copy_state, pl_copy_f32_vec16(s->src, s->dst, s->n, s->vec16_blocks, ctx->stream))
PL_LAUNCH_RUN(run_memcpy, copy_state,
              cudaMemcpyAsync(s->dst, s->src, s->n * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream))

static const pl_variant copy_variants[] = {
    PL_VARIANT("baseline", run_scalar, "scalar 4-byte loads and stores, one element per thread"),
    PL_VARIANT("vector16", run_vec16, "16-byte float4 loads and stores, several in flight per thread, scalar tail"),
    PL_VARIANT("cuda_memcpy", run_memcpy, "cudaMemcpyAsync device-to-device: the ceiling this copy is judged against",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_memory_vectorized_copy = {
    .group = "memory",
    .name = "vectorized_copy",
    .summary = "copy n fp32: scalar vs 16-byte vector accesses, against cudaMemcpyAsync",
    .req = {.needs_gpu = 1},
    .params = copy_params,
    .variants = copy_variants,
    .flags = PL_TARGET_QUICK,
    .counters = copy_counters,
    .setup = copy_setup,
    .poison = copy_poison,
    .check = copy_check,
    .check_params = copy_check_params,
};
