/* fp32 transpose, version 5 of the lesson (versions 1-4 in transpose.cu): the padded tile with more bytes in
 * flight per thread.
 *
 *  5. ilp  — a 64×64 tile per block of 256 threads, padded to 65 words a row (conflict-free, as version 3). Each
 *            thread issues all 16 of its loads (two 32-word halves of 8 rows) before its first shared store, 64
 *            bytes in flight a thread where version 3 has 16: Little's law on an H200 wants ~30 KB of loads
 *            outstanding per SM, and version 3's 8 blocks × 256 threads × 16 B is just that, with nothing to spare
 *            while a block is between its load and store phases. Every warp access is one whole 128-byte line on
 *            both sides.
 *
 * Tiles are taken in row order (block b: tile row b / tiles_x, tile column b % tiles_x). Two variations measured no
 * better (docs/perf/memory.md): walking 16 tile rows at a time (4 KiB runs of each output row), and streaming
 * (evict-first) cache hints on both sides. Any size works; tiles at the edges are partial (their accesses guarded). */
#include <stdint.h>
#include "memory/transpose_ilp.h"

#define WT      64 /* tile side */
#define WPITCH  65 /* words a shared row */
#define WROWS   8  /* rows a block covers in one step (256 threads = 8 warps of 32 lanes) */
#define WTHREAD 256

__global__ void __launch_bounds__(WTHREAD) transpose_ilp_kernel(const float *__restrict__ in, float *__restrict__ out,
                                                                size_t rows, size_t cols, unsigned tiles_x)
{
    __shared__ float tile[WT * WPITCH];
    const unsigned tr = blockIdx.x / tiles_x, tc = blockIdx.x % tiles_x;
    const size_t r0 = (size_t)tr * WT, c0 = (size_t)tc * WT;
    const unsigned tx = threadIdx.x & 31u, ty = threadIdx.x >> 5;
    const int full = r0 + WT <= rows && c0 + WT <= cols;

    /* 16 loads, all in flight before the first shared store: rows ty + 8j, columns tx and tx + 32 */
    float v[2 * WT / WROWS];
    if (full) {
        const float *p = in + (r0 + ty) * cols + c0 + tx;
#pragma unroll
        for (int j = 0; j < WT / WROWS; j++) {
            v[2 * j] = __ldg(p + (size_t)(WROWS * j) * cols);
            v[2 * j + 1] = __ldg(p + (size_t)(WROWS * j) * cols + 32);
        }
    } else {
#pragma unroll
        for (int j = 0; j < WT / WROWS; j++) {
            const size_t r = r0 + ty + WROWS * j, c = c0 + tx;
            const float *p = in + r * cols + c;
            v[2 * j] = r < rows && c < cols ? __ldg(p) : 0.0f;
            v[2 * j + 1] = r < rows && c + 32 < cols ? __ldg(p + 32) : 0.0f;
        }
    }
#pragma unroll
    for (int j = 0; j < WT / WROWS; j++) {
        tile[(ty + WROWS * j) * WPITCH + tx] = v[2 * j];
        tile[(ty + WROWS * j) * WPITCH + tx + 32] = v[2 * j + 1];
    }
    __syncthreads();

    /* out[c0 + ty + 8j][r0 + 32h + tx] = tile[32h + tx][ty + 8j]: lane tx reads word (32h + tx) * 65 + ..., 32 banks */
    if (full) {
        float *q = out + (c0 + ty) * rows + r0 + tx;
#pragma unroll
        for (int j = 0; j < WT / WROWS; j++) {
            q[(size_t)(WROWS * j) * rows] = tile[tx * WPITCH + ty + WROWS * j];
            q[(size_t)(WROWS * j) * rows + 32] = tile[(tx + 32) * WPITCH + ty + WROWS * j];
        }
    } else {
#pragma unroll
        for (int j = 0; j < WT / WROWS; j++) {
            const size_t oc = c0 + ty + WROWS * j, orow = r0 + tx;
            float *q = out + oc * rows + orow;
            if (oc < cols && orow < rows)
                q[0] = tile[tx * WPITCH + ty + WROWS * j];
            if (oc < cols && orow + 32 < rows)
                q[32] = tile[(tx + 32) * WPITCH + ty + WROWS * j];
        }
    }
}

/* Tiles of side `side` in each direction, as one linear grid; -1 when it does not fit a launch. */
extern "C" int pl_transpose_tiles(size_t rows, size_t cols, unsigned side, unsigned *tiles_x, unsigned *tiles_y)
{
    const size_t tx = (cols + side - 1) / side, ty = (rows + side - 1) / side;
    if (rows == 0 || cols == 0 || tx * ty > 2147483647u)
        return -1;
    *tiles_x = (unsigned)tx;
    *tiles_y = (unsigned)ty;
    return 0;
}

extern "C" cudaError_t pl_transpose_f32_ilp(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream)
{
    unsigned tx, ty;
    if (pl_transpose_tiles(rows, cols, WT, &tx, &ty) != 0)
        return cudaErrorInvalidValue;
    transpose_ilp_kernel<<<tx * ty, WTHREAD, 0, stream>>>(in, out, rows, cols, tx);
    return cudaGetLastError();
}
