/* A fabric rank's life: set up the GPU and the communicator, run the job's points (rank_coll.c, rank_moe.c or
 * rank_ep.c), report,
 * tear down. */
#include "comm/rank.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "comm/rank_runners.h"
#include "core/devprobe.h"
#include "core/util.h"

static int setup(pl_comm_rank *r, const void *nccl_id)
{
    pl_ctx *ctx = &r->ctx;
    char err[256];
    PL_CUDA(ctx, cudaSetDevice(r->device));
    PL_CUDA(ctx, cudaGetDeviceCount(&ctx->device_count));
    if (pl_device_info_query(r->device, &r->dev, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    ctx->device = &r->dev;
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    int version = 0;
    ncclGetVersion(&version);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    r->native_alltoall = dlsym(RTLD_DEFAULT, "ncclAlltoAll");
    pl_comm_sink_send(r->sink,
                      json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:i, s:b}", "t", "rank", "rank", r->rank, "device",
                                r->device, "name", r->dev.name, "pci_bus_id", r->dev.pci_bus_id, "hostname", host,
                                "nccl_version", version, "has_ncclAlltoAll", r->native_alltoall != NULL));
    ncclUniqueId id;
    memcpy(&id, nccl_id, sizeof id);
    PL_NCCL(ctx, ncclCommInitRank(&r->comm, r->nranks, id, r->rank));
    PL_TRY(pl_latch_init(ctx, &r->latch));
    for (r->n_events = 0; r->n_events < PL_COMM_CHUNK + 1; r->n_events++)
        PL_CUDA(ctx, cudaEventCreate(&r->events[r->n_events]));
    PL_CUDA(ctx, cudaMalloc((void **)&r->acc, sizeof *r->acc));
    return 0;
}

static void teardown(pl_comm_rank *r)
{
    for (int i = 0; i < r->n_events; i++)
        cudaEventDestroy(r->events[i]);
    if (r->acc)
        cudaFree(r->acc);
    pl_latch_free(&r->latch);
    if (r->comm)
        ncclCommDestroy(r->comm);
    if (r->ctx.stream)
        cudaStreamDestroy(r->ctx.stream);
}

int pl_comm_rank_main(const pl_comm_job *job, int rank, int nranks, int device, const void *nccl_id, pl_comm_sink *sink,
                      volatile int *abort_flag, struct pl_ar_rank *ar, struct pl_ep_rank *ep)
{
    pl_comm_rank r;
    memset(&r, 0, sizeof r);
    r.job = job;
    r.rank = rank;
    r.nranks = nranks;
    r.device = device;
    r.sink = sink;
    r.abort_flag = abort_flag;
    r.ar = ar;
    r.ep = ep;
    r.ctx.seed = job->seed;
    int rc = setup(&r, nccl_id);
    if (rc == 0)
        rc = job->kind == PL_JOB_MOE  ? pl_comm_rank_run_moe(&r)
             : job->kind == PL_JOB_EP ? pl_comm_rank_run_ep(&r)
                                      : pl_comm_rank_run_coll(&r);
    if (rc != 0) {
        if (abort_flag)
            *abort_flag = 1;
        pl_comm_sink_send(sink, json_pack("{s:s, s:i, s:s}", "t", "rank_error", "rank", rank, "reason", r.ctx.error));
        if (r.comm) /* peers may be waiting on us: abort rather than destroy */
            ncclCommAbort(r.comm);
        r.comm = NULL;
    }
    teardown(&r);
    pl_comm_sink_send(sink, json_pack("{s:s, s:i}", "t", "rank_done", "rank", rank));
    return rc;
}
