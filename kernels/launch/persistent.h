/* A wavefront of small dependent work items, launched two ways: one kernel per step, or one persistent kernel that
 * pulls (step, tile) items from a device-side queue and waits, per item, only for the items it depends on.
 *
 * The work: `steps` steps of a 3-point stencil over n floats, y_k[i] = a_k·y_{k-1}[i] + c_k·(y_{k-1}[i-1] +
 * y_{k-1}[i+1]) with zeros outside [0, n), y_0 being the first step's input x. Step k of tile j (PL_STENCIL_TILE
 * elements) depends on step k-1 of tiles j-1, j and j+1. The steps alternate between two buffers p0 (even steps)
 * and p1 (odd steps); the result is in p0 when `steps` is odd, else in p1. */
#ifndef PERFLAB_LAUNCH_PERSISTENT_H
#define PERFLAB_LAUNCH_PERSISTENT_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_STENCIL_TILE 256 /* elements per work item (one per thread) */

/* One step k (0-based) of the stencil over all tiles, one block a tile: reads x (k == 0) or the buffer of step k-1,
 * writes the buffer of step k. coef holds (a_k, c_k) pairs on the device. */
cudaError_t pl_stencil_step_f32(const float *x, float *p0, float *p1, size_t n, int k, const float *coef,
                                cudaStream_t stream);

/* Device memory the persistent kernel's queue needs for n elements (zeroed once, with cudaMemset, before its first
 * launch; every launch leaves it zeroed for the next). */
size_t pl_stencil_queue_bytes(size_t n);

/* How many blocks of the persistent kernel the device holds at once (its largest useful grid). */
cudaError_t pl_stencil_persistent_max_blocks(unsigned *blocks);

/* All `steps` steps in one launch of `blocks` persistent blocks. Each block takes the next item from the queue's
 * head (items in step-major order: every item's dependencies have smaller numbers, so whoever holds them is running,
 * and no grid size can deadlock), spins until the three items it depends on are published, computes its tile and
 * publishes it. The last block to leave resets the queue. */
cudaError_t pl_stencil_persistent_f32(const float *x, float *p0, float *p1, size_t n, int steps, const float *coef,
                                      void *queue, unsigned blocks, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
