/* The SLO sweep of fullstack:moe_readiness: the persistent skewed all-to-all over every message size x skew, each
 * point timed per iteration (p50/p99 across iterations, bandwidth = message bytes / p50 latency, as `perflab
 * moe-readiness` reports it), checked bit for bit, and judged against the objectives; the verdict goes to the
 * harness as the target's gate (pl_gate). */
#ifndef PERFLAB_LABS_MOE_SWEEP_H
#define PERFLAB_LABS_MOE_SWEEP_H

#include <nccl.h>

#include "perflab/perflab.h"

/* The sweep's parameters, for the target's parameter table. */
#define PL_MOE_SWEEP_PARAMS                                                                                            \
    {.name = "message-sizes",                                                                                          \
     .type = PL_PARAM_STRING,                                                                                          \
     .default_value = "",                                                                                              \
     .help = "sweep: bytes each rank sends, a comma list (e.g. 48k,192k,768k,2m; default --message-size)"},          \
        {.name = "skews",                                                                                              \
         .type = PL_PARAM_STRING,                                                                                      \
         .default_value = "",                                                                                          \
         .help = "sweep: Zipf alphas, a comma list (e.g. 1.0,1.25,1.5; default --skew)"},                             \
        {.name = "max-p99-ms",                                                                                         \
         .type = PL_PARAM_FLOAT,                                                                                       \
         .default_value = "0",                                                                                         \
         .help = "SLO: the p99 latency every point must stay within (0 = not set)",                                    \
         .min = 0,                                                                                                     \
         .max = 1e6},                                                                                                  \
        {.name = "min-bw-gbps",                                                                                        \
         .type = PL_PARAM_FLOAT,                                                                                       \
         .default_value = "0",                                                                                         \
         .help = "SLO: the bandwidth at p50 every point must reach (0 = not set)",                                     \
         .min = 0,                                                                                                     \
         .max = 1e6},                                                                                                  \
    {                                                                                                                  \
        .name = "sweep-iters", .type = PL_PARAM_INT, .default_value = "50",                                           \
        .help = "sweep: timed all-to-alls per point (after 5 warm-ups)", .min = 5, .max = 100000                       \
    }

/* At most this many points (sizes x skews). */
#define PL_MOE_SWEEP_MAX_POINTS 256

/* Whether the parameters ask for a sweep (a list or an objective given). */
int pl_moe_sweep_wanted(const pl_params *p);
/* The lists parse, their sizes are at least 64 bytes and a multiple of the token size, the point count is bounded:
 * else -1 with one line. */
int pl_moe_sweep_check_params(const pl_params *p, char *err, size_t errlen);

typedef struct pl_moe_sweep_ranks {
    int n, home;           /* ranks = GPUs 0..n-1; the device to return to */
    pl_dtype dtype;        /* token type */
    ncclDataType_t type;
    const ncclComm_t *comms; /* one per rank, from one ncclCommInitAll */
    const cudaStream_t *streams;
} pl_moe_sweep_ranks;

/* Runs the sweep (its table goes to stdout: the target's log) and reports the verdict with pl_gate when an
 * objective is set. -1 only on an error (CUDA, NCCL, a wrong result), with the reason in ctx. */
int pl_moe_sweep_run(pl_ctx *ctx, const pl_params *p, const pl_moe_sweep_ranks *ranks);

#endif
