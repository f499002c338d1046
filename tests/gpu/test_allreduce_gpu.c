/* On 2, 4 and 8 GPUs (the counts this machine has; exit 77 with the reason below 2), one thread a GPU: perflab's
 * all-reduce over peer pointers (kernels/allreduce/allreduce.h) alone. Sizes 1 element (2 B) to 1 Mi elements
 * (2 MiB), odd ones among them; one-shot and two-shot, each plain, with the residual, and in place; every call of
 * every size launched back to back with no host synchronisation between them (epochs, alternating buffer halves,
 * grids of different sizes), then checked: every rank's result equal, bit for bit, to the float64 host sum rounded
 * once to bf16 (the inputs are k/256 with |k| <= 256, so every partial sum is exact in fp32 and float64 alike and
 * the one rounding is the only error), hence identical across ranks and between one-shot and two-shot. Skipped with
 * the reason where the GPUs lack peer access. Refusals: a message over the capacity, an unknown algorithm. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "allreduce/allreduce.h"
#include "multigpu.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "perflab/verify.h"
#include "testutil.h"

#define MAX_RANKS PL_AR_MAX_RANKS
#define COUNT(a)  ((int)(sizeof(a) / sizeof((a)[0])))
#define CK(call)  ck_assert_msg((call) == cudaSuccess, "%s failed", #call)

static int g_gpus; /* GPUs this machine has */
static const int rank_counts[] = {2, 4, 8};

static double bf(uint16_t b)
{
    return pl_bf16_to_double(b);
}

static const size_t ar_sizes[] = {1, 2, 3, 7, 8, 9, 15, 17, 255, 1000, 4097, 65535, 196613, 1048575, 1048576};
#define AR_VARIANTS 6 /* one-shot and two-shot: plain, + residual, in place */

/* Element i of rank r's input of size s (rank -1: the residual): k/256 with k in [-256, 256], exact in bf16. */
static uint16_t ar_value(int r, size_t s, size_t i)
{
    pl_rng g;
    pl_rng_seed(&g, 0x9e3779b97f4a7c15ull * (uint64_t)(r + 2) + s * 7919u + i * 1000003u);
    const int k = (int)(pl_rng_next(&g) % 513) - 256;
    return pl_bf16_round_host((float)k / 256.0f);
}

/* What the ranks' threads share: a barrier after their allocations (a cudaMalloc on one GPU while a peer's kernel
 * waits for this rank's first call could stall behind that kernel) and whether any of them failed (then none
 * launches, so no kernel waits for a rank that will never arrive). */
typedef struct ar_shared {
    pthread_barrier_t ready;
    int failed;
} ar_shared;

typedef struct ar_rank_job {
    pl_ar_rank *ar;
    ar_shared *shared;
    uint16_t *out_h[COUNT(ar_sizes)][AR_VARIANTS]; /* results, host */
    char error[256];
} ar_rank_job;

static void *ar_rank_main(void *arg)
{
    ar_rank_job *j = arg;
    pl_ar_rank *ar = j->ar;
    uint16_t *in[COUNT(ar_sizes)] = {0}, *res[COUNT(ar_sizes)] = {0}, *out[COUNT(ar_sizes)][AR_VARIANTS] = {{0}};
    cudaStream_t s = NULL;
    cudaError_t e = cudaSetDevice(ar->device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int k = 0; k < COUNT(ar_sizes) && e == cudaSuccess; k++) {
        const size_t n = ar_sizes[k];
        uint16_t *h = malloc(2 * n * 2);
        for (size_t i = 0; i < n; i++)
            h[i] = ar_value(ar->rank, n, i), h[n + i] = ar_value(-1, n, i);
        if ((e = cudaMalloc((void **)&in[k], n * 2)) == cudaSuccess &&
            (e = cudaMalloc((void **)&res[k], n * 2)) == cudaSuccess)
            e = cudaMemcpy(in[k], h, n * 2, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(res[k], h + n, n * 2, cudaMemcpyHostToDevice);
        for (int v = 0; v < AR_VARIANTS && e == cudaSuccess; v++)
            if ((e = cudaMalloc((void **)&out[k][v], n * 2)) == cudaSuccess)
                e = cudaMemset(out[k][v], 0xff, n * 2);
        free(h);
    }
    e = e == cudaSuccess ? cudaDeviceSynchronize() : e;
    if (e != cudaSuccess)
        __atomic_store_n(&j->shared->failed, 1, __ATOMIC_SEQ_CST);
    pthread_barrier_wait(&j->shared->ready);
    if (e == cudaSuccess && __atomic_load_n(&j->shared->failed, __ATOMIC_SEQ_CST))
        snprintf(j->error, sizeof j->error, "rank %d: not run, a peer's setup failed", ar->rank);
    /* every call of every size, back to back on the stream: no host synchronisation until the end */
    for (int k = 0; k < COUNT(ar_sizes) && e == cudaSuccess && !j->error[0]; k++) {
        const size_t n = ar_sizes[k];
        for (int v = 0; v < AR_VARIANTS && e == cudaSuccess; v++) {
            const pl_ar_algo algo = v % 2 == 0 ? PL_AR_ONESHOT : PL_AR_TWOSHOT;
            const uint16_t *src = in[k];
            if (v >= 4) { /* in place */
                e = cudaMemcpyAsync(out[k][v], in[k], n * 2, cudaMemcpyDeviceToDevice, s);
                src = out[k][v];
            }
            if (e == cudaSuccess)
                e = pl_ar_allreduce(ar, algo, src, out[k][v], n, v == 2 || v == 3 ? res[k] : NULL, s);
        }
    }
    fprintf(stderr, "allreduce: %d ranks, rank %d: calls launched (%s)\n", ar->nranks, ar->rank,
            e == cudaSuccess ? "ok" : cudaGetErrorString(e));
    e = e == cudaSuccess ? cudaStreamSynchronize(s) : e;
    fprintf(stderr, "allreduce: %d ranks, rank %d: calls finished (%s)\n", ar->nranks, ar->rank,
            e == cudaSuccess ? "ok" : cudaGetErrorString(e));
    for (int k = 0; k < COUNT(ar_sizes) && e == cudaSuccess && !j->error[0]; k++)
        for (int v = 0; v < AR_VARIANTS && e == cudaSuccess; v++) {
            j->out_h[k][v] = malloc(ar_sizes[k] * 2);
            e = cudaMemcpy(j->out_h[k][v], out[k][v], ar_sizes[k] * 2, cudaMemcpyDeviceToHost);
        }
    if (e != cudaSuccess)
        snprintf(j->error, sizeof j->error, "rank %d: %s", ar->rank, cudaGetErrorString(e));
    for (int k = 0; k < COUNT(ar_sizes); k++) {
        cudaFree(in[k]), cudaFree(res[k]);
        for (int v = 0; v < AR_VARIANTS; v++)
            cudaFree(out[k][v]);
    }
    if (s)
        cudaStreamDestroy(s);
    return NULL;
}

/* Every rank's results against rank 0's (bit-identical) and against the exact sum rounded once. */
static void ar_check(int n_ranks, ar_rank_job *jobs)
{
    for (int k = 0; k < COUNT(ar_sizes); k++) {
        const size_t n = ar_sizes[k];
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (int r = 0; r < n_ranks; r++)
                sum += bf(ar_value(r, n, i));
            const uint16_t want = pl_bf16_round_host((float)sum),
                           want_res = pl_bf16_round_host((float)(sum + bf(ar_value(-1, n, i))));
            for (int v = 0; v < AR_VARIANTS; v++)
                for (int r = 0; r < n_ranks; r++) {
                    const uint16_t got = jobs[r].out_h[k][v][i], w = v == 2 || v == 3 ? want_res : want;
                    ck_assert_msg(got == w,
                                  "%d ranks, %zu elements, variant %d, rank %d: element %zu is %.6g (0x%04x), the "
                                  "float64 sum rounded once %.6g (0x%04x)",
                                  n_ranks, n, v, r, i, bf(got), got, bf(w), w);
                }
        }
    }
}

START_TEST(allreduce_alone)
{
    const int n = rank_counts[_i];
    char why[256];
    if (n > g_gpus) {
        printf("allreduce_alone at %d GPUs: skipped, this machine has %d\n", n, g_gpus);
        return;
    }
    if (!pl_test_peers_ok(n, why, sizeof why)) {
        printf("allreduce_alone at %d GPUs: skipped, %s\n", n, why);
        return;
    }
    int devices[MAX_RANKS] = {0};
    for (int r = 0; r < n; r++)
        devices[r] = r;
    pl_ar_rank ar[MAX_RANKS];
    ck_assert_msg(pl_ar_setup(ar, n, devices, ar_sizes[COUNT(ar_sizes) - 1] * 2, why, sizeof why) == 0, "%s", why);
    ar_rank_job jobs[MAX_RANKS];
    memset(jobs, 0, sizeof jobs);
    ar_shared shared = {.failed = 0};
    ck_assert_int_eq(pthread_barrier_init(&shared.ready, NULL, (unsigned)n), 0);
    for (int r = 0; r < n; r++)
        jobs[r].ar = &ar[r], jobs[r].shared = &shared;
    pl_test_on_ranks(n, ar_rank_main, jobs, sizeof jobs[0]);
    pthread_barrier_destroy(&shared.ready);
    for (int r = 0; r < n; r++)
        ck_assert_msg(jobs[r].error[0] == '\0', "%s", jobs[r].error);
    ar_check(n, jobs);
    /* refusals: a message over the capacity, a bad algorithm */
    CK(cudaSetDevice(0));
    ck_assert_int_eq(
        pl_ar_allreduce(&ar[0], PL_AR_ONESHOT, ar[0].buf[0], ar[0].buf[0], ar[0].capacity / 2 + 1, NULL, 0),
        cudaErrorInvalidValue);
    ck_assert_int_eq(pl_ar_allreduce(&ar[0], (pl_ar_algo)7, ar[0].buf[0], ar[0].buf[0], 8, NULL, 0),
                     cudaErrorInvalidValue);
    for (int r = 0; r < n; r++)
        for (int k = 0; k < COUNT(ar_sizes); k++)
            for (int v = 0; v < AR_VARIANTS; v++)
                free(jobs[r].out_h[k][v]);
    pl_ar_teardown(ar, n);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("allreduce");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, allreduce_alone, 0, COUNT(rank_counts));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    g_gpus = pl_test_gpu_count(2, "the all-reduce test");
    return g_gpus ? pl_run_suite(suite()) : 77;
}
