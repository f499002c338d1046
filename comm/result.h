/* The results of a fabric job, merged from every rank's messages: per point, the samples of all ranks pooled
 * (p50, p99 and max across iterations and ranks), the check summed over ranks, and what went wrong where.
 * Host code: the root process builds it, the report writers read it. */
#ifndef PERFLAB_COMM_RESULT_H
#define PERFLAB_COMM_RESULT_H

#include <jansson.h>

#include "comm/job.h"
#include "comm/launch.h"
#include "perflab/stats.h"
#include "perflab/verify.h"

typedef enum pl_point_status {
    PL_POINT_OK,
    PL_POINT_FAILED_VERIFICATION,
    PL_POINT_ERROR,   /* a rank failed or did not report */
    PL_POINT_SKIPPED, /* too small to split over the ranks */
} pl_point_status;

const char *pl_point_status_name(pl_point_status s);

typedef struct pl_comm_point_result {
    pl_comm_point point;
    pl_point_status status;
    char *reason; /* why not ok */
    int ranks_reported;
    double *samples_ms; /* every rank's samples, rank after rank */
    size_t n_samples;
    int has_stats;
    pl_stats latency; /* ms */
    pl_verification check;
    size_t wrong; /* elements differing at all from the expectation (nccl-tests' #wrong) */
    int latch_gave_way;
} pl_comm_point_result;

typedef struct pl_comm_result {
    int nranks;
    const char *mode;
    size_t n_points;
    pl_comm_point_result *points;
    json_t *ranks;           /* [nranks]: the rank messages (GPU, host, NCCL version); null where missing */
    json_t *problems;        /* strings: rank errors, unclean process ends, the launch error */
    int nccl_version;        /* of rank 0 */
    int has_native_alltoall; /* rank 0's NCCL has ncclAlltoAll */
    int failed_points;       /* failed verification or error */
} pl_comm_result;

/* Merge the messages of out (root only). A point is ok when every rank reported it and the merged check passed
 * with the dtype's tolerance (relative L2; exact for int32; for EP no element wrong: see PL_EXPECT_EP_*). */
void pl_comm_result_build(pl_comm_result *r, const pl_comm_job *job, const pl_comm_outcome *out);
void pl_comm_result_free(pl_comm_result *r);

/* The dtype a point's values have. */
pl_dtype pl_comm_point_dtype(const pl_comm_job *job, const pl_comm_point *p);

#endif
