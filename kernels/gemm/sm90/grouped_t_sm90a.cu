/* Grouped GEMM with the tokens as wgmma's N (gemm/grouped.h, pl_grouped_gemm_bf16_t), sm_90a: one persistent
 * launch for every expert, computing each tile as Dᵀ = B_g · Aᵀ so that a tile's token count is an instruction
 * width (any multiple of 8) rather than a whole number of 64-row wgmma blocks.
 *
 * Why. grouped_sm90a.cu's tiles are 128 tokens × 256 weights: an expert's last tile row computes up to 127 rows past
 * its end (E = 8 of N = 14336: 2.3% of the work, docs/perf/moe.md), and cuBLAS's per-expert launches fit a tile width
 * to each expert. Here an expert's tokens are cut into an even number of token tiles of nearly equal width in units
 * of 8 tokens, so the rows computed past an expert's end are fewer than 8.
 *
 * Tile (launch_t<TMAX, STAGES, CHUNK>; the library's is <192, 3, 64>). 256 weights (D columns; wgmma M: consumer
 * warpgroup w takes weights 128w .. 128w + 127 as two m64 blocks, two accumulators of T/2 registers) × T tokens (D
 * rows; wgmma N = T, 8 <= T <= TMAX, its instantiation chosen per tile at run time). A stage holds one k-block of 64:
 * the 256 weight rows (32 KB) and the tile's T token rows (up to 24 KB), both K-major in the 128-byte swizzle, so the
 * wgmma descriptors are those of the other sm_90a kernels with the roles swapped. CTA pairs (2-CTA clusters) take two
 * token tiles of one expert with the same weights: each CTA loads half of the weights and multicasts it (L2 → SM
 * bytes per output and k-block: 128·(128 + T) / (256·T), 0.83 at T = 192 against the 128-row pairs' 1.0), and its
 * own tokens in boxes of 128/64/32/16/8 rows (T's binary digits). Three stages of 56 KB: a 192-token k-block is
 * 1536 tensor cycles (256·192·64 MACs at 2048 a cycle), so the ring holds about what the 128-row kernel's four
 * stages of 1024 cycles hold (measured on an H100, 2026-11-27; docs/perf/moe.md).
 *
 * Walk. Per expert, pair rows (two token tiles) × weight columns in bands of GT_BAND pair rows, rows fastest, as the
 * other grouped kernels; every role walks it from the row offsets in device memory with a cursor that only moves
 * forward. An expert of U units cut into n tiles (gt_plan: n/2 pair rows, the fewest TMAX allows or a few more that
 * fill the last wave better) has tile i start at unit i·⌊U/n⌋ + min(i, U mod n), ⌊U/n⌋ units wide and one more for
 * the first U mod n tiles: the two tiles of a pair differ by one unit at most.
 *
 * Epilogue. Each m64 block's 64 weights × T tokens leaves in chunks of CHUNK tokens: stmatrix .trans writes the chunk
 * as rows of D (tokens) × 64 columns into a 128-byte-swizzled buffer (two per consumer, alternating), and TMA stores
 * copy the rows before the expert's end (one box a whole chunk, else 8-row boxes); the few rows of the 8-row group
 * that holds the end go out through ordinary 16-byte stores. Where D's rows cannot take TMA stores (N % 8 != 0, or D
 * not 16-byte aligned), the launch runs the 128-row kernel instead (pl_grouped_gemm_bf16). */
#include <stdio.h>

#include "gemm/device/epilogue.cuh"
#include "gemm/grouped.h"
#include "common/sm90_common.cuh"
#include "gemm/device/tile_scheduler.cuh"
#include "gemm/device/sm90_epilogue.cuh"
#include "gemm/device/sm90_wgmma_steps.cuh" /* widths up to 192 */
#include "gemm/host/tensor_map.h"

#define GT_BW          256 /* weights a tile (D columns): two consumers × two m64 blocks */
#define GT_ROW_BYTES   128 /* a k-block row: 64 bf16 */
#define GT_KE          64
#define GT_THREADS     384 /* two consumer warpgroups (warps 0-7) and the producer warpgroup (8-11) */
#define GT_PRODUCER    256
#define GT_W_BYTES     (GT_BW * GT_ROW_BYTES)
#define GT_BAND        8   /* pair rows a band of the walk */
#define GT_PLAN_GROUPS 256 /* experts whose pair rows gt_plan chooses (shared memory); later ones take the fewest */
#define GT_PLAN_EXTRA  8   /* pair rows gt_plan may add to the fewest */
#define GT_PLAN_EPI    2   /* a tile's epilogue in the estimate, in the time of 8 tokens of its mainloop */

/* A tile shape: at most TMAX tokens, a ring of STAGES k-blocks, epilogue buffers of CHUNK tokens (two a consumer). */
template <int TMAX, int STAGES, int CHUNK> struct gt_config {
    static constexpr int units = TMAX / 8;
    static constexpr int stage_bytes = GT_W_BYTES + TMAX * GT_ROW_BYTES;
    static constexpr int chunk_bytes = CHUNK * 128;
    static constexpr int epi_bytes = 2 * 2 * chunk_bytes;
    static constexpr int smem = 1024 + STAGES * stage_bytes + epi_bytes + 2 * STAGES * 8;
    static_assert(smem <= 232448, "shared memory over the sm_90 limit");
    static_assert(stage_bytes % 1024 == 0, "stages stay 1024-aligned for the swizzle");
    static_assert(TMAX % 8 == 0 && units <= 31, "a tile's token boxes are the binary digits of its units (5 maps)");
    static_assert(CHUNK % 8 == 0 && CHUNK <= 256, "chunks of whole 8-row groups, one TMA box");
};

struct gt_params {
    uint16_t *d;
    int rows;     /* rows of A and D */
    int n;        /* D columns, B rows per group */
    int k_blocks; /* ⌈K / 64⌉ */
    int cols;     /* ⌈N / GT_BW⌉ */
    const int *offsets;
    int groups;
};

struct gt_tile {
    int x0;      /* first token (row of A and D) */
    int units;   /* tokens / 8: the wgmma N is 8·units; 0: nothing to compute */
    int row_end; /* the expert's end */
    int n0;      /* first weight (column of D) */
    int b_row;   /* its row in B */
};

/* Where a role stands in the walk: the expert it is in, that expert's first cluster tile, its cluster tile count,
 * pair rows, units and rows; UNITS the widest tile's. */
template <int UNITS> struct gt_walk {
    int g, first, tiles, pairs, units, start, end;

    __device__ __forceinline__ void init()
    {
        g = -1;
        first = tiles = pairs = units = start = end = 0;
    }

    /* Cluster tile t (never decreasing between calls) of the walk, this CTA's (rank) tile of it; false past the end.
     * An expert's pair rows come from `plan` (gt_plan) where it has them, else the fewest its units allow. */
    __device__ __forceinline__ bool at(const gt_params &p, const int *plan, int t, uint32_t rank, gt_tile &tl)
    {
        while (t >= first + tiles) {
            if (g >= p.groups)
                return false;
            first += tiles;
            if (++g >= p.groups)
                return false;
            group_rows(p.offsets, g, p.rows, start, end);
            units = (end - start + 7) / 8;
            pairs = g < GT_PLAN_GROUPS ? plan[g] : (units + 2 * UNITS - 1) / (2 * UNITS);
            tiles = pairs * p.cols;
        }
        int row, col;
        tile_of(t - first, pairs, p.cols, GT_BAND, row, col);
        const int n = 2 * pairs, i = 2 * row + (int)rank, q = units / n, r = units % n;
        tl.units = q + (i < r ? 1 : 0);
        tl.x0 = start + 8 * (i * q + min(i, r));
        tl.row_end = end;
        tl.n0 = col * GT_BW;
        tl.b_row = g * p.n + tl.n0;
        return true;
    }
};

/* The token boxes of a tile: 8·2^b rows for each binary digit b of its units, one tensor map per digit. */
struct gt_token_maps {
    CUtensorMap box[5];
};

__device__ __forceinline__ void gt_load_tokens(const gt_token_maps *maps, uint32_t dst, uint32_t bar, int kb,
                                               const gt_tile &tl)
{
    int off = 0; /* in units of 8 rows */
#pragma unroll
    for (int b = 4; b >= 0; b--)
        if (tl.units & (1 << b)) {
            tma_load_2d(dst + off * 8 * GT_ROW_BYTES, &maps->box[b], bar, kb * GT_KE, tl.x0 + 8 * off);
            off += 1 << b;
        }
}

/* One 64-weight block of a consumer's tile (acc: m64nT, weights n0 .. n0 + 63 × tokens x0 .. x0 + T - 1) to D
 * through shared memory, CHUNK tokens at a time into the consumer's two buffers (chunk counts them across tiles). Rows
 * from row_end on are not stored: whole 8-row groups before it leave through TMA, the group that holds it through
 * ordinary 16-byte stores. */
template <int T, int CHUNK>
__device__ __forceinline__ void gt_store_block(const gt_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_dc,
                                               const float (&acc)[T / 2], uint32_t bufs, uint32_t &chunk, int consumer,
                                               int x0, int row_end, int n0)
{
    constexpr int GROUPS = T / 8, FULL = CHUNK / 8;
    const int t = threadIdx.x & 127, lane = t & 31, warp = t >> 5;
    const int valid = min(T, row_end - x0); /* >= 1 */
#pragma unroll
    for (int c0 = 0; c0 < GROUPS; c0 += FULL) {
        const int gn = GROUPS - c0 < FULL ? GROUPS - c0 : FULL; /* compile-time after unrolling */
        const uint32_t buf = bufs + (chunk & 1) * CHUNK * 128;
        if (t == 0)
            bulk_wait_read<1>(); /* the stores that read this buffer two chunks ago are done with it */
        named_barrier_sync(1 + consumer, 128);
#pragma unroll
        for (int jj = 0; jj < gn; jj += 2) {
            const int j = c0 + jj; /* token group: registers 4j .. 4j + 3 */
            const int q = lane >> 3, trow = 8 * (jj + (q >> 1)) + (lane & 7), c16 = 2 * warp + (q & 1);
            const uint32_t addr = swizzle128(buf, trow, c16);
            const uint32_t r0 = pl_pack_bf16x2(acc[4 * j], acc[4 * j + 1]),
                           r1 = pl_pack_bf16x2(acc[4 * j + 2], acc[4 * j + 3]);
            if (jj + 1 < gn) {
                const uint32_t r2 = pl_pack_bf16x2(acc[4 * j + 4], acc[4 * j + 5]),
                               r3 = pl_pack_bf16x2(acc[4 * j + 6], acc[4 * j + 7]);
                stmatrix_x4_trans(addr, r0, r1, r2, r3);
            } else {
                stmatrix_x2_trans(addr, r0, r1);
            }
        }
        fence_proxy_async_shared();
        named_barrier_sync(1 + consumer, 128);
        const int r0 = 8 * c0, rows = min(8 * gn, valid - r0); /* rows of this chunk to store (may be <= 0) */
        const int whole = rows > 0 ? rows & ~7 : 0;
        if (t == 0) {
            if (whole == CHUNK)
                tma_store_2d(tma_dc, buf, n0, x0 + r0); /* a whole chunk: one box */
            else
                for (int q = 0; q < whole / 8; q++)
                    tma_store_2d(tma_d, buf + q * 8 * 128, n0, x0 + r0 + 8 * q);
            bulk_commit(); /* one group a chunk, empty or not: bulk_wait_read<1> counts them */
        }
        if (rows > whole && t < 8 * (rows - whole)) { /* the group that holds the expert's end */
            const int r = whole + (t >> 3), c = t & 7, col = n0 + 8 * c;
            if (col < p.n)
                *reinterpret_cast<uint4 *>(p.d + (size_t)(x0 + r0 + r) * p.n + col) =
                    ld_shared_v4(swizzle128(buf, r, c));
        }
        chunk++;
    }
}

/* A consumer's tile of T tokens: its mainloop over the k-blocks (two m64nT wgmma a k-step, the stage released one
 * k-block behind) and its epilogue. */
template <int T, int STAGES, int STAGE_BYTES, int CHUNK>
__device__ __forceinline__ void gt_tile_run(const gt_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_dc,
                                            const gt_tile &tl, uint32_t base, uint32_t full, uint32_t empty,
                                            uint32_t bufs, int consumer, int lane, uint32_t &kcount, uint32_t &chunk)
{
    float acc0[T / 2], acc1[T / 2];
#pragma unroll
    for (int i = 0; i < T / 2; i++)
        acc0[i] = acc1[i] = 0.0f;
    int held = -1;
    for (int kb = 0; kb < p.k_blocks; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
        const uint32_t st = base + stage * STAGE_BYTES;
        const uint64_t da0 = wgmma_desc_k128(st + consumer * 128 * GT_ROW_BYTES),
                       da1 = wgmma_desc_k128(st + (consumer * 128 + 64) * GT_ROW_BYTES),
                       db = wgmma_desc_k128(st + GT_W_BYTES);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < 4; j++) {
            pl_wgmma_bf16_n<T>(acc0, wgmma_desc_step(da0, j), wgmma_desc_step(db, j), 1);
            pl_wgmma_bf16_n<T>(acc1, wgmma_desc_step(da1, j), wgmma_desc_step(db, j), 1);
        }
        wgmma_commit();
        wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
        if (held >= 0)
            release_stage<2>(empty, held, lane);
        held = stage;
    }
    wgmma_wait<0>();
    if (held >= 0)
        release_stage<2>(empty, held, lane);
    accumulators_fence(acc0);
    accumulators_fence(acc1);
    const int n0 = tl.n0 + consumer * 128;
    gt_store_block<T, CHUNK>(p, tma_d, tma_dc, acc0, bufs, chunk, consumer, tl.x0, tl.row_end, n0);
    gt_store_block<T, CHUNK>(p, tma_d, tma_dc, acc1, bufs, chunk, consumer, tl.x0, tl.row_end, n0 + 64);
}

/* The tile of tl.units units (U up to the config's widest): its instantiation, found by comparing in turn. */
template <int U, int TMAX, int STAGES, int STAGE_BYTES, int CHUNK>
__device__ __forceinline__ void gt_tile_dispatch(const gt_params &p, const CUtensorMap *tma_d,
                                                 const CUtensorMap *tma_dc, const gt_tile &tl, uint32_t base,
                                                 uint32_t full, uint32_t empty, uint32_t bufs, int consumer, int lane,
                                                 uint32_t &kcount, uint32_t &chunk)
{
    if (tl.units == U)
        gt_tile_run<8 * U, STAGES, STAGE_BYTES, CHUNK>(p, tma_d, tma_dc, tl, base, full, empty, bufs, consumer, lane,
                                                       kcount, chunk);
    else if constexpr (U < TMAX / 8)
        gt_tile_dispatch<U + 1, TMAX, STAGES, STAGE_BYTES, CHUNK>(p, tma_d, tma_dc, tl, base, full, empty, bufs,
                                                                  consumer, lane, kcount, chunk);
}

/* How many pair rows each expert is cut into (thread 0 of every CTA, before the roles start; all compute the same).
 * The fewest, ⌈units / (2·UNITS)⌉, leave the last wave of cluster tiles as it falls: at E = 8 of N = 14336, 2576
 * cluster tiles over 66 clusters are 39 waves and 2 tiles, so two clusters run a 40th tile while the rest idle. So
 * up to GT_PLAN_EXTRA more pair rows in all are weighed by the estimate waves · (units a tile + GT_PLAN_EPI), waves =
 * ⌈cols · pairs / clusters⌉, and the one that fills the last wave best is taken; each extra pair row goes to the
 * expert whose tiles are then widest. */
template <int UNITS> __device__ void gt_plan(const gt_params &p, int clusters, int *plan, int *units)
{
    const int groups = min(p.groups, GT_PLAN_GROUPS);
    long long units_all = 0;
    int fewest = 0;
    for (int g = 0; g < groups; g++) {
        int start, end;
        group_rows(p.offsets, g, p.rows, start, end);
        units[g] = (end - start + 7) / 8;
        plan[g] = (units[g] + 2 * UNITS - 1) / (2 * UNITS);
        units_all += units[g];
        fewest += plan[g];
    }
    if (p.groups > GT_PLAN_GROUPS || fewest == 0)
        return;
    int best = fewest;
    double best_est = 0.0;
    for (int pairs = fewest; pairs <= fewest + GT_PLAN_EXTRA; pairs++) {
        const long long waves = ((long long)p.cols * pairs + clusters - 1) / clusters;
        const double est = (double)waves * ((double)units_all / (2.0 * pairs) + GT_PLAN_EPI);
        if (pairs == fewest || est < best_est) {
            best = pairs;
            best_est = est;
        }
    }
    for (int extra = fewest; extra < best; extra++) {
        int widest = -1; /* the largest units / plan (an empty expert has no pair row and gets none) */
        for (int g = 0; g < groups; g++)
            if (plan[g] > 0 && (widest < 0 || (long long)units[g] * plan[widest] > (long long)units[widest] * plan[g]))
                widest = g;
        plan[widest]++;
    }
}

template <int TMAX, int STAGES, int CHUNK>
__global__ void __launch_bounds__(GT_THREADS, 1)
    gt_grouped_kernel(const __grid_constant__ CUtensorMap tma_w, const __grid_constant__ gt_token_maps tma_x,
                      const __grid_constant__ CUtensorMap tma_d, const __grid_constant__ CUtensorMap tma_dc,
                      const gt_params p)
{
    typedef gt_config<TMAX, STAGES, CHUNK> cfg;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t epi = base + STAGES * cfg::stage_bytes;
    const uint32_t full = epi + cfg::epi_bytes, empty = full + 8 * STAGES;
    const uint32_t rank = cluster_cta_rank();
    const int cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
    __shared__ int plan[GT_PLAN_GROUPS], plan_units[GT_PLAN_GROUPS];

    if (threadIdx.x == 0) {
        gt_plan<cfg::units>(p, clusters, plan, plan_units); /* every thread reads it after the __syncthreads below */
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1);      /* the producer's arrive; TMA bytes complete it */
            mbar_init(empty + 8 * s, 8 * 2); /* every consumer warp of both CTAs (the weights are multicast) */
        }
        mbar_fence_init();
    }
    __syncthreads();        /* the plan */
    cluster_sync_relaxed(); /* the peer's barriers exist before anything is multicast into or arrived on here */

    if (threadIdx.x >= GT_PRODUCER) {
        regs_dealloc<40>();
        if (threadIdx.x == GT_PRODUCER) {
            tma_prefetch_descriptor(&tma_w);
            for (int b = 0; b < 5; b++)
                tma_prefetch_descriptor(&tma_x.box[b]);
            int stage = 0;
            uint32_t phase = 0;
            gt_walk<cfg::units> w;
            w.init();
            gt_tile tl;
            for (int t = cluster; w.at(p, plan, t, rank, tl); t += clusters)
                for (int kb = 0; kb < p.k_blocks; kb++) {
                    mbar_wait(empty + 8 * stage, phase ^ 1);
                    const uint32_t st = base + stage * cfg::stage_bytes, bar = full + 8 * stage;
                    /* both halves of the weights (one from each CTA) and this tile's tokens; boxes count whole */
                    mbar_arrive_expect_tx(bar, GT_W_BYTES + tl.units * 8 * GT_ROW_BYTES);
                    tma_load_2d_multicast(st + rank * (GT_W_BYTES / 2), &tma_w, bar, kb * GT_KE,
                                          tl.b_row + (int)rank * (GT_BW / 2), (uint16_t)3);
                    gt_load_tokens(&tma_x, st + GT_W_BYTES, bar, kb, tl);
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
        }
    } else {
        regs_alloc<232>();
        const int consumer = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0); /* warp-uniform, as in sw_ */
        const int lane = threadIdx.x & 31;
        const uint32_t bufs = epi + consumer * 2 * cfg::chunk_bytes;
        uint32_t kcount = 0, chunk = 0;
        gt_walk<cfg::units> w;
        w.init();
        gt_tile tl;
        for (int t = cluster; w.at(p, plan, t, rank, tl); t += clusters) {
            if (tl.units > 0) {
                gt_tile_dispatch<1, TMAX, STAGES, cfg::stage_bytes, CHUNK>(p, &tma_d, &tma_dc, tl, base, full, empty,
                                                                           bufs, consumer, lane, kcount, chunk);
                continue;
            }
            for (int kb = 0; kb < p.k_blocks; kb++, kcount++) { /* no tokens (a pair's second tile of one unit) */
                const int stage = (int)(kcount % STAGES);
                mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
                release_stage<2>(empty, stage, lane);
            }
        }
        if ((threadIdx.x & 127) == 0)
            bulk_wait<0>(); /* the last stores are done before the shared memory they read goes away */
    }
    cluster_sync(); /* the peer may still arrive on this CTA's barriers: stay until it is done */
}

template <int TMAX, int STAGES, int CHUNK>
static cudaError_t launch_t(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    typedef gt_config<TMAX, STAGES, CHUNK> cfg;
    char why[200];
    if (!pl_grouped_gemm_supports(p, 0, why, sizeof why))
        return cudaErrorInvalidValue;
    if (p->rows == 0)
        return cudaSuccess;
    if (p->n % 8 != 0 || (uintptr_t)p->d % 16 != 0) { /* D's rows cannot take TMA stores: the 128-row tiles */
        pl_grouped_gemm_problem q = *p;
        q.cluster = pl_grouped_gemm_cluster_of(p, 0); /* set: pl_grouped_gemm_bf16 does not hand it back */
        return pl_grouped_gemm_bf16(&q, stream);
    }
    CUtensorMap tw, td, tdc;
    gt_token_maps tx;
    cudaError_t e =
        pl_tensor_map_bf16(&tw, p->b, (uint64_t)p->groups * (uint64_t)p->n, (uint64_t)p->k, GT_BW / 2, GT_KE);
    for (int b = 0; b < 5 && e == cudaSuccess; b++)
        e = pl_tensor_map_bf16(&tx.box[b], p->a, (uint64_t)p->rows, (uint64_t)p->k, 8u << b, GT_KE);
    if (e == cudaSuccess)
        e = pl_tensor_map_bf16(&td, p->d, (uint64_t)p->rows, (uint64_t)p->n, 8, 64);
    if (e == cudaSuccess)
        e = pl_tensor_map_bf16(&tdc, p->d, (uint64_t)p->rows, (uint64_t)p->n, CHUNK, 64);
    if (e != cudaSuccess)
        return e;
    gt_params gp;
    gp.d = p->d;
    gp.rows = p->rows;
    gp.n = p->n;
    gp.k_blocks = (p->k + GT_KE - 1) / GT_KE;
    gp.cols = (p->n + GT_BW - 1) / GT_BW;
    gp.offsets = p->offsets;
    gp.groups = p->groups;
    const void *kernel = (const void *)gt_grouped_kernel<TMAX, STAGES, CHUNK>;
    int device = 0, sms = 0;
    e = kernel_launch_prepare(kernel, cfg::smem, &device, &sms);
    if (e != cudaSuccess)
        return e;
    static int cached[64];
    int clusters = max_active_clusters_cached(cached, kernel, GT_THREADS, cfg::smem, 2, device, sms);
    /* cluster tiles: an expert has at most ⌈(c/8 + 1) / (2·units)⌉ pair rows, and gt_plan adds GT_PLAN_EXTRA at most */
    const long long max_tiles = ((long long)p->rows / (2 * TMAX) + 2LL * p->groups + GT_PLAN_EXTRA) * gp.cols;
    if (clusters > max_tiles)
        clusters = (int)(max_tiles < 1 ? 1 : max_tiles);
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t lc = cluster_launch_config((unsigned)(2 * clusters), GT_THREADS, cfg::smem, 2, stream, &attr);
    e = cudaLaunchKernelEx(&lc, gt_grouped_kernel<TMAX, STAGES, CHUNK>, tw, tx, td, tdc, gp);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" cudaError_t pl_grouped_gemm_bf16_t(const pl_grouped_gemm_problem *p, cudaStream_t stream)
{
    return launch_t<192, 3, 64>(p, stream);
}
