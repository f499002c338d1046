/* fullstack:moe_readiness — one MoE dispatch: an all-to-all whose chunks follow a Zipf skew (comm/skew.h), over
 * every GPU of the machine, driven from one thread (one NCCL group around every rank's sends and receives).
 * The baseline does what a naive framework does each step: allocate device buffers, stage the tokens from host
 * memory, exchange, copy the result back to the host, free. The optimized variants keep persistent device
 * buffers; one of them also registers them with NCCL (ncclMemAlloc + ncclCommRegister).
 *
 * Given sizes, skews or service-level objectives (--message-sizes, --skews, --max-p99-ms, --min-bw-gbps), the
 * target first sweeps the persistent exchange over every size x skew (labs/common/moe_sweep.c) and judges each
 * point against the objectives: a miss makes the target `slo_missed` (exit code 1), as `perflab moe-readiness`
 * does for its own sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/moe.h"
#include "comm/rank_ops.h"
#include "common/moe_sweep.h"
#include "labs.h"
#include "perflab/perflab.h"

typedef struct moe_rank {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t joined;
    void *send, *recv;         /* persistent, cudaMalloc */
    void *send_reg, *recv_reg; /* persistent, ncclMemAlloc + ncclCommRegister */
    void *send_handle, *recv_handle;
    void *host_in, *host_out; /* the baseline's tokens and results in host memory */
    pl_comm_check_acc *acc;
} moe_rank;

enum { OUT_PLAIN, OUT_REGISTERED, OUT_HOST };

typedef struct moe_state {
    int n, home; /* ranks (GPUs 0..n-1); the device of ctx->stream */
    pl_dtype dtype;
    size_t elt;
    ncclDataType_t type;
    pl_a2a_plan plan;
    moe_rank *r;
    cudaEvent_t fork;
    int last_output;          /* where the variant just run left its result */
    char register_error[512]; /* why ncclMemAlloc/ncclCommRegister failed ("" when they worked) */
} moe_state;

static const pl_param_def moe_params[] = {
    PL_INT_PARAM("message-size", "768k", 64, 1e10, "bytes each rank sends per all-to-all"),
    PL_FLOAT_PARAM("skew", "1.25", 0, 8, "Zipf alpha over destinations"),
    PL_CHOICE_PARAM("skew-model", "distance", "distance|hotspot",
                    "distance (r = (dst - src) mod n + 1) or hotspot (r = dst + 1)"),
    PL_CHOICE_PARAM("dtype", "bf16", "bf16|fp16|fp32", "token dtype"),
    PL_INT_PARAM("gpus", "0", 0, 1024, "GPUs 0..n-1 (0 = all; an all-to-all needs 2 or more)"),
    PL_MOE_SWEEP_PARAMS,
    PL_PARAMS_END,
};

/* An all-to-all of one rank moves nothing between GPUs: refused, not measured. */
static int moe_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    if (pl_param_int(p, "gpus") == 1) {
        snprintf(err, errlen, "--gpus 1: an all-to-all needs 2 or more GPUs (pass --gpus 0 for all of them)");
        return -1;
    }
    return pl_moe_sweep_check_params(p, err, errlen);
}

static void moe_counters(const pl_params *p, pl_counters *c)
{
    const double bytes = (double)pl_param_int(p, "message-size");
    c->flops = 0;
    c->bytes_read = bytes; /* GB/s = the bytes each rank sends per all-to-all / time */
    c->bytes_written = 0;
    c->elements = bytes / (double)pl_dtype_size((pl_dtype)pl_dtype_from_name(pl_param_str(p, "dtype")));
}

static void release(moe_state *s)
{
    for (int i = 0; s->r && i < s->n; i++) {
        moe_rank *r = &s->r[i];
        cudaSetDevice(i);
        if (r->comm) {
            if (r->send_handle)
                ncclCommDeregister(r->comm, r->send_handle);
            if (r->recv_handle)
                ncclCommDeregister(r->comm, r->recv_handle);
        }
        if (r->send_reg)
            ncclMemFree(r->send_reg);
        if (r->recv_reg)
            ncclMemFree(r->recv_reg);
        cudaFree(r->send);
        cudaFree(r->recv);
        cudaFree(r->acc);
        free(r->host_in);
        free(r->host_out);
        if (r->comm)
            ncclCommDestroy(r->comm);
        if (r->joined)
            cudaEventDestroy(r->joined);
        if (r->stream)
            cudaStreamDestroy(r->stream);
    }
    cudaSetDevice(s->home);
    if (s->fork)
        cudaEventDestroy(s->fork);
    free(s->r);
    pl_a2a_plan_free(&s->plan);
    free(s);
}

static int register_buffers(pl_ctx *ctx, moe_rank *r, size_t send_bytes, size_t recv_bytes)
{
    PL_NCCL(ctx, ncclMemAlloc(&r->send_reg, send_bytes));
    PL_NCCL(ctx, ncclMemAlloc(&r->recv_reg, recv_bytes));
    PL_NCCL(ctx, ncclCommRegister(r->comm, r->send_reg, send_bytes, &r->send_handle));
    PL_NCCL(ctx, ncclCommRegister(r->comm, r->recv_reg, recv_bytes, &r->recv_handle));
    return 0;
}

static int setup_rank(pl_ctx *ctx, moe_state *s, int i)
{
    moe_rank *r = &s->r[i];
    const size_t send_bytes = s->plan.total_per_rank * s->elt, recv_bytes = s->plan.recv_total[i] * s->elt;
    PL_CUDA(ctx, cudaSetDevice(i));
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&r->joined, cudaEventDisableTiming));
    PL_CUDA(ctx, cudaMalloc(&r->send, send_bytes));
    PL_CUDA(ctx, cudaMalloc(&r->recv, recv_bytes));
    PL_CUDA(ctx, cudaMalloc((void **)&r->acc, sizeof *r->acc));
    if (!s->register_error[0] && register_buffers(ctx, r, send_bytes, recv_bytes) != 0) {
        /* only the registered variant needs them: it reports this, the others still run */
        snprintf(s->register_error, sizeof s->register_error, "%s", ctx->error);
        ctx->error[0] = '\0';
    }
    r->host_in = malloc(send_bytes);
    r->host_out = malloc(recv_bytes);
    if (!r->host_in || !r->host_out)
        return pl_fail(ctx, "host allocation of %zu bytes failed", send_bytes + recv_bytes);
    PL_CUDA(ctx, pl_moe_fill(&s->plan, i, r->send, s->dtype, ctx->seed, r->stream));
    if (r->send_reg)
        PL_CUDA(ctx, cudaMemcpyAsync(r->send_reg, r->send, send_bytes, cudaMemcpyDeviceToDevice, r->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(r->host_in, r->send, send_bytes, cudaMemcpyDeviceToHost, r->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(r->stream));
    return 0;
}

static int moe_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    const int gpus = (int)pl_param_int(p, "gpus");
    const int n = gpus ? gpus : ctx->device_count;
    if (n > ctx->device_count)
        return pl_fail(ctx, "--gpus %d, but only %d GPUs are visible", n, ctx->device_count);
    moe_state *s = calloc(1, sizeof *s);
    if (!s)
        return pl_fail(ctx, "out of host memory");
    s->n = n;
    s->home = ctx->device->ordinal;
    s->dtype = (pl_dtype)pl_dtype_from_name(pl_param_str(p, "dtype"));
    s->elt = pl_dtype_size(s->dtype);
    s->type = pl_comm_nccl_dtype(s->dtype);
    pl_a2a_plan_make(&s->plan, (pl_skew_model)pl_skew_model_from_name(pl_param_str(p, "skew-model")),
                     (size_t)pl_param_int(p, "message-size") / s->elt, n, pl_param_float(p, "skew"));
    s->r = calloc((size_t)n, sizeof *s->r);
    ncclComm_t *comms = calloc((size_t)n, sizeof *comms);
    int rc = s->r && comms ? 0 : pl_fail(ctx, "out of host memory");
    if (rc == 0) {
        ncclResult_t nr = ncclCommInitAll(comms, n, NULL); /* devices 0..n-1, one thread */
        rc = nr == ncclSuccess ? 0 : pl_comm_fail_nccl(ctx, nr, "ncclCommInitAll", __FILE__, __LINE__);
    }
    for (int i = 0; rc == 0 && i < n; i++)
        s->r[i].comm = comms[i];
    free(comms);
    for (int i = 0; rc == 0 && i < n; i++)
        rc = setup_rank(ctx, s, i);
    cudaSetDevice(s->home);
    if (rc == 0 && cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming) != cudaSuccess)
        rc = pl_fail(ctx, "cudaEventCreate failed");
    if (rc == 0 && pl_moe_sweep_wanted(p)) {
        pl_moe_sweep_ranks ranks = {.n = n, .home = s->home, .dtype = s->dtype, .type = s->type};
        ncclComm_t *cs = calloc((size_t)n, sizeof *cs);
        cudaStream_t *ss = calloc((size_t)n, sizeof *ss);
        rc = cs && ss ? 0 : pl_fail(ctx, "out of host memory");
        for (int i = 0; rc == 0 && i < n; i++) {
            cs[i] = s->r[i].comm;
            ss[i] = s->r[i].stream;
        }
        ranks.comms = cs;
        ranks.streams = ss;
        if (rc == 0)
            rc = pl_moe_sweep_run(ctx, p, &ranks);
        free(cs);
        free(ss);
    }
    if (rc != 0) {
        release(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int moe_poison(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    for (int i = 0; i < s->n; i++) {
        moe_rank *r = &s->r[i];
        const size_t bytes = s->plan.recv_total[i] * s->elt;
        PL_CUDA(ctx, cudaSetDevice(i));
        PL_CUDA(ctx, cudaMemsetAsync(r->recv, 0xff, bytes, r->stream));
        if (r->recv_reg)
            PL_CUDA(ctx, cudaMemsetAsync(r->recv_reg, 0xff, bytes, r->stream));
        memset(r->host_out, 0xff, bytes);
        PL_CUDA(ctx, cudaStreamSynchronize(r->stream));
    }
    PL_CUDA(ctx, cudaSetDevice(s->home));
    return 0;
}

/* Every rank's stream waits for ctx->stream (so the harness's latch and events hold them all), one NCCL group
 * exchanges, and ctx->stream waits for every rank: the events time the slowest rank. */
static int exchange(pl_ctx *ctx, moe_state *s, int registered)
{
    PL_CUDA(ctx, cudaEventRecord(s->fork, ctx->stream));
    for (int i = 0; i < s->n; i++)
        PL_CUDA(ctx, cudaStreamWaitEvent(s->r[i].stream, s->fork, 0));
    PL_NCCL(ctx, ncclGroupStart());
    for (int i = 0; i < s->n; i++) {
        moe_rank *r = &s->r[i];
        PL_NCCL(ctx, pl_moe_enqueue(&s->plan, i, registered ? r->send_reg : r->send, registered ? r->recv_reg : r->recv,
                                    s->elt, s->type, r->comm, r->stream));
    }
    PL_NCCL(ctx, ncclGroupEnd());
    for (int i = 0; i < s->n; i++) {
        PL_CUDA(ctx, cudaEventRecord(s->r[i].joined, s->r[i].stream));
        PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, s->r[i].joined, 0));
    }
    s->last_output = registered ? OUT_REGISTERED : OUT_PLAIN;
    return 0;
}

static int run_persistent(pl_ctx *ctx, void *state)
{
    return exchange(ctx, state, 0);
}

static int run_registered(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    if (s->register_error[0])
        return pl_fail(ctx, "the buffers could not be registered with NCCL: %s", s->register_error);
    return exchange(ctx, state, 1);
}

/* Fresh device buffers and host staging every step. Synchronous by nature: timed as the host issues it. */
static int run_staged(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    void **send = calloc((size_t)s->n, sizeof *send), **recv = calloc((size_t)s->n, sizeof *recv);
    int rc = send && recv ? 0 : pl_fail(ctx, "out of host memory");
    for (int i = 0; rc == 0 && i < s->n; i++) {
        const size_t sb = s->plan.total_per_rank * s->elt, rb = s->plan.recv_total[i] * s->elt;
        cudaError_t e = cudaSetDevice(i);
        if (e == cudaSuccess)
            e = cudaMalloc(&send[i], sb);
        if (e == cudaSuccess)
            e = cudaMalloc(&recv[i], rb);
        if (e == cudaSuccess)
            e = cudaMemcpy(send[i], s->r[i].host_in, sb, cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            rc = pl_fail_cuda(ctx, e, "staging the tokens", __FILE__, __LINE__);
    }
    ncclResult_t nr = rc == 0 ? ncclGroupStart() : ncclSuccess;
    for (int i = 0; rc == 0 && nr == ncclSuccess && i < s->n; i++)
        nr = pl_moe_enqueue(&s->plan, i, send[i], recv[i], s->elt, s->type, s->r[i].comm, s->r[i].stream);
    if (rc == 0) {
        ncclResult_t end = ncclGroupEnd();
        nr = nr == ncclSuccess ? end : nr;
        if (nr != ncclSuccess)
            rc = pl_comm_fail_nccl(ctx, nr, "the staged exchange", __FILE__, __LINE__);
    }
    for (int i = 0; rc == 0 && i < s->n; i++) {
        cudaError_t e = cudaSetDevice(i);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(s->r[i].host_out, recv[i], s->plan.recv_total[i] * s->elt, cudaMemcpyDeviceToHost,
                                s->r[i].stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(s->r[i].stream);
        if (e != cudaSuccess)
            rc = pl_fail_cuda(ctx, e, "copying the result to the host", __FILE__, __LINE__);
    }
    for (int i = 0; send && recv && i < s->n; i++) {
        cudaSetDevice(i);
        cudaFree(send[i]);
        cudaFree(recv[i]);
    }
    free(send);
    free(recv);
    cudaSetDevice(s->home);
    s->last_output = OUT_HOST;
    return rc;
}

static int moe_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    moe_state *s = state;
    pl_comm_check_acc sum = {0};
    double max_abs = 0;
    size_t elements = 0;
    for (int i = 0; i < s->n; i++) {
        moe_rank *r = &s->r[i];
        const void *out = s->last_output == OUT_REGISTERED ? r->recv_reg : r->recv;
        pl_comm_check_acc a;
        PL_CUDA(ctx, cudaSetDevice(i));
        if (s->last_output == OUT_HOST)
            PL_CUDA(ctx, cudaMemcpyAsync(r->recv, r->host_out, s->plan.recv_total[i] * s->elt, cudaMemcpyHostToDevice,
                                         r->stream));
        PL_CUDA(ctx, cudaMemsetAsync(r->acc, 0, sizeof *r->acc, r->stream));
        PL_CUDA(ctx, pl_moe_check(&s->plan, i, out, s->dtype, ctx->seed, r->acc, r->stream));
        PL_CUDA(ctx, cudaMemcpyAsync(&a, r->acc, sizeof a, cudaMemcpyDeviceToHost, r->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(r->stream));
        double m;
        memcpy(&m, &a.max_abs_bits, sizeof m);
        max_abs = fmax(max_abs, m);
        sum.wrong += a.wrong;
        sum.unwritten += a.unwritten;
        sum.nonfinite += a.nonfinite;
        sum.err2 += a.err2;
        sum.ref2 += a.ref2;
        elements += s->plan.recv_total[i];
    }
    PL_CUDA(ctx, cudaSetDevice(s->home));
    /* an all-to-all copies: every element must arrive bit for bit */
    pl_verify_set(v, sum.wrong == 0, "%zu elements over %d ranks: %llu wrong (%llu unwritten, %llu NaN/Inf)", elements,
                  s->n, sum.wrong, sum.unwritten, sum.nonfinite);
    v->dtype = s->dtype;
    v->elements = elements;
    v->unwritten = sum.unwritten;
    v->nonfinite = sum.nonfinite;
    v->max_abs_error = max_abs;
    v->rel_l2_error = sum.ref2 > 0 ? sqrt(sum.err2 / sum.ref2) : 0;
    return 0;
}

static void moe_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    release(state);
}

static const pl_variant moe_variants[] = {
    PL_VARIANT("baseline", run_staged,
               "each step: cudaMalloc the buffers, stage the tokens from host memory, exchange, copy the result "
               "back to the host, cudaFree",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_HOST_BOUND | PL_VARIANT_HOST_TIMED),
    PL_VARIANT("persistent", run_persistent,
               "persistent device buffers: only the grouped ncclSend/ncclRecv exchange remains",
               .flags = PL_VARIANT_NO_GRAPH),
    PL_VARIANT("registered", run_registered,
               "persistent buffers from ncclMemAlloc, registered with ncclCommRegister (zero-copy where NCCL can)",
               .flags = PL_VARIANT_NO_GRAPH),
    PL_VARIANTS_END,
};

const pl_target pl_target_fullstack_moe_readiness = {
    .group = "fullstack",
    .name = "moe_readiness",
    .summary = "skewed MoE all-to-all over every GPU: staged and re-allocated vs persistent vs NCCL-registered; "
               "optionally a size x skew sweep gated by p99 and bandwidth SLOs",
    .req = {.needs_gpu = 1, .min_gpus = 2},
    .params = moe_params,
    .variants = moe_variants,
    .counters = moe_counters,
    .check_params = moe_check_params,
    .setup = moe_setup,
    .poison = moe_poison,
    .check = moe_check,
    .teardown = moe_teardown,
};
