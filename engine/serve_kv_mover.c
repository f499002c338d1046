/* The disaggregated run's KV mover on two GPUs (serve_kv_mover.h). */
#include "engine/serve_kv_mover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kv_transfer.h"

typedef struct copy_events {
    cudaEvent_t start, stop; /* created on first use, on the prefill GPU */
} copy_events;

struct pl_serve_kv_mover {
    pl_serve_gpu *from, *to;
    int from_dev, to_dev, peer;
    char why[256];
    cudaStream_t stream;
    copy_events *ev; /* per request id */
    int n_ev;
    pl_kv_run *runs;
    int runs_cap;
};

int pl_serve_kv_mover_create(pl_serve_gpu *from, pl_serve_gpu *to, pl_serve_kv_mover **out, char *err, size_t errlen)
{
    *out = NULL;
    const pl_model *a = pl_serve_gpu_model(from), *b = pl_serve_gpu_model(to);
    if (a->config != b->config || a->layers != b->layers || a->page_size != b->page_size ||
        a->cache.dtype != b->cache.dtype) {
        snprintf(err, errlen, "the prefill and decode executors hold different models, page sizes or KV dtypes");
        return -1;
    }
    pl_serve_kv_mover *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory for the KV mover");
        return -1;
    }
    m->from = from, m->to = to;
    m->from_dev = pl_serve_gpu_device(from), m->to_dev = pl_serve_gpu_device(to);
    m->peer = pl_kv_transfer_enable_peers(m->from_dev, m->to_dev, m->why, sizeof m->why);
    cudaError_t e = cudaSetDevice(m->from_dev);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "the KV copy stream on GPU %d: %s", m->from_dev, cudaGetErrorString(e));
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int pl_serve_kv_mover_peer(const pl_serve_kv_mover *m, const char **why)
{
    if (why)
        *why = m->peer ? "" : m->why;
    return m->peer;
}

static copy_events *events_of(pl_serve_kv_mover *m, int req)
{
    if (req < 0)
        return NULL;
    if (req >= m->n_ev) {
        int n = m->n_ev ? m->n_ev : 64;
        while (n <= req)
            n *= 2;
        copy_events *ev = realloc(m->ev, (size_t)n * sizeof *ev);
        if (!ev)
            return NULL;
        memset(ev + m->n_ev, 0, (size_t)(n - m->n_ev) * sizeof *ev);
        m->ev = ev, m->n_ev = n;
    }
    copy_events *c = &m->ev[req];
    if (!c->start && (cudaEventCreate(&c->start) != cudaSuccess || cudaEventCreate(&c->stop) != cudaSuccess))
        return NULL;
    return c;
}

int pl_serve_kv_mover_begin(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes)
{
    pl_serve_kv_mover *m = ctx;
    *bytes = 0;
    if (src->npages != dst->npages)
        return (int)cudaErrorInvalidValue;
    if (src->npages > m->runs_cap) {
        pl_kv_run *r = realloc(m->runs, (size_t)src->npages * sizeof *r);
        if (!r)
            return (int)cudaErrorMemoryAllocation;
        m->runs = r, m->runs_cap = src->npages;
    }
    cudaError_t e = cudaSetDevice(m->from_dev);
    copy_events *ev = e == cudaSuccess ? events_of(m, req) : NULL;
    if (!ev)
        return (int)(e != cudaSuccess ? e : cudaErrorMemoryAllocation);
    const int nruns = pl_kv_transfer_runs(src->pages, dst->pages, src->npages, m->runs);
    const pl_model *a = pl_serve_gpu_model(m->from), *b = pl_serve_gpu_model(m->to);
    const pl_kv_transfer_geom g = pl_kv_transfer_geom_of(a);
    uint64_t moved = 0;
    if ((e = cudaEventRecord(ev->start, m->stream)) == cudaSuccess)
        e = pl_kv_transfer(&g, &a->cache, a->pages, m->from_dev, &b->cache, b->pages, m->to_dev, m->runs, nruns,
                           m->stream, &moved);
    if (e == cudaSuccess)
        e = cudaEventRecord(ev->stop, m->stream);
    *bytes = (int64_t)moved;
    return (int)e;
}

int pl_serve_kv_mover_end(void *ctx, int req, double *seconds)
{
    pl_serve_kv_mover *m = ctx;
    if (req < 0 || req >= m->n_ev || !m->ev[req].stop)
        return (int)cudaErrorInvalidValue;
    float ms = 0;
    cudaError_t e = cudaEventSynchronize(m->ev[req].stop);
    if (e == cudaSuccess)
        e = cudaEventElapsedTime(&ms, m->ev[req].start, m->ev[req].stop);
    *seconds = 1e-3 * (double)ms;
    return (int)e;
}

void pl_serve_kv_mover_destroy(pl_serve_kv_mover *m)
{
    if (!m)
        return;
    cudaSetDevice(m->from_dev);
    for (int i = 0; i < m->n_ev; i++)
        if (m->ev[i].start) {
            cudaEventDestroy(m->ev[i].start);
            cudaEventDestroy(m->ev[i].stop);
        }
    if (m->stream)
        cudaStreamDestroy(m->stream);
    free(m->ev);
    free(m->runs);
    free(m);
}
