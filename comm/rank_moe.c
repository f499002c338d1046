/* The points of `perflab moe-readiness` on one rank: for each message size and skew, the plan of unequal
 * chunks, one checked all-to-all, then the timed ones. Buffers are allocated once, for the largest point, and
 * kept (and registered with NCCL when asked): the optimized path of fullstack:moe_readiness. */
#include <stdlib.h>
#include <string.h>

#include "comm/moe.h"
#include "comm/rank_runners.h"
#include "core/util.h"
#include "perflab/device.h"

typedef struct moe_call {
    const pl_a2a_plan *plan;
    const void *send;
    void *recv;
    size_t elt;
    ncclDataType_t type;
} moe_call;

static int moe_op(pl_comm_rank *r, void *arg)
{
    const moe_call *c = arg;
    PL_NCCL(&r->ctx, ncclGroupStart());
    PL_NCCL(&r->ctx, pl_moe_enqueue(c->plan, r->rank, c->send, c->recv, c->elt, c->type, r->comm, r->ctx.stream));
    PL_NCCL(&r->ctx, ncclGroupEnd());
    return 0;
}

static int run_point(pl_comm_rank *r, size_t index, void *send, void *recv, double *samples)
{
    pl_ctx *ctx = &r->ctx;
    const pl_comm_job *j = r->job;
    pl_comm_point p;
    pl_comm_job_point(j, index, &p);
    const size_t elt = pl_dtype_size(j->moe_dtype);
    pl_a2a_plan plan;
    pl_a2a_plan_make(&plan, j->skew_model, p.msg_bytes / elt, r->nranks, p.skew);
    moe_call c = {.plan = &plan, .send = send, .recv = recv, .elt = elt, .type = pl_comm_nccl_dtype(j->moe_dtype)};
    json_t *check = NULL;
    int gave_way = 0, rc = -1;
    if (pl_moe_fill(&plan, r->rank, send, j->moe_dtype, j->seed, ctx->stream) != cudaSuccess ||
        pl_poison(ctx, recv, plan.recv_total[r->rank] * elt) != 0) {
        pl_fail(ctx, "preparing the buffers of point %zu failed: %s", index, cudaGetErrorString(cudaGetLastError()));
        goto out;
    }
    if (moe_op(r, &c) != 0 || pl_comm_rank_check_reset(r) != 0)
        goto out;
    cudaError_t e = pl_moe_check(&plan, r->rank, recv, j->moe_dtype, j->seed, r->acc, ctx->stream);
    if (e != cudaSuccess) {
        pl_fail_cuda(ctx, e, "pl_moe_check", __FILE__, __LINE__);
        goto out;
    }
    if (pl_comm_rank_check_read(r, plan.recv_total[r->rank], &check) != 0)
        goto out;
    if (pl_comm_rank_time(r, moe_op, &c, samples, &gave_way) != 0)
        goto out;
    pl_comm_rank_send_point(r, index, samples, j->iters, check, gave_way);
    check = NULL;
    rc = 0;
out:
    json_decref(check);
    pl_a2a_plan_free(&plan);
    return rc;
}

int pl_comm_rank_run_moe(pl_comm_rank *r)
{
    const pl_comm_job *j = r->job;
    const size_t elt = pl_dtype_size(j->moe_dtype), n = pl_comm_job_npoints(j);
    size_t send_max = 0, recv_max = 0;
    for (size_t i = 0; i < n; i++) {
        pl_comm_point p;
        pl_comm_job_point(j, i, &p);
        pl_a2a_plan plan;
        pl_a2a_plan_make(&plan, j->skew_model, p.msg_bytes / elt, r->nranks, p.skew);
        if (plan.total_per_rank > send_max)
            send_max = plan.total_per_rank;
        if (pl_a2a_plan_max_recv(&plan) > recv_max)
            recv_max = pl_a2a_plan_max_recv(&plan);
        pl_a2a_plan_free(&plan);
    }
    void *send = NULL, *recv = NULL, *send_reg = NULL, *recv_reg = NULL;
    double *samples = pl_xcalloc((size_t)j->iters + 1, sizeof *samples);
    int rc = pl_comm_rank_alloc(r, send_max * elt, &send, &send_reg);
    if (rc == 0)
        rc = pl_comm_rank_alloc(r, recv_max * elt, &recv, &recv_reg);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = run_point(r, i, send, recv, samples);
    free(samples);
    if (rc != 0) /* work may still be queued on these buffers, waiting for peers: the process ends soon */
        return rc;
    pl_comm_rank_free(r, send, send_reg);
    pl_comm_rank_free(r, recv, recv_reg);
    return 0;
}
