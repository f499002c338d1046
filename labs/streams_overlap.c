/* streams:overlap — a pipeline over n uint32 in pinned host memory: copy to the device (H2D), a kernel of `iters`
 * integer multiply-adds per element, copy back (D2H). On one stream the three stages run one after the other; cut
 * into chunks spread over several streams, the copy engines move chunk i+1 in and chunk i-1 out while the SMs work
 * on chunk i, and the pipeline approaches the time of its longest stage.
 *
 * The ideal is max(H2D, kernel, D2H) against their sum (the serial time). The three stages are timed alone here
 * too (the stage_* variants, flagged as references: components of the ceiling, not optimizations), in the same
 * process, so that the achieved overlap can be computed from one run: (serial - streams) / (serial - ideal), and
 * ideal / streams. Every variant is latched (the GPU's time, as usual): the host's issue work is outside the
 * region. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "streams/streams_kernels.h"

#define INPUT_STREAM_ID 1
#define MAX_STREAMS     16
#define LCG_A           1664525u /* Numerical Recipes' full-period constants */
#define LCG_C           1013904223u

typedef enum overlap_output { OUT_HOST, OUT_DEV_IN, OUT_DEV_OUT } overlap_output;

typedef struct overlap_state {
    size_t n;
    int iters, chunks, nstreams;
    uint32_t *h_in, *h_out;  /* pinned (freed at teardown) */
    uint32_t *d_in, *d_out;  /* the pipeline's device buffers (poisoned before each check) */
    uint32_t *d_src, *d_res; /* resident input and result, for the kernel-alone and D2H-alone stages */
    int32_t *ref;            /* the closed form of the result, on the host */
    overlap_output last;     /* what the last run wrote: what check reads */
    cudaStream_t streams[MAX_STREAMS];
    cudaEvent_t fork, join[MAX_STREAMS];
} overlap_state;

static const pl_param_def overlap_params[] = {
    PL_INT_PARAM("n", "64m", 1, 4.0 * 1024 * 1024 * 1024, "uint32 elements through the pipeline",
                 .small_value = "100003"),
    PL_INT_PARAM("iters", "1536", 1, 1000000,
                 "integer multiply-adds per element in the kernel (sets its length against the copies)",
                 .small_value = "37"),
    PL_INT_PARAM("chunks", "16", 1, 4096, "pieces the pipeline is cut into", .small_value = "7"),
    PL_INT_PARAM("streams", "4", 1, MAX_STREAMS, "streams the chunks are spread over", .small_value = "3"),
    PL_PARAMS_END,
};

static void overlap_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    /* the kernel's integer multiply-adds, as two operations each (no floating point is involved) */
    c->flops = 2.0 * n * (double)pl_param_int(p, "iters");
    c->bytes_read = 4.0 * n; /* crossing the link: n in, n out */
    c->bytes_written = 4.0 * n;
    c->elements = n;
}

static void free_overlap(overlap_state *s)
{
    for (int i = 0; i < MAX_STREAMS; i++) {
        if (s->streams[i])
            cudaStreamDestroy(s->streams[i]);
        if (s->join[i])
            cudaEventDestroy(s->join[i]);
        s->streams[i] = NULL;
        s->join[i] = NULL;
    }
    if (s->fork)
        cudaEventDestroy(s->fork);
    if (s->h_in)
        cudaFreeHost(s->h_in);
    if (s->h_out)
        cudaFreeHost(s->h_out);
    s->fork = NULL;
    s->h_in = s->h_out = NULL;
}

static int overlap_alloc(pl_ctx *ctx, overlap_state *s)
{
    const size_t bytes = s->n * sizeof(uint32_t);
    s->d_in = pl_device_alloc(ctx, bytes);
    s->d_out = pl_device_alloc(ctx, bytes);
    s->d_src = pl_device_alloc(ctx, bytes);
    s->d_res = pl_device_alloc(ctx, bytes);
    s->ref = pl_host_alloc(ctx, bytes);
    if (!s->d_in || !s->d_out || !s->d_src || !s->d_res || !s->ref)
        return -1;
    PL_CUDA(ctx, cudaHostAlloc((void **)&s->h_in, bytes, cudaHostAllocDefault));
    PL_CUDA(ctx, cudaHostAlloc((void **)&s->h_out, bytes, cudaHostAllocDefault));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming));
    for (int i = 0; i < s->nstreams; i++) {
        PL_CUDA(ctx, cudaStreamCreateWithFlags(&s->streams[i], cudaStreamNonBlocking));
        PL_CUDA(ctx, cudaEventCreateWithFlags(&s->join[i], cudaEventDisableTiming));
    }
    /* random input (the kernel-alone stage reads it from d_src), its closed-form result (the D2H-alone stage copies
     * it from d_res) */
    PL_TRY(pl_fill_uniform_f32(ctx, (float *)s->d_src, s->n, -1.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, cudaMemcpyAsync(s->h_in, s->d_src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    uint32_t mul, add;
    pl_lcg_jump(s->iters, LCG_A, LCG_C, &mul, &add);
    for (size_t i = 0; i < s->n; i++)
        s->ref[i] = (int32_t)(mul * s->h_in[i] + add);
    PL_CUDA(ctx, cudaMemcpyAsync(s->d_res, s->ref, bytes, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}


/* Before any work (in the parent, and again by the setup): every chunk holds at least one element. */
static int overlap_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    const long long chunks = pl_param_int(p, "chunks"), n = pl_param_int(p, "n");
    if (chunks > n)
        return pl_params_refuse(err, errlen, "--chunks %lld is more than the %lld elements; use --chunks <= --n",
                                chunks, n);
    return 0;
}
static int overlap_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    char refused[256];
    if (overlap_check_params(p, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "streams:overlap: %s", refused);
    overlap_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->iters = (int)pl_param_int(p, "iters");
    s->chunks = (int)pl_param_int(p, "chunks");
    s->nstreams = (int)pl_param_int(p, "streams");
    if (overlap_alloc(ctx, s) != 0) {
        free_overlap(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void overlap_teardown(pl_ctx *ctx, void *state)
{
    free_overlap(state);
}

static int overlap_poison(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    const size_t bytes = s->n * sizeof(uint32_t);
    PL_TRY(pl_poison(ctx, s->d_in, bytes));
    PL_TRY(pl_poison(ctx, s->d_out, bytes));
    memset(s->h_out, 0xFF, bytes);
    return 0;
}

static int overlap_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    overlap_state *s = state;
    const size_t bytes = s->n * sizeof(uint32_t);
    if (s->last != OUT_HOST) {
        PL_CUDA(ctx, cudaMemcpyAsync(s->h_out, s->last == OUT_DEV_IN ? s->d_in : s->d_out, bytes,
                                     cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    }
    /* the H2D stage must deliver the input itself; every other variant the result */
    pl_verify_i32((const int32_t *)s->h_out, s->last == OUT_DEV_IN ? (const int32_t *)s->h_in : s->ref, s->n, v);
    return 0;
}

/* H2D, kernel, D2H of elements [off, off + len) on one stream */
static int enqueue_piece(pl_ctx *ctx, overlap_state *s, size_t off, size_t len, cudaStream_t st)
{
    const size_t bytes = len * sizeof(uint32_t);
    PL_CUDA(ctx, cudaMemcpyAsync(s->d_in + off, s->h_in + off, bytes, cudaMemcpyHostToDevice, st));
    PL_CUDA(ctx, pl_lcg_steps_u32(s->d_in + off, s->d_out + off, len, s->iters, LCG_A, LCG_C, st));
    PL_CUDA(ctx, cudaMemcpyAsync(s->h_out + off, s->d_out + off, bytes, cudaMemcpyDeviceToHost, st));
    return 0;
}

static int run_serial(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    s->last = OUT_HOST;
    return enqueue_piece(ctx, s, 0, s->n, ctx->stream);
}

/* Chunk c goes to stream c % streams, forked from and joined back to ctx->stream (so that the sample's events, the
 * latch and graph capture see one stream). */
static int run_streams(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    s->last = OUT_HOST;
    const size_t piece = (s->n + (size_t)s->chunks - 1) / (size_t)s->chunks;
    PL_CUDA(ctx, cudaEventRecord(s->fork, ctx->stream));
    for (int i = 0; i < s->nstreams; i++)
        PL_CUDA(ctx, cudaStreamWaitEvent(s->streams[i], s->fork, 0));
    for (int c = 0; c < s->chunks; c++) {
        const size_t off = (size_t)c * piece;
        if (off >= s->n)
            break;
        PL_TRY(enqueue_piece(ctx, s, off, s->n - off < piece ? s->n - off : piece, s->streams[c % s->nstreams]));
    }
    for (int i = 0; i < s->nstreams; i++) {
        PL_CUDA(ctx, cudaEventRecord(s->join[i], s->streams[i]));
        PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, s->join[i], 0));
    }
    return 0;
}

static int run_stage_h2d(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    s->last = OUT_DEV_IN;
    PL_CUDA(ctx, cudaMemcpyAsync(s->d_in, s->h_in, s->n * sizeof(uint32_t), cudaMemcpyHostToDevice, ctx->stream));
    return 0;
}

static int run_stage_kernel(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    s->last = OUT_DEV_OUT;
    PL_CUDA(ctx, pl_lcg_steps_u32(s->d_src, s->d_out, s->n, s->iters, LCG_A, LCG_C, ctx->stream));
    return 0;
}

static int run_stage_d2h(pl_ctx *ctx, void *state)
{
    overlap_state *s = state;
    s->last = OUT_HOST;
    PL_CUDA(ctx, cudaMemcpyAsync(s->h_out, s->d_res, s->n * sizeof(uint32_t), cudaMemcpyDeviceToHost, ctx->stream));
    return 0;
}

static const pl_variant overlap_variants[] = {
    PL_VARIANT("baseline", run_serial, "one stream: all of H2D, then the kernel, then all of D2H (pinned memory)"),
    PL_VARIANT("streams", run_streams,
               "`chunks` pieces over `streams` streams: the copies of one piece overlap the kernel of another, "
               "H2D and D2H on separate copy engines"),
    PL_VARIANT("stage_h2d", run_stage_h2d, "[a stage alone, for the ideal] the whole H2D copy",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("stage_kernel", run_stage_kernel,
               "[a stage alone, for the ideal] the whole kernel, input already resident",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("stage_d2h", run_stage_d2h, "[a stage alone, for the ideal] the whole D2H copy",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_streams_overlap = {
    .group = "streams",
    .name = "overlap",
    .summary = "H2D -> kernel -> D2H: one stream vs chunks over N streams, with each stage alone for the ideal "
               "max(H2D, kernel, D2H); GPU time (latched), host issue outside",
    .req = {.needs_gpu = 1},
    .params = overlap_params,
    .variants = overlap_variants,
    .counters = overlap_counters,
    .setup = overlap_setup,
    .poison = overlap_poison,
    .check = overlap_check,
    .teardown = overlap_teardown,
    .check_params = overlap_check_params,
};
