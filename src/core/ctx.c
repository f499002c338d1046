#include "perflab/ctx.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

struct pl_alloc_node {
    void *ptr;
    int on_device;
    pl_alloc_node *next;
};

int pl_fail(pl_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    va_end(ap);
    return -1;
}

void pl_gate(pl_ctx *ctx, int met, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->gate, sizeof ctx->gate, fmt, ap);
    va_end(ap);
    ctx->gate_set = 1;
    ctx->gate_met = met != 0;
}

int pl_fail_cuda(pl_ctx *ctx, cudaError_t err, const char *what, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    return pl_fail(ctx, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(err), cudaGetErrorString(err), what,
                   base ? base + 1 : file, line);
}

static void track(pl_ctx *ctx, void *p, int on_device)
{
    pl_alloc_node *n = pl_xmalloc(sizeof *n);
    n->ptr = p;
    n->on_device = on_device;
    n->next = ctx->allocs;
    ctx->allocs = n;
}

void *pl_device_alloc(pl_ctx *ctx, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        pl_fail(ctx, "cudaMalloc of %zu bytes failed: %s (lower the target's size parameters)", bytes,
                cudaGetErrorString(e));
        return NULL;
    }
    track(ctx, p, 1);
    return p;
}

void *pl_host_alloc(pl_ctx *ctx, size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        pl_fail(ctx, "host allocation of %zu bytes failed", bytes);
        return NULL;
    }
    track(ctx, p, 0);
    return p;
}

void pl_free_all(pl_ctx *ctx)
{
    while (ctx->allocs) {
        pl_alloc_node *n = ctx->allocs;
        ctx->allocs = n->next;
        if (n->on_device)
            cudaFree(n->ptr);
        else
            free(n->ptr);
        free(n);
    }
}
