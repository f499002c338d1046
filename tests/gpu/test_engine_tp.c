/* On 2, 4 and 8 GPUs (the counts this machine has; exit 77 with the reason below 2), one thread a GPU: the
 * tensor-parallel dense layer's decode step (engine/tp_layer.h), tiny-dense-tp at batch 1, 3 and 64 (cache lengths no
 * multiple of the 16-token page, pages scattered), two recipes (cuBLAS eager; perflab GEMMs, fast attention, fused),
 * each all-reduce (NCCL, perflab's one-shot and two-shot): every rank's output equal to the single-GPU layer's (same
 * weights, inputs and cache) within twice the bf16 tolerance test_engine_layer holds each against the exact layer
 * (pl_layer_ref_accept_within 2e-2: two bf16 results, each summed in its own order), the ranks'
 * outputs bit-identical, each rank's new K/V rows within (|ref| + rms) / 64 of the single-GPU layer's rows of its kv
 * heads and every other element of its pools unchanged. The all-reduce alone is tests/gpu/test_allreduce_gpu.c.
 * perflab's all-reduces are skipped with the reason where the GPUs lack peer access. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "common/layer_ref.h"
#include "engine/kv_pages.h"
#include "engine/tp_layer.h"
#include "multigpu.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "perflab/verify.h"
#include "testutil.h"

#define PAGE      16
#define MAX_RANKS PL_AR_MAX_RANKS
#define COUNT(a)  ((int)(sizeof(a) / sizeof((a)[0])))
#define CK(call)  ck_assert_msg((call) == cudaSuccess, "%s failed", #call)

static int g_gpus; /* GPUs this machine has */
static const int rank_counts[] = {2, 4, 8};

static double bf(uint16_t b)
{
    return pl_bf16_to_double(b);
}

/* ---- the layer ---- */

static const int tp_batches[] = {1, 3, 64};
#define TP_RECIPES 2
#define TP_ARS     3
#define MAX_BATCH  64
static const char *const tp_recipe_names[TP_RECIPES] = {"cuBLAS eager", "perflab fused"};
static const char *const tp_ar_names[TP_ARS] = {"NCCL", "one-shot", "two-shot"};

/* One decode step's inputs on the host, the same for the single-GPU layer and every rank. */
typedef struct tp_step {
    const pl_model_config *m;
    int batch, max_pages;
    size_t pool_rows; /* pages · PAGE */
    int pos[MAX_BATCH], seq_lens[MAX_BATCH];
    int64_t slots[MAX_BATCH];
    unsigned char *is_new; /* [pool_rows]: the step's slots */
    int *table;            /* [batch][max_pages] */
    uint16_t *x;           /* [batch][hidden] */
    uint16_t *kc, *vc;     /* the whole caches, [pool_rows][kv_heads][head_dim] */
} tp_step;

static void fill_random(uint16_t *p, size_t n, pl_rng *g)
{
    for (size_t i = 0; i < n; i++) {
        const double v = 2.0 * pl_rng_uniform(g) - 1.0;
        p[i] = pl_bf16_round_host((float)(fabs(v) < 1e-3 ? 0.5 : v));
    }
}

/* Sequences of 1 + (37·s + 11) % 150 cached tokens (bumped off multiples of the page), their pages handed out a page
 * per sequence in turn (scattered), the new token's slot; random x and caches. */
static void tp_step_make(tp_step *t, const pl_model_config *m, int batch, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    t->m = m;
    t->batch = batch;
    pl_kv_seq seqs[MAX_BATCH];
    memset(seqs, 0, sizeof seqs);
    int left[MAX_BATCH], pages = 1, any = 1;
    for (int s = 0; s < batch; s++) {
        int len = 1 + (37 * s + 11) % 150;
        len += len % PAGE == 0;
        t->pos[s] = len;
        t->seq_lens[s] = len + 1;
        left[s] = len + 1;
        pages += pl_kv_pages_for(len + 1, PAGE);
    }
    pl_kv_pool pool;
    ck_assert_int_eq(pl_kv_pool_init(&pool, pages, PAGE), 0);
    while (any) {
        any = 0;
        for (int s = 0; s < batch; s++)
            if (left[s] > 0) {
                const int n = left[s] < PAGE ? left[s] : PAGE;
                ck_assert_int_eq(pl_kv_seq_append(&pool, &seqs[s], n), PL_KV_OK);
                left[s] -= n, any = 1;
            }
    }
    t->max_pages = 1;
    for (int s = 0; s < batch; s++)
        t->max_pages = seqs[s].npages > t->max_pages ? seqs[s].npages : t->max_pages;
    t->pool_rows = (size_t)pages * PAGE;
    t->table = malloc((size_t)batch * t->max_pages * sizeof(int));
    t->is_new = calloc(t->pool_rows, 1);
    int lens[MAX_BATCH];
    ck_assert(t->table && t->is_new);
    ck_assert_int_eq(pl_kv_block_table(seqs, batch, t->max_pages, t->table, lens), 0);
    for (int s = 0; s < batch; s++) {
        t->slots[s] = pl_kv_slot(&seqs[s], t->pos[s], PAGE);
        t->is_new[t->slots[s]] = 1;
        pl_kv_seq_destroy(&pool, &seqs[s]);
    }
    pl_kv_pool_destroy(&pool);
    const size_t cache = t->pool_rows * m->kv_heads * m->head_dim, xn = (size_t)batch * m->hidden;
    t->x = malloc(xn * 2);
    t->kc = malloc(cache * 2);
    t->vc = malloc(cache * 2);
    ck_assert(t->x && t->kc && t->vc);
    pl_rng g;
    pl_rng_seed(&g, seed);
    fill_random(t->x, xn, &g);
    fill_random(t->kc, cache, &g);
    fill_random(t->vc, cache, &g);
}

static void tp_step_free(tp_step *t)
{
    free(t->table), free(t->is_new), free(t->x), free(t->kc), free(t->vc);
}

/* A step's device buffers on one GPU; the pools hold `kv_heads` heads of the whole caches from head0 on. */
typedef struct dev_step {
    int kv_heads, head0;
    size_t cache_elems;
    pl_layer_kv kv;
    uint16_t *x, *out, *kc_h, *vc_h; /* kc_h, vc_h: the pools' host contents before the step */
    int *pos, *lens, *table;
    int64_t *slots;
    void *ws;
    size_t ws_bytes;
} dev_step;

/* The whole caches' heads [head0, head0 + kv_heads) as pools [pool_rows][kv_heads][head_dim]. */
static uint16_t *heads_of(const tp_step *t, const uint16_t *whole, int head0, int kv_heads)
{
    const size_t hd = (size_t)t->m->head_dim, KV = (size_t)t->m->kv_heads;
    uint16_t *p = malloc(t->pool_rows * kv_heads * hd * 2);
    ck_assert(p != NULL);
    for (size_t row = 0; row < t->pool_rows; row++)
        memcpy(p + row * kv_heads * hd, whole + (row * KV + (size_t)head0) * hd, kv_heads * hd * 2);
    return p;
}

/* On the current GPU: 0, or the first error. */
static cudaError_t dev_step_alloc(dev_step *d, const tp_step *t, int head0, int kv_heads, size_t ws_bytes)
{
    memset(d, 0, sizeof *d);
    d->kv_heads = kv_heads;
    d->head0 = head0;
    d->cache_elems = t->pool_rows * kv_heads * t->m->head_dim;
    d->ws_bytes = ws_bytes;
    d->kc_h = heads_of(t, t->kc, head0, kv_heads);
    d->vc_h = heads_of(t, t->vc, head0, kv_heads);
    const size_t xn = (size_t)t->batch * t->m->hidden, B = (size_t)t->batch;
    cudaError_t e;
    if ((e = cudaMalloc((void **)&d->kv.k, d->cache_elems * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->kv.v, d->cache_elems * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->x, xn * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->out, xn * 2)) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->pos, B * sizeof(int))) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->lens, B * sizeof(int))) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->slots, B * sizeof(int64_t))) != cudaSuccess ||
        (e = cudaMalloc((void **)&d->table, B * t->max_pages * sizeof(int))) != cudaSuccess ||
        (e = cudaMalloc(&d->ws, ws_bytes)) != cudaSuccess)
        return e;
    if ((e = cudaMemcpy(d->pos, t->pos, B * sizeof(int), cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d->lens, t->seq_lens, B * sizeof(int), cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d->slots, t->slots, B * sizeof(int64_t), cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d->table, t->table, B * t->max_pages * sizeof(int), cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d->x, t->x, xn * 2, cudaMemcpyHostToDevice)) != cudaSuccess)
        return e;
    return cudaSuccess;
}

/* Before each run: the pools as the step found them, the output and the workspace NaN. */
static cudaError_t dev_step_reset(dev_step *d, const tp_step *t)
{
    cudaError_t e;
    if ((e = cudaMemcpy(d->kv.k, d->kc_h, d->cache_elems * 2, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(d->kv.v, d->vc_h, d->cache_elems * 2, cudaMemcpyHostToDevice)) != cudaSuccess ||
        (e = cudaMemset(d->out, 0xff, (size_t)t->batch * t->m->hidden * 2)) != cudaSuccess)
        return e;
    return cudaMemset(d->ws, 0xff, d->ws_bytes);
}

static void dev_step_free(dev_step *d)
{
    void *dev[] = {d->kv.k, d->kv.v, d->x, d->out, d->pos, d->lens, d->slots, d->table, d->ws};
    for (int i = 0; i < COUNT(dev); i++)
        cudaFree(dev[i]);
    free(d->kc_h), free(d->vc_h);
}

static pl_decode_step decode_of(const dev_step *d, const tp_step *t)
{
    return (pl_decode_step){t->batch, PAGE, t->max_pages, d->pos, d->slots, d->table, d->lens};
}

/* Recipe i: 0 cuBLAS, simple attention, unfused; 1 perflab GEMMs, fast attention, fused. */
static pl_layer_recipe recipe_of(int i, int sm_count, cublasHandle_t cublas)
{
    pl_layer_recipe ladder[PL_LAYER_LADDER_STEPS];
    pl_layer_recipe_ladder(sm_count, cublas, ladder);
    return ladder[i == 0 ? PL_LAYER_LADDER_BASELINE : PL_LAYER_LADDER_FUSED];
}

/* A run's results, host copies: the output and the pools after the step. */
typedef struct run_out {
    uint16_t *out, *kc, *vc;
} run_out;

static cudaError_t run_out_take(run_out *o, const dev_step *d, const tp_step *t)
{
    const size_t xn = (size_t)t->batch * t->m->hidden;
    o->out = malloc(xn * 2);
    o->kc = malloc(d->cache_elems * 2);
    o->vc = malloc(d->cache_elems * 2);
    if (!o->out || !o->kc || !o->vc)
        return cudaErrorMemoryAllocation;
    cudaError_t e;
    if ((e = cudaMemcpy(o->out, d->out, xn * 2, cudaMemcpyDeviceToHost)) != cudaSuccess ||
        (e = cudaMemcpy(o->kc, d->kv.k, d->cache_elems * 2, cudaMemcpyDeviceToHost)) != cudaSuccess)
        return e;
    return cudaMemcpy(o->vc, d->kv.v, d->cache_elems * 2, cudaMemcpyDeviceToHost);
}

static void run_out_free(run_out *o)
{
    free(o->out), free(o->kc), free(o->vc);
    memset(o, 0, sizeof *o);
}

/* The single-GPU layer on GPU 0, each recipe. */
static void single_gpu(const tp_step *t, uint64_t seed, run_out *ref)
{
    char err[512];
    CK(cudaSetDevice(0));
    pl_dense_weights w;
    ck_assert_msg(pl_dense_weights_alloc(t->m, seed, &w, err, sizeof err) == 0, "%s", err);
    int sm = 0;
    CK(cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, 0));
    cublasHandle_t cublas;
    ck_assert(cublasCreate(&cublas) == CUBLAS_STATUS_SUCCESS);
    dev_step d;
    CK(dev_step_alloc(&d, t, 0, t->m->kv_heads, pl_dense_workspace_bytes(t->m, t->batch, sm)));
    const pl_decode_step ds = decode_of(&d, t);
    for (int i = 0; i < TP_RECIPES; i++) {
        const pl_layer_recipe rc = recipe_of(i, sm, cublas);
        CK(dev_step_reset(&d, t));
        CK(pl_dense_layer_decode(&w, &rc, &ds, &d.kv, d.x, d.out, d.ws, d.ws_bytes, 0));
        CK(cudaDeviceSynchronize());
        CK(run_out_take(&ref[i], &d, t));
    }
    dev_step_free(&d);
    cublasDestroy(cublas);
    pl_dense_weights_free(&w);
}

/* What the ranks' threads share: a barrier after their setup and whether any setup failed (then none runs a step, so
 * that no rank waits in an all-reduce for a rank that is gone). */
typedef struct tp_shared {
    pthread_barrier_t setup;
    int failed;
} tp_shared;

typedef struct tp_rank_job {
    tp_shared *shared;
    int rank, nranks;
    const tp_step *t;
    uint64_t seed;
    ncclComm_t nccl;
    pl_ar_rank *ar; /* NULL: no peer access, perflab's all-reduces skipped (on every rank alike) */
    run_out got[TP_RECIPES][TP_ARS];
    char error[512];
} tp_rank_job;

/* Every recipe and all-reduce in the same order on every rank (the all-reduces pair the ranks' calls in order). */
static cudaError_t rank_runs(tp_rank_job *j, const pl_tp_weights *w, dev_step *d, int sm, cublasHandle_t cublas,
                             cudaStream_t stream)
{
    const pl_decode_step ds = decode_of(d, j->t);
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < TP_RECIPES && e == cudaSuccess; i++)
        for (int a = 0; a < TP_ARS && e == cudaSuccess; a++) {
            if (a != PL_TP_AR_NCCL && !j->ar)
                continue;
            const pl_tp_recipe rc = {recipe_of(i, sm, cublas), (pl_tp_allreduce)a, j->nccl, j->ar};
            /* the reset's copies and memsets (legacy stream) finished before the step's stream starts */
            if ((e = dev_step_reset(d, j->t)) == cudaSuccess && (e = cudaDeviceSynchronize()) == cudaSuccess &&
                (e = pl_tp_layer_decode(w, &rc, &ds, &d->kv, d->x, d->out, d->ws, d->ws_bytes, stream)) ==
                    cudaSuccess &&
                (e = cudaStreamSynchronize(stream)) == cudaSuccess)
                e = run_out_take(&j->got[i][a], d, j->t);
            if (e != cudaSuccess)
                snprintf(j->error, sizeof j->error, "rank %d of %d, %s with %s: %s", j->rank, j->nranks,
                         tp_recipe_names[i], tp_ar_names[a], cudaGetErrorString(e));
        }
    return e;
}

static void *tp_rank_main(void *arg)
{
    tp_rank_job *j = arg;
    pl_tp_weights w;
    memset(&w, 0, sizeof w);
    cublasHandle_t cublas = NULL;
    cudaStream_t stream = NULL;
    dev_step d;
    memset(&d, 0, sizeof d);
    int sm = 0;
    cudaError_t e = cudaSetDevice(j->rank);
    const int weights = e == cudaSuccess &&
                        pl_tp_weights_alloc(j->t->m, j->seed, j->rank, j->nranks, &w, j->error, sizeof j->error) == 0;
    if (e == cudaSuccess && weights)
        e = cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, j->rank);
    if (e == cudaSuccess && weights)
        e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e == cudaSuccess && weights && cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS)
        e = cudaErrorNotSupported;
    if (e == cudaSuccess && weights)
        e = dev_step_alloc(&d, j->t, j->rank * w.shard.kv_heads, w.shard.kv_heads,
                           pl_tp_workspace_bytes(&w, j->t->batch, sm));
    if (e != cudaSuccess)
        snprintf(j->error, sizeof j->error, "rank %d of %d, setup: %s", j->rank, j->nranks, cudaGetErrorString(e));
    if (e != cudaSuccess || !weights)
        __atomic_store_n(&j->shared->failed, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&j->shared->setup);
    if (!__atomic_load_n(&j->shared->failed, __ATOMIC_SEQ_CST))
        rank_runs(j, &w, &d, sm, cublas, stream);
    dev_step_free(&d);
    if (cublas)
        cublasDestroy(cublas);
    if (stream)
        cudaStreamDestroy(stream);
    pl_tp_weights_free(&w);
    return NULL;
}

/* Rank r's pools after the step against the single-GPU pools: its new rows within (|ref| + rms) / 64 of the
 * reference's rows of its kv heads, every other element as it was. */
static void compare_pools(const char *tag, const tp_step *t, int head0, int kv_heads, const uint16_t *got,
                          const uint16_t *ref, const uint16_t *before)
{
    const size_t hd = (size_t)t->m->head_dim, KV = (size_t)t->m->kv_heads, row = (size_t)kv_heads * hd;
    double r2 = 0;
    for (int s = 0; s < t->batch; s++)
        for (size_t e = 0; e < KV * hd; e++)
            r2 += bf(ref[(size_t)t->slots[s] * KV * hd + e]) * bf(ref[(size_t)t->slots[s] * KV * hd + e]);
    const double rms = sqrt(r2 / ((double)t->batch * KV * hd));
    for (size_t slot = 0; slot < t->pool_rows; slot++)
        for (size_t e = 0; e < row; e++) {
            const size_t i = slot * row + e, whole = (slot * KV + (size_t)head0) * hd + e;
            if (!t->is_new[slot]) {
                ck_assert_msg(got[i] == before[i], "%s: pool element %zu (slot %zu) changed outside the step's slots",
                              tag, i, slot);
                continue;
            }
            ck_assert_msg(fabs(bf(got[i]) - bf(ref[whole])) <= (fabs(bf(ref[whole])) + rms) / 64,
                          "%s: pool element %zu (slot %zu) is %.6g, the single-GPU layer's %.6g", tag, i, slot,
                          bf(got[i]), bf(ref[whole]));
        }
}

static void tp_compare(const tp_step *t, int n, const tp_rank_job *jobs, const run_out *ref, int have_peers)
{
    const size_t xn = (size_t)t->batch * t->m->hidden;
    const int kvs = t->m->kv_heads / n;
    for (int i = 0; i < TP_RECIPES; i++)
        for (int a = 0; a < TP_ARS; a++) {
            if (a != PL_TP_AR_NCCL && !have_peers)
                continue;
            for (int r = 0; r < n; r++) {
                char tag[160], why[256];
                snprintf(tag, sizeof tag, "%s TP %d batch %d, %s with %s, rank %d", t->m->name, n, t->batch,
                         tp_recipe_names[i], tp_ar_names[a], r);
                const run_out *g = &jobs[r].got[i][a];
                ck_assert_msg(pl_layer_ref_accept_within(g->out, ref[i].out, t->x, xn, 2e-2, why, sizeof why),
                              "%s against the single-GPU layer: %s", tag, why);
                ck_assert_msg(memcmp(g->out, jobs[0].got[i][a].out, xn * 2) == 0,
                              "%s: the output differs from rank 0's (the ranks' residual streams must be identical)",
                              tag);
                uint16_t *kb = heads_of(t, t->kc, r * kvs, kvs), *vb = heads_of(t, t->vc, r * kvs, kvs);
                compare_pools(tag, t, r * kvs, kvs, g->kc, ref[i].kc, kb);
                compare_pools(tag, t, r * kvs, kvs, g->vc, ref[i].vc, vb);
                free(kb), free(vb);
            }
        }
}

START_TEST(tp_layer_decode)
{
    const int n = rank_counts[_i];
    char why[256];
    if (n > g_gpus) {
        printf("tp_layer_decode at %d GPUs: skipped, this machine has %d\n", n, g_gpus);
        return;
    }
    const pl_model_config *m = pl_model_find("tiny-dense-tp", why, sizeof why);
    ck_assert_msg(m != NULL, "%s", why);
    ck_assert_msg(pl_tp_splits(m, n, why, sizeof why), "%s", why);
    int devices[MAX_RANKS] = {0};
    for (int r = 0; r < n; r++)
        devices[r] = r;
    const int have_peers = pl_test_peers_ok(n, why, sizeof why);
    if (!have_peers)
        printf("tp_layer_decode at %d GPUs: perflab's all-reduces skipped, %s\n", n, why);
    pl_ar_rank ar[MAX_RANKS];
    if (have_peers)
        ck_assert_msg(pl_ar_setup(ar, n, devices, (size_t)MAX_BATCH * m->hidden * 2, why, sizeof why) == 0, "%s", why);
    ncclComm_t comms[MAX_RANKS];
    ck_assert_msg(ncclCommInitAll(comms, n, devices) == ncclSuccess, "ncclCommInitAll over %d GPUs failed", n);
    for (int b = 0; b < COUNT(tp_batches); b++) {
        const uint64_t seed = 20261128u + (uint64_t)(n * 10 + b);
        tp_step t;
        tp_step_make(&t, m, tp_batches[b], seed);
        run_out ref[TP_RECIPES];
        memset(ref, 0, sizeof ref);
        single_gpu(&t, seed, ref);
        tp_rank_job jobs[MAX_RANKS];
        memset(jobs, 0, sizeof jobs);
        tp_shared shared = {.failed = 0};
        ck_assert_int_eq(pthread_barrier_init(&shared.setup, NULL, (unsigned)n), 0);
        for (int r = 0; r < n; r++) {
            jobs[r].shared = &shared;
            jobs[r].rank = r, jobs[r].nranks = n, jobs[r].t = &t, jobs[r].seed = seed;
            jobs[r].nccl = comms[r], jobs[r].ar = have_peers ? &ar[r] : NULL;
        }
        pl_test_on_ranks(n, tp_rank_main, jobs, sizeof jobs[0]);
        pthread_barrier_destroy(&shared.setup);
        for (int r = 0; r < n; r++)
            ck_assert_msg(jobs[r].error[0] == '\0', "%s", jobs[r].error);
        tp_compare(&t, n, jobs, ref, have_peers);
        for (int r = 0; r < n; r++)
            for (int i = 0; i < TP_RECIPES; i++)
                for (int a = 0; a < TP_ARS; a++)
                    run_out_free(&jobs[r].got[i][a]);
        for (int i = 0; i < TP_RECIPES; i++)
            run_out_free(&ref[i]);
        tp_step_free(&t);
    }
    for (int r = 0; r < n; r++)
        ncclCommDestroy(comms[r]);
    if (have_peers)
        pl_ar_teardown(ar, n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_tp");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, tp_layer_decode, 0, COUNT(rank_counts));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    g_gpus = pl_test_gpu_count(2, "the tensor-parallel layer test");
    return g_gpus ? pl_run_suite(suite()) : 77;
}
