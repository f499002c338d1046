/* fp32 transpose, out[c][r] = in[r][c], in four versions; each adds one technique to the one before:
 *
 *  1. naive     — thread (x, y) reads in[y][x] and writes out[x][y]. The reads of a warp are 128 contiguous
 *                 bytes; its writes are 32 words in 32 different rows of out, 32 sectors for 128 useful bytes.
 *  2. smem      — a 32×32 tile staged through shared memory: read by rows from in, written by rows to out, so
 *                 both global sides are coalesced. The tile is read back by columns: the 32 words of a column lie
 *                 32 words apart, all in one bank, so each such read is replayed 32 times (a 32-way conflict).
 *  3. padded    — the same tile with one unused word at the end of each row (33 words): a column's words now lie
 *                 33 words apart and fall in 32 different banks.
 *  4. vec16     — 64×64 tiles moved with 16-byte loads and stores (a quarter of the instructions). Padding would
 *                 break the 16-byte alignment of the tile's rows, so the tile is swizzled instead: the 16-byte
 *                 group q of row r is stored at group q ^ ((r / 4) % 8). Row writes stay inside one 128-byte
 *                 group of 8 slots (no conflict), and the column reads of a warp (8 row groups × 4 columns) hit
 *                 32 different banks.
 *
 * Every version handles any size (tiles at the edges are partial); vec16 falls back to single words when rows or
 * columns are not 16-byte aligned. Version 5 (the padded tile with more loads in flight) is in
 * transpose_ilp.cu. */
#include <stdint.h>
#include "memory/transpose.h"

#define TILE       32 /* versions 1-3: a 32×32 tile per block of 32×8 threads, 4 rows each */
#define ROWS_STEP  8
#define VT         64 /* version 4: a 64×64 tile per block of 256 threads */
#define VT_THREADS 256

/* ---- 1. naive ---- */

__global__ void __launch_bounds__(TILE *ROWS_STEP)
    transpose_naive_kernel(const float *__restrict__ in, float *__restrict__ out, size_t rows, size_t cols)
{
    const size_t c = (size_t)blockIdx.x * TILE + threadIdx.x;
    const size_t r0 = (size_t)blockIdx.y * TILE + threadIdx.y;
    if (c >= cols)
        return;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS_STEP) {
        const size_t r = r0 + j;
        if (r < rows)
            out[c * rows + r] = in[r * cols + c];
    }
}

/* ---- 2 and 3. shared-memory tile, without and with padding ---- */

/* PITCH is TILE (conflicts) or TILE + 1 (padded): the only difference between the two versions. */
template <int PITCH>
__global__ void __launch_bounds__(TILE *ROWS_STEP)
    transpose_tile_kernel(const float *__restrict__ in, float *__restrict__ out, size_t rows, size_t cols)
{
    __shared__ float tile[TILE * PITCH];
    const size_t r0 = (size_t)blockIdx.y * TILE, c0 = (size_t)blockIdx.x * TILE;
    const unsigned tx = threadIdx.x, ty = threadIdx.y;

    /* rows of the input tile, coalesced */
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS_STEP) {
        const size_t r = r0 + ty + j, c = c0 + tx;
        if (r < rows && c < cols)
            tile[(ty + j) * PITCH + tx] = in[r * cols + c];
    }
    __syncthreads();
    /* rows of the output tile (columns of the input tile): lane tx reads word tx * PITCH + k */
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS_STEP) {
        const size_t oc = c0 + ty + j, orow = r0 + tx; /* out[oc][orow] = in[orow][oc] */
        if (oc < cols && orow < rows)
            out[oc * rows + orow] = tile[tx * PITCH + ty + j];
    }
}

/* ---- 4. 16-byte accesses, swizzled tile ---- */

/* Word offset in the 64×64 tile of element (r, c): 16-byte group c / 4 of row r, swizzled within its 8-group. */
__device__ __forceinline__ unsigned vt_offset(unsigned r, unsigned c)
{
    return r * VT + 4u * ((c >> 2) ^ ((r >> 2) & 7u)) + (c & 3u);
}

__global__ void __launch_bounds__(VT_THREADS)
    transpose_vec16_kernel(const float *__restrict__ in, float *__restrict__ out, size_t rows, size_t cols, int vec)
{
    __shared__ __align__(16) float tile[VT * VT];
    const size_t r0 = (size_t)blockIdx.y * VT, c0 = (size_t)blockIdx.x * VT;
    const unsigned t = threadIdx.x;

    /* Load: 64 rows × 16 groups of 4 words; thread t takes groups t, t + 256, ... (16 per row: a warp reads two
     * rows of 256 bytes). All four loads are issued before the first shared store. */
    float4 v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const unsigned idx = t + k * VT_THREADS, r = idx >> 4, q = idx & 15u;
        const size_t gr = r0 + r, gc = c0 + 4 * q;
        if (vec && gr < rows && gc < cols) { /* cols % 4 == 0: the whole group is inside */
            v[k] = *reinterpret_cast<const float4 *>(in + gr * cols + gc);
        } else {
            const float *p = in + gr * cols + gc;
            const int ok = gr < rows;
            v[k].x = ok && gc < cols ? p[0] : 0.0f;
            v[k].y = ok && gc + 1 < cols ? p[1] : 0.0f;
            v[k].z = ok && gc + 2 < cols ? p[2] : 0.0f;
            v[k].w = ok && gc + 3 < cols ? p[3] : 0.0f;
        }
    }
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const unsigned idx = t + k * VT_THREADS, r = idx >> 4, q = idx & 15u;
        *reinterpret_cast<float4 *>(&tile[vt_offset(r, 4 * q)]) = v[k];
    }
    __syncthreads();

    /* Store: out row c (an input column) gets 16 groups of 4 words (input rows 4g..4g+3). Lane l of warp w takes
     * group g = (w % 2) * 8 + l % 8 of row c = (w / 2) * 4 + l / 8 (+16 per k): a warp writes 4 rows × 128 bytes,
     * and its 32 column reads hit 32 banks (8 swizzle values × 4 columns). */
    const unsigned lane = t & 31u, warp = t >> 5;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const unsigned w = warp + 8 * k; /* 0..31 */
        const unsigned g = (w & 1u) * 8 + (lane & 7u), c = (w >> 1) * 4 + (lane >> 3);
        float4 o;
        o.x = tile[vt_offset(4 * g + 0, c)];
        o.y = tile[vt_offset(4 * g + 1, c)];
        o.z = tile[vt_offset(4 * g + 2, c)];
        o.w = tile[vt_offset(4 * g + 3, c)];
        const size_t oc = c0 + c, orow = r0 + 4 * g; /* out[oc][orow..orow+3] */
        if (oc >= cols)
            continue;
        if (vec && orow < rows) { /* rows % 4 == 0 */
            /* An explicit 16-byte store. The plain `*(float4 *)p = o` was compiled (nvcc 13.0) into four 4-byte
             * stores, 16 bytes apart across the lanes: partial sectors that reached L2 as 1.75x the write sectors
             * and requests of a whole-line store, and saturated the L2 partition fabric (ncu, 2026-11-23). */
            __stwb(reinterpret_cast<float4 *>(out + oc * rows + orow), o);
        } else {
            float *p = out + oc * rows + orow;
            if (orow < rows)
                p[0] = o.x;
            if (orow + 1 < rows)
                p[1] = o.y;
            if (orow + 2 < rows)
                p[2] = o.z;
            if (orow + 3 < rows)
                p[3] = o.w;
        }
    }
}

/* ---- launchers ---- */

static int grid_of(size_t rows, size_t cols, size_t tile, dim3 *grid)
{
    const size_t gx = (cols + tile - 1) / tile, gy = (rows + tile - 1) / tile;
    if (rows == 0 || cols == 0 || gy > 65535 || gx > 2147483647u)
        return -1;
    *grid = dim3((unsigned)gx, (unsigned)gy);
    return 0;
}

extern "C" cudaError_t pl_transpose_f32_naive(const float *in, float *out, size_t rows, size_t cols,
                                              cudaStream_t stream)
{
    dim3 grid;
    if (grid_of(rows, cols, TILE, &grid) != 0)
        return cudaErrorInvalidValue;
    transpose_naive_kernel<<<grid, dim3(TILE, ROWS_STEP), 0, stream>>>(in, out, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_transpose_f32_smem(const float *in, float *out, size_t rows, size_t cols, cudaStream_t stream)
{
    dim3 grid;
    if (grid_of(rows, cols, TILE, &grid) != 0)
        return cudaErrorInvalidValue;
    transpose_tile_kernel<TILE><<<grid, dim3(TILE, ROWS_STEP), 0, stream>>>(in, out, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_transpose_f32_padded(const float *in, float *out, size_t rows, size_t cols,
                                               cudaStream_t stream)
{
    dim3 grid;
    if (grid_of(rows, cols, TILE, &grid) != 0)
        return cudaErrorInvalidValue;
    transpose_tile_kernel<TILE + 1><<<grid, dim3(TILE, ROWS_STEP), 0, stream>>>(in, out, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_transpose_f32_vec16(const float *in, float *out, size_t rows, size_t cols,
                                              cudaStream_t stream)
{
    dim3 grid;
    if (grid_of(rows, cols, VT, &grid) != 0)
        return cudaErrorInvalidValue;
    const int vec = rows % 4 == 0 && cols % 4 == 0 && ((uintptr_t)in | (uintptr_t)out) % 16 == 0;
    transpose_vec16_kernel<<<grid, VT_THREADS, 0, stream>>>(in, out, rows, cols, vec);
    return cudaGetLastError();
}
