/* A kernel that re-reads a hot buffer while it streams another (kernels/memory/l2_persistence.cu), launched with or
 * without an L2 access-policy window over the hot buffer:
 *
 *   y[i] = x[i] + a·h[i mod hot_n],   i < n.
 *
 * The launcher enqueues one kernel and returns the launch's cudaError_t; it does not synchronize. */
#ifndef PERFLAB_MEMORY_L2_PERSISTENCE_H
#define PERFLAB_MEMORY_L2_PERSISTENCE_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_l2_policy {
    PL_L2_NONE,      /* no access-policy window: the launch leaves L2 to its default replacement */
    PL_L2_NORMAL,    /* a window over the hot buffer marked normal: lines an earlier launch made persisting are
                        demoted, so that no persistence carries over */
    PL_L2_PERSISTING /* a window over the hot buffer: hits persist (kept in the set-aside part of L2), misses stream */
} pl_l2_policy;

typedef struct pl_l2_window {
    pl_l2_policy policy;
    const void *base; /* the window: base .. base + bytes */
    size_t bytes;
    float hit_ratio; /* fraction of the window's lines given the hit property (the rest get the miss property) */
} pl_l2_window;

/* The device's limits: the most L2 that can be set aside for persisting lines and the largest window. */
cudaError_t pl_l2_limits(size_t *max_persisting_bytes, size_t *max_window_bytes);

/* y, x: n floats; h: hot_n floats (hot_n >= 1). evict_first: x loaded and y stored with the evict-first hint. The
 * window rides on the launch (a launch attribute), so that it
 * belongs to this kernel, in a stream or a captured graph alike, and to no later launch on the stream. */
cudaError_t pl_l2_hot_axpy(const float *x, const float *h, float *y, size_t n, size_t hot_n, float a, int evict_first,
                           const pl_l2_window *w, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
