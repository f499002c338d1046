/* The lower layer of a fabric rank: what every point runner uses (sink, NCCL helpers, synchronisation, timing,
 * buffers, checks). rank.c sets a rank up and dispatches to the runners (rank_coll.c, rank_moe.c), which call only
 * these. */
#include "comm/rank_ops.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"

#define POLL_NS 20000 /* 20 us between polls of a stream: only waits are polled, never a timed region */

void pl_comm_sink_init(pl_comm_sink *s, int fd)
{
    s->fd = fd;
    pthread_mutex_init(&s->lock, NULL);
}

void pl_comm_sink_send(pl_comm_sink *s, json_t *msg)
{
    pthread_mutex_lock(&s->lock);
    pl_child_send(s->fd, msg);
    pthread_mutex_unlock(&s->lock);
    json_decref(msg);
}

int pl_comm_fail_nccl(pl_ctx *ctx, ncclResult_t r, const char *what, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    const char *last = ncclGetLastError(NULL);
    return pl_fail(ctx, "NCCL error %s in %s at %s:%d%s%s", ncclGetErrorString(r), what, base ? base + 1 : file, line,
                   last && *last ? ": " : "", last ? last : "");
}

ncclDataType_t pl_comm_nccl_dtype(pl_dtype d)
{
    switch (d) {
    case PL_DTYPE_F64: return ncclFloat64;
    case PL_DTYPE_F16: return ncclFloat16;
    case PL_DTYPE_BF16: return ncclBfloat16;
    case PL_DTYPE_I32: return ncclInt32;
    case PL_DTYPE_F32:
    default: return ncclFloat32;
    }
}

ncclRedOp_t pl_comm_nccl_op(pl_redop op)
{
    return op == PL_REDOP_MAX ? ncclMax : op == PL_REDOP_MIN ? ncclMin : ncclSum;
}

static void nap(void)
{
    struct timespec ts = {0, POLL_NS};
    nanosleep(&ts, NULL);
}

int pl_comm_rank_sync(pl_comm_rank *r)
{
    for (;;) {
        cudaError_t e = cudaStreamQuery(r->ctx.stream);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return pl_fail_cuda(&r->ctx, e, "cudaStreamQuery", __FILE__, __LINE__);
        if (r->abort_flag && *r->abort_flag)
            return pl_fail(&r->ctx, "stopped: another rank failed");
        ncclResult_t async = ncclSuccess;
        if (r->comm && ncclCommGetAsyncError(r->comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress)
            return pl_comm_fail_nccl(&r->ctx, async, "an operation in flight", __FILE__, __LINE__);
        nap();
    }
}

int pl_comm_rank_time(pl_comm_rank *r, pl_comm_op_fn fn, void *arg, double *samples_ms, int *gave_way)
{
    pl_ctx *ctx = &r->ctx;
    const pl_comm_job *j = r->job;
    *gave_way = 0;
    for (int w = 0; w < j->warmup; w++)
        PL_TRY(fn(r, arg));
    PL_TRY(pl_comm_rank_sync(r));
    for (int done = 0; done < j->iters;) {
        const int chunk = j->iters - done < PL_COMM_CHUNK ? j->iters - done : PL_COMM_CHUNK;
        PL_TRY(pl_latch_hold(ctx, &r->latch));
        /* Untimed: it ends on every rank at about the same moment, whenever each host released its latch. */
        int rc = fn(r, arg);
        for (int k = 0; rc == 0 && k <= chunk; k++) {
            cudaError_t e = cudaEventRecord(r->events[k], ctx->stream);
            if (e != cudaSuccess)
                rc = pl_fail_cuda(ctx, e, "cudaEventRecord", __FILE__, __LINE__);
            else if (k < chunk)
                rc = fn(r, arg);
        }
        pl_latch_release(&r->latch); /* also on failure, so that the stream drains */
        PL_TRY(rc);
        PL_TRY(pl_comm_rank_sync(r));
        if (pl_latch_gave_way(&r->latch))
            *gave_way = 1;
        for (int k = 0; k < chunk; k++) {
            float ms = 0;
            PL_CUDA(ctx, cudaEventElapsedTime(&ms, r->events[k], r->events[k + 1]));
            samples_ms[done + k] = ms;
        }
        done += chunk;
    }
    return 0;
}

int pl_comm_rank_alloc(pl_comm_rank *r, size_t bytes, void **ptr, void **reg_handle)
{
    pl_ctx *ctx = &r->ctx;
    *ptr = NULL;
    *reg_handle = NULL;
    bytes = (bytes + 4095) & ~(size_t)4095; /* windows want 4 KiB multiples */
    if (r->job->reg == PL_REG_NONE) {
        PL_CUDA(ctx, cudaMalloc(ptr, bytes));
        return 0;
    }
    PL_NCCL(ctx, ncclMemAlloc(ptr, bytes));
    if (r->job->reg == PL_REG_BUFFER) {
        PL_NCCL(ctx, ncclCommRegister(r->comm, *ptr, bytes, reg_handle));
    } else {
        ncclWindow_t win = NULL;
        PL_NCCL(ctx, ncclCommWindowRegister(r->comm, *ptr, bytes, &win, NCCL_WIN_COLL_SYMMETRIC));
        *reg_handle = win;
    }
    return 0;
}

void pl_comm_rank_free(pl_comm_rank *r, void *ptr, void *reg_handle)
{
    if (!ptr)
        return;
    if (r->job->reg == PL_REG_NONE) {
        cudaFree(ptr);
        return;
    }
    if (reg_handle && r->comm) {
        if (r->job->reg == PL_REG_BUFFER)
            ncclCommDeregister(r->comm, reg_handle);
        else
            ncclCommWindowDeregister(r->comm, (ncclWindow_t)reg_handle);
    }
    ncclMemFree(ptr);
}

int pl_comm_rank_check_reset(pl_comm_rank *r)
{
    PL_CUDA(&r->ctx, cudaMemsetAsync(r->acc, 0, sizeof *r->acc, r->ctx.stream));
    return 0;
}

int pl_comm_rank_check_read(pl_comm_rank *r, size_t elements, json_t **out)
{
    pl_comm_check_acc a;
    PL_CUDA(&r->ctx, cudaMemcpyAsync(&a, r->acc, sizeof a, cudaMemcpyDeviceToHost, r->ctx.stream));
    PL_TRY(pl_comm_rank_sync(r));
    double max_abs;
    memcpy(&max_abs, &a.max_abs_bits, sizeof max_abs);
    *out = json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "elements", (json_int_t)elements, "wrong",
                     (json_int_t)a.wrong, "nonfinite", (json_int_t)a.nonfinite, "unwritten", (json_int_t)a.unwritten,
                     "err2", pl_json_real(a.err2), "ref2", pl_json_real(a.ref2), "max_abs", pl_json_real(max_abs));
    return 0;
}

void pl_comm_rank_send_point(pl_comm_rank *r, size_t point, const double *samples_ms, int n, json_t *check,
                             int gave_way)
{
    json_t *s = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(s, json_real(samples_ms[i]));
    json_t *m = json_pack("{s:s, s:i, s:I, s:o, s:o, s:b}", "t", "point", "rank", r->rank, "point", (json_int_t)point,
                          "samples_ms", s, "check", check, "latch_gave_way", gave_way);
    pl_comm_sink_send(r->sink, m);
}

