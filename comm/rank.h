/* One rank of a fabric sweep, from the top: its whole life (pl_comm_rank_main) and the point runners it
 * dispatches to (comm/rank_runners.h). The struct and what the runners share are in comm/rank_ops.h. */
#ifndef PERFLAB_COMM_RANK_H
#define PERFLAB_COMM_RANK_H

#include "comm/rank_ops.h"

/* The whole life of one rank: set up the GPU and the communicator (nccl_id: NCCL_UNIQUE_ID_BYTES bytes), run
 * every point of the job, report. ar, ep: this rank's view of perflab's all-reduce and of the EP peer buffers (set up
 * by the threaded launcher for the jobs that ask for them), or NULL. Returns 0 when every point ran (results may still
 * be wrong). */
struct pl_ar_rank;
struct pl_ep_rank;
int pl_comm_rank_main(const pl_comm_job *job, int rank, int nranks, int device, const void *nccl_id, pl_comm_sink *sink,
                      volatile int *abort_flag, struct pl_ar_rank *ar, struct pl_ep_rank *ep);

#endif
