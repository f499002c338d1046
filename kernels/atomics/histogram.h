/* Histogram of n uint32 keys into `bins` uint32 counters (keys >= bins are ignored), three ways
 * (kernels/atomics/histogram.cu), and CUB's DeviceHistogram::HistogramEven as the reference (histogram_cub.cu).
 * Every launcher zeroes the histogram itself (a memset on `stream`, or CUB's own), then counts; none synchronizes. */
#ifndef PERFLAB_ATOMICS_HISTOGRAM_H
#define PERFLAB_ATOMICS_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_HIST_MAX_BINS 16384 /* 64 KiB of shared counters per block */

typedef enum pl_hist_version {
    PL_HIST_GLOBAL,     /* one global atomicAdd per key */
    PL_HIST_GLOBAL_AGG, /* one global atomicAdd per distinct key of a warp (warp aggregation) */
    PL_HIST_SHARED,     /* per-block shared-memory bins, 16-byte key loads, one global atomic per bin per block */
    PL_HIST_WARP_AGG,   /* PL_HIST_SHARED plus warp aggregation: one shared atomic per distinct key in a warp */
} pl_hist_version;

/* Raise the shared versions' dynamic shared-memory limit for `bins` and say how many blocks of version v fit on one
 * SM (the occupancy API): launch SMs × that many (one resident wave) as `blocks`. */
cudaError_t pl_hist_prepare(pl_hist_version v, unsigned bins, int *blocks_per_sm);

/* keys 16-byte aligned for the shared versions (cudaErrorInvalidValue otherwise). `blocks`: the grid of the shared
 * versions (0: enough for one vector per thread); ignored by GLOBAL and GLOBAL_AGG. */
cudaError_t pl_hist_launch(pl_hist_version v, const uint32_t *keys, size_t n, uint32_t *hist, unsigned bins,
                           unsigned blocks, cudaStream_t stream);

/* cub::DeviceHistogram::HistogramEven with bins + 1 levels 0, 1, ..., bins: bin k counts key k. Query the temporary
 * storage once (temp = NULL), then pass it to every call. */
cudaError_t pl_hist_cub(const uint32_t *keys, size_t n, uint32_t *hist, unsigned bins, void *temp, size_t *temp_bytes,
                        cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
