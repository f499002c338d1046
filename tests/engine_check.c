/* What the engine's GPU tests share (engine_check.h). */
#include <math.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "engine_check.h"
#include "perflab/device.h"
#include "perflab/verify.h"
#include "testutil.h" /* Check, with passing assertions cheap (the cache checks run per element) */

void pl_test_fill_pm1_bf16(uint16_t *p, size_t n, pl_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        const double v = 2.0 * pl_rng_uniform(r) - 1.0;
        p[i] = pl_bf16_round_host((float)(fabs(v) < 1e-3 ? 0.5 : v));
    }
}

void *pl_test_dev_copy(const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    ck_assert(h != NULL);
    ck_assert_msg(cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess, "copying %zu bytes back failed",
                  bytes);
    return h;
}

int pl_test_scatter_pages(pl_kv_pool *pool, pl_kv_seq *seqs, int nseq, const int *need, int page_size, int *max_pages)
{
    int pages = 2, any = 1;
    int *left = calloc((size_t)(nseq > 0 ? nseq : 1), sizeof *left);
    ck_assert(left != NULL);
    for (int s = 0; s < nseq; s++)
        pages += pl_kv_pages_for(need[s], page_size), left[s] = need[s];
    ck_assert_int_eq(pl_kv_pool_init(pool, pages, page_size), 0);
    while (any) {
        any = 0;
        for (int s = 0; s < nseq; s++)
            if (left[s] > 0) {
                const int n = left[s] < page_size ? left[s] : page_size;
                ck_assert_int_eq(pl_kv_seq_append(pool, &seqs[s], n), PL_KV_OK);
                left[s] -= n, any = 1;
            }
    }
    free(left);
    *max_pages = 1;
    for (int s = 0; s < nseq; s++)
        *max_pages = seqs[s].npages > *max_pages ? seqs[s].npages : *max_pages;
    return pages;
}

void pl_test_poison_slots(uint16_t *k, uint16_t *v, const int64_t *slots, int nrows, size_t row_elems)
{
    for (int i = 0; i < nrows; i++) {
        ck_assert(cudaMemset(k + (size_t)slots[i] * row_elems, 0xff, row_elems * 2) == cudaSuccess);
        ck_assert(cudaMemset(v + (size_t)slots[i] * row_elems, 0xff, row_elems * 2) == cudaSuccess);
    }
}

void pl_test_check_cache(const char *tag, const uint16_t *before, const uint16_t *after, const uint16_t *ref,
                         size_t cache_elems, size_t row_elems, const int64_t *slots, int nrows)
{
    const size_t rows = cache_elems / row_elems;
    char *written = calloc(rows ? rows : 1, 1);
    ck_assert(written != NULL);
    double r2 = 0;
    for (int i = 0; i < nrows; i++) {
        ck_assert((size_t)slots[i] < rows);
        written[slots[i]] = 1;
        for (size_t e = 0; e < row_elems; e++) {
            const double v = pl_bf16_to_double(ref[(size_t)slots[i] * row_elems + e]);
            r2 += v * v;
        }
    }
    const double rms = sqrt(r2 / ((double)(nrows > 0 ? nrows : 1) * row_elems));
    for (size_t i = 0; i < cache_elems; i++) {
        if (!written[i / row_elems]) {
            ck_assert_msg(after[i] == before[i],
                          "%s: cache element %zu changed (0x%04x -> 0x%04x) outside the rows' "
                          "slots",
                          tag, i, before[i], after[i]);
            continue;
        }
        const double got = pl_bf16_to_double(after[i]), want = pl_bf16_to_double(ref[i]);
        ck_assert_msg(fabs(got - want) <= (fabs(want) + rms) / 64,
                      "%s: cache element %zu (slot %zu) is %.6g, the reference %.6g", tag, i, i / row_elems, got, want);
    }
    free(written);
}

void pl_test_run_step(pl_test_step_fn step, void *arg, int mode, const uint16_t *x, uint16_t *out, size_t x_bytes)
{
    if (mode == 1) {
        ck_assert(cudaMemcpy(out, x, x_bytes, cudaMemcpyDeviceToDevice) == cudaSuccess);
        x = out;
    }
    if (mode != 2) {
        const cudaError_t e = step(arg, x, 0);
        ck_assert_msg(e == cudaSuccess, "the step: %s", cudaGetErrorString(e));
        ck_assert(cudaDeviceSynchronize() == cudaSuccess);
        return;
    }
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t exec;
    ck_assert(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    ck_assert(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    const cudaError_t rc = step(arg, x, s);
    ck_assert(cudaStreamEndCapture(s, &g) == cudaSuccess);
    ck_assert_msg(rc == cudaSuccess, "the step under capture: %s", cudaGetErrorString(rc));
    ck_assert(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    ck_assert(cudaGraphLaunch(exec, s) == cudaSuccess);
    ck_assert(cudaStreamSynchronize(s) == cudaSuccess);
    ck_assert(cudaGraphExecDestroy(exec) == cudaSuccess);
    ck_assert(cudaGraphDestroy(g) == cudaSuccess);
    ck_assert(cudaStreamDestroy(s) == cudaSuccess);
}

void pl_test_kv_make(size_t cache_elems, pl_rng *rng, uint16_t **kc_h, uint16_t **vc_h, uint16_t **k, uint16_t **v)
{
    *kc_h = malloc(cache_elems * 2);
    *vc_h = malloc(cache_elems * 2);
    ck_assert(*kc_h && *vc_h);
    pl_test_fill_pm1_bf16(*kc_h, cache_elems, rng);
    pl_test_fill_pm1_bf16(*vc_h, cache_elems, rng);
    ck_assert(cudaMalloc((void **)k, cache_elems * 2) == cudaSuccess);
    ck_assert(cudaMalloc((void **)v, cache_elems * 2) == cudaSuccess);
    ck_assert(cudaMemcpy(*k, *kc_h, cache_elems * 2, cudaMemcpyHostToDevice) == cudaSuccess);
    ck_assert(cudaMemcpy(*v, *vc_h, cache_elems * 2, cudaMemcpyHostToDevice) == cudaSuccess);
}

void pl_test_step_alloc(int max_rows, int hidden, int nseq, int max_pages, uint16_t **x, uint16_t **out, int **pos,
                        int64_t **slots, int **lens, int **table)
{
    const size_t xn = (size_t)max_rows * hidden;
    ck_assert(cudaMalloc((void **)x, xn * 2) == cudaSuccess);
    ck_assert(cudaMalloc((void **)out, xn * 2) == cudaSuccess);
    ck_assert(cudaMalloc((void **)pos, (size_t)max_rows * sizeof(int)) == cudaSuccess);
    ck_assert(cudaMalloc((void **)slots, (size_t)max_rows * sizeof(int64_t)) == cudaSuccess);
    ck_assert(cudaMalloc((void **)lens, (size_t)nseq * sizeof(int)) == cudaSuccess);
    ck_assert(cudaMalloc((void **)table, (size_t)nseq * max_pages * sizeof(int)) == cudaSuccess);
}
