/* The epilogue of the warp-specialized sm_90a kernels: a warpgroup's m64nN accumulator goes to D through shared
 * memory. For each 64×64 subtile, stmatrix writes the bf16 values in the 128-byte-swizzled layout (conflict-free),
 * a proxy fence and a warpgroup barrier hand it to the async proxy, and one thread issues the TMA store, which
 * writes whole lines, clips at the edges of D and runs in the background. Include only from sm_90a code. */
#ifndef PERFLAB_GEMM_SM90_EPILOGUE_CUH
#define PERFLAB_GEMM_SM90_EPILOGUE_CUH

#include "gemm/epilogue.cuh"
#include "gemm/sm90_common.cuh"

#define EPI_SUB       64 /* subtiles of 64×64 bf16: one 128-byte swizzle row per row */
#define EPI_SUB_BYTES (EPI_SUB * EPI_SUB * 2)

__device__ __forceinline__ uint32_t ld_u32(const uint16_t *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}

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

/* What the fused epilogue adds to one subtile, for this lane: the bias pair of each of its 8 column chunks and the
 * residual pair of each (chunk, row). */
struct epi_operands {
    uint32_t bias2[8];
    uint32_t res2[8][2];
};

__device__ __forceinline__ void load_epi_operands(const pl_gemm_out &o, int row, int col0, epi_operands &e)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int c = 0; c < 8; c++) {
        const int cc = col0 + 8 * c + 2 * (lane & 3);
        e.bias2[c] = o.bias && cc < o.n ? ld_u32(o.bias + cc) : 0u;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int rr = row + 8 * h;
            e.res2[c][h] = o.residual && rr < o.m && cc < o.n ? ld_u32(o.residual + (size_t)rr * o.n + cc) : 0u;
        }
    }
}

/* One 64×64 subtile to shared memory, `v` holding this lane's 32 values of it (chunk c: v[4c..4c+3]) and, when
 * fused, `e` the bias and residual to add. */
template <bool FUSED>
__device__ __forceinline__ void subtile_to_smem(const pl_gemm_out &o, const float (&v)[32], const epi_operands &e,
                                                uint32_t buf, int row, int srow, int col0)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int c = 0; c < 8; c += 2) {
        uint32_t r[4];
#pragma unroll
        for (int q = 0; q < 4; q++) { /* matrices (rows 0-7 | 8-15) × (chunk c | c+1) */
            const int ch = c + (q >> 1), h = q & 1, k = 4 * ch + 2 * h;
            if (!FUSED) {
                r[q] = pl_pack_bf16x2(v[k], v[k + 1]);
            } else {
                const int rr = row + 8 * h, cc = col0 + 8 * ch + 2 * (lane & 3);
                r[q] = rr < o.m && cc < o.n ? pl_gemm_epilogue_pair(v[k], v[k + 1], e.bias2[ch], e.res2[ch][h],
                                                                    o.bias != nullptr, o.gelu, o.residual != nullptr)
                                            : 0u; /* outside D: the TMA store clips it */
            }
        }
        const int chunk = c + (lane >> 4);
        stmatrix_x4(buf + srow * 128 + ((chunk ^ (srow & 7)) << 4), r[0], r[1], r[2], r[3]);
    }
}

/* Subtiles `first`, `first`+1, ... of the tile (counting from 0 at its first call for a tile) use buffers
 * (index % RING) of `bufs`; a buffer is rewritten only after the store that last read it has finished reading.
 * The first call of a tile also waits for the previous tile's stores to have read their buffers. With RING equal
 * to the tile's subtile count, nothing ever waits inside a tile. The plain epilogue is unrolled over the
 * subtiles; the fused one loops over them (its arithmetic, unrolled four times, would fill the instruction
 * cache). */
template <int N, int RING, bool FUSED>
__device__ __forceinline__ void epilogue_tma_m64_impl(const pl_gemm_out &o, const CUtensorMap *tma_d,
                                                      const float (&acc)[N / 2], uint32_t bufs, int first,
                                                      uint32_t barrier_id, int row0, int n0)
{
    const int t = threadIdx.x & 127, lane = t & 31, warp = t >> 5;
    const bool leader = t == 0;
    const int row = row0 + warp * 16 + (lane >> 2);                  /* this lane's rows: row, row + 8 */
    const int srow = warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8; /* the row it addresses for stmatrix */
    if (first == 0) {
        if (leader)
            bulk_wait_read<0>();
        named_barrier_sync(barrier_id, 128);
    }
    constexpr int unroll = FUSED ? 1 : N / 64;
#pragma unroll unroll
    for (int sub = 0; sub < N / EPI_SUB; sub++) {
        const int g = first + sub;
        const uint32_t buf = bufs + (g % RING) * EPI_SUB_BYTES;
        /* fused: all of this subtile's bias and residual loads in flight before the arithmetic (loading the next
         * subtile's while computing this one needs 24 more registers than the 168 a consumer has: it spilled) */
        epi_operands e;
        if (FUSED)
            load_epi_operands(o, row, n0 + sub * EPI_SUB, e);
        if (g >= RING) {
            if (leader)
                bulk_wait_read<RING - 1>();
            named_barrier_sync(barrier_id, 128);
        }
        float v[32];
        subtile_values<N>(acc, sub, v);
        subtile_to_smem<FUSED>(o, v, e, buf, row, srow, n0 + sub * EPI_SUB);
        fence_proxy_async_shared();
        named_barrier_sync(barrier_id, 128);
        if (leader) {
            tma_store_2d(tma_d, buf, n0 + sub * EPI_SUB, row0);
            bulk_commit();
        }
    }
}

/* Fused epilogue: pull this lane's residual lines of a 16-row × `cols` slice (rows row, row + 8) into L2 at the
 * start of a tile, so that the epilogue's loads, issued after the mainloop, hit L2 instead of waiting for HBM.
 * The four lanes that share a row split its 128-byte lines. */
__device__ __forceinline__ void prefetch_residual(const pl_gemm_out &o, int row, int n0, int cols)
{
    if (!o.residual)
        return;
    const int lane = threadIdx.x & 31;
    for (int line = lane & 3; line * 64 < cols; line += 4) {
        const int col = n0 + line * 64;
        if (col >= o.n)
            break;
        for (int h = 0; h < 2; h++)
            if (row + 8 * h < o.m)
                prefetch_l2(o.residual + (size_t)(row + 8 * h) * o.n + col);
    }
}

/* The plain and the fused epilogue as two separate instantiations: interleaved in one unrolled body, the plain
 * path would jump over the fused code at every pair and run from instruction-cache misses. */
template <int N, int RING>
__device__ __forceinline__ void epilogue_tma_m64(const pl_gemm_out &o, const CUtensorMap *tma_d,
                                                 const float (&acc)[N / 2], uint32_t bufs, int first,
                                                 uint32_t barrier_id, int row0, int n0)
{
    if (o.fused)
        epilogue_tma_m64_impl<N, RING, true>(o, tma_d, acc, bufs, first, barrier_id, row0, n0);
    else
        epilogue_tma_m64_impl<N, RING, false>(o, tma_d, acc, bufs, first, barrier_id, row0, n0);
}

#endif
