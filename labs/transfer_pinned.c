/* transfer:pinned — move `bytes` between host and device memory one way (--direction h2d|d2h), from or to three
 * kinds of host memory: pageable (malloc), page-locked (cudaHostAlloc) and page-locked write-combined.
 *
 * Pageable memory cannot be read or written by the copy engines directly: the driver copies it, piece by piece,
 * through page-locked staging buffers of its own, with the CPU doing a memcpy for every piece. Page-locked memory
 * is read or written by DMA at the link's rate. Write-combined memory is page-locked memory that the CPU maps
 * uncached: not snooped by the link, cheap for the CPU to fill with streaming writes, very slow for the CPU to read.
 *
 * Timing region (every variant the same): each variant is host-bound (no latch holds the stream), so a sample runs
 * from an event on the idle stream to the last byte landing, and all the host's work for the copy is inside it:
 * for pageable memory the driver's staging memcpys, for page-locked memory the one cudaMemcpyAsync call. Outside
 * it: allocating and pinning the buffers (setup), and filling them. */
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/host_bytes.h"

#define INPUT_STREAM_ID 1
#define CHECK_CHUNK     (64u << 20) /* the check reads back through a buffer of this size */

typedef enum host_path { PATH_PAGEABLE, PATH_PINNED, PATH_WRITE_COMBINED, PATH_COUNT } host_path;

typedef struct pinned_state {
    size_t bytes;
    int h2d;
    uint8_t *ref;           /* the random bytes that must arrive */
    void *host[PATH_COUNT]; /* pageable (tracked), then two cudaHostAlloc'd (freed at teardown) */
    void *dev;
    host_path last; /* the path the last run took: what check reads */
    pl_byte_reader reader;
} pinned_state;

static const pl_param_def pinned_params[] = {
    PL_INT_PARAM("bytes", "1g", 1, 16.0 * 1024 * 1024 * 1024, "bytes to move", .small_value = "1000003"),
    PL_CHOICE_PARAM("direction", "h2d", "h2d|d2h", "h2d: host to device; d2h: device to host"),
    PL_PARAMS_END,
};

static int is_h2d(const pl_params *p)
{
    return strcmp(pl_param_str(p, "direction"), "h2d") == 0;
}

/* Device memory is written (h2d) or read (d2h) once: GB/s is then the link's rate. */
static void pinned_counters(const pl_params *p, pl_counters *c)
{
    const double bytes = (double)pl_param_int(p, "bytes");
    if (is_h2d(p))
        c->bytes_written = bytes;
    else
        c->bytes_read = bytes;
    c->elements = bytes;
}

static void free_pinned(pinned_state *s)
{
    for (int i = PATH_PINNED; i < PATH_COUNT; i++)
        if (s->host[i]) {
            cudaFreeHost(s->host[i]);
            s->host[i] = NULL;
        }
}

static int pinned_alloc(pl_ctx *ctx, pinned_state *s)
{
    s->ref = pl_host_alloc(ctx, s->bytes);
    s->host[PATH_PAGEABLE] = pl_host_alloc(ctx, s->bytes);
    s->dev = pl_device_alloc(ctx, s->bytes);
    if (!s->ref || !s->host[PATH_PAGEABLE] || !s->dev)
        return -1;
    PL_CUDA(ctx, cudaHostAlloc(&s->host[PATH_PINNED], s->bytes, cudaHostAllocDefault));
    PL_CUDA(ctx, cudaHostAlloc(&s->host[PATH_WRITE_COMBINED], s->bytes, cudaHostAllocWriteCombined));
    PL_TRY(pl_byte_reader_init(ctx, &s->reader, s->bytes < CHECK_CHUNK ? s->bytes : CHECK_CHUNK, !s->h2d));
    pl_fill_random_bytes(s->ref, s->bytes, ctx->seed, INPUT_STREAM_ID);
    if (s->h2d) {
        /* every source holds the bytes (which also faults in every page of the pageable buffer) */
        for (int i = 0; i < PATH_COUNT; i++)
            memcpy(s->host[i], s->ref, s->bytes);
    } else {
        memset(s->host[PATH_PAGEABLE], 0xFF, s->bytes);
        PL_CUDA(ctx, cudaMemcpyAsync(s->dev, s->ref, s->bytes, cudaMemcpyHostToDevice, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    }
    return 0;
}

static int pinned_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    pinned_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->bytes = (size_t)pl_param_int(p, "bytes");
    s->h2d = is_h2d(p);
    if (pinned_alloc(ctx, s) != 0) {
        free_pinned(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void pinned_teardown(pl_ctx *ctx, void *state)
{
    free_pinned(state);
}

static int pinned_poison(pl_ctx *ctx, void *state)
{
    pinned_state *s = state;
    if (s->h2d)
        return pl_poison(ctx, s->dev, s->bytes);
    for (int i = 0; i < PATH_COUNT; i++)
        memset(s->host[i], 0xFF, s->bytes);
    return 0;
}

static int pinned_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    pinned_state *s = state;
    if (s->h2d)
        return pl_verify_copied_bytes(ctx, &s->reader, s->dev, s->ref, s->bytes, 0, v);
    if (s->last == PATH_WRITE_COMBINED) /* read by the copy engine: CPU reads of it are uncached */
        return pl_verify_copied_bytes(ctx, &s->reader, s->host[s->last], s->ref, s->bytes, 1, v);
    pl_verify_bytes(s->host[s->last], s->ref, s->bytes, v);
    return 0;
}

static int run_path(pl_ctx *ctx, pinned_state *s, host_path path)
{
    s->last = path;
    if (s->h2d)
        PL_CUDA(ctx, cudaMemcpyAsync(s->dev, s->host[path], s->bytes, cudaMemcpyHostToDevice, ctx->stream));
    else
        PL_CUDA(ctx, cudaMemcpyAsync(s->host[path], s->dev, s->bytes, cudaMemcpyDeviceToHost, ctx->stream));
    return 0;
}

static int run_pageable(pl_ctx *ctx, void *state)
{
    return run_path(ctx, state, PATH_PAGEABLE);
}

static int run_pinned(pl_ctx *ctx, void *state)
{
    return run_path(ctx, state, PATH_PINNED);
}

static int run_write_combined(pl_ctx *ctx, void *state)
{
    return run_path(ctx, state, PATH_WRITE_COMBINED);
}

static const pl_variant pinned_variants[] = {
    PL_VARIANT("baseline", run_pageable,
               "pageable (malloc) memory: the driver stages it through its own pinned buffers, its memcpys inside "
               "the timed region (host-bound)",
               .flags = PL_VARIANT_HOST_BOUND | PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("pinned", run_pinned,
               "page-locked memory (cudaHostAlloc): one DMA at the link's rate, no staging (host-bound like the "
               "baseline: the one call is inside)",
               .flags = PL_VARIANT_HOST_BOUND),
    PL_VARIANT("pinned_wc", run_write_combined,
               "page-locked write-combined memory (cudaHostAllocWriteCombined): not snooped; for buffers the CPU "
               "only writes (host-bound)",
               .flags = PL_VARIANT_HOST_BOUND),
    PL_VARIANTS_END,
};

const pl_target pl_target_transfer_pinned = {
    .group = "transfer",
    .name = "pinned",
    .summary = "host<->device copy of `bytes` one way: pageable vs pinned vs pinned write-combined; timed from an "
               "event on the idle stream to the last byte (host staging inside, allocation and pinning outside)",
    .req = {.needs_gpu = 1},
    .params = pinned_params,
    .variants = pinned_variants,
    .counters = pinned_counters,
    .setup = pinned_setup,
    .poison = pinned_poison,
    .check = pinned_check,
    .teardown = pinned_teardown,
};
