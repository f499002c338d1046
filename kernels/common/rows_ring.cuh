/* Rows fed to a block by TMA bulk copies (the *_tma row versions, sm_90+): a ring of S row buffers in shared
 * memory, each with an mbarrier that counts the bytes of the copy filling it. One thread issues one
 * cp.async.bulk per row (no per-thread load instructions, no registers held while the bytes travel); the block
 * walks its rows (blockIdx.x, + gridDim.x, ...), waits on the slot of the row it is at, reads its own vectors into
 * registers, and after its next block-wide barrier (the row's reduction) the slot is refilled with the row S steps
 * ahead. So every block has S - 1 rows of loads in flight while it computes and stores one.
 *
 * Only for rows that start 16-byte aligned and are a multiple of 16 bytes long (x 16-byte aligned, cols % 8 == 0:
 * the bulk copy's rule); the launchers send other shapes to the register kernels. */
#ifndef PERFLAB_KERNELS_ROWS_RING_CUH
#define PERFLAB_KERNELS_ROWS_RING_CUH

#include "common/rows.cuh"
#include "common/sm90_ptx.cuh"

struct rows_ring {
    uint4 *buf;     /* S slots of nvec vectors (dynamic shared memory, 16-byte aligned) */
    uint64_t *full; /* S mbarriers: slot s holds its row once its phase completes */
    int nvec;       /* vectors per row: cols / 8 */
    uint32_t bytes; /* bytes per row: 2 cols */
};

/* Thread 0: copy the row at src into slot s (one bulk copy, counted on the slot's barrier). */
__device__ __forceinline__ void rows_ring_fill(const rows_ring &r, int s, const uint16_t *src)
{
    const uint32_t bar = smem_u32(r.full + s);
    mbar_arrive_expect_tx(bar, r.bytes);
    bulk_load_1d(smem_u32(r.buf + (size_t)s * r.nvec), src, r.bytes, bar);
}

/* The ring of a block: barriers initialised, the block's first S rows (row0, row0 + step, ...) on their way. Every
 * thread calls it (one barrier). */
template <int S>
__device__ __forceinline__ rows_ring rows_ring_start(uint4 *buf, uint64_t *full, const uint16_t *x, int rows, int cols,
                                                     size_t row0, size_t step)
{
    rows_ring r;
    r.buf = buf;
    r.full = full;
    r.nvec = cols >> 3;
    r.bytes = (uint32_t)cols * 2u;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; s++)
            mbar_init(smem_u32(full + s), 1);
        mbar_fence_init();
#pragma unroll
        for (int s = 0; s < S; s++)
            if (row0 + s * step < (size_t)rows)
                rows_ring_fill(r, s, x + (row0 + s * step) * (size_t)cols);
    }
    __syncthreads();
    return r;
}

/* Wait until slot s holds the row of its use-th filling (0, 1, ...), then read this thread's vectors t + k * group
 * of it into v (`fill` bits past the row's end). */
template <int NV>
__device__ __forceinline__ void rows_ring_read(uint4 (&v)[NV], const rows_ring &r, int s, int use, int t, int group,
                                               uint16_t fill)
{
    mbar_wait(smem_u32(r.full + s), (uint32_t)use & 1u);
    const uint4 *slot = r.buf + (size_t)s * r.nvec;
    const uint32_t f2 = (uint32_t)fill * 0x10001u;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = t + k * group;
        v[k] = j < r.nvec ? slot[j] : make_uint4(f2, f2, f2, f2);
    }
}

/* The first element of slot s (a broadcast read). */
__device__ __forceinline__ float rows_ring_first(const rows_ring &r, int s)
{
    return rows_bf16((uint16_t)(r.buf[(size_t)s * r.nvec].x & 0xffffu));
}

/* Thread 0, after a block-wide barrier that follows every thread's rows_ring_read of slot s: refill it with the row
 * `row` (nothing when row >= rows). */
__device__ __forceinline__ void rows_ring_refill(const rows_ring &r, int s, const uint16_t *x, int rows, int cols,
                                                 size_t row)
{
    if (threadIdx.x == 0 && row < (size_t)rows)
        rows_ring_fill(r, s, x + row * (size_t)cols);
}

/* ---- host side ---- */

#define ROWS_RING_MAX_SMEM (200 * 1024) /* a block's ring at most (an SM has 227 KB for its blocks) */

/* Whether rows x cols can take a ring of `stages` slots: 16-byte rows, and the ring within ROWS_RING_MAX_SMEM. */
static inline int rows_ring_fits(const void *x, int cols, int stages)
{
    return pl_rows_aligned(x, cols) && (size_t)stages * (size_t)cols * 2u <= ROWS_RING_MAX_SMEM;
}

/* Launch geometry of a ring kernel: its dynamic shared memory allowed, as many blocks as are resident at once over
 * all SMs (each walks rows blockIdx.x, + gridDim.x, ...), never more than rows. */
template <typename K>
static cudaError_t rows_ring_grid(K kernel, int threads, size_t smem, int rows, unsigned *grid)
{
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err == cudaSuccess)
        err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
    if (err != cudaSuccess)
        return err;
    if (per_sm < 1)
        return cudaErrorInvalidConfiguration;
    const long long g = (long long)sms * per_sm;
    *grid = (unsigned)(g < rows ? g : rows);
    return cudaSuccess;
}

#endif

