/* Histogram inputs (kernels/atomics/keys.cu): keys in [0, bins) from uniform random numbers, evenly or following a
 * given cumulative distribution (a Zipf law, for a skewed input). */
#ifndef PERFLAB_ATOMICS_KEYS_H
#define PERFLAB_ATOMICS_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* In place: buf holds n floats u in [0, 1) on entry and n uint32 keys on return. cdf == NULL: key = floor(u · bins)
 * (even); else cdf[k] = P(key <= k) for k < bins (non-decreasing, cdf[bins - 1] = 1) and key = the first k with
 * u < cdf[k] (inverse transform sampling). Enqueues one kernel. */
cudaError_t pl_keys_from_uniform(void *buf, size_t n, unsigned bins, const double *cdf, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
