/* The points of `perflab comm` on one rank: for each dtype, collective, size and placement, lay the buffers out
 * as nccl-tests does, check one call against the expectation, then time the call. */
#include <stdlib.h>
#include <string.h>

#include "allreduce/allreduce.h"
#include "comm/rank_runners.h"
#include "core/util.h"
#include "perflab/device.h"

typedef ncclResult_t (*alltoall_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);

typedef struct coll_call {
    pl_coll coll;
    const char *send;
    char *recv;
    size_t count, elt;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;
    alltoall_fn native_alltoall; /* NULL: grouped send/recv */
} coll_call;

static int coll_op(pl_comm_rank *r, void *arg)
{
    const coll_call *c = arg;
    pl_ctx *ctx = &r->ctx;
    cudaStream_t s = ctx->stream;
    const int n = r->nranks;
    switch (c->coll) {
    case PL_COLL_ALLREDUCE: PL_NCCL(ctx, ncclAllReduce(c->send, c->recv, c->count, c->type, c->op, r->comm, s)); break;
    case PL_COLL_ALLREDUCE_ONESHOT:
    case PL_COLL_ALLREDUCE_TWOSHOT:
        if (!r->ar)
            return pl_fail(ctx, "%s needs perflab's all-reduce set up (threaded mode)", pl_coll_name(c->coll));
        PL_CUDA(ctx, pl_ar_allreduce(r->ar, c->coll == PL_COLL_ALLREDUCE_ONESHOT ? PL_AR_ONESHOT : PL_AR_TWOSHOT,
                                     (const uint16_t *)c->send, (uint16_t *)c->recv, c->count, NULL, s));
        break;
    case PL_COLL_ALLGATHER: PL_NCCL(ctx, ncclAllGather(c->send, c->recv, c->count, c->type, r->comm, s)); break;
    case PL_COLL_REDUCESCATTER:
        PL_NCCL(ctx, ncclReduceScatter(c->send, c->recv, c->count, c->type, c->op, r->comm, s));
        break;
    case PL_COLL_BROADCAST:
        PL_NCCL(ctx, ncclBroadcast(c->send, c->recv, c->count, c->type, c->root, r->comm, s));
        break;
    case PL_COLL_SENDRECV:
        PL_NCCL(ctx, ncclGroupStart());
        PL_NCCL(ctx, ncclSend(c->send, c->count, c->type, (r->rank + 1) % n, r->comm, s));
        PL_NCCL(ctx, ncclRecv(c->recv, c->count, c->type, (r->rank + n - 1) % n, r->comm, s));
        PL_NCCL(ctx, ncclGroupEnd());
        break;
    case PL_COLL_ALLTOALL:
        if (c->native_alltoall) {
            PL_NCCL(ctx, c->native_alltoall(c->send, c->recv, c->count, c->type, r->comm, s));
            break;
        }
        PL_NCCL(ctx, ncclGroupStart());
        for (int peer = 0; peer < n; peer++) {
            const size_t off = (size_t)peer * c->count * c->elt;
            PL_NCCL(ctx, ncclSend(c->send + off, c->count, c->type, peer, r->comm, s));
            PL_NCCL(ctx, ncclRecv(c->recv + off, c->count, c->type, peer, r->comm, s));
        }
        PL_NCCL(ctx, ncclGroupEnd());
        break;
    default: return pl_fail(ctx, "unknown collective %d", (int)c->coll);
    }
    return 0;
}

/* Inputs filled, outputs poisoned, the call laid out; out, out_n and expect say what to check afterwards. */
static int prepare(pl_comm_rank *r, const pl_comm_point *p, const pl_coll_layout *L, char *sendbuf, char *recvbuf,
                   coll_call *c, char **out, size_t *out_n, pl_comm_expect *expect)
{
    pl_ctx *ctx = &r->ctx;
    const uint64_t seed = r->job->seed;
    const size_t elt = pl_dtype_size(p->dtype);
    cudaStream_t s = ctx->stream;
    c->coll = p->coll;
    c->count = L->count;
    c->elt = elt;
    c->type = pl_comm_nccl_dtype(p->dtype);
    c->op = pl_comm_nccl_op(r->job->op);
    c->root = r->job->root;
    c->send = sendbuf;
    c->recv = recvbuf;
    memset(expect, 0, sizeof *expect);
    expect->nranks = r->nranks;
    expect->op = (int)r->job->op;
    expect->seed = seed;
    if (p->in_place) {
        if (p->coll == PL_COLL_ALLGATHER)
            c->send = recvbuf + L->in_place_send_offset * elt;
        else if (p->coll == PL_COLL_REDUCESCATTER)
            c->recv = sendbuf + L->in_place_recv_offset * elt;
        else
            c->send = recvbuf;
    }
    /* poison the output, then write the input (which may sit inside the output) */
    if (!(p->in_place && p->coll == PL_COLL_REDUCESCATTER))
        PL_TRY(pl_poison(ctx, c->recv, L->recv_count * elt));
    if (!(p->in_place && p->coll == PL_COLL_BROADCAST && r->rank != c->root))
        PL_CUDA(ctx, pl_comm_fill((void *)c->send, L->send_count, p->dtype, seed, r->rank, 0, s));
    *out = c->recv;
    *out_n = L->recv_count;
    switch (pl_coll_semantics(p->coll)) {
    case PL_COLL_ALLREDUCE: expect->kind = PL_EXPECT_REDUCE; break;
    case PL_COLL_REDUCESCATTER:
        expect->kind = PL_EXPECT_REDUCE;
        expect->base = (size_t)r->rank * L->count;
        break;
    case PL_COLL_ALLGATHER:
        expect->kind = PL_EXPECT_BLOCKS;
        expect->block = L->count;
        break;
    case PL_COLL_ALLTOALL:
        expect->kind = PL_EXPECT_BLOCKS;
        expect->block = L->count;
        expect->base = (size_t)r->rank * L->count;
        break;
    case PL_COLL_SENDRECV:
        expect->kind = PL_EXPECT_SOURCE;
        expect->src_rank = (r->rank + r->nranks - 1) % r->nranks;
        break;
    case PL_COLL_BROADCAST:
        expect->kind = PL_EXPECT_SOURCE;
        expect->src_rank = c->root;
        break;
    default: break;
    }
    return 0;
}

static int run_point(pl_comm_rank *r, size_t index, char *sendbuf, char *recvbuf, alltoall_fn native, double *samples)
{
    pl_ctx *ctx = &r->ctx;
    pl_comm_point p;
    pl_comm_job_point(r->job, index, &p);
    pl_coll_layout L;
    pl_coll_layout_for(p.coll, p.nominal_bytes, pl_dtype_size(p.dtype), r->nranks, r->rank, &L);
    if (L.count == 0) { /* too small to split over this many ranks: every rank agrees, nothing runs */
        json_t *check = json_pack("{s:s}", "skipped", "the size is smaller than one element per rank");
        pl_comm_rank_send_point(r, index, samples, 0, check, 0);
        return 0;
    }
    coll_call c;
    memset(&c, 0, sizeof c);
    c.native_alltoall = p.coll == PL_COLL_ALLTOALL ? native : NULL;
    char *out = NULL;
    size_t out_n = 0;
    pl_comm_expect expect;
    PL_TRY(prepare(r, &p, &L, sendbuf, recvbuf, &c, &out, &out_n, &expect));
    PL_TRY(coll_op(r, &c));
    PL_TRY(pl_comm_rank_check_reset(r));
    PL_CUDA(ctx, pl_comm_check(out, out_n, p.dtype, &expect, r->acc, ctx->stream));
    json_t *check = NULL;
    PL_TRY(pl_comm_rank_check_read(r, out_n, &check));
    int gave_way = 0;
    if (pl_comm_rank_time(r, coll_op, &c, samples, &gave_way) != 0) {
        json_decref(check);
        return -1;
    }
    pl_comm_rank_send_point(r, index, samples, r->job->iters, check, gave_way);
    return 0;
}

int pl_comm_rank_run_coll(pl_comm_rank *r)
{
    const pl_comm_job *j = r->job;
    size_t max_bytes = 0;
    for (size_t i = 0; i < j->n_sizes; i++)
        if (j->sizes[i] > max_bytes)
            max_bytes = j->sizes[i];
    if (j->root >= r->nranks)
        for (int c = 0; c < j->n_colls; c++)
            if (j->colls[c] == PL_COLL_BROADCAST)
                return pl_fail(&r->ctx, "--root %d is not a rank of %d: pass a root below %d", j->root, r->nranks,
                               r->nranks);
    alltoall_fn native = NULL;
    if (j->a2a_api != PL_A2A_GROUP)
        *(void **)&native = r->native_alltoall;
    if (j->a2a_api == PL_A2A_NATIVE && !native)
        return pl_fail(&r->ctx, "--alltoall-api native needs ncclAlltoAll (NCCL 2.28 or newer), which this NCCL "
                                "lacks: use --alltoall-api group");
    void *sendbuf = NULL, *recvbuf = NULL, *send_reg = NULL, *recv_reg = NULL;
    double *samples = pl_xcalloc((size_t)j->iters + 1, sizeof *samples);
    int rc = pl_comm_rank_alloc(r, max_bytes, &sendbuf, &send_reg);
    if (rc == 0)
        rc = pl_comm_rank_alloc(r, max_bytes, &recvbuf, &recv_reg);
    const size_t n = pl_comm_job_npoints(j);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = run_point(r, i, sendbuf, recvbuf, native, samples);
    free(samples);
    if (rc != 0) /* work may still be queued on these buffers, waiting for peers: the process ends soon */
        return rc;
    pl_comm_rank_free(r, sendbuf, send_reg);
    pl_comm_rank_free(r, recvbuf, recv_reg);
    return 0;
}
