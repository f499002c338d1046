/* A 5-point stencil staged through shared memory, three ways; each adds one technique to the one before:
 *
 *  1. sync      — every thread loads its share of the tile's box with ordinary 16-byte loads and stores it to
 *                 shared memory; a barrier; compute; a barrier; the next tile. Per block, loads are in flight only
 *                 during the load phase, and nothing is loaded while the block computes and stores.
 *  2. cp_async  — `stages` shared buffers. cp.async copies global to shared memory without passing through
 *                 registers and without blocking the thread, so the block issues tile k + stages - 1 and then
 *                 computes tile k: stages - 1 tiles are in flight the whole time. Each thread waits for its own
 *                 copies (cp.async.wait_group), a barrier makes all of them visible.
 *  3. tma       — the same ring of buffers, each filled by one bulk tensor copy (cp.async.bulk.tensor.2d) that one
 *                 thread issues and that completes on the buffer's mbarrier with a byte count. The copy engine
 *                 computes every address and fills the zeros outside the grid; the threads only compute.
 *
 * Same tile (32 × 128 outputs, a 34 × 136 box of inputs with its halo: 4 columns on each side keep the box's rows
 * 16-byte aligned), same 128 threads, same persistent grid and the same compute code in all three. */
#include <stdint.h>
#include "common/ptx.cuh"
#include "common/sm90_ptx.cuh"
#include "memory/async_prefetch.h"

#define TW           128 /* output columns of a tile = threads of a block: thread t computes column t */
#define TH           32  /* output rows of a tile */
#define HALO_C       4
#define BOX_W        (TW + 2 * HALO_C) /* 136 floats, 544 bytes */
#define BOX_H        (TH + 2)
#define BOX_BYTES    (BOX_W * BOX_H * 4)             /* 18496 */
#define STAGE_BYTES  ((BOX_BYTES + 127) / 128 * 128) /* TMA writes shared memory at 128-byte aligned addresses */
#define STAGE_FLOATS (STAGE_BYTES / 4)
#define CHUNKS_W     (BOX_W / 4) /* 16-byte chunks in a box row */
#define CHUNKS       (CHUNKS_W * BOX_H)
#define THREADS      TW

typedef struct tile_pos {
    long long r0, c0; /* first output row and column */
} tile_pos;

__device__ __forceinline__ tile_pos tile_of(const pl_stencil_grid &g, size_t tile)
{
    const size_t tiles_x = (g.cols + TW - 1) / TW;
    tile_pos p = {(long long)(tile / tiles_x) * TH, (long long)(tile % tiles_x) * TW};
    return p;
}

__device__ __forceinline__ size_t tiles_of(const pl_stencil_grid &g)
{
    return ((g.rows + TH - 1) / TH) * ((g.cols + TW - 1) / TW);
}

/* Thread t computes column c0 + t of the tile from the box in shared memory (box row 0 is grid row r0 - 1, box
 * column 0 grid column c0 - 4), sliding up/mid/down down the column: three shared loads per output, consecutive
 * threads on consecutive words. Fully unrolled, so that the shared loads of later rows are issued early. */
__device__ __forceinline__ void compute_tile(const float *box, float *__restrict__ y, const pl_stencil_grid &g,
                                             tile_pos p)
{
    const float *col = box + HALO_C + threadIdx.x;
    const long long c = p.c0 + threadIdx.x;
    if (c >= (long long)g.cols)
        return;
    const long long left_rows = (long long)g.rows - p.r0;
    const int rows_here = left_rows < TH ? (int)left_rows : TH;
    float *out = y + (size_t)p.r0 * g.ld + (size_t)c;
    float up = col[0], mid = col[BOX_W];
#pragma unroll
    for (int r = 0; r < TH; r++) {
        const float down = col[(r + 2) * BOX_W];
        const float left = col[(r + 1) * BOX_W - 1], right = col[(r + 1) * BOX_W + 1];
        const float v = g.a * mid + g.b * ((up + down) + (left + right));
        if (r < rows_here)
            out[(size_t)r * g.ld] = v;
        up = mid;
        mid = down;
    }
}

/* Chunk i of the box: grid row, grid column of its first element, and how many of its 4 elements lie in the grid
 * (0 outside). */
__device__ __forceinline__ int chunk_source(const pl_stencil_grid &g, tile_pos p, int i, long long *gr, long long *gc)
{
    *gr = p.r0 - 1 + i / CHUNKS_W;
    *gc = p.c0 - HALO_C + 4 * (i % CHUNKS_W);
    if (*gr < 0 || *gr >= (long long)g.rows || *gc < 0 || *gc >= (long long)g.cols)
        return 0;
    const long long left = (long long)g.cols - *gc;
    return left < 4 ? (int)left : 4;
}

/* ---- 1. synchronous staging ---- */

__global__ void __launch_bounds__(THREADS)
    stencil_sync_kernel(const float *__restrict__ x, float *__restrict__ y, pl_stencil_grid g)
{
    extern __shared__ float4 smem_sync[];
    float *box = reinterpret_cast<float *>(smem_sync);
    const size_t tiles = tiles_of(g);
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const tile_pos p = tile_of(g, tile);
        for (int i = threadIdx.x; i < CHUNKS; i += THREADS) {
            long long gr, gc;
            const int valid = chunk_source(g, p, i, &gr, &gc);
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            const float *src = x + (size_t)gr * g.ld + (size_t)gc;
            if (valid == 4) {
                v = *reinterpret_cast<const float4 *>(src);
            } else if (valid > 0) {
                v.x = src[0];
                v.y = valid > 1 ? src[1] : 0.0f;
                v.z = valid > 2 ? src[2] : 0.0f;
            }
            reinterpret_cast<float4 *>(box)[i] = v; /* box rows are 34 chunks: chunk i lands at float 4i */
        }
        __syncthreads();
        compute_tile(box, y, g, p);
        __syncthreads(); /* the box is refilled next */
    }
}

/* ---- 2. cp.async ring ---- */

/* This thread's chunks of tile `tile` into the buffer at shared address dst. */
__device__ __forceinline__ void cp_async_tile(const float *__restrict__ x, const pl_stencil_grid &g, size_t tile,
                                              uint32_t dst)
{
    const tile_pos p = tile_of(g, tile);
    for (int i = threadIdx.x; i < CHUNKS; i += THREADS) {
        long long gr, gc;
        const int valid = chunk_source(g, p, i, &gr, &gc);
        const float *src = valid ? x + (size_t)gr * g.ld + (size_t)gc : x;
        cp_async16(dst + 16u * i, src, 4 * valid);
    }
}

template <int STAGES>
__global__ void __launch_bounds__(THREADS)
    stencil_cp_async_kernel(const float *__restrict__ x, float *__restrict__ y, pl_stencil_grid g)
{
    extern __shared__ float4 smem_ring[];
    float *ring = reinterpret_cast<float *>(smem_ring);
    const uint32_t ring_addr = (uint32_t)__cvta_generic_to_shared(ring);
    const size_t tiles = tiles_of(g);
    /* this block's tiles: k-th is blockIdx.x + k * gridDim.x, staged in buffer k % STAGES */
    const size_t mine = tiles > blockIdx.x ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;

    for (int k = 0; k < STAGES - 1; k++) {
        if ((size_t)k < mine)
            cp_async_tile(x, g, blockIdx.x + k * gridDim.x, ring_addr + k * STAGE_BYTES);
        cp_async_commit(); /* one group per tile slot, empty or not, so that the counts below hold */
    }
    for (size_t k = 0; k < mine; k++) {
        cp_async_wait<STAGES - 2>(); /* this thread's copies of tile k have landed */
        __syncthreads();             /* everyone's have; everyone is done with tile k - 1's buffer */
        const size_t ahead = k + STAGES - 1;
        if (ahead < mine) /* into the buffer of tile k - 1 */
            cp_async_tile(x, g, blockIdx.x + ahead * gridDim.x, ring_addr + (uint32_t)((ahead % STAGES) * STAGE_BYTES));
        cp_async_commit();
        compute_tile(ring + (k % STAGES) * STAGE_FLOATS, y, g, tile_of(g, blockIdx.x + k * gridDim.x));
    }
    cp_async_wait<0>();
}

/* ---- 3. TMA ring on mbarriers ---- */

/* Thread 0: tile `tile` into the buffer at shared address dst, completing on the barrier at `bar`. */
__device__ __forceinline__ void tma_tile(const CUtensorMap *map, const pl_stencil_grid &g, size_t tile, uint32_t dst,
                                         uint32_t bar)
{
    const tile_pos p = tile_of(g, tile);
    mbar_arrive_expect_tx(bar, BOX_BYTES); /* the whole box counts, its zero-filled parts included */
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
                 "%3}], [%4];\n" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"((int)(p.c0 - HALO_C)), "r"((int)(p.r0 - 1)), "r"(bar)
                 : "memory");
}

__global__ void __launch_bounds__(THREADS)
    stencil_tma_kernel(const __grid_constant__ CUtensorMap map, float *__restrict__ y, pl_stencil_grid g, int stages)
{
    extern __shared__ float4 smem_tma[];
    __shared__ __align__(8) uint64_t full[PL_STENCIL_MAX_STAGES];
    /* dynamic shared memory is 16-byte aligned; TMA needs 128: the launcher asks for 128 bytes more */
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_tma);
    const uint32_t ring_addr = (raw + 127u) & ~127u;
    float *ring = reinterpret_cast<float *>(reinterpret_cast<char *>(smem_tma) + (ring_addr - raw));
    const uint32_t bar0 = (uint32_t)__cvta_generic_to_shared(full); /* barrier s at bar0 + 8s */
    const size_t tiles = tiles_of(g);
    /* this block's tiles: k-th is blockIdx.x + k * gridDim.x, staged in buffer k % stages */
    const size_t mine = tiles > blockIdx.x ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;

    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++)
            mbar_init(bar0 + 8u * s, 1);
        /* the copy engine (the async proxy) must see the initialised barriers */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        for (size_t k = 0; k < (size_t)stages && k < mine; k++)
            tma_tile(&map, g, blockIdx.x + k * gridDim.x, ring_addr + (uint32_t)(k * STAGE_BYTES),
                     bar0 + 8u * (uint32_t)k);
    }
    __syncthreads();
    for (size_t k = 0; k < mine; k++) {
        const uint32_t slot = (uint32_t)(k % stages);
        mbar_wait(bar0 + 8u * slot, (uint32_t)((k / stages) & 1)); /* the slot's (k / stages)-th fill landed */
        compute_tile(ring + slot * STAGE_FLOATS, y, g, tile_of(g, blockIdx.x + k * gridDim.x));
        __syncthreads(); /* every thread is done reading the slot */
        if (threadIdx.x == 0 && k + stages < mine)
            tma_tile(&map, g, blockIdx.x + (k + stages) * gridDim.x, ring_addr + slot * STAGE_BYTES, bar0 + 8u * slot);
    }
}

/* ---- host side ---- */

extern "C" pl_kernel_needs pl_stencil_needs(pl_stencil_version v)
{
    pl_kernel_needs n = {0, 0, 0};
    if (v == PL_STENCIL_CP_ASYNC)
        n.min_cc = 80;
    if (v == PL_STENCIL_TMA) {
        n.min_cc = 90;
        n.features = PL_KNEED_TMA;
    }
    return n;
}

static int grid_ok(const pl_stencil_grid *g)
{
    return g->rows > 0 && g->cols > 0 && g->ld >= g->cols && g->ld % 4 == 0 && g->rows < (1ull << 31) &&
           g->ld < (1ull << 31);
}

extern "C" size_t pl_stencil_tiles(const pl_stencil_grid *g)
{
    return ((g->rows + TH - 1) / TH) * ((g->cols + TW - 1) / TW);
}

static size_t smem_bytes(pl_stencil_version v, int stages)
{
    if (v == PL_STENCIL_SYNC)
        return STAGE_BYTES;
    if (v == PL_STENCIL_CP_ASYNC)
        return (size_t)stages * STAGE_BYTES;
    return (size_t)stages * STAGE_BYTES + 128;
}

static const void *kernel_of(pl_stencil_version v, int stages)
{
    if (v == PL_STENCIL_SYNC)
        return (const void *)stencil_sync_kernel;
    if (v == PL_STENCIL_TMA)
        return (const void *)stencil_tma_kernel;
    switch (stages) {
    case 2: return (const void *)stencil_cp_async_kernel<2>;
    case 3: return (const void *)stencil_cp_async_kernel<3>;
    case 4: return (const void *)stencil_cp_async_kernel<4>;
    default: return NULL;
    }
}

extern "C" cudaError_t pl_stencil_prepare(pl_stencil_version v, int stages, int *blocks_per_sm)
{
    if (stages < PL_STENCIL_MIN_STAGES || stages > PL_STENCIL_MAX_STAGES)
        return cudaErrorInvalidValue;
    const void *k = kernel_of(v, stages);
    const size_t smem = smem_bytes(v, stages);
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, k, THREADS, smem);
    return e;
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                    const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

extern "C" cudaError_t pl_stencil_tensor_map(CUtensorMap *map, const float *x, const pl_stencil_grid *g)
{
    if (!grid_ok(g) || (uintptr_t)x % 16 != 0)
        return cudaErrorInvalidValue;
    /* the driver's encoder, through the runtime (nothing links libcuda); the 12.0 ABI this code was written for */
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess)
        return e;
    if (q != cudaDriverEntryPointSuccess || !fn)
        return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {g->cols, g->rows}; /* innermost first */
    const cuuint64_t strides[1] = {g->ld * sizeof(float)};
    const cuuint32_t box[2] = {BOX_W, BOX_H};
    const cuuint32_t elem_strides[2] = {1, 1};
    CUresult r = ((encode_tiled_fn)fn)(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)x, dims, strides, box,
                                       elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

extern "C" cudaError_t pl_stencil_launch(pl_stencil_version v, const float *x, const CUtensorMap *map, float *y,
                                         const pl_stencil_grid *g, int stages, unsigned blocks, cudaStream_t stream)
{
    if (!grid_ok(g) || (uintptr_t)x % 16 != 0 ||
        (v != PL_STENCIL_SYNC && (stages < PL_STENCIL_MIN_STAGES || stages > PL_STENCIL_MAX_STAGES)))
        return cudaErrorInvalidValue;
    const size_t tiles = pl_stencil_tiles(g);
    const unsigned grid =
        blocks == 0 || blocks > tiles ? (unsigned)(tiles < 2147483647u ? tiles : 2147483647u) : blocks;
    const size_t smem = smem_bytes(v, stages);
    switch (v) {
    case PL_STENCIL_SYNC: stencil_sync_kernel<<<grid, THREADS, smem, stream>>>(x, y, *g); break;
    case PL_STENCIL_CP_ASYNC:
        if (stages == 2)
            stencil_cp_async_kernel<2><<<grid, THREADS, smem, stream>>>(x, y, *g);
        else if (stages == 3)
            stencil_cp_async_kernel<3><<<grid, THREADS, smem, stream>>>(x, y, *g);
        else
            stencil_cp_async_kernel<4><<<grid, THREADS, smem, stream>>>(x, y, *g);
        break;
    case PL_STENCIL_TMA:
        if (!map)
            return cudaErrorInvalidValue;
        stencil_tma_kernel<<<grid, THREADS, smem, stream>>>(*map, y, *g, stages);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
