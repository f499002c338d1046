/* The KV page transfer between two paged caches (engine/kv_transfer.h) on two GPUs, both ways, and on one GPU: a
 * sequence's scattered pages (a consecutive run among them) land on other scattered pages of a cache with another
 * page count, bit for bit in every layer's K and V (and an FP8 cache's scales), and every other destination byte keeps
 * its poison. Sources are random bytes, never zeros. Exits 77 below 2 GPUs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/kv_transfer.h"
#include "engine/memory_plan.h"
#include "engine/model_config.h"
#include "multigpu.h"
#include "testutil.h"

#define SRC_PAGES 37
#define DST_PAGES 29
#define POISON    0xA5

static int g_gpus;

/* The sequence's table on each side: 9 pages, 3..5 consecutive on both sides (one run), the rest scattered. */
static const int src_table[] = {30, 2, 11, 12, 13, 7, 36, 0, 19};
static const int dst_table[] = {4, 28, 5, 6, 7, 21, 0, 13, 27};
#define NPAGES ((int)(sizeof src_table / sizeof src_table[0]))

static void check_cuda(cudaError_t e, const char *what)
{
    ck_assert_msg(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
}

/* A cache of `pages` pages on `device`: its placement, and the host copy of its bytes. */
typedef struct side {
    int device, pages;
    pl_model_cache cache;
    uint8_t *host;
} side;

static void side_make(const pl_model_config *c, int layers, int page_size, pl_kv_dtype dt, int device, int pages,
                      side *s)
{
    s->device = device;
    s->pages = pages;
    const size_t bytes = pl_model_cache_bytes(c, layers, pages, page_size, dt);
    void *base = NULL;
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    check_cuda(cudaMalloc(&base, bytes), "cudaMalloc of a cache");
    pl_model_cache_place(c, layers, pages, page_size, dt, base, &s->cache);
    s->host = malloc(bytes);
    ck_assert_ptr_nonnull(s->host);
}

static void side_free(side *s)
{
    cudaSetDevice(s->device);
    cudaFree(s->cache.base);
    free(s->host);
}

/* Byte offset of page p of layer l in array k (0 K, 1 V, 2 K scales, 3 V scales) of a cache of `pages` pages, and
 * one page's bytes there. */
static size_t page_at(const pl_model_cache *c, const pl_kv_transfer_geom *g, int pages, int k, int l, int p,
                      size_t *len)
{
    const size_t rows = (size_t)g->page_size * g->kv_heads, elems = rows * g->head_dim;
    const int fp8 = g->dtype == PL_KV_FP8_E4M3;
    const size_t page = k >= 2 ? rows * sizeof(float) : fp8 ? elems : 2 * elems;
    const void *base = fp8 ? (k == 0   ? (const void *)c->k8
                              : k == 1 ? (const void *)c->v8
                              : k == 2 ? (const void *)c->k_scale
                                       : (const void *)c->v_scale)
                           : (k == 0 ? (const void *)c->k : (const void *)c->v);
    *len = page;
    return (size_t)((const char *)base - (const char *)c->base) + ((size_t)l * pages + (size_t)p) * page;
}

static int dst_index(int page)
{
    for (int i = 0; i < NPAGES; i++)
        if (dst_table[i] == page)
            return i;
    return -1;
}

static void transfer_case(pl_kv_dtype dt, int from, int to)
{
    const pl_model_config *c = pl_model_find("tiny-dense", NULL, 0);
    ck_assert_ptr_nonnull(c);
    const int layers = c->layers, page_size = 16;
    const pl_kv_transfer_geom g = {layers, page_size, c->kv_heads, c->head_dim, dt};
    side s, d;
    side_make(c, layers, page_size, dt, from, SRC_PAGES, &s);
    side_make(c, layers, page_size, dt, to, DST_PAGES, &d);
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(from * 3 + to) ^ (uint64_t)dt;
    for (size_t i = 0; i < s.cache.bytes; i++) { /* random bytes: no zeros pattern a missed copy could match */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        s.host[i] = (uint8_t)(x >> 24) | 1;
    }
    check_cuda(cudaSetDevice(from), "cudaSetDevice");
    check_cuda(cudaMemcpy(s.cache.base, s.host, s.cache.bytes, cudaMemcpyHostToDevice), "filling the source");
    check_cuda(cudaSetDevice(to), "cudaSetDevice");
    check_cuda(cudaMemset(d.cache.base, POISON, d.cache.bytes), "poisoning the destination");
    check_cuda(cudaDeviceSynchronize(), "after the poison");
    char why[256] = "";
    const int peers = pl_kv_transfer_enable_peers(from, to, why, sizeof why);
    printf("kv transfer GPU %d -> %d, %s cache: %s\n", from, to, pl_kv_dtype_name(dt), peers ? "peer access" : why);
    pl_kv_run runs[NPAGES];
    const int nruns = pl_kv_transfer_runs(src_table, dst_table, NPAGES, runs);
    ck_assert_int_eq(nruns, NPAGES - 2); /* pages 11, 12, 13 -> 5, 6, 7 are one run */
    check_cuda(cudaSetDevice(from), "cudaSetDevice");
    cudaStream_t st;
    check_cuda(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
    uint64_t bytes = 0;
    check_cuda(pl_kv_transfer(&g, &s.cache, SRC_PAGES, from, &d.cache, DST_PAGES, to, runs, nruns, st, &bytes),
               "pl_kv_transfer");
    check_cuda(cudaStreamSynchronize(st), "the transfer");
    ck_assert_uint_eq(bytes, (uint64_t)NPAGES * pl_kv_page_bytes(c, layers, page_size, dt));
    /* a run past either pool is refused, nothing enqueued */
    pl_kv_run bad = {.src = SRC_PAGES - 1, .dst = 0, .n = 2};
    ck_assert_int_eq(pl_kv_transfer(&g, &s.cache, SRC_PAGES, from, &d.cache, DST_PAGES, to, &bad, 1, st, NULL),
                     cudaErrorInvalidValue);
    cudaStreamDestroy(st);
    check_cuda(cudaSetDevice(to), "cudaSetDevice");
    check_cuda(cudaMemcpy(d.host, d.cache.base, d.cache.bytes, cudaMemcpyDeviceToHost), "reading the destination");
    const int arrays = dt == PL_KV_FP8_E4M3 ? 4 : 2;
    for (int k = 0; k < arrays; k++)
        for (int l = 0; l < layers; l++)
            for (int p = 0; p < DST_PAGES; p++) {
                size_t len, at = page_at(&d.cache, &g, DST_PAGES, k, l, p, &len);
                const int i = dst_index(p);
                if (i >= 0) {
                    size_t slen, sat = page_at(&s.cache, &g, SRC_PAGES, k, l, src_table[i], &slen);
                    ck_assert_int_eq((int)slen, (int)len);
                    ck_assert_msg(memcmp(d.host + at, s.host + sat, len) == 0,
                                  "array %d layer %d: destination page %d differs from source page %d", k, l, p,
                                  src_table[i]);
                } else {
                    for (size_t b = 0; b < len; b++)
                        ck_assert_msg(d.host[at + b] == POISON, "array %d layer %d: page %d (not moved) written", k, l,
                                      p);
                }
            }
    side_free(&s);
    side_free(&d);
}

START_TEST(bf16_pages_move_bit_for_bit)
{
    transfer_case(PL_KV_BF16, 0, 1);
    transfer_case(PL_KV_BF16, 1, 0);
    transfer_case(PL_KV_BF16, 0, 0);
}
END_TEST

START_TEST(fp8_pages_and_scales_move_bit_for_bit)
{
    transfer_case(PL_KV_FP8_E4M3, 0, 1);
    transfer_case(PL_KV_FP8_E4M3, 1, 0);
}
END_TEST

int main(void)
{
    g_gpus = pl_test_gpu_count(2, "the KV page transfer test");
    if (!g_gpus)
        return 77;
    Suite *s = suite_create("kv_transfer_gpu");
    TCase *tc = tcase_create("kv_transfer_gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, bf16_pages_move_bit_for_bit);
    tcase_add_test(tc, fp8_pages_and_scales_move_bit_for_bit);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
