/* What a fabric sweep measures, decided by the parent from the command line and handed to every rank unchanged
 * (threads share it; under MPI every rank parses the same command line). Its points are numbered the same way
 * everywhere, so a rank's message names a point by its index. Host code. */
#ifndef PERFLAB_COMM_JOB_H
#define PERFLAB_COMM_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "comm/coll.h"
#include "comm/skew.h"

typedef enum pl_comm_kind {
    PL_JOB_COLL, /* perflab comm: collectives over sizes */
    PL_JOB_MOE,  /* perflab moe-readiness: skewed all-to-all over message sizes x skews */
    PL_JOB_EP    /* perflab moe-readiness --ep: EP dispatch and combine over token counts x skews x variants */
} pl_comm_kind;

/* The two implementations of EP dispatch and combine (comm/rank_ep.c), and the two phases each point times. */
typedef enum pl_ep_impl { PL_EP_NCCL, PL_EP_PEER, PL_EP_IMPL_COUNT } pl_ep_impl;
typedef enum pl_ep_phase { PL_EP_DISPATCH, PL_EP_COMBINE, PL_EP_PHASE_COUNT } pl_ep_phase;

typedef enum pl_register_mode {
    PL_REG_NONE,   /* cudaMalloc'd buffers, not registered */
    PL_REG_BUFFER, /* ncclMemAlloc + ncclCommRegister (local user-buffer registration) */
    PL_REG_WINDOW, /* ncclMemAlloc + ncclCommWindowRegister, symmetric (collective registration) */
    PL_REG_COUNT
} pl_register_mode;

typedef enum pl_a2a_api {
    PL_A2A_AUTO,   /* native where this NCCL has it (as PyTorch does), else group */
    PL_A2A_GROUP,  /* ncclGroupStart, ncclSend/ncclRecv per peer, ncclGroupEnd (what nccl-tests and PyTorch do) */
    PL_A2A_NATIVE, /* ncclAlltoAll (NCCL 2.28+), looked up at run time */
    PL_A2A_COUNT
} pl_a2a_api;

enum { PL_PLACE_OUT = 1, PL_PLACE_IN = 2 };

#define PL_COMM_MAX_DTYPES 8
#define PL_COMM_MAX_SIZES  4096 /* sizes of one sweep (nccl-tests' -b/-e/-f/-i) */

typedef struct pl_comm_job {
    pl_comm_kind kind;
    int nranks;    /* ranks in the communicator (threaded: local GPUs used; MPI: the world size) */
    int gpus;      /* threaded mode: GPUs to use (0 = every visible one) */
    uint64_t seed; /* of the input values */
    int iters;     /* timed operations per point and rank */
    int warmup;    /* untimed operations per point first */
    double timeout_s;
    pl_register_mode reg;
    const char *nccl_env; /* "NAME=VALUE,..." set in the GPU process before NCCL starts, or NULL */
    /* PL_JOB_COLL */
    pl_coll colls[PL_COLL_COUNT];
    int n_colls;
    pl_dtype dtypes[PL_COMM_MAX_DTYPES];
    int n_dtypes;
    pl_redop op;
    size_t *sizes; /* nominal bytes, ascending */
    size_t n_sizes;
    int placements; /* PL_PLACE_OUT | PL_PLACE_IN */
    int root;
    pl_a2a_api a2a_api;
    /* PL_JOB_MOE */
    size_t *msg_sizes; /* bytes each rank sends per all-to-all */
    size_t n_msg_sizes;
    double *skews; /* Zipf alpha */
    size_t n_skews;
    pl_dtype moe_dtype;
    pl_skew_model skew_model;
    /* PL_JOB_EP (skews above) */
    size_t *ep_tokens; /* tokens per rank, one point set each */
    size_t n_ep_tokens;
    int ep_hidden, ep_topk, ep_experts;
    pl_ep_impl ep_impls[PL_EP_IMPL_COUNT];
    int n_ep_impls;
} pl_comm_job;

typedef struct pl_comm_point {
    /* PL_JOB_COLL */
    pl_coll coll;
    pl_dtype dtype;
    size_t nominal_bytes;
    int in_place;
    /* PL_JOB_MOE */
    size_t msg_bytes;
    double skew; /* and PL_JOB_EP */
    /* PL_JOB_EP */
    int ep_tokens;
    pl_ep_impl ep_impl;
    pl_ep_phase ep_phase;
} pl_comm_point;

/* perflab's all-reduce (allreduce_oneshot, allreduce_twoshot) in a job: one process with a thread per GPU
 * (threaded), bf16 alone, sum, messages up to PL_COMM_PERFLAB_MAX_BYTES (each rank holds two buffers of the largest).
 * 0, or -1 with the one-line reason and fix in err. */
#define PL_COMM_PERFLAB_MAX_BYTES ((size_t)256 << 20)
int pl_comm_job_check_perflab(const pl_comm_job *j, int threaded, char *err, size_t errlen);

/* An EP job's checks that need no GPU: every point's shape (comm/ep_plan.h) on nranks ranks (0: not known yet), and the
 * peer variant only with a thread per GPU. 0, or -1 with the one-line reason and fix in err. */
int pl_comm_job_check_ep(const pl_comm_job *j, int nranks, int threaded, char *err, size_t errlen);
/* The largest tables of an EP job's plans on nranks ranks, in rows (what its buffers hold). 0, or -1 with err. */
typedef struct pl_ep_capacity {
    int tokens, send_rows, stage_rows, recv_rows, comb_send_rows;
} pl_ep_capacity;
int pl_ep_job_capacity(const pl_comm_job *j, int nranks, pl_ep_capacity *c, char *err, size_t errlen);
const char *pl_ep_impl_name(pl_ep_impl i);
int pl_ep_impl_from_name(const char *name);
const char *pl_ep_phase_name(pl_ep_phase p);

const char *pl_register_mode_name(pl_register_mode m);
int pl_register_mode_from_name(const char *name);
const char *pl_a2a_api_name(pl_a2a_api a);
int pl_a2a_api_from_name(const char *name);

/* A named option value through its from_name lookup: -1 with "--flag must be a, b or c, not 'x'" on an unknown
 * name. */
int pl_comm_choice(const char *flag, const char *text, int (*from_name)(const char *), const char *allowed, int *out,
                   char *err, size_t errlen);

size_t pl_comm_job_npoints(const pl_comm_job *j);
void pl_comm_job_point(const pl_comm_job *j, size_t index, pl_comm_point *p);
void pl_comm_job_free(pl_comm_job *j);

/* min, min*factor, ... up to max (factor > 1), or min, min+step, ... when step > 0 (nccl-tests' -f and -i).
 * Returns the count with *out malloc'd; a series of more than `limit` sizes is counted (in at most limit + 1 steps)
 * but not built: limit + 1 comes back with *out NULL. */
size_t pl_comm_size_series(size_t min, size_t max, double factor, size_t step, size_t limit, size_t **out);

/* "48k,192k,768k,2m" -> sizes; "1.0,1.25" -> numbers. -1 with a one-line message on bad input. */
int pl_parse_size_list(const char *text, const char *what, size_t **out, size_t *n, char *err, size_t errlen);
int pl_parse_double_list(const char *text, const char *what, double lo, double hi, double **out, size_t *n, char *err,
                         size_t errlen);

/* "1.50 MiB", "48 KiB", "512 B". */
const char *pl_format_bytes(size_t bytes, char *buf, size_t len);

#endif
