/* The launch shape of the row kernels (norm, softmax): how many threads share a row and how many 16-byte vectors
 * of it each thread holds in registers, chosen from the row length. Host code; the device side is rows.cuh. */
#ifndef PERFLAB_KERNELS_ROWS_H
#define PERFLAB_KERNELS_ROWS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_ROWS_VEC        8    /* bf16 elements per 16-byte vector */
#define PL_ROWS_MAX_GROUP  1024 /* threads of one row at most (one block) */
#define PL_ROWS_BLOCK_GOAL 256  /* threads per block when several rows share one */

typedef struct pl_rows_shape {
    int nv;             /* 16-byte vectors each thread holds in registers (1, 2, 4, 8); 0: the row does not fit
                           (the looped kernel: the row is read twice, the second time mostly from L2) */
    int group;          /* threads per row: 1, 2, 4, ..., 32 (part of a warp, shuffles only) or a multiple of 32
                           up to 1024 (several warps, one exchange through shared memory per reduction) */
    int rows_per_block; /* rows one block handles, one per group */
    int threads;        /* group * rows_per_block */
    unsigned blocks;    /* ceil(rows / rows_per_block) */
} pl_rows_shape;

/* The vectors a row of `cols` bf16 touches at most: cols / 8 when every row starts 16-byte aligned (x 16-byte
 * aligned, cols % 8 == 0), else up to one more (a row that starts inside a vector). */
int pl_rows_vectors(int cols, int rows_aligned);

/* Pick the shape for rows x cols. nv_request 0 picks by the row length (a part of a warp per row for short rows,
 * a warp up to 1024 columns, then a block with 4 vectors per thread, then 8; beyond nv_max vectors per thread of
 * 1024 threads, the looped kernel); 1, 2, 4 or 8 (<= nv_max) asks for that many vectors per thread. Returns 0, or
 * -1 when the request cannot be met (not a power of two up to nv_max, or more than 1024 threads would be needed). */
int pl_rows_pick_shape(int rows, int cols, int rows_aligned, int nv_request, int nv_max, pl_rows_shape *out);

/* Whether x (and y, which must share x's alignment modulo 16 bytes) start rows on 16-byte boundaries. */
int pl_rows_aligned(const void *x, int cols);

/* The shape for a row kernel reading x and writing y (pl_rows_pick_shape), or -1 when the arguments are unusable:
 * x or y null, x not 2-byte aligned, or y not at x's alignment modulo 16 bytes (cudaMalloc'd buffers are). */
int pl_rows_launch_shape(const void *x, const void *y, int rows, int cols, int nv_request, int nv_max,
                         pl_rows_shape *out);

#ifdef __cplusplus
}
#endif
#endif
