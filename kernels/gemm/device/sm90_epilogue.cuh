/* The epilogue of the warp-specialized sm_90a kernels: a warpgroup's m64nN accumulator goes to D through shared
 * memory. For each 64×64 subtile, stmatrix writes the bf16 values in the 128-byte-swizzled layout (conflict-free),
 * a proxy fence and a warpgroup barrier hand it to the async proxy, and one thread issues the TMA store, which
 * writes whole lines, clips at the edges of D and runs in the background.
 *
 * The fused epilogue (bias, GELU, residual) must not wait for its operands after the mainloop: the tensor cores
 * idle meanwhile. So its operands come ahead through TMA: a few k-blocks before a tile's mainloop ends, the
 * warpgroup's leader loads the residual subtiles into the very buffers the output will leave through (same
 * swizzled layout) and the bias of its columns into a small shared array, counted on one mbarrier per buffer.
 * In the epilogue each lane reads its residual pairs with ldmatrix from exactly the addresses its stmatrix then
 * writes, so the output replaces the residual in place. Where there are fewer buffers than subtiles, a buffer's
 * next residual is loaded as soon as the store of the previous subtile in it has read it (its L2 lines were
 * prefetched with the first loads). Include only from sm_90a code. */
#ifndef PERFLAB_GEMM_SM90_EPILOGUE_CUH
#define PERFLAB_GEMM_SM90_EPILOGUE_CUH

#include "gemm/device/epilogue.cuh"
#include "common/ldmatrix.cuh"
#include "common/sm90_common.cuh"

#define EPI_SUB       64 /* subtiles of 64×64 bf16: one 128-byte swizzle row per row */
#define EPI_SUB_BYTES (EPI_SUB * EPI_SUB * 2)

/* Subtile `sub`'s 32 accumulators of this lane (chunks 8·sub .. 8·sub + 7) into v, with compile-time indices only
 * (a run-time index into acc would move it to local memory). */
template <int N> __device__ __forceinline__ void subtile_values(const float (&acc)[N / 2], int sub, float (&v)[32])
{
#pragma unroll
    for (int s = 0; s < N / EPI_SUB; s++)
        if (s == sub) {
#pragma unroll
            for (int i = 0; i < 32; i++)
                v[i] = acc[32 * s + i];
        }
}

/* The address of 16-byte chunk `chunk` of row `row` of a buffer of 128-byte rows in the 128-byte swizzle (chunk index
 * XOR row % 8): the layout TMA reads and writes with CU_TENSOR_MAP_SWIZZLE_128B and stmatrix writes conflict-free. */
__device__ __forceinline__ uint32_t swizzle128(uint32_t buf, int row, int chunk)
{
    return buf + row * 128 + ((chunk ^ (row & 7)) << 4);
}

/* 16 bytes from shared memory. */
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

/* The subtile row this lane addresses for stmatrix/ldmatrix of its warp's 16 rows (warp = its warp in the
 * warpgroup): lanes 0-7 and 16-23 rows 0-7, lanes 8-15 and 24-31 rows 8-15. */
__device__ __forceinline__ int subtile_srow(int warp, int lane)
{
    return warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
}

/* The shared-memory address this lane gives stmatrix/ldmatrix for column chunks (c, c + 1) of a subtile: lanes
 * 0-7 rows 0-7 of chunk c, 8-15 rows 8-15 of chunk c, 16-23 and 24-31 the same of chunk c + 1, in the 128-byte
 * swizzle (16-byte chunk index XOR row % 8). */
__device__ __forceinline__ uint32_t subtile_addr(uint32_t buf, int srow, int c)
{
    const int chunk = c + ((threadIdx.x & 31) >> 4);
    return swizzle128(buf, srow, chunk);
}

/* The first CHUNKS 8-column chunks of a subtile's values (v[4·chunk ..]) as bf16 into `buf`, a pair of chunks per
 * stmatrix: rows 128 bytes apart in the 128-byte swizzle (subtile_addr) when SWIZZLED, else ROW_BYTES apart in
 * plain order. Register q of a 4-matrix stmatrix/ldmatrix for chunks (c, c + 1) holds this lane's pair of chunk
 * c + q/2, row half q%2: accumulator index 4·chunk + 2·half. */
template <int CHUNKS, bool SWIZZLED, int ROW_BYTES = 128>
__device__ __forceinline__ void chunks_to_smem(const float (&v)[32], uint32_t buf, int srow)
{
#pragma unroll
    for (int c = 0; c < CHUNKS; c += 2) {
        uint32_t r[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int k = 4 * (c + (q >> 1)) + 2 * (q & 1);
            r[q] = pl_pack_bf16x2(v[k], v[k + 1]);
        }
        const uint32_t addr =
            SWIZZLED ? subtile_addr(buf, srow, c) : buf + srow * ROW_BYTES + (c + ((threadIdx.x & 31) >> 4)) * 16;
        stmatrix_x4(addr, r[0], r[1], r[2], r[3]);
    }
}

/* A whole 64×64 subtile, 128-byte swizzled. */
__device__ __forceinline__ void plain_subtile_to_smem(const float (&v)[32], uint32_t buf, int srow)
{
    chunks_to_smem<8, true>(v, buf, srow);
}

/* The fused subtile: residual pairs from `buf` (already there), bias pairs from `bias` (this subtile's 64
 * columns), the result written over the residual. */
__device__ __forceinline__ void fused_subtile_in_smem(const pl_gemm_out &o, const float (&v)[32], uint32_t buf,
                                                      uint32_t bias, int srow)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int c = 0; c < 8; c += 2) {
        const uint32_t addr = subtile_addr(buf, srow, c);
        uint32_t res[4] = {0u, 0u, 0u, 0u}, bias2[2] = {0u, 0u}, r[4];
        if (o.residual)
            ldmatrix_x4(res, addr);
        if (o.bias)
#pragma unroll
            for (int i = 0; i < 2; i++)
                asm volatile("ld.shared.b32 %0, [%1];\n"
                             : "=r"(bias2[i])
                             : "r"(bias + (8 * (c + i) + 2 * (lane & 3)) * 2));
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int k = 4 * (c + (q >> 1)) + 2 * (q & 1);
            r[q] = pl_gemm_epilogue_pair(v[k], v[k + 1], bias2[q >> 1], res[q], o.bias != nullptr, o.gelu,
                                         o.residual != nullptr);
        }
        stmatrix_x4(addr, r[0], r[1], r[2], r[3]);
    }
}

/* Where a warpgroup's fused epilogue keeps its operands: RING subtile buffers (EPI_SUB_BYTES each, the output's
 * too), one mbarrier per buffer, the bias of its N columns, and the parity each barrier waits for next. */
struct epi_fused_smem {
    uint32_t bufs, bars, bias;
    uint32_t parity; /* bit b: the phase buffer b's barrier completes next */
};

/* This warpgroup's first row and its columns for the calls of one tile: subtile g (counting over the tile's
 * calls, N/64 per call, each call's rows below the previous call's by 64) sits at rows row0 + 64·(g / (N/64)), columns
 * n0 + 64·(g % (N/64)). */
template <int N> __device__ __forceinline__ int subtile_row(int row0, int g)
{
    return row0 + EPI_SUB * (g / (N / EPI_SUB));
}

template <int N> __device__ __forceinline__ int subtile_col(int n0, int g)
{
    return n0 + EPI_SUB * (g % (N / EPI_SUB));
}

/* Load the residual subtile at (row, col) into buffer b and count it (and, when `bias_bytes`, the bias of the
 * columns from n0) on b's barrier. Leader thread only. */
__device__ __forceinline__ void fused_load(const pl_gemm_out &o, const CUtensorMap *tma_r, const epi_fused_smem &s,
                                           int b, int row, int col, int n0, uint32_t bias_bytes)
{
    const uint32_t bar = s.bars + 8 * b;
    mbar_arrive_expect_tx(bar, (o.residual ? EPI_SUB_BYTES : 0) + bias_bytes);
    if (o.residual)
        tma_load_2d(s.bufs + b * EPI_SUB_BYTES, tma_r, bar, col, row);
    if (bias_bytes)
        bulk_load_1d(s.bias, o.bias + n0, bias_bytes, bar);
}

/* Issued a few k-blocks before the end of a tile's mainloop, by the warpgroup's leader: once the previous tile's
 * stores have read the buffers, the first RING of the tile's SUBTILES residual subtiles and the bias of columns
 * n0 .. n0 + N - 1 start loading; the rest of the residual goes to L2 now, to shared memory in the epilogue. */
template <int N, int RING, int SUBTILES>
__device__ __forceinline__ void epilogue_fused_prefetch(const pl_gemm_out &o, const CUtensorMap *tma_r,
                                                        const epi_fused_smem &s, int row0, int n0)
{
    if ((threadIdx.x & 127) != 0)
        return;
    bulk_wait_read<0>();
    const uint32_t bias_bytes = o.bias ? 2u * (uint32_t)min(N, o.n - n0) : 0u; /* n % 8 == 0: a multiple of 16 */
#pragma unroll
    for (int g = 0; g < SUBTILES; g++) {
        if (g < RING)
            fused_load(o, tma_r, s, g, subtile_row<N>(row0, g), subtile_col<N>(n0, g), n0, g == 0 ? bias_bytes : 0u);
        else if (o.residual)
            tma_prefetch_l2_2d(tma_r, subtile_col<N>(n0, g), subtile_row<N>(row0, g));
    }
}

/* The narrower last subtile of a tile whose width N is not a multiple of 64 (48 columns of 176, 32 of 224):
 * its N % 64 columns of this lane's accumulators, stmatrix'd into `buf` without swizzle (rows (N % 64) · 2 bytes
 * apart, the layout of the dense tensor map its TMA store reads: pl_tensor_map_bf16_dense). Rows 96 bytes apart
 * (176 columns) put two of a matrix's eight rows on the same banks, 64 bytes apart (224) four: 2- and 4-way
 * conflicts on the tail's stmatrix (bank arithmetic, not measured). */
template <int N> __device__ __forceinline__ void tail_subtile_to_smem(const float (&acc)[N / 2], uint32_t buf, int srow)
{
    constexpr int W = N % EPI_SUB, FIRST = 32 * (N / EPI_SUB);
    static_assert(W % 16 == 0, "the tail is whole pairs of 8-column chunks");
    float v[32];
#pragma unroll
    for (int i = 0; i < W / 2; i++)
        v[i] = acc[FIRST + i];
    chunks_to_smem<W / 8, false, W * 2>(v, buf, srow);
}

/* Subtiles `first`, `first`+1, ... of the tile (counting from 0 at its first call for a tile) use buffers
 * (index % RING) of `bufs`; a buffer is rewritten only after the store that last read it has finished reading.
 * The first call of a tile also waits for the previous tile's stores to have read their buffers. With RING equal
 * to the tile's subtile count, nothing ever waits inside a tile. Where N is not a multiple of 64, the last
 * subtile is N % 64 wide and leaves through `tma_tail` (a dense map of that box: tail_subtile_to_smem). */
template <int N, int RING>
__device__ __forceinline__ void epilogue_tma_m64(const CUtensorMap *tma_d, const float (&acc)[N / 2], uint32_t bufs,
                                                 int first, uint32_t barrier_id, int row0, int n0,
                                                 const CUtensorMap *tma_tail = nullptr)
{
    constexpr int WHOLE = N / EPI_SUB, SUBS = WHOLE + (N % EPI_SUB ? 1 : 0);
    const int t = threadIdx.x & 127, lane = t & 31, warp = t >> 5;
    const bool leader = t == 0;
    const int srow = subtile_srow(warp, lane);
    if (first == 0) {
        if (leader)
            bulk_wait_read<0>();
        named_barrier_sync(barrier_id, 128);
    }
#pragma unroll
    for (int sub = 0; sub < SUBS; sub++) {
        const int g = first + sub;
        const uint32_t buf = bufs + (g % RING) * EPI_SUB_BYTES;
        if (g >= RING) {
            if (leader)
                bulk_wait_read<RING - 1>();
            named_barrier_sync(barrier_id, 128);
        }
        if (sub < WHOLE) {
            float v[32];
            subtile_values<N>(acc, sub, v);
            plain_subtile_to_smem(v, buf, srow);
        } else {
            tail_subtile_to_smem<N>(acc, buf, srow);
        }
        fence_proxy_async_shared();
        named_barrier_sync(barrier_id, 128);
        if (leader) {
            tma_store_2d(sub < WHOLE ? tma_d : tma_tail, buf, n0 + sub * EPI_SUB, row0);
            bulk_commit();
        }
    }
}

/* A warpgroup's 64 rows of an m64nN accumulator (N a multiple of 64) to D through shared memory and ordinary
 * stores, for D whose rows end where a TMA box cannot (a group's last row inside D): each 64×64 subtile goes into
 * one of two buffers of `bufs` (stmatrix, swizzled as epilogue_tma_m64's), then every thread copies four 16-byte
 * chunks of it out to D, whole 128-byte lines, rows row0 .. row0 + rows - 1 and columns below o.n only (o.n % 8 ==
 * 0, D 16-byte aligned). Nothing waits for a store. A buffer is written again two subtiles later, after the barrier
 * of the subtile between, which orders every thread's reads of it; the next call's first two subtiles likewise. */
template <int N>
__device__ __forceinline__ void epilogue_lines_m64(const pl_gemm_out &o, const float (&acc)[N / 2], uint32_t bufs,
                                                   uint32_t barrier_id, int row0, int n0, int rows)
{
    static_assert(N % EPI_SUB == 0, "whole subtiles");
    const int t = threadIdx.x & 127, lane = t & 31, warp = t >> 5;
    const int srow = subtile_srow(warp, lane);
    if (t == 0)
        bulk_wait_read<0>(); /* TMA stores of an earlier tile (epilogue_tma_m64) have read the buffers */
    named_barrier_sync(barrier_id, 128);
#pragma unroll
    for (int sub = 0; sub < N / EPI_SUB; sub++) {
        const uint32_t buf = bufs + (sub & 1) * EPI_SUB_BYTES;
        float v[32];
        subtile_values<N>(acc, sub, v);
        plain_subtile_to_smem(v, buf, srow);
        named_barrier_sync(barrier_id, 128);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int q = t + 128 * i, r = q >> 3, c = q & 7, col = n0 + sub * EPI_SUB + 8 * c;
            if (r < rows && col < o.n)
                *reinterpret_cast<uint4 *>(o.d + (size_t)(row0 + r) * o.n + col) = ld_shared_v4(swizzle128(buf, r, c));
        }
    }
}

/* The fused epilogue of one call (rows row0 .. row0 + 63, first subtile `first` of the tile), its operands loaded
 * by epilogue_fused_prefetch. Not unrolled over the subtiles: four copies of the arithmetic would fill the
 * instruction cache. */
template <int N, int RING>
__device__ __forceinline__ void epilogue_fused_m64(const pl_gemm_out &o, const CUtensorMap *tma_d,
                                                   const CUtensorMap *tma_r, const float (&acc)[N / 2],
                                                   epi_fused_smem &s, int first, uint32_t barrier_id, int row0, int n0)
{
    const int t = threadIdx.x & 127, lane = t & 31, warp = t >> 5;
    const int srow = subtile_srow(warp, lane);
#pragma unroll 1
    for (int sub = 0; sub < N / EPI_SUB; sub++) {
        const int b = (first + sub) % RING;
        const uint32_t buf = s.bufs + b * EPI_SUB_BYTES;
        mbar_wait(s.bars + 8 * b, (s.parity >> b) & 1);
        s.parity ^= 1u << b;
        float v[32];
        subtile_values<N>(acc, sub, v);
        fused_subtile_in_smem(o, v, buf, s.bias + sub * EPI_SUB * 2, srow);
        fence_proxy_async_shared();
        named_barrier_sync(barrier_id, 128);
        if (t == 0) {
            tma_store_2d(tma_d, buf, n0 + sub * EPI_SUB, row0);
            bulk_commit();
            if (sub + RING < N / EPI_SUB) { /* this buffer's next subtile, once the store has read it */
                bulk_wait_read<0>();
                fused_load(o, tma_r, s, b, row0, n0 + (sub + RING) * EPI_SUB, n0, 0u);
            }
        }
    }
}

#endif
