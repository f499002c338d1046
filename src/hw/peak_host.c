/* Host links and launch overhead. Copies between host and device: pinned (cudaMallocHost) and pageable
 * (malloc) memory, each way, and pinned both ways at once on two streams; every path is checked with a round
 * trip compared byte for byte. Launch: an empty kernel issued back to back and timed on the host clock, the
 * same kernels replayed from a CUDA graph, and one launch followed by a synchronize. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "hw/peak.h"
#include "peak/peak_kernels.h"

typedef struct copy_run {
    void *dst;
    const void *src;
    size_t bytes;
    enum cudaMemcpyKind kind;
    /* both ways at once: the second copy on its own stream, forked from and joined to the timed stream */
    void *dst2;
    const void *src2;
    cudaStream_t other;
    cudaEvent_t fork, join;
} copy_run;

static int run_copy(pl_ctx *ctx, void *state)
{
    copy_run *r = state;
    if (!r->other) {
        PL_CUDA(ctx, cudaMemcpyAsync(r->dst, r->src, r->bytes, r->kind, ctx->stream));
        return 0;
    }
    PL_CUDA(ctx, cudaEventRecord(r->fork, ctx->stream));
    PL_CUDA(ctx, cudaStreamWaitEvent(r->other, r->fork, 0));
    PL_CUDA(ctx, cudaMemcpyAsync(r->dst, r->src, r->bytes, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(r->dst2, r->src2, r->bytes, cudaMemcpyDeviceToHost, r->other));
    PL_CUDA(ctx, cudaEventRecord(r->join, r->other));
    PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, r->join, 0));
    return 0;
}

typedef struct host_buffers {
    void *pinned, *pinned2, *pageable;
    cudaStream_t other;
    cudaEvent_t fork, join;
} host_buffers;

static void free_host_buffers(host_buffers *h)
{
    if (h->pinned)
        cudaFreeHost(h->pinned);
    if (h->pinned2)
        cudaFreeHost(h->pinned2);
    free(h->pageable);
    if (h->other)
        cudaStreamDestroy(h->other);
    if (h->fork)
        cudaEventDestroy(h->fork);
    if (h->join)
        cudaEventDestroy(h->join);
    memset(h, 0, sizeof *h);
}

/* host -> device -> other host buffer, compared: proves both directions of both kinds of memory. */
static int round_trip(pl_ctx *ctx, void *from, void *dev, void *to, size_t bytes, int *ok)
{
    memset(to, 0xFF, bytes);
    PL_CUDA(ctx, cudaMemcpy(dev, from, bytes, cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(to, dev, bytes, cudaMemcpyDeviceToHost));
    *ok = memcmp(from, to, bytes) == 0;
    return 0;
}

static int host_link_figures(pl_hw_child *c, pl_hw_gpu *g, host_buffers *h)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    const size_t bytes = o->host_bytes;
    void *dev = pl_device_alloc(ctx, bytes), *dev2 = pl_device_alloc(ctx, bytes);
    if (!dev || !dev2)
        return -1;
    PL_CUDA(ctx, cudaMallocHost(&h->pinned, bytes));
    PL_CUDA(ctx, cudaMallocHost(&h->pinned2, bytes));
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&h->other, cudaStreamNonBlocking));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&h->fork, cudaEventDisableTiming));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&h->join, cudaEventDisableTiming));
    h->pageable = malloc(bytes);
    if (!h->pageable)
        return pl_fail(ctx, "malloc of %zu bytes failed", bytes);
    pl_rng rng;
    pl_rng_seed(&rng, ctx->seed + 3);
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t v = pl_rng_next(&rng);
        memcpy((char *)h->pinned + i, &v, 8);
    }
    int ok1 = 0, ok2 = 0;
    PL_TRY(round_trip(ctx, h->pinned, dev, h->pageable, bytes, &ok1));   /* pinned up, pageable down */
    PL_TRY(round_trip(ctx, h->pageable, dev2, h->pinned2, bytes, &ok2)); /* pageable up, pinned down */

    const struct {
        const char *id, *label, *counted, *datasheet;
        void *dst;
        const void *src;
        enum cudaMemcpyKind kind;
        int both, pageable;
    } paths[] = {
        {"h2d_pinned", "host to device, pinned", "each direction", "host", dev, h->pinned, cudaMemcpyHostToDevice, 0,
         0},
        {"d2h_pinned", "device to host, pinned", "each direction", "host", h->pinned2, dev, cudaMemcpyDeviceToHost, 0,
         0},
        {"h2d_pageable", "host to device, pageable", "each direction", "host", dev, h->pageable, cudaMemcpyHostToDevice,
         0, 1},
        {"d2h_pageable", "device to host, pageable", "each direction", "host", h->pageable, dev, cudaMemcpyDeviceToHost,
         0, 1},
        {"bidir_pinned", "both ways at once, pinned", "both directions", "host_both", dev, h->pinned,
         cudaMemcpyHostToDevice, 1, 0},
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char method[256];
        pl_snprintf(method, sizeof method,
                    "cudaMemcpyAsync of %zu MiB%s, CUDA events%s; the path checked by a byte-for-byte round trip",
                    bytes >> 20, paths[i].both ? " each way on two streams at once" : "",
                    paths[i].pageable ? " (the host blocks while the driver stages pageable memory)" : "");
        json_t *f =
            pl_peak_figure(paths[i].id, "host", paths[i].label, "GB/s", paths[i].counted, method, paths[i].datasheet);
        copy_run r = {paths[i].dst, paths[i].src, bytes, paths[i].kind, NULL, NULL, NULL, NULL, NULL};
        if (paths[i].both) {
            r.dst2 = h->pinned2;
            r.src2 = dev2;
            r.other = h->other;
            r.fork = h->fork;
            r.join = h->join;
        }
        pl_stats st;
        if (!ok1 || !ok2) {
            pl_peak_set_status(f, "failed", "a host <-> device round trip did not return the bytes sent");
        } else if (pl_peak_measure(g, run_copy, &r, paths[i].pageable ? PL_VARIANT_HOST_BOUND : 0, &st) != 0) {
            json_decref(f);
            return -1;
        } else {
            pl_peak_set_value(f, (paths[i].both ? 2.0 : 1.0) * (double)bytes / st.median / 1e6, &st,
                              pl_peak_sm_clock(g));
        }
        pl_hw_emit(c, f);
    }
    return 0;
}

static int host_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    host_buffers h;
    memset(&h, 0, sizeof h);
    int rc = host_link_figures(c, g, &h);
    free_host_buffers(&h);
    return rc;
}

int pl_peak_task_host(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_HOST, "host <-> device copies", host_figures);
}

/* ---- launch latency, on the host clock ---- */

#define LAUNCHES 1000

/* One repetition: issue the work and wait for it. */
typedef int (*issue_fn)(pl_ctx *ctx, void *arg);

static int issue_back_to_back(pl_ctx *ctx, void *arg)
{
    (void)arg;
    for (int i = 0; i < LAUNCHES; i++)
        PL_CUDA(ctx, pl_empty_kernel(ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

static int issue_graph(pl_ctx *ctx, void *arg)
{
    PL_CUDA(ctx, cudaGraphLaunch((cudaGraphExec_t)arg, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

static int issue_one(pl_ctx *ctx, void *arg)
{
    (void)arg;
    PL_CUDA(ctx, pl_empty_kernel(ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* `samples` repetitions timed on the host clock, each divided by the kernels it ran; the median as a figure. */
static int host_timed_figure(pl_hw_child *c, pl_ctx *ctx, issue_fn issue, void *arg, int samples, int kernels,
                             json_t *f)
{
    double *us = pl_host_alloc(ctx, (size_t)samples * sizeof *us);
    /* the first repetition puts first-use costs (module load, graph upload) out of the way */
    int rc = us ? issue(ctx, arg) : -1;
    for (int s = 0; s < samples && rc == 0; s++) {
        double t0 = pl_now_s();
        rc = issue(ctx, arg);
        us[s] = (pl_now_s() - t0) * 1e6 / kernels;
    }
    if (rc != 0) {
        json_decref(f);
        return -1;
    }
    pl_stats st;
    pl_stats_compute(us, (size_t)samples, &st);
    pl_peak_set_value(f, st.median, NULL, NAN);
    json_object_set_new(f, "samples", json_integer(samples));
    json_object_set_new(f, "noise", json_real(st.rel_noise));
    json_object_set_new(f, "p99", json_real(st.p99));
    pl_hw_emit(c, f);
    return 0;
}

static int launch_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    const int samples = o->quick ? 10 : 30;
    json_t *f = pl_peak_figure("launch_back_to_back", "launch", "empty kernel, launched back to back", "us", NULL,
                               "1000 launches of an empty <<<1,1>>> kernel then one cudaStreamSynchronize, host clock, "
                               "per launch; median of the repetitions",
                               NULL);
    PL_TRY(host_timed_figure(c, ctx, issue_back_to_back, NULL, samples, LAUNCHES, f));

    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    PL_CUDA(ctx, cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < LAUNCHES; i++)
        pl_empty_kernel(ctx->stream); /* a failure shows at the end of the capture */
    PL_CUDA(ctx, cudaStreamEndCapture(ctx->stream, &graph));
    cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    PL_CUDA(ctx, e);
    f = pl_peak_figure("launch_graph", "launch", "empty kernel, inside a CUDA graph", "us", NULL,
                       "a graph of 1000 empty kernels in a chain, cudaGraphLaunch then cudaStreamSynchronize, host "
                       "clock, per kernel; median of the repetitions",
                       NULL);
    int rc = host_timed_figure(c, ctx, issue_graph, exec, samples, LAUNCHES, f);
    cudaGraphExecDestroy(exec);
    PL_TRY(rc);

    f = pl_peak_figure("launch_round_trip", "launch", "empty kernel, launch + synchronize", "us", NULL,
                       "one launch of an empty kernel then cudaStreamSynchronize, host clock; median of 1000", NULL);
    return host_timed_figure(c, ctx, issue_one, NULL, LAUNCHES, 1, f);
}

int pl_peak_task_launch(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_LAUNCH, "launch latency", launch_figures);
}
