/* What the split-K kernels share (the BF16 ones of wgmma_sk_sm90a.cu, whose top and gemm_sk_kernel say how they
 * work, and the FP8 ones of fp8_sk_sm90a.cu): the CTA's configuration (sk_config: stages, shared memory, the partial
 * tile's layout) and the fix-up (sk_reduce): the partials' loads through DSMEM (pull) or stores with st.async (push),
 * the fragments of a consumer's accumulators with their places, and the owner's sums in rank order with the epilogue.
 * sm_90a only. */
#ifndef PERFLAB_GEMM_SM90_WGMMA_SK_FIXUP_CUH
#define PERFLAB_GEMM_SM90_WGMMA_SK_FIXUP_CUH

#include "gemm/device/epilogue.cuh"
#include "common/sm90_common.cuh"
#include "gemm/host/splitk.h"

/* Four fp32 of CTA `rank` of the cluster, at the shared-memory offset `addr` (16-byte aligned) has in this CTA. */
__device__ __forceinline__ float4 dsmem_load_f32x4(uint32_t addr, uint32_t rank)
{
    float4 v;
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %4, %5;\n"
                 "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [remote];\n"
                 "}\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr), "r"(rank)
                 : "memory");
    return v;
}

__device__ __forceinline__ float4 smem_load_f32x4(uint32_t addr)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

#define SK_FIXUP_BATCH 4 /* partials loaded before the first of them is added: loads in flight per thread */
/* Which kernels push their partials (st.async) rather than have the owners pull them (DSMEM loads): the
 * one-warpgroup ones. Measured (2026-11-27, the two builds alternated in one process): on the H100 pushing
 * made the deep kernels 3-6% faster on 512×512×3584 and 256×256×7168, 0-4% elsewhere, and the two-warpgroup
 * 128×128 kernel 2-5% slower at its best splits; on the H200 the swapped kernels came out even (0.965-1.05). */
#define SK_PUSH(wg) ((wg) == 1)

/* Four (or one) fp32 into shared memory at `addr` of CTA `rank` of the cluster (this one included), counted as
 * transaction bytes on the barrier at `bar` in that CTA: a store that needs no fence, its arrival known from the
 * barrier. */
__device__ __forceinline__ void st_async_f32x4(uint32_t addr, uint32_t bar, uint32_t rank, float4 v)
{
    asm volatile("{\n"
                 ".reg .b32 ra, rb;\n"
                 "mapa.shared::cluster.u32 ra, %0, %6;\n"
                 "mapa.shared::cluster.u32 rb, %1, %6;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [ra], {%2, %3, %4, %5}, [rb];\n"
                 "}\n" ::"r"(addr),
                 "r"(bar), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(rank)
                 : "memory");
}

__device__ __forceinline__ void st_async_f32(uint32_t addr, uint32_t bar, uint32_t rank, float v)
{
    asm volatile("{\n"
                 ".reg .b32 ra, rb;\n"
                 "mapa.shared::cluster.u32 ra, %0, %3;\n"
                 "mapa.shared::cluster.u32 rb, %1, %3;\n"
                 "st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [ra], %2, [rb];\n"
                 "}\n" ::"r"(addr),
                 "r"(bar), "f"(v), "r"(rank)
                 : "memory");
}

/* Every pair of a consumer warp's m64nTILE accumulators with its place: f(r, c, v0, v1) for row r of the tile's X
 * rows (16·warp + lane/4, +8) and columns c, c + 1 of its Y columns (the wgmma fragment layout: register 4j + 2h + e
 * is row 16·warp + 8h + lane/4, column 8j + 2·(lane%4) + e). */
template <int TILE, typename F>
__device__ __forceinline__ void sk_fragment_pairs(const float (&acc)[TILE / 2], int warp, int lane, F f)
{
    const int g = lane >> 2, q = lane & 3;
#pragma unroll
    for (int j = 0; j < TILE / 8; j++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            f(16 * warp + 8 * h + g, 8 * j + 2 * q, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
}

/* The push: this CTA's partial straight from registers into the owners' stages (st.async, counted in bytes on the
 * owner's `recv` barrier): slot `rank` of each owner, row by row of the rows it owns. */
template <int TILE, int SWAP, int PITCH>
__device__ __forceinline__ void sk_push_partials(const float (&acc)[TILE / 2], uint32_t base, uint32_t recv, int rank,
                                                 int rows_per, int warp, int lane)
{
    if constexpr (SWAP) { /* X row r is D's column: D rows c and c + 1, one fp32 each */
        sk_fragment_pairs<TILE>(acc, warp, lane, [&](int r, int c, float v0, float v1) {
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int owner = (c + e) / rows_per, lr = c + e - owner * rows_per;
                st_async_f32(base + (uint32_t)(((rank * rows_per + lr) * PITCH + r) * 4), recv, (uint32_t)owner,
                             e ? v1 : v0);
            }
        });
    } else { /* D row r: lanes q and q^1 swap column pairs so that each pushes four adjacent columns
              * (16 bytes), the even lane those of chunk j, the odd one those of chunk j + 1 */
        const int g = lane >> 2, q = lane & 3;
        const bool odd = q & 1;
#pragma unroll
        for (int j = 0; j < TILE / 8; j += 2)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = 16 * warp + 8 * h + g;
                const float a0 = acc[4 * j + 2 * h], a1 = acc[4 * j + 2 * h + 1];
                const float b0 = acc[4 * (j + 1) + 2 * h], b1 = acc[4 * (j + 1) + 2 * h + 1];
                const float p0 = __shfl_xor_sync(0xffffffffu, odd ? a0 : b0, 1);
                const float p1 = __shfl_xor_sync(0xffffffffu, odd ? a1 : b1, 1);
                const float4 v = odd ? make_float4(p0, p1, b0, b1) : make_float4(a0, a1, p0, p1);
                const int c = odd ? 8 * (j + 1) + 2 * (q - 1) : 8 * j + 2 * q;
                const int owner = r / rows_per, lr = r - owner * rows_per;
                st_async_f32x4(base + (uint32_t)(((rank * rows_per + lr) * PITCH + c) * 4), recv, (uint32_t)owner, v);
            }
    }
}

/* The fix-up's sums: this CTA's rows, four columns a thread (16-byte loads), SK_FIXUP_BATCH partials loaded before
 * any is added, in rank order; then the epilogue and the bf16 stores. */
template <int SWAP, int OUT_COLS, int PITCH, int THREADS>
__device__ __forceinline__ void sk_fixup(const pl_gemm_out &o, uint32_t base, bool push, int split, int r_begin,
                                         int rows_per, int own_rows, int x0, int y0)
{
    const int quads_per_row = OUT_COLS / 4;
    const int m0 = SWAP ? y0 : x0, n0 = SWAP ? x0 : y0;
    const int quads = own_rows * quads_per_row;
    const uint32_t slot_bytes = (uint32_t)(rows_per * PITCH * 4);
    for (int i = (int)threadIdx.x; i < quads; i += THREADS) {
        const int lr = i / quads_per_row, col = 4 * (i % quads_per_row);
        /* pushed: slot s of this CTA's stages; else row r_begin + lr of each CTA's own partial (DSMEM) */
        const uint32_t addr = base + (uint32_t)(((push ? 0 : r_begin) + lr) * PITCH + col) * 4u;
        float4 sum = split > 1 && !push ? dsmem_load_f32x4(addr, 0) : smem_load_f32x4(addr);
        for (int s0 = 1; s0 < split; s0 += SK_FIXUP_BATCH) {
            float4 v[SK_FIXUP_BATCH];
#pragma unroll
            for (int u = 0; u < SK_FIXUP_BATCH; u++)
                if (s0 + u < split)
                    v[u] = push ? smem_load_f32x4(addr + (uint32_t)(s0 + u) * slot_bytes)
                                : dsmem_load_f32x4(addr, (uint32_t)(s0 + u));
#pragma unroll
            for (int u = 0; u < SK_FIXUP_BATCH; u++)
                if (s0 + u < split) {
                    sum.x += v[u].x;
                    sum.y += v[u].y;
                    sum.z += v[u].z;
                    sum.w += v[u].w;
                }
        }
        pl_gemm_store4(o, m0 + r_begin + lr, n0 + col, sum);
    }
}

#define SK_SMEM_PER_SM 233472 /* 228 KB of shared memory per SM on sm_90 */
#define SK_RESERVED    1024   /* per CTA, kept by the system */
#define SK_SMEM_LIMIT  PL_SK_SMEM_LIMIT
#define SK_MAX_REGS    128 /* 3 CTAs × 5 warps: 4 warps on some sub-partition, 16384 / (4 · 32) registers */
#define SK_WG2_REGS    168 /* one CTA of 9 warps an SM: 3 warps on some sub-partition, 16384 / (3 · 32) = 170 */

/* WG consumer warpgroups (1: three CTAs an SM; 2: the PL_SK_WG2 kernels, one CTA an SM) each take 64 rows of X.
 * DEEP (one warpgroup, the PL_SK_DEEP kernels): one CTA an SM too, its ring as deep as the shared memory holds. */
template <int TILE, int SWAP, int WG = 1, int DEEP = 0> struct sk_config {
    static constexpr bool one_cta = WG == 2 || DEEP;
    static constexpr int x_rows = PL_SK_ROWS * WG;
    static constexpr int threads = 128 * WG + 32;
    static constexpr int producer = 4 * WG; /* the producer warp, after the consumer warpgroups */
    static constexpr int x_bytes = x_rows * PL_SK_BK * 2;
    static constexpr int y_bytes = TILE * PL_SK_BK * 2;
    static constexpr int stage_bytes = x_bytes + y_bytes; /* a multiple of 1024: every stage stays swizzle-aligned */
    /* one CTA an SM: as many stages as the shared memory holds (at most 16) */
    static constexpr int stages = one_cta ? PL_SK_RING_STAGES(x_rows, TILE) : PL_SK_STAGES(TILE);
    static constexpr int ctas_per_sm = one_cta ? 1 : PL_SK_CTAS_PER_SM;
    /* the partial tile, in D's row order: swapped TILE rows (M) of x_rows (N), plain x_rows rows of TILE */
    static constexpr int out_rows = SWAP ? TILE : x_rows;
    static constexpr int out_cols = SWAP ? x_rows : TILE;
    /* row pitch in floats: lanes (g = lane/4, q = lane%4) write swapped (c = 2q.., r = g) at c·(x_rows + 4) + r,
     * banks g + 8q; plain float2 at r·(TILE + 8) + 2q, banks 8g + 2q in each half-warp: no two lanes on one bank */
    static constexpr int pitch = out_cols + (SWAP ? 4 : 8);
    static constexpr int partial_bytes = out_rows * pitch * 4;
    /* the stages, their full and empty barriers, and the fix-up's barrier */
    static constexpr int smem_bytes = 1024 + stages * stage_bytes + 2 * stages * 8 + 8;
};

/* Thread 0 makes the ring's barriers (a stage's "full" completed by the producer's arrival and the bytes of its loads,
 * its "empty" by `empty_count` arrivals of the consumers) and, where the fix-up pushes (SK_PUSH), its barrier: thread
 * 0's arrival and the bytes of the partials of this CTA's rows. Then the CTA meets. */
__device__ __forceinline__ void sk_init_barriers(uint32_t full, uint32_t empty, uint32_t recv, int stages,
                                                 uint32_t empty_count, bool push)
{
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, empty_count);
        }
        if (push)
            mbar_init(recv, 1);
        mbar_fence_init();
    }
    __syncthreads();
}

/* The fix-up. Each CTA owns 1/S of the tile's rows and adds their S partials in rank order 0, 1, …, S-1 (the same
 * bits every run, whichever CTA finished first; no workspace, no atomics, no second kernel), applies the epilogue
 * (bias, GELU, residual) and stores bf16 quads. Partials are in D's row order, rows padded so that the fragment writes
 * hit 32 different banks. Two ways to bring them together:
 *   push (the one-warpgroup kernels): after a relaxed cluster barrier that says every CTA is done with its stages,
 *         every CTA sends each fragment of its accumulators straight from registers into the owner's stages, slot s
 *         from CTA s (st.async, 16 bytes: lane pairs swap column pairs first; counted in bytes on the owner's
 *         barrier). The owner waits for its bytes; no fence, and no second cluster barrier.
 *   pull (the two-warpgroup kernels, and every kernel unsplit): each CTA writes its whole partial into its own stages;
 *         a release cluster barrier publishes them (ptxas: a MEMBAR, the largest stall in the pull kernels' ncu
 *         samples); the owners read them through DSMEM; a last barrier keeps each CTA until the others have read it.
 * Which way is faster was measured, not derived (SK_PUSH). Called by every thread of the CTA once its stages are free
 * (every load landed, every wgmma done); `recv` is the push's barrier (initialised to 1 arrival where SK_PUSH(WG)),
 * acc the consumer warps' accumulators of the CFG tile (sk_config), rank this CTA's of the split's `split`. */
template <typename CFG, int TILE, int SWAP, int WG>
__device__ __forceinline__ void sk_reduce(const float (&acc)[TILE / 2], const pl_gemm_out &o, uint32_t base,
                                          uint32_t recv, int split, int rank, int x0, int y0, int warp, int lane)
{
    typedef CFG cfg;
    float *partial = reinterpret_cast<float *>(__cvta_shared_to_generic(base));
    const int rows_per = (cfg::out_rows + split - 1) / split;
    const int r_begin = rank * rows_per, r_end = min(cfg::out_rows, r_begin + rows_per);
    const int own_rows = r_end > r_begin ? r_end - r_begin : 0;
    const bool push = SK_PUSH(WG) && split > 1;
    if (push) {
        if (threadIdx.x == 0)
            mbar_arrive_expect_tx(recv, (uint32_t)(split * own_rows * cfg::out_cols * 4));
        cluster_sync_relaxed(); /* the stages of every CTA are free; the barrier inits were released by their fence */
        if (warp < 4 * WG) {
            sk_push_partials<TILE, SWAP, cfg::pitch>(acc, base, recv, rank, rows_per, warp, lane);
        }
        mbar_wait(recv, 0);
    } else { /* the CTA's whole partial into its own stages (row r of the tile at r·pitch) */
        if (warp < 4 * WG)
            sk_fragment_pairs<TILE>(acc, warp, lane,
                                    [&](int r, int c, float v0, float v1) { /* row of X, column of Y */
                                                                            if (SWAP) {
                                                                                partial[c * cfg::pitch + r] = v0;
                                                                                partial[(c + 1) * cfg::pitch + r] = v1;
                                                                            } else {
                                                                                *reinterpret_cast<float2 *>(
                                                                                    &partial[r * cfg::pitch + c]) =
                                                                                    make_float2(v0, v1);
                                                                            }
                                    });
        if (split > 1)
            cluster_sync(); /* release/acquire: every CTA's partial is visible to the cluster */
        else
            __syncthreads();
    }

    sk_fixup<SWAP, cfg::out_cols, cfg::pitch, cfg::threads>(o, base, push, split, r_begin, rows_per, own_rows, x0, y0);
    /* Pushed: nothing else reaches this CTA's shared memory (every byte pushed to it was waited for above). Pulled:
     * the others may still read this CTA's partial, so it stays until they are done. A relaxed arrive: their DSMEM
     * loads have returned (each value was added and stored before they arrive), so nothing needs ordering, and a
     * release here would first wait for this thread's stores to D to complete (MEMBAR.GPU): 0.35-0.8 µs of a
     * 14-16 µs launch, measured with per-CTA timestamps (H100, 2026-11-26; docs/perf/gemm.md). */
    if (split > 1 && !push)
        cluster_sync_relaxed();
}

/* The launch of a split-K grid: (split, X tiles, Y tiles) CTAs of `threads` with `smem` bytes of dynamic shared
 * memory, in clusters of (split, 1, 1) (a cluster is one output tile, its CTA rank blockIdx.x); the cluster attribute
 * lives in *attr. Host code. */
static inline cudaLaunchConfig_t sk_launch_config(int split, long long tiles_x, long long tiles_y, int threads,
                                                  int smem, cudaStream_t stream, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t lc = {};
    lc.gridDim = dim3((unsigned)split, (unsigned)tiles_x, (unsigned)tiles_y);
    lc.blockDim = dim3((unsigned)threads);
    lc.dynamicSmemBytes = (size_t)smem;
    lc.stream = stream;
    if (split > 1) {
        attr->id = cudaLaunchAttributeClusterDimension;
        attr->val.clusterDim.x = (unsigned)split;
        attr->val.clusterDim.y = 1;
        attr->val.clusterDim.z = 1;
        lc.attrs = attr;
        lc.numAttrs = 1;
    }
    return lc;
}

#endif
