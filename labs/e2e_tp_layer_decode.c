/* e2e:tp_layer_decode — the dense layer's decode step split over --tp GPUs (engine/tp_layer.h: column-parallel QKV and
 * gate/up, row-parallel O and down, the KV cache sharded by kv heads), one thread a GPU, with each all-reduce:
 * NCCL's (the baseline), perflab's one-shot and two-shot over NVLink peer pointers (kernels/allreduce). The reference
 * rows time the step's communication alone (its two all-reduces of batch × hidden bf16 with the residual, the same
 * way), so the table states the share of the step each variant spends communicating.
 *
 * The single-GPU layer of e2e:layer_decode (labs/common/e2e_layer.h) is built on this GPU first, with the same
 * weights (seed), inputs and cache: every rank's cache is the slice of its kv heads, and a variant passes when every
 * rank's output is bit-identical to rank 0's and rank 0's passes e2e:layer_decode's check (the float64 reference's
 * rows and every row of the single-GPU baseline, bf16 tolerance). Counters: the whole step's FLOPs and fewest bytes
 * (every GPU together). Timing: ctx->stream forks to every rank's stream and joins back, so a sample is the slowest
 * rank's step. Needs --tp GPUs with peer access for perflab's all-reduces (refused with the reason otherwise). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "common/e2e_layer.h"
#include "engine/layer_ops.h"
#include "engine/tp_layer.h"
#include "engine/weights.h"
#include "labs.h"
#include "perflab/perflab.h"

enum tp_cmd { CMD_QUIT = -1, CMD_STEP = 0, CMD_ALLREDUCE = 1 };

typedef struct tp_rank {
    int device, sm_count;
    cudaStream_t stream;
    cudaEvent_t joined;
    pl_tp_weights w;
    pl_layer_kv kv;
    uint16_t *x, *out;             /* the residual stream in, the step's out */
    uint16_t *part, *sum, *ar_out; /* the reference rows: a fixed partial product, NCCL's sum, their output */
    int *positions, *seq_lens, *table;
    int64_t *slots;
    void *ws;
    size_t ws_bytes;
    cudaError_t error; /* the last command's */
} tp_rank;

typedef struct tp_state {
    e2e_layer *L; /* the single-GPU layer on ctx's GPU: inputs, cache, checks */
    int n, home;
    tp_rank r[PL_AR_MAX_RANKS];
    ncclComm_t comms[PL_AR_MAX_RANKS];
    int have_ar;        /* perflab's all-reduce set up (peer access between every pair) */
    char ar_error[512]; /* why not */
    pl_ar_rank ar[PL_AR_MAX_RANKS];
    /* the workers: a thread a rank, a command at a time (generation `gen`; `pending` ranks still enqueueing it) */
    pthread_t threads[PL_AR_MAX_RANKS];
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gen, pending, cmd;
    pl_tp_allreduce algo;
    cudaEvent_t fork;
    int last_cmd; /* what the last run computed (the check's choice) */
} tp_state;

static const pl_param_def tp_params[] = {
    PL_TEXT_PARAM("model", "llama3-70b",
                  "a dense model config (engine/model_config.c) whose kv_heads, heads and MLP width --tp divides",
                  .small_value = "tiny-dense-tp"),
    E2E_LAYER_SHAPE_PARAMS,
    E2E_DECODE_PARAMS,
    PL_INT_PARAM("tp", "2", 2, PL_AR_MAX_RANKS, "GPUs the layer is split over (GPUs 0..tp-1)"),
    PL_PARAMS_END,
};

static void tp_counters(const pl_params *p, pl_counters *c)
{
    e2e_layer_counters(p, 0, e2e_decode_seqs(p), e2e_decode_len(p), c);
}

static int tp_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    if (e2e_layer_check(p, 0, e2e_decode_seqs(p), e2e_decode_len(p), gpu, err, errlen) != 0)
        return -1;
    char why[256];
    const pl_model_config *m = pl_model_find(pl_param_str(p, "model"), why, sizeof why);
    if (m && !pl_tp_splits(m, (int)pl_param_int(p, "tp"), why, sizeof why))
        return pl_params_refuse(err, errlen, "--tp %d: %s", (int)pl_param_int(p, "tp"), why);
    return 0;
}

/* ---- the workers ---- */

static cudaError_t rank_allreduce(const tp_state *s, tp_rank *r, int rank, const pl_tp_recipe *rc)
{
    const size_t n = (size_t)s->L->rows * s->L->m->hidden;
    if (rc->allreduce != PL_TP_AR_NCCL) {
        const pl_ar_algo algo = rc->allreduce == PL_TP_AR_ONESHOT ? PL_AR_ONESHOT : PL_AR_TWOSHOT;
        cudaError_t e = pl_ar_allreduce(rc->peers, algo, r->part, r->ar_out, n, r->x, r->stream);
        return e != cudaSuccess ? e : pl_ar_allreduce(rc->peers, algo, r->part, r->ar_out, n, r->ar_out, r->stream);
    }
    for (int i = 0; i < 2; i++) { /* out of place, so that the partial product stays as it is run after run */
        if (ncclAllReduce(r->part, r->sum, n, ncclBfloat16, ncclSum, s->comms[rank], r->stream) != ncclSuccess)
            return cudaErrorNotSupported;
        cudaError_t e = pl_engine_residual_add(i ? r->ar_out : r->x, r->sum, r->ar_out, n, r->stream);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* One command on rank `rank`'s stream, after ctx->stream's fork and before its joined event. */
static cudaError_t rank_enqueue(tp_state *s, int rank)
{
    tp_rank *r = &s->r[rank];
    const e2e_layer *L = s->L;
    const pl_tp_recipe rc = {{PL_LAYER_GEMM_PERFLAB, PL_LAYER_ATTN_FAST, 1, r->sm_count, NULL, PL_LAYER_WEIGHTS_BF16},
                             s->algo,
                             s->comms[rank],
                             s->have_ar ? &s->ar[rank] : NULL};
    const pl_decode_step step = {L->rows, L->page_size, L->max_pages, r->positions, r->slots, r->table, r->seq_lens};
    cudaError_t e = cudaStreamWaitEvent(r->stream, s->fork, 0);
    if (e == cudaSuccess)
        e = s->cmd == CMD_STEP
                ? pl_tp_layer_decode(&r->w, &rc, &step, &r->kv, r->x, r->out, r->ws, r->ws_bytes, r->stream)
                : rank_allreduce(s, r, rank, &rc);
    return e != cudaSuccess ? e : cudaEventRecord(r->joined, r->stream);
}

typedef struct worker_arg {
    tp_state *s;
    int rank;
} worker_arg;

static void *worker_main(void *arg)
{
    worker_arg *a = arg;
    tp_state *s = a->s;
    const int rank = a->rank;
    free(a);
    cudaSetDevice(s->r[rank].device);
    int seen = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->gen == seen)
            pthread_cond_wait(&s->cv, &s->mu);
        seen = s->gen;
        const int cmd = s->cmd;
        pthread_mutex_unlock(&s->mu);
        if (cmd == CMD_QUIT)
            return NULL;
        const cudaError_t e = rank_enqueue(s, rank);
        pthread_mutex_lock(&s->mu);
        s->r[rank].error = e;
        if (--s->pending == 0)
            pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
}

/* Hands every worker the command (a new generation) and, unless it is CMD_QUIT, waits until each has enqueued it. */
static void command(tp_state *s, int cmd, pl_tp_allreduce algo)
{
    pthread_mutex_lock(&s->mu);
    s->cmd = cmd;
    s->algo = algo;
    s->pending = s->started;
    s->gen++;
    pthread_cond_broadcast(&s->cv);
    while (cmd != CMD_QUIT && s->pending > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* Every rank enqueues the command (from its own thread: NCCL's ranks and perflab's spinning kernels need every rank's
 * launch), then ctx->stream waits for all of them. */
static int dispatch(pl_ctx *ctx, tp_state *s, int cmd, pl_tp_allreduce algo)
{
    if (algo != PL_TP_AR_NCCL && !s->have_ar)
        return pl_fail(ctx, "perflab's all-reduce is not available here: %s", s->ar_error);
    PL_CUDA(ctx, cudaEventRecord(s->fork, ctx->stream));
    command(s, cmd, algo);
    for (int i = 0; i < s->n; i++)
        if (s->r[i].error != cudaSuccess)
            return pl_fail(ctx, "rank %d (GPU %d): %s", i, s->r[i].device, cudaGetErrorString(s->r[i].error));
    for (int i = 0; i < s->n; i++)
        PL_CUDA(ctx, cudaStreamWaitEvent(ctx->stream, s->r[i].joined, 0));
    s->last_cmd = cmd;
    return 0;
}

static int run_nccl(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_STEP, PL_TP_AR_NCCL);
}

static int run_oneshot(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_STEP, PL_TP_AR_ONESHOT);
}

static int run_twoshot(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_STEP, PL_TP_AR_TWOSHOT);
}

static int run_ar_nccl(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_ALLREDUCE, PL_TP_AR_NCCL);
}

static int run_ar_oneshot(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_ALLREDUCE, PL_TP_AR_ONESHOT);
}

static int run_ar_twoshot(pl_ctx *ctx, void *state)
{
    return dispatch(ctx, state, CMD_ALLREDUCE, PL_TP_AR_TWOSHOT);
}

/* ---- setup and teardown ---- */

/* The single-GPU pool's kv heads [head0, head0 + kvs) (host copy `whole`) into the rank's pool. */
static cudaError_t upload_heads(const e2e_layer *L, const uint16_t *whole, int head0, int kvs, uint16_t *dev)
{
    const size_t hd = (size_t)L->m->head_dim, KV = (size_t)L->m->kv_heads, rows = L->pool_elems / (KV * hd);
    return cudaMemcpy2D(dev, (size_t)kvs * hd * 2, whole + (size_t)head0 * hd, KV * hd * 2, (size_t)kvs * hd * 2, rows,
                        cudaMemcpyHostToDevice);
}

static cudaError_t rank_alloc(const e2e_layer *L, tp_rank *r)
{
    const size_t xn = (size_t)L->rows * L->m->hidden, B = (size_t)L->rows;
    const size_t pool = L->pool_elems / (size_t)L->m->kv_heads * (size_t)r->w.shard.kv_heads;
    void **const bufs[] = {(void **)&r->kv.k,     (void **)&r->kv.v,  (void **)&r->x,      (void **)&r->out,
                           (void **)&r->part,     (void **)&r->sum,   (void **)&r->ar_out, (void **)&r->positions,
                           (void **)&r->seq_lens, (void **)&r->table, (void **)&r->slots,  &r->ws};
    const size_t bytes[] = {pool * 2,
                            pool * 2,
                            xn * 2,
                            xn * 2,
                            xn * 2,
                            xn * 2,
                            xn * 2,
                            B * sizeof(int),
                            B * sizeof(int),
                            B * (size_t)L->max_pages * sizeof(int),
                            B * sizeof(int64_t),
                            r->ws_bytes};
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        cudaError_t e = cudaMalloc(bufs[i], bytes[i]);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/* Rank i's weights, buffers and inputs on GPU i: the single-GPU layer's inputs, its cache's kv heads. */
static int rank_setup(pl_ctx *ctx, tp_state *s, int i, const uint16_t *kc, const uint16_t *vc)
{
    const e2e_layer *L = s->L;
    tp_rank *r = &s->r[i];
    char err[512];
    r->device = i;
    PL_CUDA(ctx, cudaSetDevice(i));
    PL_CUDA(ctx, cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, i));
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&r->joined, cudaEventDisableTiming));
    if (pl_tp_weights_alloc(L->m, ctx->seed, i, s->n, &r->w, err, sizeof err) != 0)
        return pl_fail(ctx, "rank %d: %s", i, err);
    r->ws_bytes = pl_tp_workspace_bytes(&r->w, L->rows, r->sm_count);
    PL_CUDA(ctx, rank_alloc(L, r));
    const int kvs = r->w.shard.kv_heads;
    const size_t xn = (size_t)L->rows * L->m->hidden, B = (size_t)L->rows;
    PL_CUDA(ctx, upload_heads(L, kc, i * kvs, kvs, r->kv.k));
    PL_CUDA(ctx, upload_heads(L, vc, i * kvs, kvs, r->kv.v));
    PL_CUDA(ctx, cudaMemcpyPeer(r->x, i, L->x, s->home, xn * 2));
    PL_CUDA(ctx, cudaMemcpy(r->positions, L->positions_h, B * sizeof(int), cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(r->seq_lens, L->lens, B * sizeof(int), cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(r->slots, L->slots_h, B * sizeof(int64_t), cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(r->table, L->table, B * L->max_pages * sizeof(int), cudaMemcpyHostToDevice));
    PL_CUDA(ctx,
            pl_engine_fill_uniform(r->part, xn, ctx->seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 1, -1.0f, 1.0f, 0));
    PL_CUDA(ctx, cudaDeviceSynchronize());
    return 0;
}

static void tp_release(pl_ctx *ctx, tp_state *s)
{
    if (s->started) {
        command(s, CMD_QUIT, PL_TP_AR_NCCL);
        for (int i = 0; i < s->started; i++)
            pthread_join(s->threads[i], NULL);
    }
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    for (int i = 0; i < s->n; i++) {
        tp_rank *r = &s->r[i];
        cudaSetDevice(i);
        void *bufs[] = {r->kv.k,   r->kv.v,      r->x,        r->out,   r->part,  r->sum,
                        r->ar_out, r->positions, r->seq_lens, r->table, r->slots, r->ws};
        for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; b++)
            cudaFree(bufs[b]);
        pl_tp_weights_free(&r->w);
        if (r->joined)
            cudaEventDestroy(r->joined);
        if (r->stream)
            cudaStreamDestroy(r->stream);
        if (s->comms[i])
            ncclCommDestroy(s->comms[i]);
    }
    if (s->have_ar)
        pl_ar_teardown(s->ar, s->n);
    cudaSetDevice(s->home);
    if (s->fork)
        cudaEventDestroy(s->fork);
    if (s->L)
        e2e_layer_teardown(ctx, s->L);
    free(s);
}

/* The communicators, perflab's all-reduce (when the GPUs reach each other), the workers. */
static int comm_setup(pl_ctx *ctx, tp_state *s)
{
    int devices[PL_AR_MAX_RANKS];
    for (int i = 0; i < s->n; i++)
        devices[i] = i;
    const ncclResult_t nr = ncclCommInitAll(s->comms, s->n, devices);
    if (nr != ncclSuccess)
        return pl_fail(ctx, "ncclCommInitAll over %d GPUs: %s", s->n, ncclGetErrorString(nr));
    const size_t bytes = (size_t)s->L->rows * s->L->m->hidden * 2;
    s->have_ar = pl_ar_setup(s->ar, s->n, devices, bytes, s->ar_error, sizeof s->ar_error) == 0;
    PL_CUDA(ctx, cudaSetDevice(s->home));
    PL_CUDA(ctx, cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming));
    for (; s->started < s->n; s->started++) {
        worker_arg *a = malloc(sizeof *a);
        if (!a)
            return pl_fail(ctx, "out of host memory");
        *a = (worker_arg){s, s->started};
        if (pthread_create(&s->threads[s->started], NULL, worker_main, a) != 0) {
            free(a);
            return pl_fail(ctx, "cannot start the worker thread of rank %d", s->started);
        }
    }
    return 0;
}

static int tp_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    const int n = (int)pl_param_int(p, "tp");
    if (n > ctx->device_count)
        return pl_fail(ctx, "--tp %d, but %d GPUs are visible: pass --tp %d or fewer", n, ctx->device_count,
                       ctx->device_count);
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return pl_fail(ctx, "out of host memory");
    s->n = n;
    s->home = ctx->device->ordinal;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (e2e_layer_setup_bf16(ctx, p, e2e_decode_seqs(p), e2e_decode_len(p), &s->L) != 0) {
        s->L = NULL;
        tp_release(ctx, s);
        return -1;
    }
    uint16_t *kc = malloc(s->L->pool_elems * 2), *vc = malloc(s->L->pool_elems * 2);
    int rc = kc && vc ? 0 : pl_fail(ctx, "out of host memory for the cache's copy");
    if (rc == 0 && (cudaMemcpy(kc, s->L->kv.k, s->L->pool_elems * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
                    cudaMemcpy(vc, s->L->kv.v, s->L->pool_elems * 2, cudaMemcpyDeviceToHost) != cudaSuccess))
        rc = pl_fail(ctx, "copying the single-GPU layer's cache to the host failed");
    for (int i = 0; rc == 0 && i < n; i++)
        rc = rank_setup(ctx, s, i, kc, vc);
    free(kc), free(vc);
    if (rc == 0)
        rc = comm_setup(ctx, s);
    cudaSetDevice(s->home);
    if (rc != 0) {
        tp_release(ctx, s);
        return -1;
    }
    *state = s;
    return 0;
}

static void tp_teardown(pl_ctx *ctx, void *state)
{
    tp_release(ctx, state);
}

/* ---- the checks ---- */

static int tp_poison(pl_ctx *ctx, void *state)
{
    tp_state *s = state;
    const size_t bytes = (size_t)s->L->rows * s->L->m->hidden * 2;
    for (int i = 0; i < s->n; i++) {
        PL_CUDA(ctx, cudaSetDevice(i));
        PL_CUDA(ctx, cudaMemset(s->r[i].out, 0xff, bytes));
        PL_CUDA(ctx, cudaMemset(s->r[i].ar_out, 0xff, bytes));
        PL_CUDA(ctx, cudaMemset(s->r[i].ws, 0xff, s->r[i].ws_bytes)); /* the rank's intermediates */
        PL_CUDA(ctx, cudaDeviceSynchronize());
    }
    PL_CUDA(ctx, cudaSetDevice(s->home));
    return e2e_layer_poison(ctx, s->L);
}

/* The reference rows' result: out = (x + Σ part) + Σ part, each sum rounded to bf16 before the add, in float64. */
static int allreduce_expect(pl_ctx *ctx, const tp_state *s, const uint16_t *x, double *want)
{
    const size_t xn = (size_t)s->L->rows * s->L->m->hidden;
    uint16_t *part = malloc(xn * 2);
    double *sum = calloc(xn, sizeof *sum);
    int rc = part && sum ? 0 : pl_fail(ctx, "out of host memory for the check");
    for (int i = 0; rc == 0 && i < s->n; i++) {
        if (cudaMemcpy(part, s->r[i].part, xn * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
            rc = pl_fail(ctx, "reading rank %d's partial product failed", i);
            break;
        }
        for (size_t e = 0; e < xn; e++)
            sum[e] += pl_bf16_to_double(part[e]);
    }
    for (size_t e = 0; rc == 0 && e < xn; e++) {
        const double h = pl_bf16_to_double(pl_bf16_round_host((float)(pl_bf16_to_double(x[e]) + sum[e])));
        want[e] = h + sum[e];
    }
    free(part), free(sum);
    return rc;
}

/* Every rank's output bit-identical to rank 0's; then rank 0's against the single-GPU layer's checks (a step) or the
 * float64 sum (the all-reduce alone). */
static int tp_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    tp_state *s = state;
    e2e_layer *L = s->L;
    const size_t xn = (size_t)L->rows * L->m->hidden;
    uint16_t *first = malloc(xn * 2), *other = malloc(xn * 2);
    double *want = malloc(xn * sizeof *want);
    int rc = first && other && want ? 0 : pl_fail(ctx, "out of host memory for the check");
    int same = 1;
    /* the ranks' streams are not ordered with the copies below: ctx->stream joined them all */
    const cudaError_t synced = rc == 0 ? cudaStreamSynchronize(ctx->stream) : cudaSuccess;
    if (synced != cudaSuccess)
        rc = pl_fail(ctx, "the step failed on the GPU: %s", cudaGetErrorString(synced));
    for (int i = 0; rc == 0 && i < s->n; i++) {
        const uint16_t *dev = s->last_cmd == CMD_STEP ? s->r[i].out : s->r[i].ar_out;
        if (cudaMemcpy(i ? other : first, dev, xn * 2, cudaMemcpyDeviceToHost) != cudaSuccess)
            rc = pl_fail(ctx, "reading rank %d's output failed", i);
        else if (i && memcmp(first, other, xn * 2) != 0)
            same = 0;
    }
    if (rc == 0 && s->last_cmd == CMD_STEP) {
        PL_CUDA(ctx, cudaMemcpyPeer(L->out, s->home, s->r[0].out, 0, xn * 2));
        rc = e2e_layer_check_output(ctx, L, v);
    } else if (rc == 0) {
        uint16_t *x = malloc(xn * 2);
        rc = x && cudaMemcpy(x, s->r[0].x, xn * 2, cudaMemcpyDeviceToHost) == cudaSuccess
                 ? allreduce_expect(ctx, s, x, want)
                 : pl_fail(ctx, "reading the residual stream failed");
        if (rc == 0)
            pl_verify_bf16(first, want, xn, 0, v);
        free(x);
    }
    if (rc == 0 && !same) {
        v->passed = 0;
        snprintf(v->message, sizeof v->message, "FAILED: the ranks' outputs differ (they must hold the same bits)");
    }
    free(first), free(other), free(want);
    return rc;
}

static const pl_variant tp_variants[] = {
    PL_VARIANT("baseline", run_nccl,
               "the layer split over --tp GPUs (perflab GEMMs, fast attention, fused), each all-reduce NCCL's "
               "(ncclAllReduce bf16 sum in place) then the residual-add kernel",
               .flags = PL_VARIANT_NO_GRAPH),
    PL_VARIANT("oneshot", run_oneshot,
               "+ perflab's one-shot all-reduce: every rank reads every peer's buffer over NVLink, flags in device "
               "memory, the residual in the same kernel",
               .flags = PL_VARIANT_NO_GRAPH),
    PL_VARIANT("twoshot", run_twoshot,
               "perflab's two-shot all-reduce instead: reduce-scatter then all-gather through the peers",
               .flags = PL_VARIANT_NO_GRAPH),
    PL_VARIANT("allreduce_nccl", run_ar_nccl,
               "the step's communication alone: two NCCL all-reduces of batch × hidden bf16, each with the "
               "residual add",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_REFERENCE),
    PL_VARIANT("allreduce_oneshot", run_ar_oneshot,
               "the step's communication alone: two one-shot all-reduces with the residual",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_REFERENCE),
    PL_VARIANT("allreduce_twoshot", run_ar_twoshot,
               "the step's communication alone: two two-shot all-reduces with the residual",
               .flags = PL_VARIANT_NO_GRAPH | PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_e2e_tp_layer_decode = {
    .group = "e2e",
    .name = "tp_layer_decode",
    .summary = "a dense decoder layer's decode step split over several GPUs (tensor parallel), by all-reduce, with "
               "the step's communication alone as reference rows",
    .req = {.needs_gpu = 1, .min_cc = 80, .min_gpus = 2},
    .params = tp_params,
    .variants = tp_variants,
    .counters = tp_counters,
    .setup = tp_setup,
    .poison = tp_poison,
    .check = tp_check,
    .teardown = tp_teardown,
    .check_params = tp_check_params,
};
