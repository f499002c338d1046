/* Moving a sequence's KV pages from one paged cache to another (model.h's pl_model_cache), on the same GPU or
 * between two: what disaggregated serving does when a prompt's prefill finishes on one GPU and its decode runs on
 * another.
 *
 * A sequence's page i on the source (src_pages[i]) goes to page i of its table on the destination (dst_pages[i]):
 * every layer's K and V rows of that page, and with an FP8 cache the rows' scales, bit for bit. The two caches have
 * the same model geometry and dtype and may differ in their page counts (each GPU's pool is planned in its own free
 * memory). Pages consecutive on both sides are copied as one run, so a sequence whose pages were handed out in order
 * from a fresh pool moves in 2 · layers copies (K and V; twice that with FP8 scales), and a scattered one in up to
 * 2 · layers · pages.
 *
 * The copies are cudaMemcpyPeerAsync on the caller's stream (copy engines, no SM of either GPU: the prefill that
 * follows on the source GPU runs beside them). Without peer access between the two GPUs the driver stages them
 * through the host (correct, slower); pl_kv_transfer_enable_peers says which it is. */
#ifndef PERFLAB_ENGINE_KV_TRANSFER_H
#define PERFLAB_ENGINE_KV_TRANSFER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Source pages [src, src + n) go to destination pages [dst, dst + n). */
typedef struct pl_kv_run {
    int src, dst, n;
} pl_kv_run;

/* The runs that move page i of src_pages to page i of dst_pages for i < npages, consecutive ids on both sides
 * coalesced, in table order; runs has room for npages. Returns the count (0 for npages <= 0). */
int pl_kv_transfer_runs(const int *src_pages, const int *dst_pages, int npages, pl_kv_run *runs);

/* The copies pl_kv_transfer issues for nruns runs: one per layer, K and V, and FP8 scales, per run. */
int64_t pl_kv_transfer_copies(int layers, pl_kv_dtype dtype, int nruns);

/* What moves between the caches of one sequence (layer count, the page geometry and the dtype of both caches). */
typedef struct pl_kv_transfer_geom {
    int layers, page_size, kv_heads, head_dim;
    pl_kv_dtype dtype;
} pl_kv_transfer_geom;

/* The geometry of a model's cache (its layers, page size, kv heads, head dim and cache dtype). */
pl_kv_transfer_geom pl_kv_transfer_geom_of(const pl_model *m);

/* Enqueues the copies of runs[0..nruns) from src (on src_device) to dst (on dst_device) on `stream` (a stream of
 * either device; never synchronises). cudaErrorInvalidValue when the caches' dtype differs from geom's or a run
 * leaves either cache's pages; else the first failing copy's error. *bytes_out (may be NULL): the bytes enqueued. */
cudaError_t pl_kv_transfer(const pl_kv_transfer_geom *geom, const pl_model_cache *src, int src_pages, int src_device,
                           const pl_model_cache *dst, int dst_pages, int dst_device, const pl_kv_run *runs, int nruns,
                           cudaStream_t stream, uint64_t *bytes_out);

/* Lets each of the two GPUs reach the other's memory (cudaDeviceEnablePeerAccess both ways; already enabled is no
 * error). 1: peer copies run directly (NVLink or PCIe peer to peer); 0: they go through the host, with the reason in
 * why; the current device is left as it was. */
int pl_kv_transfer_enable_peers(int a, int b, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
