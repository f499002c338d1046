#include "common/moe_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/job.h"
#include "comm/moe.h"
#include "comm/rank_ops.h"
#include "comm/slo.h"
#include "core/util.h"
#include "perflab/stats.h"

#define WARMUP 5

typedef struct sweep_lists {
    size_t *sizes, n_sizes;
    double *skews;
    size_t n_skews;
} sweep_lists;

int pl_moe_sweep_wanted(const pl_params *p)
{
    return *pl_param_str(p, "message-sizes") || *pl_param_str(p, "skews") || pl_param_float(p, "max-p99-ms") > 0 ||
           pl_param_float(p, "min-bw-gbps") > 0;
}

static void lists_free(sweep_lists *l)
{
    free(l->sizes);
    free(l->skews);
    memset(l, 0, sizeof *l);
}

/* The lists, each defaulting to the target's single --message-size / --skew. */
static int lists_parse(const pl_params *p, sweep_lists *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    const char *sizes = pl_param_str(p, "message-sizes"), *skews = pl_param_str(p, "skews");
    char one[64];
    if (!*sizes) {
        snprintf(one, sizeof one, "%lld", pl_param_int(p, "message-size"));
        sizes = one;
    }
    if (pl_parse_size_list(sizes, "--message-sizes", &l->sizes, &l->n_sizes, err, errlen) != 0)
        return -1;
    if (*skews) {
        if (pl_parse_double_list(skews, "--skews", 0, 8, &l->skews, &l->n_skews, err, errlen) != 0) {
            lists_free(l);
            return -1;
        }
    } else {
        l->skews = pl_xmalloc(sizeof *l->skews);
        l->skews[0] = pl_param_float(p, "skew");
        l->n_skews = 1;
    }
    return 0;
}

int pl_moe_sweep_check_params(const pl_params *p, char *err, size_t errlen)
{
    if (!pl_moe_sweep_wanted(p))
        return 0;
    sweep_lists l;
    if (lists_parse(p, &l, err, errlen) != 0)
        return -1;
    const size_t elt = pl_dtype_size((pl_dtype)pl_dtype_from_name(pl_param_str(p, "dtype")));
    int rc = 0;
    if (l.n_sizes * l.n_skews > PL_MOE_SWEEP_MAX_POINTS) {
        pl_snprintf(err, errlen, "%zu sizes x %zu skews is %zu points: sweep at most %d", l.n_sizes, l.n_skews,
                    l.n_sizes * l.n_skews, PL_MOE_SWEEP_MAX_POINTS);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < l.n_sizes; i++) {
        if (l.sizes[i] < 64 || l.sizes[i] > (size_t)1e10 || l.sizes[i] % elt != 0) {
            pl_snprintf(err, errlen,
                        "--message-sizes: %zu bytes is not a size from 64 bytes to 10 GB that is a whole number of "
                        "%zu-byte tokens",
                        l.sizes[i], elt);
            rc = -1;
        }
    }
    lists_free(&l);
    return rc;
}

/* One point: buffers for its plan on every rank, WARMUP + iters exchanges each timed on its own (the slowest rank,
 * through the home stream that forks to and joins every rank's), then a check of what arrived. */
typedef struct point {
    pl_a2a_plan plan;
    void **send, **recv;
    pl_comm_check_acc **acc;
} point;

static void point_free(const pl_moe_sweep_ranks *r, point *pt)
{
    for (int i = 0; i < r->n; i++) {
        cudaSetDevice(i);
        if (pt->send)
            cudaFree(pt->send[i]);
        if (pt->recv)
            cudaFree(pt->recv[i]);
        if (pt->acc)
            cudaFree(pt->acc[i]);
    }
    cudaSetDevice(r->home);
    free(pt->send);
    free(pt->recv);
    free(pt->acc);
    pl_a2a_plan_free(&pt->plan);
}

static int point_setup(pl_ctx *ctx, const pl_moe_sweep_ranks *r, point *pt)
{
    const size_t elt = pl_dtype_size(r->dtype);
    pt->send = pl_xcalloc((size_t)r->n, sizeof *pt->send);
    pt->recv = pl_xcalloc((size_t)r->n, sizeof *pt->recv);
    pt->acc = pl_xcalloc((size_t)r->n, sizeof *pt->acc);
    for (int i = 0; i < r->n; i++) {
        PL_CUDA(ctx, cudaSetDevice(i));
        PL_CUDA(ctx, cudaMalloc(&pt->send[i], pt->plan.total_per_rank * elt));
        PL_CUDA(ctx, cudaMalloc(&pt->recv[i], (pt->plan.recv_total[i] ? pt->plan.recv_total[i] : 1) * elt));
        PL_CUDA(ctx, cudaMalloc((void **)&pt->acc[i], sizeof *pt->acc[i]));
        PL_CUDA(ctx, pl_moe_fill(&pt->plan, i, pt->send[i], r->dtype, ctx->seed, r->streams[i]));
    }
    PL_CUDA(ctx, cudaSetDevice(r->home));
    return 0;
}

static int exchange(pl_ctx *ctx, const pl_moe_sweep_ranks *r, point *pt, cudaEvent_t fork, cudaEvent_t *joined)
{
    const size_t elt = pl_dtype_size(r->dtype);
    PL_CUDA(ctx, cudaEventRecord(fork, ctx->stream));
    for (int i = 0; i < r->n; i++)
        PL_CUDA(ctx, cudaStreamWaitEvent(r->streams[i], fork, 0));
    PL_NCCL(ctx, ncclGroupStart());
    for (int i = 0; i < r->n; i++)
        PL_NCCL(ctx, pl_moe_enqueue(&pt->plan, i, pt->send[i], pt->recv[i], elt, r->type, r->comms[i], r->streams[i]));
    PL_NCCL(ctx, ncclGroupEnd());
    for (int i = 0; i < r->n; i++) {
        PL_CUDA(ctx, cudaEventRecord(joined[i], r->streams[i]));
        PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, joined[i], 0));
    }
    return 0;
}

/* Every element that arrived is the one its source sent: a wrong one is an error, not a missed objective. */
static int point_check(pl_ctx *ctx, const pl_moe_sweep_ranks *r, point *pt)
{
    unsigned long long wrong = 0;
    for (int i = 0; i < r->n; i++) {
        pl_comm_check_acc a;
        PL_CUDA(ctx, cudaSetDevice(i));
        PL_CUDA(ctx, cudaMemsetAsync(pt->acc[i], 0, sizeof a, r->streams[i]));
        PL_CUDA(ctx, pl_moe_check(&pt->plan, i, pt->recv[i], r->dtype, ctx->seed, pt->acc[i], r->streams[i]));
        PL_CUDA(ctx, cudaMemcpyAsync(&a, pt->acc[i], sizeof a, cudaMemcpyDeviceToHost, r->streams[i]));
        PL_CUDA(ctx, cudaStreamSynchronize(r->streams[i]));
        wrong += a.wrong;
    }
    PL_CUDA(ctx, cudaSetDevice(r->home));
    if (wrong)
        return pl_fail(ctx, "the sweep's all-to-all delivered %llu wrong elements", wrong);
    return 0;
}

/* p50 and p99 (ms) of `iters` single exchanges. */
static int point_time(pl_ctx *ctx, const pl_moe_sweep_ranks *r, point *pt, int iters, double *p50, double *p99)
{
    cudaEvent_t fork = NULL, start = NULL, stop = NULL, *joined = pl_xcalloc((size_t)r->n, sizeof *joined);
    double *ms = pl_xcalloc((size_t)iters, sizeof *ms);
    int rc = 0;
    if (cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) != cudaSuccess || cudaEventCreate(&start) != cudaSuccess ||
        cudaEventCreate(&stop) != cudaSuccess)
        rc = pl_fail(ctx, "cudaEventCreate failed");
    for (int i = 0; rc == 0 && i < r->n; i++) {
        cudaSetDevice(i);
        if (cudaEventCreateWithFlags(&joined[i], cudaEventDisableTiming) != cudaSuccess)
            rc = pl_fail(ctx, "cudaEventCreate failed");
    }
    cudaSetDevice(r->home);
    for (int it = 0; rc == 0 && it < WARMUP + iters; it++) {
        float t = 0;
        if (cudaEventRecord(start, ctx->stream) != cudaSuccess || exchange(ctx, r, pt, fork, joined) != 0 ||
            cudaEventRecord(stop, ctx->stream) != cudaSuccess || cudaEventSynchronize(stop) != cudaSuccess ||
            cudaEventElapsedTime(&t, start, stop) != cudaSuccess) {
            if (!ctx->error[0])
                pl_fail(ctx, "timing the sweep's all-to-all failed: %s", cudaGetErrorString(cudaGetLastError()));
            rc = -1;
        } else if (it >= WARMUP) {
            ms[it - WARMUP] = t;
        }
    }
    if (rc == 0) {
        pl_stats st;
        pl_stats_compute(ms, (size_t)iters, &st);
        *p50 = st.p50;
        *p99 = st.p99;
    }
    for (int i = 0; i < r->n; i++)
        if (joined[i]) {
            cudaSetDevice(i);
            cudaEventDestroy(joined[i]);
        }
    cudaSetDevice(r->home);
    if (fork)
        cudaEventDestroy(fork);
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    free(joined);
    free(ms);
    return rc;
}

int pl_moe_sweep_run(pl_ctx *ctx, const pl_params *p, const pl_moe_sweep_ranks *r)
{
    sweep_lists l;
    char err[256];
    if (lists_parse(p, &l, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    const pl_slo slo = {.max_p99_ms = pl_param_float(p, "max-p99-ms"), .min_bw_gbps = pl_param_float(p, "min-bw-gbps")};
    const int iters = (int)pl_param_int(p, "sweep-iters");
    const pl_skew_model model = (pl_skew_model)pl_skew_model_from_name(pl_param_str(p, "skew-model"));
    const size_t elt = pl_dtype_size(r->dtype);
    size_t points = 0, missed = 0;
    double worst_p99 = 0, lowest_bw = INFINITY;
    char first_miss[256] = "";
    int rc = 0;
    printf("moe sweep over %d GPUs: %zu sizes x %zu skews (%s model), %d timed all-to-alls per point\n", r->n,
           l.n_sizes, l.n_skews, pl_skew_model_name(model), iters);
    printf("%12s %6s %10s %10s %12s  %s\n", "bytes/rank", "skew", "p50 ms", "p99 ms", "GB/s at p50", "SLO");
    for (size_t a = 0; rc == 0 && a < l.n_sizes; a++) {
        for (size_t b = 0; rc == 0 && b < l.n_skews; b++) {
            point pt;
            memset(&pt, 0, sizeof pt);
            pl_a2a_plan_make(&pt.plan, model, l.sizes[a] / elt, r->n, l.skews[b]);
            double p50 = 0, p99 = 0;
            rc = point_setup(ctx, r, &pt);
            if (rc == 0)
                rc = point_time(ctx, r, &pt, iters, &p50, &p99);
            if (rc == 0)
                rc = point_check(ctx, r, &pt);
            point_free(r, &pt);
            if (rc != 0)
                break;
            const double bw = (double)l.sizes[a] / (p50 * 1e-3) / 1e9;
            char why[192] = "", size[32];
            pl_slo_verdict v = pl_slo_judge(&slo, 1, p99, bw, why, sizeof why);
            printf("%12s %6.2f %10.4f %10.4f %12.2f  %s%s%s\n", pl_format_bytes(l.sizes[a], size, sizeof size),
                   l.skews[b], p50, p99, bw, pl_slo_verdict_name(v), why[0] ? ": " : "", why);
            points++;
            worst_p99 = fmax(worst_p99, p99);
            lowest_bw = fmin(lowest_bw, bw);
            if (v == PL_SLO_MISS && missed++ == 0)
                pl_snprintf(first_miss, sizeof first_miss, "%s at skew %.2f: %s", size, l.skews[b], why);
        }
    }
    fflush(stdout);
    lists_free(&l);
    if (rc != 0)
        return -1;
    if (pl_slo_is_set(&slo)) {
        if (missed)
            pl_gate(ctx, 0, "SLO missed at %zu of %zu points (first: %s)", missed, points, first_miss);
        else
            pl_gate(ctx, 1, "SLO met at all %zu points (worst p99 %.4g ms, lowest bandwidth %.4g GB/s)", points,
                    worst_p99, lowest_bw);
    }
    return 0;
}
