/* The lower layer of one fabric rank: its state (a GPU, its NCCL communicator), the sink it reports through and the
 * timing loop every point shares (the point runners of comm/rank_runners.h use only these). A rank runs
 * on a thread of the GPU process (threaded mode) or is the whole GPU process (MPI mode); either way it reports
 * to the parent through a sink, one JSON message per line:
 *   {"t":"rank", "rank", "device", "name", "pci_bus_id", "hostname", "nccl_version", "has_ncclAlltoAll"}
 *   {"t":"point", "rank", "point", "samples_ms":[...], "check":{...}, "latch_gave_way"}
 *   {"t":"rank_error", "rank", "reason"}        the rank stopped
 *   {"t":"rank_done", "rank"}                   always last */
#ifndef PERFLAB_COMM_RANK_OPS_H
#define PERFLAB_COMM_RANK_OPS_H

#include <jansson.h>
#include <pthread.h>
#include <nccl.h>

#include "comm/job.h"
#include "comm/kernels.h"
#include "core/latch.h"
#include "perflab/ctx.h"

/* A point's operations are enqueued in latched chunks of at most this many (each adds an event record and at
 * least one kernel to the stream's launch queue, which holds about a thousand entries). */
#define PL_COMM_CHUNK 256

/* Messages to the parent: several ranks (threads) may share one pipe. */
typedef struct pl_comm_sink {
    int fd;
    pthread_mutex_t lock;
} pl_comm_sink;

void pl_comm_sink_init(pl_comm_sink *s, int fd);
/* Sends msg as one line and releases it. */
void pl_comm_sink_send(pl_comm_sink *s, json_t *msg);

typedef struct pl_comm_rank {
    const pl_comm_job *job;
    int rank, nranks, device;
    pl_ctx ctx; /* the stream every operation runs on, and the error a failure records */
    pl_device_info dev;
    ncclComm_t comm;
    pl_latch latch;
    cudaEvent_t events[PL_COMM_CHUNK + 1];
    int n_events;
    float *barrier_buf;
    pl_comm_check_acc *acc; /* device */
    pl_comm_sink *sink;
    volatile int *abort_flag; /* threaded mode: set by the first rank that fails, polled by the others */
    void *native_alltoall;    /* ncclAlltoAll when this NCCL has it (2.28+), looked up at run time */
    struct pl_ar_rank *ar;    /* perflab's all-reduce (threaded mode, when the job asks for it), else NULL */
    struct pl_ep_rank *ep;    /* the EP peer buffers (threaded mode, EP jobs), else NULL */
} pl_comm_rank;

/* Check an NCCL call; on failure record it (with NCCL's last error) and return -1. */
#define PL_NCCL(ctx, call)                                                                                             \
    do {                                                                                                               \
        ncclResult_t pl_nr_ = (call);                                                                                  \
        if (pl_nr_ != ncclSuccess && pl_nr_ != ncclInProgress)                                                         \
            return pl_comm_fail_nccl((ctx), pl_nr_, #call, __FILE__, __LINE__);                                        \
    } while (0)

int pl_comm_fail_nccl(pl_ctx *ctx, ncclResult_t r, const char *what, const char *file, int line);
ncclDataType_t pl_comm_nccl_dtype(pl_dtype d);
ncclRedOp_t pl_comm_nccl_op(pl_redop op);

/* For the point runners. */
typedef int (*pl_comm_op_fn)(pl_comm_rank *r, void *arg); /* enqueue one operation on r->ctx.stream */

/* Wait for the stream, polling so that a failed peer (abort flag, NCCL async error) does not hang us. */
int pl_comm_rank_sync(pl_comm_rank *r);
/* Warm up, then time job->iters operations, one sample each (ms): latched chunks, each opened by one untimed
 * operation that lines the ranks up. */
int pl_comm_rank_time(pl_comm_rank *r, pl_comm_op_fn fn, void *arg, double *samples_ms, int *gave_way);
/* Device buffers for the job: registered with NCCL as job->reg says. */
int pl_comm_rank_alloc(pl_comm_rank *r, size_t bytes, void **ptr, void **reg_handle);
void pl_comm_rank_free(pl_comm_rank *r, void *ptr, void *reg_handle);
/* Zero the check accumulator / read it back as JSON {"elements","wrong","nonfinite","unwritten","err2","ref2",
 * "max_abs"}. */
int pl_comm_rank_check_reset(pl_comm_rank *r);
int pl_comm_rank_check_read(pl_comm_rank *r, size_t elements, json_t **out);
void pl_comm_rank_send_point(pl_comm_rank *r, size_t point, const double *samples_ms, int n, json_t *check,
                             int gave_way);

#endif
