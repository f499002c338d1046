/* The MoE dispatch: an all-to-all with unequal splits (a pl_a2a_plan), as grouped ncclSend/ncclRecv, and its
 * check. Shared by `perflab moe-readiness` (a rank per thread or process) and the fullstack:moe_readiness target
 * (one thread driving every GPU). */
#ifndef PERFLAB_COMM_MOE_H
#define PERFLAB_COMM_MOE_H

#include <nccl.h>

#include "comm/kernels.h"
#include "comm/skew.h"

/* Enqueue rank `rank`'s sends and receives of the plan (chunks of 0 elements are left out on both sides). The
 * caller brackets them with ncclGroupStart/ncclGroupEnd: one group per rank, or one around every rank's calls
 * when a single thread drives all of them. */
ncclResult_t pl_moe_enqueue(const pl_a2a_plan *p, int rank, const void *send, void *recv, size_t elt,
                            ncclDataType_t type, ncclComm_t comm, cudaStream_t stream);

/* Fill rank's send buffer with its values (plan->total_per_rank elements). */
cudaError_t pl_moe_fill(const pl_a2a_plan *p, int rank, void *send, pl_dtype dt, uint64_t seed, cudaStream_t stream);
/* Check every chunk rank received against what its source sent, into acc. */
cudaError_t pl_moe_check(const pl_a2a_plan *p, int rank, const void *recv, pl_dtype dt, uint64_t seed,
                         pl_comm_check_acc *acc, cudaStream_t stream);

#endif
