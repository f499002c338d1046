/* The points of `perflab moe-readiness --ep` on one rank: for each token count and skew, the plan (comm/ep_plan.h,
 * computed alike on every rank) and its tables on the GPU; then per variant (NCCL, peer) the dispatch and the combine,
 * each run once on poisoned outputs and checked, then timed.
 *
 *   NCCL dispatch: pack the rank's distinct (token, rank) rows destination-major; an all-to-all of the row counts
 *     (what a receiver needs before it can post its receives); the rows as grouped ncclSend/ncclRecv (all-to-allv);
 *     expand the staged rows into expert-major order. NCCL combine: pack the expert outputs source-major; all-to-allv;
 *     the weighted sum of each token's k rows.
 *   peer dispatch and combine: one kernel each (kernels/ep/ep.h), no host synchronisation.
 *
 * The expert between them is a stand-in (comm/kernels.h's PL_EP_EXPERT_SCALE): each row scaled by its expert's
 * factor, untimed. The layouts come from the plan on every rank (a real layer derives them from the exchanged counts
 * and routing on the GPU, as DeepEP's notify step does); the NCCL dispatch still pays for its counts exchange. */
#include <stdlib.h>
#include <string.h>

#include "comm/ep_plan.h"
#include "comm/moe.h"
#include "comm/rank_runners.h"
#include "core/util.h"
#include "ep/ep.h"
#include "perflab/device.h"

/* One plan's tables on the GPU, carved from one allocation sized for the job's largest plan. */
typedef struct ep_tables {
    int *send_token, *send_dest, *send_dest_row;
    int *recv_stage_row, *recv_src, *recv_token, *recv_expert;
    int *comb_send_row;
    int *expert, *pull_rank, *pull_row, *comb_recv_row;
    float *weight;
} ep_tables;

typedef struct ep_state {
    pl_ep_capacity cap;
    void *tables_mem;
    ep_tables dt;
    uint16_t *x, *recv, *expert_out, *out;      /* expert_out: the peer buffer when there is one */
    void *send, *stage, *comb_send, *comb_recv; /* NCCL's, registered as the job asks */
    void *send_reg, *stage_reg, *comb_send_reg, *comb_recv_reg;
    int own_expert_out;
    int64_t *counts; /* device: [n] row counts to send, then [n] received */
    pl_ep_plan plan;
    int have_plan;
    pl_ep_phase phase;
    pl_ep_impl impl;
} ep_state;

#define ROW_BYTES(st) ((size_t)(st)->plan.shape.hidden * 2)

/* ---- the operations ---- */

static int dispatch_ctas(const pl_ep_plan *p)
{
    const int rows = p->max_send_rows > p->max_recv_rows ? p->max_send_rows : p->max_recv_rows;
    const int c = (rows + 15) / 16; /* a row a warp, 16 warps a CTA */
    return c < 1 ? 1 : c > PL_EP_MAX_CTAS ? PL_EP_MAX_CTAS : c;
}

static int combine_ctas(const pl_ep_plan *p)
{
    const long long items = (long long)p->shape.tokens * (p->shape.hidden / 8); /* 16 bytes of output each */
    const long long c = (items + 511) / 512;
    return c < 1 ? 1 : c > PL_EP_MAX_CTAS ? PL_EP_MAX_CTAS : (int)c;
}

static int nccl_dispatch(pl_comm_rank *r, ep_state *st)
{
    pl_ctx *ctx = &r->ctx;
    cudaStream_t s = ctx->stream;
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    const int H = st->plan.shape.hidden;
    PL_CUDA(ctx, pl_ep_gather_rows(st->send, st->x, st->dt.send_token, me->send_rows, H, s));
    PL_NCCL(ctx, ncclGroupStart());
    for (int q = 0; q < r->nranks; q++) {
        PL_NCCL(ctx, ncclSend(st->counts + q, 1, ncclInt64, q, r->comm, s));
        PL_NCCL(ctx, ncclRecv(st->counts + r->nranks + q, 1, ncclInt64, q, r->comm, s));
    }
    PL_NCCL(ctx, ncclGroupEnd());
    PL_NCCL(ctx, ncclGroupStart());
    PL_NCCL(ctx, pl_moe_enqueue(&st->plan.dispatch, r->rank, st->send, st->stage, 2, ncclBfloat16, r->comm, s));
    PL_NCCL(ctx, ncclGroupEnd());
    PL_CUDA(ctx, pl_ep_gather_rows(st->recv, st->stage, st->dt.recv_stage_row, me->recv_rows, H, s));
    return 0;
}

static int nccl_combine(pl_comm_rank *r, ep_state *st)
{
    pl_ctx *ctx = &r->ctx;
    cudaStream_t s = ctx->stream;
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    const pl_ep_shape *sh = &st->plan.shape;
    PL_CUDA(ctx,
            pl_ep_gather_rows(st->comb_send, st->expert_out, st->dt.comb_send_row, me->comb_send_rows, sh->hidden, s));
    PL_NCCL(ctx, ncclGroupStart());
    PL_NCCL(ctx, pl_moe_enqueue(&st->plan.combine, r->rank, st->comb_send, st->comb_recv, 2, ncclBfloat16, r->comm, s));
    PL_NCCL(ctx, ncclGroupEnd());
    PL_CUDA(ctx, pl_ep_combine(st->comb_recv, st->dt.comb_recv_row, st->dt.weight, sh->tokens, sh->topk, sh->hidden,
                               st->out, s));
    return 0;
}

static int peer_dispatch(pl_comm_rank *r, ep_state *st)
{
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    PL_CUDA(&r->ctx,
            pl_ep_dispatch_peer(r->ep, st->x, st->plan.shape.hidden, me->send_rows, st->dt.send_token, st->dt.send_dest,
                                st->dt.send_dest_row, st->plan.max_stage_rows, st->recv, me->recv_rows,
                                st->dt.recv_stage_row, dispatch_ctas(&st->plan), r->ctx.stream));
    return 0;
}

static int peer_combine(pl_comm_rank *r, ep_state *st)
{
    const pl_ep_shape *sh = &st->plan.shape;
    PL_CUDA(&r->ctx,
            pl_ep_combine_peer(r->ep, st->dt.pull_rank, st->dt.pull_row, st->dt.weight, sh->tokens, sh->topk,
                               sh->hidden, st->plan.max_recv_rows, st->out, combine_ctas(&st->plan), r->ctx.stream));
    return 0;
}

static int run_phase(pl_comm_rank *r, ep_state *st, pl_ep_phase phase)
{
    if (st->impl == PL_EP_PEER && !r->ep)
        return pl_fail(&r->ctx, "the peer variant needs the EP peer buffers (threaded mode)");
    if (phase == PL_EP_DISPATCH)
        return st->impl == PL_EP_NCCL ? nccl_dispatch(r, st) : peer_dispatch(r, st);
    return st->impl == PL_EP_NCCL ? nccl_combine(r, st) : peer_combine(r, st);
}

static int ep_op(pl_comm_rank *r, void *arg)
{
    ep_state *st = arg;
    return run_phase(r, st, st->phase);
}

/* ---- buffers and tables ---- */

static int alloc_dev(pl_ctx *ctx, void **p, size_t bytes)
{
    PL_CUDA(ctx, cudaMalloc(p, bytes ? bytes : 256));
    return 0;
}

static void carve_tables(ep_state *st, int topk)
{
    const pl_ep_capacity *c = &st->cap;
    const size_t tk = (size_t)c->tokens * (size_t)topk;
    int *p = st->tables_mem;
    int **ints[] = {&st->dt.send_token, &st->dt.send_dest,  &st->dt.send_dest_row, &st->dt.recv_stage_row,
                    &st->dt.recv_src,   &st->dt.recv_token, &st->dt.recv_expert,   &st->dt.comb_send_row,
                    &st->dt.expert,     &st->dt.pull_rank,  &st->dt.pull_row,      &st->dt.comb_recv_row};
    const size_t len[] = {(size_t)c->send_rows,
                          (size_t)c->send_rows,
                          (size_t)c->send_rows,
                          (size_t)c->recv_rows,
                          (size_t)c->recv_rows,
                          (size_t)c->recv_rows,
                          (size_t)c->recv_rows,
                          (size_t)c->comb_send_rows,
                          tk,
                          tk,
                          tk,
                          tk};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        *ints[i] = p;
        p += (len[i] + 63) & ~(size_t)63; /* 256-byte aligned slices */
    }
    st->dt.weight = (float *)p;
}

static size_t tables_bytes(const pl_ep_capacity *c, int topk)
{
    const size_t tk = (size_t)c->tokens * (size_t)topk;
    const size_t ints = 3 * ((size_t)c->send_rows + 63) + 4 * ((size_t)c->recv_rows + 63) +
                        ((size_t)c->comb_send_rows + 63) + 5 * (tk + 63);
    return ints * sizeof(int);
}

static int alloc_state(pl_comm_rank *r, ep_state *st)
{
    pl_ctx *ctx = &r->ctx;
    const pl_comm_job *j = r->job;
    char err[256];
    if (pl_ep_job_capacity(j, r->nranks, &st->cap, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    const pl_ep_capacity *c = &st->cap;
    const size_t row = (size_t)j->ep_hidden * 2, tk = (size_t)c->tokens * (size_t)j->ep_topk;
    PL_TRY(alloc_dev(ctx, &st->tables_mem, tables_bytes(c, j->ep_topk)));
    carve_tables(st, j->ep_topk);
    PL_TRY(alloc_dev(ctx, (void **)&st->x, (size_t)c->tokens * row));
    PL_TRY(alloc_dev(ctx, (void **)&st->recv, (size_t)c->recv_rows * row));
    PL_TRY(alloc_dev(ctx, (void **)&st->out, (size_t)c->tokens * row));
    PL_TRY(alloc_dev(ctx, (void **)&st->counts, 2 * (size_t)r->nranks * sizeof(int64_t)));
    if (r->ep) {
        st->expert_out = r->ep->expert_out[r->rank];
    } else {
        PL_TRY(alloc_dev(ctx, (void **)&st->expert_out, (size_t)c->recv_rows * row));
        st->own_expert_out = 1;
    }
    PL_TRY(pl_comm_rank_alloc(r, ((size_t)c->send_rows + 1) * row, &st->send, &st->send_reg));
    PL_TRY(pl_comm_rank_alloc(r, ((size_t)c->stage_rows + 1) * row, &st->stage, &st->stage_reg));
    PL_TRY(pl_comm_rank_alloc(r, ((size_t)c->comb_send_rows + 1) * row, &st->comb_send, &st->comb_send_reg));
    PL_TRY(pl_comm_rank_alloc(r, (tk + 1) * row, &st->comb_recv, &st->comb_recv_reg));
    return 0;
}

static void free_state(pl_comm_rank *r, ep_state *st)
{
    void *plain[] = {st->tables_mem, st->x, st->recv, st->out, st->counts, st->own_expert_out ? st->expert_out : NULL};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (plain[i])
            cudaFree(plain[i]);
    pl_comm_rank_free(r, st->send, st->send_reg);
    pl_comm_rank_free(r, st->stage, st->stage_reg);
    pl_comm_rank_free(r, st->comb_send, st->comb_send_reg);
    pl_comm_rank_free(r, st->comb_recv, st->comb_recv_reg);
    if (st->have_plan)
        pl_ep_plan_free(&st->plan);
}

static int upload(pl_ctx *ctx, void *dev, const void *host, size_t n, size_t elt)
{
    if (n)
        PL_CUDA(ctx, cudaMemcpyAsync(dev, host, n * elt, cudaMemcpyHostToDevice, ctx->stream));
    return 0;
}

/* The plan of (tokens, skew) on the GPU: its tables, the row counts to send, and this rank's tokens. */
static int load_plan(pl_comm_rank *r, ep_state *st, int tokens, double skew)
{
    pl_ctx *ctx = &r->ctx;
    const pl_comm_job *j = r->job;
    if (st->have_plan && st->plan.shape.tokens == tokens && st->plan.shape.alpha == skew)
        return 0;
    if (st->have_plan)
        pl_ep_plan_free(&st->plan);
    st->have_plan = 0;
    const pl_ep_shape sh = {.nranks = r->nranks,
                            .tokens = tokens,
                            .hidden = j->ep_hidden,
                            .topk = j->ep_topk,
                            .experts = j->ep_experts,
                            .alpha = skew,
                            .seed = j->seed};
    char err[256];
    if (pl_ep_plan_make(&st->plan, &sh, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    st->have_plan = 1;
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    const size_t tk = (size_t)tokens * (size_t)sh.topk, sr = (size_t)me->send_rows, rr = (size_t)me->recv_rows;
    const ep_tables *d = &st->dt;
    PL_TRY(upload(ctx, d->send_token, me->send_token, sr, sizeof(int)));
    PL_TRY(upload(ctx, d->send_dest, me->send_dest, sr, sizeof(int)));
    PL_TRY(upload(ctx, d->send_dest_row, me->send_dest_row, sr, sizeof(int)));
    PL_TRY(upload(ctx, d->recv_stage_row, me->recv_stage_row, rr, sizeof(int)));
    PL_TRY(upload(ctx, d->recv_src, me->recv_src, rr, sizeof(int)));
    PL_TRY(upload(ctx, d->recv_token, me->recv_token, rr, sizeof(int)));
    PL_TRY(upload(ctx, d->recv_expert, me->recv_expert, rr, sizeof(int)));
    PL_TRY(upload(ctx, d->comb_send_row, me->comb_send_row, (size_t)me->comb_send_rows, sizeof(int)));
    PL_TRY(upload(ctx, d->expert, me->expert, tk, sizeof(int)));
    PL_TRY(upload(ctx, d->pull_rank, me->pull_rank, tk, sizeof(int)));
    PL_TRY(upload(ctx, d->pull_row, me->pull_row, tk, sizeof(int)));
    PL_TRY(upload(ctx, d->comb_recv_row, me->comb_recv_row, tk, sizeof(int)));
    PL_TRY(upload(ctx, d->weight, me->weight, tk, sizeof(float)));
    int64_t counts[PL_EP_MAX_RANKS];
    for (int q = 0; q < r->nranks; q++)
        counts[q] = (int64_t)(st->plan.dispatch.counts[(size_t)r->rank * r->nranks + q] / (size_t)sh.hidden);
    PL_TRY(upload(ctx, st->counts, counts, (size_t)r->nranks, sizeof *counts));
    PL_CUDA(ctx,
            pl_comm_fill(st->x, (size_t)tokens * (size_t)sh.hidden, PL_DTYPE_BF16, j->seed, r->rank, 0, ctx->stream));
    return pl_comm_rank_sync(r);
}

/* ---- the checked run of a point ---- */

/* The NCCL dispatch's counts, as received, against the plan's. */
static int check_counts(pl_comm_rank *r, ep_state *st)
{
    int64_t got[PL_EP_MAX_RANKS];
    PL_CUDA(&r->ctx, cudaMemcpyAsync(got, st->counts + r->nranks, (size_t)r->nranks * sizeof *got,
                                     cudaMemcpyDeviceToHost, r->ctx.stream));
    PL_TRY(pl_comm_rank_sync(r));
    for (int q = 0; q < r->nranks; q++) {
        const size_t want = st->plan.dispatch.counts[(size_t)q * r->nranks + r->rank] / (size_t)st->plan.shape.hidden;
        if (got[q] != (int64_t)want)
            return pl_fail(&r->ctx, "the row count received from rank %d is %lld, the plan's %zu", q, (long long)got[q],
                           want);
    }
    return 0;
}

static int checked_dispatch(pl_comm_rank *r, ep_state *st, size_t *elements)
{
    pl_ctx *ctx = &r->ctx;
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    PL_TRY(pl_poison(ctx, st->recv, (size_t)me->recv_rows * ROW_BYTES(st)));
    PL_TRY(pl_poison(ctx, st->counts + r->nranks, (size_t)r->nranks * sizeof(int64_t)));
    PL_TRY(run_phase(r, st, PL_EP_DISPATCH));
    if (st->impl == PL_EP_NCCL)
        PL_TRY(check_counts(r, st));
    PL_TRY(pl_comm_rank_check_reset(r));
    const pl_comm_expect e = {.kind = PL_EXPECT_EP_ROWS,
                              .nranks = r->nranks,
                              .seed = r->job->seed,
                              .row_src = st->dt.recv_src,
                              .row_token = st->dt.recv_token,
                              .hidden = st->plan.shape.hidden};
    *elements = (size_t)me->recv_rows * (size_t)st->plan.shape.hidden;
    PL_CUDA(ctx, pl_comm_check(st->recv, *elements, PL_DTYPE_BF16, &e, r->acc, ctx->stream));
    return 0;
}

/* A dispatch of the same variant and the stand-in expert first (untimed), then the checked combine. */
static int checked_combine(pl_comm_rank *r, ep_state *st, size_t *elements)
{
    pl_ctx *ctx = &r->ctx;
    const pl_ep_rank_plan *me = &st->plan.rank[r->rank];
    const pl_ep_shape *sh = &st->plan.shape;
    PL_TRY(run_phase(r, st, PL_EP_DISPATCH));
    PL_TRY(pl_poison(ctx, st->expert_out, (size_t)me->recv_rows * ROW_BYTES(st)));
    PL_CUDA(ctx, pl_comm_ep_expert(st->expert_out, st->recv, st->dt.recv_expert, r->rank * st->plan.local_experts,
                                   me->recv_rows, sh->hidden, ctx->stream));
    PL_TRY(pl_poison(ctx, st->out, (size_t)sh->tokens * ROW_BYTES(st)));
    PL_TRY(run_phase(r, st, PL_EP_COMBINE));
    PL_TRY(pl_comm_rank_check_reset(r));
    const pl_comm_expect e = {.kind = PL_EXPECT_EP_COMBINE,
                              .nranks = r->nranks,
                              .src_rank = r->rank,
                              .seed = r->job->seed,
                              .expert = st->dt.expert,
                              .weight = st->dt.weight,
                              .hidden = sh->hidden,
                              .topk = sh->topk};
    *elements = (size_t)sh->tokens * (size_t)sh->hidden;
    PL_CUDA(ctx, pl_comm_check(st->out, *elements, PL_DTYPE_BF16, &e, r->acc, ctx->stream));
    return 0;
}

static int run_point(pl_comm_rank *r, ep_state *st, size_t index, double *samples)
{
    pl_comm_point p;
    pl_comm_job_point(r->job, index, &p);
    PL_TRY(load_plan(r, st, p.ep_tokens, p.skew));
    st->impl = p.ep_impl;
    st->phase = p.ep_phase;
    size_t elements = 0;
    PL_TRY(p.ep_phase == PL_EP_DISPATCH ? checked_dispatch(r, st, &elements) : checked_combine(r, st, &elements));
    json_t *check = NULL;
    PL_TRY(pl_comm_rank_check_read(r, elements, &check));
    int gave_way = 0;
    if (pl_comm_rank_time(r, ep_op, st, samples, &gave_way) != 0) {
        json_decref(check);
        return -1;
    }
    pl_comm_rank_send_point(r, index, samples, r->job->iters, check, gave_way);
    return 0;
}

int pl_comm_rank_run_ep(pl_comm_rank *r)
{
    const pl_comm_job *j = r->job;
    if (r->nranks > PL_EP_MAX_RANKS || PL_EP_MAX_RANKS != PL_EP_KMAX_RANKS)
        return pl_fail(&r->ctx, "EP over %d ranks: use 2 to %d GPUs", r->nranks, PL_EP_KMAX_RANKS);
    ep_state st;
    memset(&st, 0, sizeof st);
    double *samples = pl_xcalloc((size_t)j->iters + 1, sizeof *samples);
    int rc = alloc_state(r, &st);
    const size_t n = pl_comm_job_npoints(j);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = run_point(r, &st, i, samples);
    free(samples);
    if (rc != 0) /* work may still be queued on these buffers, waiting for peers: the process ends soon */
        return rc;
    free_state(r, &st);
    return 0;
}
