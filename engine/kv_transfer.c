/* KV pages from one paged cache to another, on one GPU or between two (kv_transfer.h). */
#include "engine/kv_transfer.h"

#include <stdio.h>

int pl_kv_transfer_runs(const int *src_pages, const int *dst_pages, int npages, pl_kv_run *runs)
{
    int n = 0;
    for (int i = 0; i < npages; i++) {
        pl_kv_run *last = n > 0 ? &runs[n - 1] : NULL;
        if (last && src_pages[i] == last->src + last->n && dst_pages[i] == last->dst + last->n) {
            last->n++;
            continue;
        }
        runs[n++] = (pl_kv_run){.src = src_pages[i], .dst = dst_pages[i], .n = 1};
    }
    return n;
}

int64_t pl_kv_transfer_copies(int layers, pl_kv_dtype dtype, int nruns)
{
    return (int64_t)layers * (dtype == PL_KV_FP8_E4M3 ? 4 : 2) * nruns;
}

pl_kv_transfer_geom pl_kv_transfer_geom_of(const pl_model *m)
{
    const pl_kv_transfer_geom g = {.layers = m->layers,
                                   .page_size = m->page_size,
                                   .kv_heads = m->config->kv_heads,
                                   .head_dim = m->config->head_dim,
                                   .dtype = m->cache.dtype};
    return g;
}

/* One array of the cache: its base on each side, the bytes of one page in one layer, and each side's layer stride
 * in bytes (the two caches' page counts may differ). */
typedef struct kv_array {
    const char *src;
    char *dst;
    size_t page, src_layer, dst_layer;
} kv_array;

static int arrays_of(const pl_kv_transfer_geom *g, const pl_model_cache *s, int src_pages, const pl_model_cache *d,
                     int dst_pages, kv_array a[4])
{
    const size_t rows = (size_t)g->page_size * (size_t)g->kv_heads, elems = rows * (size_t)g->head_dim;
    if (g->dtype == PL_KV_FP8_E4M3) {
        const size_t sc = rows * sizeof(float);
        a[0] = (kv_array){(const char *)s->k8, (char *)d->k8, elems, elems * src_pages, elems * dst_pages};
        a[1] = (kv_array){(const char *)s->v8, (char *)d->v8, elems, elems * src_pages, elems * dst_pages};
        a[2] = (kv_array){(const char *)s->k_scale, (char *)d->k_scale, sc, sc * src_pages, sc * dst_pages};
        a[3] = (kv_array){(const char *)s->v_scale, (char *)d->v_scale, sc, sc * src_pages, sc * dst_pages};
        return 4;
    }
    const size_t b = 2 * elems;
    a[0] = (kv_array){(const char *)s->k, (char *)d->k, b, b * src_pages, b * dst_pages};
    a[1] = (kv_array){(const char *)s->v, (char *)d->v, b, b * src_pages, b * dst_pages};
    return 2;
}

static int runs_fit(const pl_kv_run *runs, int nruns, int src_pages, int dst_pages)
{
    for (int i = 0; i < nruns; i++)
        if (runs[i].n < 1 || runs[i].src < 0 || runs[i].dst < 0 || runs[i].src > src_pages - runs[i].n ||
            runs[i].dst > dst_pages - runs[i].n)
            return 0;
    return 1;
}

cudaError_t pl_kv_transfer(const pl_kv_transfer_geom *geom, const pl_model_cache *src, int src_pages, int src_device,
                           const pl_model_cache *dst, int dst_pages, int dst_device, const pl_kv_run *runs, int nruns,
                           cudaStream_t stream, uint64_t *bytes_out)
{
    if (bytes_out)
        *bytes_out = 0;
    if (!geom || !src || !dst || src->dtype != geom->dtype || dst->dtype != geom->dtype || nruns < 0 ||
        (nruns > 0 && !runs) || !runs_fit(runs, nruns, src_pages, dst_pages))
        return cudaErrorInvalidValue;
    /* each side's pool must be the size the caller says (a cache placed for other sizes would be misread) */
    const size_t pool = (size_t)geom->page_size * geom->kv_heads * geom->head_dim;
    if (src->pool_elems != pool * (size_t)src_pages || dst->pool_elems != pool * (size_t)dst_pages)
        return cudaErrorInvalidValue;
    kv_array a[4];
    const int na = arrays_of(geom, src, src_pages, dst, dst_pages, a);
    uint64_t bytes = 0;
    for (int l = 0; l < geom->layers; l++)
        for (int k = 0; k < na; k++)
            for (int r = 0; r < nruns; r++) {
                const char *from = a[k].src + l * a[k].src_layer + (size_t)runs[r].src * a[k].page;
                char *to = a[k].dst + l * a[k].dst_layer + (size_t)runs[r].dst * a[k].page;
                const size_t n = (size_t)runs[r].n * a[k].page;
                const cudaError_t e = cudaMemcpyPeerAsync(to, dst_device, from, src_device, n, stream);
                if (e != cudaSuccess)
                    return e;
                bytes += n;
            }
    if (bytes_out)
        *bytes_out = bytes;
    return cudaSuccess;
}

static int enable_one(int from, int to, char *why, size_t whylen)
{
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) {
        snprintf(why, whylen, "GPU %d cannot access GPU %d's memory: the KV copies go through the host", from, to);
        return 0;
    }
    cudaError_t e = cudaSetDevice(from);
    if (e == cudaSuccess) {
        e = cudaDeviceEnablePeerAccess(to, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
            (void)cudaGetLastError(); /* clears the sticky-until-read error of an already enabled pair */
            e = cudaSuccess;
        }
    }
    if (e != cudaSuccess) {
        snprintf(why, whylen, "enabling GPU %d's access to GPU %d: %s", from, to, cudaGetErrorString(e));
        return 0;
    }
    return 1;
}

int pl_kv_transfer_enable_peers(int a, int b, char *why, size_t whylen)
{
    int cur = 0;
    if (cudaGetDevice(&cur) != cudaSuccess) {
        snprintf(why, whylen, "no current GPU");
        return 0;
    }
    if (a == b)
        return 1;
    const int ok = enable_one(a, b, why, whylen) && enable_one(b, a, why, whylen);
    cudaSetDevice(cur);
    return ok;
}
