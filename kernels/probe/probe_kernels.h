/* Feature probes (perflab probe): each a tiny kernel whose result the host checks, so that a feature counts as
 * present only when it ran and computed the right thing on this GPU. Launchers return the CUDA error of the
 * launch; they never synchronize. (The wgmma probe is the peak kernel run once: peak/peak_kernels.h.) */
#ifndef PERFLAB_PROBE_KERNELS_H
#define PERFLAB_PROBE_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- thread-block clusters and distributed shared memory ---- */
#define PL_PROBE_CLUSTER_THREADS 128
/* The largest cluster the occupancy calculator lets the probe kernel launch: portable (<= 8) and allowing
 * non-portable sizes. */
cudaError_t pl_probe_cluster_max_size(int *portable, int *nonportable);
/* `blocks` blocks (a multiple of cluster_size) in clusters of cluster_size: block b fills its shared memory
 * with pl_probe_cluster_word(salt, b, i), the cluster synchronises, and thread i of block b writes the word i
 * of its neighbour's (rank + 1 in the cluster) shared memory, read through DSMEM, to out[b * threads + i]. */
cudaError_t pl_probe_cluster_dsmem(int cluster_size, int blocks, unsigned salt, unsigned *out, cudaStream_t stream);
unsigned pl_probe_cluster_word(unsigned salt, unsigned block, unsigned i);

/* ---- TMA: one cp.async.bulk.tensor.2d of a PL_PROBE_TMA_BOX_W x _H fp32 box at (x0, y0) of a width x height
 * row-major matrix, completed on an mbarrier; the box lands in out (row-major, elements outside the matrix
 * zero-filled by the copy engine). why says what failed when the tensor map cannot be made. ---- */
#define PL_PROBE_TMA_BOX_W 32
#define PL_PROBE_TMA_BOX_H 16
cudaError_t pl_probe_tma_box(const float *src, int width, int height, int x0, int y0, float *out, char *why,
                             size_t whylen, cudaStream_t stream);

/* ---- FP8 tensor cores: one warp, mma.sync.m16n8k32 e4m3 x e4m3 -> f32. a: 16x32 row-major, b: 8x32 (n rows
 * of k), d: 16x8 row-major. cudaErrorNoKernelImageForDevice below compute capability 8.9. ---- */
cudaError_t pl_probe_fp8_mma(const uint8_t *a, const uint8_t *b, float *d, cudaStream_t stream);

/* ---- cooperative launch: the largest co-resident grid, an atomic count, grid.sync(), and every block then
 * reads the count (it must equal the grid) into out[block]. ---- */
cudaError_t pl_probe_cooperative_blocks(int *blocks);
cudaError_t pl_probe_cooperative(int blocks, unsigned *counter, unsigned *out, cudaStream_t stream);

/* ---- tcgen05 (sm_100a only): 4 warps allocate 32 columns of tensor memory, store salt ^ thread to their
 * lane quarter with tcgen05.st, load it back with tcgen05.ld into out[thread] (128 entries), and free it.
 * cudaErrorNoKernelImageForDevice on anything but compute capability 10.0. ---- */
#define PL_PROBE_TCGEN05_THREADS 128
cudaError_t pl_probe_tcgen05_tmem(unsigned salt, unsigned *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
