/* The collectives perflab times, with nccl-tests' semantics: how a size in bytes becomes element counts per
 * rank, where in-place buffers sit, and the factor that turns algorithm bandwidth into bus bandwidth
 * (nccl-tests' doc/PERFORMANCE.md). Host code only: no CUDA, no NCCL. */
#ifndef PERFLAB_COMM_COLL_H
#define PERFLAB_COMM_COLL_H

#include <stddef.h>

#include "perflab/verify.h"

typedef enum pl_coll {
    PL_COLL_ALLTOALL,
    PL_COLL_ALLREDUCE,
    PL_COLL_ALLGATHER,
    PL_COLL_REDUCESCATTER,
    PL_COLL_SENDRECV,
    PL_COLL_BROADCAST,
    /* perflab's own bf16 sum all-reduce over NVLink peer pointers (kernels/allreduce): one process, a thread per GPU */
    PL_COLL_ALLREDUCE_ONESHOT,
    PL_COLL_ALLREDUCE_TWOSHOT,
    PL_COLL_COUNT
} pl_coll;

/* The collectives `all` names: NCCL's (perflab's all-reduces are asked for by name). */
#define PL_COLL_NCCL_COUNT PL_COLL_ALLREDUCE_ONESHOT

typedef enum pl_redop { PL_REDOP_SUM, PL_REDOP_MAX, PL_REDOP_MIN, PL_REDOP_COUNT } pl_redop;

const char *pl_coll_name(pl_coll c);
int pl_coll_from_name(const char *name); /* -1 when unknown */
const char *pl_redop_name(pl_redop op);
int pl_redop_from_name(const char *name);
/* Whether c is perflab's all-reduce (bf16, sum, threaded mode, peer access), and the collective whose semantics it
 * has (layout, expected values, bus bandwidth): all-reduce for those, c itself for NCCL's. */
int pl_coll_is_perflab(pl_coll c);
pl_coll pl_coll_semantics(pl_coll c);
/* Whether the collective reduces (takes an operation). */
int pl_coll_reduces(pl_coll c);
/* Whether an in-place form exists. All-to-all and send/recv have none: their output would overwrite input
 * that is still to be sent (nccl-tests runs them in place without checking the result; perflab does not). */
int pl_coll_has_in_place(pl_coll c);

/* busbw = algbw * factor. AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll (n-1)/n; Broadcast and
 * SendRecv 1. */
double pl_coll_busbw_factor(pl_coll c, int nranks);

/* The dtypes the fabric verbs accept (NCCL has them all): fp32, fp16, bf16, fp64, int32. */
int pl_comm_dtype_supported(pl_dtype d);
size_t pl_dtype_size(pl_dtype d);

/* One collective call at a nominal size of `bytes`, as nccl-tests lays it out. Counts are in elements. */
typedef struct pl_coll_layout {
    size_t count;                /* the count argument of the NCCL call (per peer for all-to-all) */
    size_t send_count;           /* elements each rank sends from its send buffer */
    size_t recv_count;           /* elements each rank holds in its receive buffer afterwards */
    size_t bytes;                /* S of algbw = S / t: the bytes nccl-tests counts for this call */
    size_t in_place_send_offset; /* in place: the send buffer is recvbuff + this many elements */
    size_t in_place_recv_offset; /* in place: the receive buffer is sendbuff + this many elements */
} pl_coll_layout;

/* `bytes` is rounded down to what the collective can split evenly (as nccl-tests does); a layout with
 * count == 0 means the size is too small for this many ranks. */
void pl_coll_layout_for(pl_coll c, size_t bytes, size_t elt, int nranks, int rank, pl_coll_layout *out);

/* algbw and busbw in GB/s (1e9 bytes/s) of a call that moved `bytes` (S) in `ms` milliseconds. */
double pl_algbw_gbps(size_t bytes, double ms);
double pl_busbw_gbps(pl_coll c, int nranks, size_t bytes, double ms);

#endif
