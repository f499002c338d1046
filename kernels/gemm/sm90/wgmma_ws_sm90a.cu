/* Rungs 5 and 6 of the GEMM ladder — warp-specialized, persistent WGMMA + TMA (sm_90a), optionally with 2-CTA
 * clusters.
 *
 * Rung 5 (CLUSTER = 1). One CTA per SM loops over output tiles (a tile scheduler walks them in groups of 16
 * tile-rows so that the CTAs running at once share A and B panels in L2). Warpgroup 0 is the producer: it gives
 * registers back (setmaxnreg.dec to 56) and one of its threads only issues TMA loads into a ring of stages,
 * waiting on each stage's "empty" mbarrier; when the epilogue is fused, its three other warps run it
 * (sm90_epilogue_warps.cuh). Warpgroups 1 and 2 are the consumers: they take the registers
 * (setmaxnreg.inc to 224), wait on each stage's "full" mbarrier (TMA completes its transaction bytes there),
 * issue wgmma, keep one wgmma group in flight and release the previous stage as soon as its group is done. The
 * producer runs ahead across tile boundaries. Results leave through shared memory and TMA stores
 * (sm90_epilogue.cuh). Two ways to share the work between the consumers:
 *   cooperative: both work on each 128×BN tile, 64 rows each; the tensor cores idle while they store it (fused:
 *                while they hand the product to the epilogue warps, which needs NB = 4 buffers per consumer
 *                to never wait: one stage fewer).
 *   ping-pong:   each owns whole 128×128 tiles (every other tile of the CTA) and they take turns: one stores its
 *                tile while the other multiplies, so the epilogue leaves the critical path. An ordering barrier
 *                makes a consumer start a tile only after the other has issued all of the previous one (the
 *                stages' parity waits are only unambiguous one phase ahead).
 *
 * Rung 6 (CLUSTER = 2, or 4 for the 128×224 kernel). The CTAs of a cluster work on vertically adjacent tiles that
 * share their B panel: each CTA loads its share of that panel (a half, or a quarter) and multicasts it into every
 * CTA's shared memory (one L2 read feeds two or four SMs), each stage's "full" barrier in every CTA counts all the
 * shares, and a consumer releases a stage on every CTA's "empty" barrier (a remote mbarrier arrive through
 * distributed shared memory), since the peers' producers write into this CTA's stage too.
 *
 * Tiles fitted to the shape (cuBLAS picks its tile per shape, e.g. 192×176 at 4104²): three consumer
 * warpgroups make 192-row tiles (ws_shape: 512 threads, setmaxnreg 40 for the producer and 152 for the consumers);
 * widths that are not multiples of 64 (176, 224) end in a narrower subtile, stored through a dense TMA map of its own
 * (epilogue_tma_m64). Those kernels take a fused epilogue from registers: the epilogue warps' hand-over and the
 * fused TMA path take two consumers and whole 64-column subtiles (ws_config::tma_fused).
 *
 * The split tail (the 2-CTA cooperative 128×256 kernels, plain D; the launcher decides: ws_tail_split). When the
 * last round of the walk is at most half full (4104² in 128×256 pairs: 289 pairs on 66 clusters, the fifth round
 * 25), its pairs are cut into their two 128-row tiles and each tile goes to one cluster, whose CTAs take half of its
 * columns each: 128×128 with all of K, A loaded by both, each its own half of B (no multicast), the stages released
 * on its own barriers only (both arrivals of a warp), nothing exchanged. A half wholly past M is skipped. Measured
 * at 4104²: the last round takes 9.5 µs, its epilogue included, where a whole pair's mainloop took 12 (each CTA
 * still reads 32 KB a k-block, two thirds of what it receives in a pair); the launch 76.4 µs against 80.1. Cutting
 * K instead (each CTA half the k-blocks, the partial tile added through DSMEM) spent ~4 µs on the 128 KB exchange
 * and gained nothing; 128×128 tiles cut to 128×64 lost as often as they won (H100, 2026-11-26; docs/perf/gemm.md).
 *
 * The kernel reads as its phases: ws_init_barriers, ws_produce (the producer thread), ew_run (the epilogue warps),
 * ws_consume (each consumer: ws_mainloop then ws_epilogue per tile, or ws_split_item), over the walk of
 * gemm/device/tile_scheduler.cuh (ws_item_of).
 *
 * Takes B N×K with K % 8 == 0 and 16-byte aligned A and B (TMA's row pitch rule); others fall back. D goes through
 * TMA when N % 8 == 0 (and D, bias and residual are aligned), else straight from registers. */
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"
#include "common/sm90_common.cuh"
#include "gemm/device/tile_scheduler.cuh"
#include "gemm/device/sm90_epilogue.cuh"
#include "gemm/device/sm90_epilogue_warps.cuh"
#include "gemm/host/tensor_map.h"

#define WS_BM      128
#define WS_BK      64
#define GROUP_ROWS 16     /* tile rows per raster group of the scheduler */
#define SMEM_LIMIT 232448 /* the largest dynamic shared memory a block may ask for on sm_90 (227 KB) */

enum ws_schedule { WS_COOPERATIVE = 0, WS_PINGPONG = 1 };

/* CONS consumer warpgroups of 64 rows each: 2 (128-row tiles) or 3 (192-row tiles, the 192×176 kernel). The
 * registers after setmaxnreg: two consumers (56 + 2·224) · 128 = 64512, three (40 + 3·152) · 128 = 63488 of the SM's
 * 65536; the producer keeps 56 or 40 (the producer thread and, when fused, the epilogue warps). */
template <int CONS> struct ws_shape {
    static_assert(CONS == 2 || CONS == 3, "two or three consumer warpgroups");
    static constexpr int bm = 64 * CONS;
    static constexpr int threads = 128 * (1 + CONS);
    static constexpr int producer_regs = CONS == 2 ? 56 : 40;
    static constexpr int consumer_regs = CONS == 2 ? 224 : 152;
};

/* NB: subtile buffers per consumer of the cooperative schedule's epilogue (2, or one per subtile for a whole tile,
 * which may leave room for one stage less: 128×256 with 4 has three stages, 128×192 with 3 still four). */
template <int BN, int SCHED, int NB = 2, int CONS = 2> struct ws_config {
    static constexpr int a_bytes = ws_shape<CONS>::bm * WS_BK * 2;
    static constexpr int b_bytes = BN * WS_BK * 2;
    static constexpr int stage_bytes = a_bytes + b_bytes;
    /* epilogue buffers: ping-pong keeps a whole 128×128 tile per consumer (never waits on its stores), the
     * cooperative kernel two subtiles per consumer (its stages leave no room for more) */
    static constexpr int epi_buffers = SCHED == WS_PINGPONG ? 4 : NB; /* per consumer warpgroup */
    static constexpr int epi_bytes = CONS * epi_buffers * EPI_SUB_BYTES;
    static constexpr int epi_cols = SCHED == WS_PINGPONG ? 128 : BN; /* columns of a consumer's epilogue call */
    static constexpr int subtiles = (SCHED == WS_PINGPONG ? 128 : 64) * epi_cols / (EPI_SUB * EPI_SUB);
    static constexpr int bias_bytes = CONS * epi_cols * 2; /* fused: each consumer's bias columns */
    /* full/empty of up to 16 stages, 2 ordering barriers, then per epilogue buffer: the fused operands'
     * barrier (ping-pong), the full and free barriers of the epilogue warps' hand-over (cooperative); and the
     * epilogue warps' two bias barriers */
    static constexpr int barrier_bytes = 2 * 16 * 8 + 2 * 8 + 3 * CONS * epi_buffers * 8 + 2 * 8;
    static constexpr int extra_bytes = epi_bytes + bias_bytes + barrier_bytes;
    static constexpr int stages = (SMEM_LIMIT - 1024 - extra_bytes) / stage_bytes;
    static constexpr int smem_bytes = 1024 + stages * stage_bytes + extra_bytes;
    static constexpr int readers = SCHED == WS_PINGPONG ? 4 : 4 * CONS; /* consumer warps that read each stage */
    /* the fused epilogue through TMA (the epilogue warps' hand-over, the ping-pong consumers' own) takes whole
     * 64-column subtiles and two consumers; other kernels store a fused D from registers (the launcher clears
     * tma_store) */
    static constexpr bool tma_fused = CONS == 2 && BN % EPI_SUB == 0;
};

/* The kernels that split their last round (see the top): the 2-CTA cooperative ones of 128×256 tiles (a wgmma of
 * half the width; 128×128 tiles cut to 128×64 lost as often as they won). */
template <int BN, int CLUSTER, int SCHED, int CONS = 2> struct ws_tail {
    static constexpr bool splits = CLUSTER == 2 && SCHED == WS_COOPERATIVE && BN == 256 && CONS == 2;
};

/* A split item of the consumer warpgroup `consumer` (see the top): its 64 rows × BN/2 columns over all of K, from
 * this CTA's own stages, released on its own barriers only (both arrivals a warp owes, on this CTA's barrier: its
 * producer alone wrote them), then stored. The ring position `kcount` advances as in the main loop. */
template <int BN, int STAGES, int STAGE_BYTES, int A_BYTES, int NB>
__device__ __forceinline__ void ws_split_item(const pl_gemm_out &o, const CUtensorMap *tma_d, int tma_store,
                                              uint32_t base, uint32_t full, uint32_t empty, uint32_t bufs, int consumer,
                                              int k_blocks, uint32_t &kcount, int m0, int n0)
{
    constexpr int H = BN / 2;
    static_assert(H == 128, "a split item is 128 columns wide");
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    float acc[H / 2];
#pragma unroll
    for (int i = 0; i < H / 2; i++)
        acc[i] = 0.0f;
    int held = -1;
    for (int kb = 0; kb < k_blocks; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
        const uint32_t st = base + stage * STAGE_BYTES;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < WS_BK / 16; j++) {
            const uint64_t db = wgmma_desc_k128(st + A_BYTES + j * 32);
            const uint64_t da = wgmma_desc_k128(st + consumer * 64 * 128 + j * 32);
            pl_wgmma_m64n128k16_bf16<0>(acc, da, db, 1);
        }
        wgmma_commit();
        wgmma_wait<1>();
        if (held >= 0 && lane < 2)
            mbar_arrive(empty + 8 * held);
        held = stage;
    }
    wgmma_wait<0>();
    if (held >= 0 && lane < 2)
        mbar_arrive(empty + 8 * held);
    accumulators_fence(acc);
    const int row0 = m0 + consumer * 64;
    if (tma_store)
        epilogue_tma_m64<H, NB>(tma_d, acc, bufs, 0, 1 + consumer, row0, n0);
    else
        pl_gemm_store_m64<H>(o, acc, row0 + warp * 16 + (lane >> 2), n0, pl_gemm_plain_interior(o, row0, n0, 64, H));
}

/* Where the CTA's shared memory holds what (ws_smem_of): the ring of stages, the epilogue buffers, the fused
 * epilogue's bias columns, and the barriers. */
struct ws_smem {
    uint32_t base;        /* the ring of stages, 1024-aligned (the swizzle needs it) */
    uint32_t epi;         /* the epilogue buffers, 1024-aligned */
    uint32_t bias;        /* fused: each consumer's bias columns, 16-byte aligned for the bulk copy */
    uint32_t full, empty; /* each stage's barriers */
    uint32_t order;       /* ping-pong: the consumers' turns */
    uint32_t operands;    /* ping-pong: per consumer, one barrier per epilogue buffer */
    ew_smem ew;           /* cooperative + fused: the epilogue warps' hand-over (sm90_epilogue_warps.cuh) */
};

template <int BN, int SCHED, int NB, int CONS> __device__ __forceinline__ ws_smem ws_smem_of(uint32_t raw)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    ws_smem s;
    s.base = (raw + 1023) & ~1023u;
    s.epi = s.base + cfg::stages * cfg::stage_bytes;
    s.bias = s.epi + cfg::epi_bytes;
    s.full = s.bias + cfg::bias_bytes;
    s.empty = s.full + 8 * cfg::stages;
    s.order = s.empty + 8 * cfg::stages;
    s.operands = s.order + 16;
    s.ew.bufs = s.epi;
    s.ew.full = s.operands + CONS * cfg::epi_buffers * 8;
    s.ew.free = s.ew.full + CONS * cfg::epi_buffers * 8;
    s.ew.bias = s.bias;
    s.ew.bias_bars = s.ew.free + CONS * cfg::epi_buffers * 8;
    return s;
}

/* This CTA's walk over the tiles (ws_item_of): its cluster, its rank in it, the whole rounds and the split tail. */
struct ws_walk {
    int rank, cluster, clusters, tile_rows, tile_cols, group, split_tail, rounds, items;
};

template <int BN, int CLUSTER, int SCHED, int CONS>
__device__ __forceinline__ ws_walk ws_walk_of(int tile_rows, int tile_cols, int tail_split, int m)
{
    ws_walk w;
    w.rank = CLUSTER > 1 ? (int)cluster_cta_rank() : 0;
    w.cluster = blockIdx.x / CLUSTER;
    w.clusters = gridDim.x / CLUSTER;
    w.tile_rows = tile_rows;
    w.tile_cols = tile_cols;
    const int tiles = tile_rows * tile_cols;
    w.group = GROUP_ROWS / CLUSTER;
    w.split_tail = ws_tail<BN, CLUSTER, SCHED, CONS>::splits ? tail_split : 0;
    w.rounds = tiles / w.clusters; /* whole rounds before a split tail */
    w.items = ws_items(w.cluster, w.clusters, tiles, w.rounds, w.split_tail, tile_rows, tile_cols, w.group, m);
    return w;
}

/* Item i of the walk; split_tail 0 for a walk of whole tiles (the epilogue warps'). */
template <int CLUSTER, int BM, int BN>
__device__ __forceinline__ ws_item ws_walk_item(const ws_walk &w, int i, int split_tail)
{
    return ws_item_of(i, w.cluster, w.clusters, w.rounds, split_tail, w.rank, CLUSTER, w.tile_rows, w.tile_cols,
                      w.group, BM, BN);
}

/* Thread 0 sets up every barrier of the CTA. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS>
__device__ __forceinline__ void ws_init_barriers(const ws_smem &s)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    for (int i = 0; i < cfg::stages; i++) {
        mbar_init(s.full + 8 * i, 1);                       /* the producer's arrive; TMA bytes complete it */
        mbar_init(s.empty + 8 * i, cfg::readers * CLUSTER); /* every reading warp of every CTA of the cluster */
    }
    mbar_init(s.order, 4); /* ping-pong: the warps of the other consumer have issued their tile */
    mbar_init(s.order + 8, 4);
    for (int b = 0; b < CONS * cfg::epi_buffers; b++) {
        mbar_init(s.operands + 8 * b, 1);  /* the leader's expect_tx; TMA bytes complete it */
        mbar_init(s.ew.full + 8 * b, 128); /* every thread of the consumer */
        mbar_init(s.ew.free + 8 * b, 1);   /* the epilogue warps' leader, once the store has read it */
    }
    mbar_init(s.ew.bias_bars, 1);
    mbar_init(s.ew.bias_bars + 8, 1);
    mbar_fence_init();
}

/* The producer (one thread of warpgroup 0): every item's k-blocks into the ring, running ahead across tiles. Each
 * stage gets its A rows and the B panel: whole (CLUSTER 1), this CTA's share multicast to the cluster, or in a split
 * item this CTA's half from itself. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS>
__device__ __forceinline__ void ws_produce(const CUtensorMap *tma_a, const CUtensorMap *tma_b, const ws_smem &s,
                                           const ws_walk &w, int k_blocks)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    constexpr bool SPLITS = ws_tail<BN, CLUSTER, SCHED, CONS>::splits;
    tma_prefetch_descriptor(tma_a);
    tma_prefetch_descriptor(tma_b);
    int stage = 0;
    uint32_t phase = 0;
    for (int i = 0; i < w.items; i++) {
        const ws_item it = ws_walk_item<CLUSTER, ws_shape<CONS>::bm, BN>(w, i, w.split_tail);
        const int m0 = it.m0, n0 = it.n0;
        for (int kb = 0; kb < k_blocks; kb++) {
            mbar_wait(s.empty + 8 * stage, phase ^ 1);
            const uint32_t st = s.base + stage * cfg::stage_bytes, bar = s.full + 8 * stage;
            const bool split = SPLITS && it.split;
            /* the whole B panel arrives here, half of it from the peer when clustered; in a split item this CTA's
             * half alone, from itself, at the start */
            mbar_arrive_expect_tx(bar, split ? cfg::a_bytes + cfg::b_bytes / 2 : cfg::stage_bytes);
            tma_load_2d(st, tma_a, bar, kb * WS_BK, m0);
            if (split)
                tma_load_2d(st + cfg::a_bytes, tma_b, bar, kb * WS_BK, n0); /* its box: BN/2 rows */
            else if (CLUSTER == 1)
                tma_load_2d(st + cfg::a_bytes, tma_b, bar, kb * WS_BK, n0);
            else
                tma_load_2d_multicast(st + cfg::a_bytes + w.rank * (cfg::b_bytes / CLUSTER), tma_b, bar, kb * WS_BK,
                                      n0 + w.rank * (BN / CLUSTER), (uint16_t)((1u << CLUSTER) - 1));
            if (++stage == cfg::stages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

/* One k16 step of the consumer's wgmma: its 64 rows × BN (cooperative), or both 64-row halves of a 128×128 tile
 * (ping-pong, scale_d 0 on a tile's first step: it overwrites, no zeroing pass, 0.987× with one on an H200,
 * 2026-11-26). */
template <int BN, int SCHED>
__device__ __forceinline__ void ws_wgmma_k16(float (&acc)[BN / 2], float (&acc_hi)[SCHED == WS_PINGPONG ? 64 : 1],
                                             uint32_t st, int consumer, uint64_t db, int j, int scale_d)
{
    if constexpr (SCHED == WS_PINGPONG) {
        pl_wgmma_m64n128k16_bf16<0>(acc, wgmma_desc_k128(st + j * 32), db, scale_d);
        pl_wgmma_m64n128k16_bf16<0>(acc_hi, wgmma_desc_k128(st + 64 * 128 + j * 32), db, scale_d);
    } else if constexpr (BN == 256) {
        pl_wgmma_m64n256k16_bf16<0>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 192) {
        pl_wgmma_m64n192k16_bf16<0>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 176) {
        pl_wgmma_m64n176k16_bf16<0>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 224) {
        pl_wgmma_m64n224k16_bf16<0>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else {
        pl_wgmma_m64n128k16_bf16<0>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    }
}

/* The consumer mainloop of one tile: each k-block's wgmma from its stage, one group kept in flight, the previous
 * stage released as soon as its group is done; the fused epilogue's operands prefetched (ping-pong) a few k-blocks
 * before the end, early enough to arrive, late enough not to be evicted by the operands streaming through L2. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS>
__device__ __forceinline__ void ws_mainloop(float (&acc)[BN / 2], float (&acc_hi)[SCHED == WS_PINGPONG ? 64 : 1],
                                            const ws_smem &s, const pl_gemm_out &o, const CUtensorMap *tma_r,
                                            epi_fused_smem &fs, bool fused_tma, int consumer, int lane, int k_blocks,
                                            uint32_t &kcount, int m0, int n0)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    constexpr int STAGES = cfg::stages;
    if constexpr (SCHED == WS_COOPERATIVE) { /* ping-pong: the tile's first k-step overwrites them */
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            acc[i] = 0.0f;
    }
    int held = -1; /* the stage whose wgmma group may still be reading it */
    const int prefetch_at = fused_tma && SCHED == WS_PINGPONG ? max(k_blocks - 4, 0) : -1;
    const int epi_row0 = SCHED == WS_PINGPONG ? m0 : m0 + consumer * 64;
    for (int kb = 0; kb < k_blocks; kb++, kcount++) {
        if (kb == prefetch_at)
            epilogue_fused_prefetch<cfg::epi_cols, cfg::epi_buffers, cfg::subtiles>(o, tma_r, fs, epi_row0, n0);
        const int stage = (int)(kcount % STAGES);
        mbar_wait(s.full + 8 * stage, (kcount / STAGES) & 1);
        const uint32_t st = s.base + stage * cfg::stage_bytes;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < WS_BK / 16; j++)
            ws_wgmma_k16<BN, SCHED>(acc, acc_hi, st, consumer, wgmma_desc_k128(st + cfg::a_bytes + j * 32), j,
                                    kb > 0 || j > 0);
        wgmma_commit();
        wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
        if (held >= 0)
            release_stage<CLUSTER>(s.empty, held, lane);
        held = stage;
    }
    if (SCHED == WS_PINGPONG && lane == 0)
        mbar_arrive(s.order + 8 * (1 - consumer)); /* the other consumer may start its next tile */
    wgmma_wait<0>();
    release_stage<CLUSTER>(s.empty, held, lane);
}

/* The epilogue of one tile: ping-pong stores its whole 128×128 tile (fused through TMA with the prefetched
 * operands, plain through TMA, or from registers); cooperative its 64 rows, handed to the epilogue warps when fused
 * through TMA. */
template <int BN, int SCHED, int NB, int CONS>
__device__ __forceinline__ void ws_epilogue(float (&acc)[BN / 2], float (&acc_hi)[SCHED == WS_PINGPONG ? 64 : 1],
                                            const pl_gemm_out &o, const CUtensorMap *tma_d, const CUtensorMap *tma_r,
                                            const CUtensorMap *tma_t, int tma_store, epi_fused_smem &fs,
                                            const ws_smem &s, bool fused_tma, bool handover, uint32_t &handed,
                                            int consumer, int lane, int warp, int m0, int n0)
{
    if constexpr (SCHED == WS_PINGPONG) {
        accumulators_fence(acc_hi);
        const uint32_t bufs = fs.bufs;
        if (fused_tma) {
            epilogue_fused_m64<128, 4>(o, tma_d, tma_r, acc, fs, 0, 1 + consumer, m0, n0);
            epilogue_fused_m64<128, 4>(o, tma_d, tma_r, acc_hi, fs, 2, 1 + consumer, m0 + 64, n0);
        } else if (tma_store) {
            epilogue_tma_m64<128, 4>(tma_d, acc, bufs, 0, 1 + consumer, m0, n0);
            epilogue_tma_m64<128, 4>(tma_d, acc_hi, bufs, 2, 1 + consumer, m0 + 64, n0);
        } else {
            const int r = warp * 16 + (lane >> 2);
            pl_gemm_store_m64<128>(o, acc, m0 + r, n0, pl_gemm_plain_interior(o, m0, n0, 128, 128));
            pl_gemm_store_m64<128>(o, acc_hi, m0 + 64 + r, n0, pl_gemm_plain_interior(o, m0, n0, 128, 128));
        }
    } else {
        const int row0 = m0 + consumer * 64;
        if (handover) {
            if constexpr (ws_config<BN, SCHED, NB, CONS>::tma_fused)
                ew_hand_over<BN, NB>(acc, s.ew, consumer, handed);
        } else if (tma_store) {
            epilogue_tma_m64<BN, NB>(tma_d, acc, fs.bufs, 0, 1 + consumer, row0, n0, tma_t);
        } else {
            pl_gemm_store_m64<BN>(o, acc, row0 + warp * 16 + (lane >> 2), n0,
                                  pl_gemm_plain_interior(o, row0, n0, 64, BN));
        }
    }
}

/* A consumer warpgroup: its items of the walk (ping-pong: every other one), each a mainloop then an epilogue, or a
 * split item (ws_split_item). Arrives on the cluster barrier once it has made its last arrival on the peer's barriers,
 * before its last tile's epilogue. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS>
__device__ __forceinline__ void ws_consume(const CUtensorMap *tma_d, const CUtensorMap *tma_r, const CUtensorMap *tma_t,
                                           int tma_store, const pl_gemm_out &o, int k_blocks, const ws_smem &s,
                                           const ws_walk &w, bool handover, int wg)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    constexpr bool SPLITS = ws_tail<BN, CLUSTER, SCHED, CONS>::splits;
    const int consumer = wg - 1;
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    /* cooperative: acc covers rows 64·consumer.. of each tile; ping-pong: acc rows 0-63 and acc_hi 64-127 */
    float acc[BN / 2];
    float acc_hi[SCHED == WS_PINGPONG ? 64 : 1];
    uint32_t kcount = 0; /* k-blocks of this CTA's sequence consumed or skipped: the ring position */
    /* fused, stored through TMA: bias and residual come ahead into shared memory (sm90_epilogue.cuh) */
    const bool fused_tma = cfg::tma_fused && tma_store && o.fused;
    epi_fused_smem fs;
    fs.bufs = s.epi + consumer * cfg::epi_buffers * EPI_SUB_BYTES;
    fs.bars = s.operands + consumer * cfg::epi_buffers * 8;
    fs.bias = s.bias + consumer * cfg::epi_cols * 2;
    fs.parity = 0;
    uint32_t handed = 0;  /* cooperative + fused: subtiles handed to the epilogue warps */
    int mine = 0;         /* ping-pong: tiles this consumer has done */
    bool arrived = false; /* on the cluster barrier: after this consumer's last arrival on the peer's barriers */
    for (int local = 0; local < w.items; local++) {
        if (SCHED == WS_PINGPONG && (local & 1) != consumer) {
            kcount += (uint32_t)k_blocks; /* the other consumer's tile */
            continue;
        }
        const ws_item it = ws_walk_item<CLUSTER, ws_shape<CONS>::bm, BN>(w, local, w.split_tail);
        const int m0 = it.m0, n0 = it.n0;
        if constexpr (SPLITS) {
            /* its own mainloop and accumulator: a wgmma of another width on this one's registers would make ptxas
             * fence every wgmma */
            if (it.split) {
                ws_split_item<BN, cfg::stages, cfg::stage_bytes, cfg::a_bytes, NB>(
                    o, tma_d, tma_store, s.base, s.full, s.empty, fs.bufs, consumer, k_blocks, kcount, m0, n0);
                continue;
            }
        }
        if (SCHED == WS_PINGPONG && local > 0) /* the other consumer has issued all of tile local-1 */
            mbar_wait(s.order + 8 * consumer, (uint32_t)((mine - (consumer == 0 ? 1 : 0)) & 1));
        ws_mainloop<BN, CLUSTER, SCHED, NB, CONS>(acc, acc_hi, s, o, tma_r, fs, fused_tma, consumer, lane, k_blocks,
                                                  kcount, m0, n0);
        /* the last tile: its stage releases ordered, its epilogue not waited on. Not before a split item, though it
         * arrives on no barrier of the peer: with a whole mainloop between the arrive and the wait, compute-sanitizer
         * (memcheck, synccheck) never returns from the launch; arriving after it costs nothing measurable (4104²:
         * 76.4 µs either way). */
        if (CLUSTER > 1 && local + (SCHED == WS_PINGPONG ? 2 : 1) >= w.items) {
            cluster_arrive_release();
            arrived = true;
        }
        accumulators_fence(acc);
        ws_epilogue<BN, SCHED, NB, CONS>(acc, acc_hi, o, tma_d, tma_r, tma_t, tma_store, fs, s, fused_tma, handover,
                                         handed, consumer, lane, warp, m0, n0);
        if (SCHED == WS_PINGPONG)
            mine++;
    }
    if (tma_store && (threadIdx.x & 127) == 0)
        bulk_wait<0>(); /* the last stores are done before the shared memory they read goes away */
    if (CLUSTER > 1 && !arrived)
        cluster_arrive_release();
}

/* The kernel: shared memory and barriers set up, then each warpgroup's role (the producer and, when the epilogue is
 * fused, the epilogue warps; the consumers), then the cluster's last barrier. tma_t: where BN is not a multiple of
 * 64, the dense map of D whose box is the tile's last, narrower subtile (epilogue_tma_m64); unused otherwise. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS>
__global__ void __launch_bounds__(ws_shape<CONS>::threads, 1)
    gemm_wgmma_ws_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                         const __grid_constant__ CUtensorMap tma_d, const __grid_constant__ CUtensorMap tma_r,
                         const __grid_constant__ CUtensorMap tma_t, int tma_store, pl_gemm_out o, int k_blocks,
                         int tile_rows, int tile_cols, int tail_split)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    typedef ws_shape<CONS> shape;
    static_assert(SCHED == WS_COOPERATIVE || (CONS == 2 && BN == 128),
                  "ping-pong pairs two consumers of 128×128 tiles");
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const ws_smem s = ws_smem_of<BN, SCHED, NB, CONS>(smem_u32(smem_raw));
    /* cooperative + fused: the epilogue warps take the product over (sm90_epilogue_warps.cuh) */
    const bool handover = cfg::tma_fused && SCHED == WS_COOPERATIVE && tma_store && o.fused;
    const int wg = threadIdx.x / 128;
    const ws_walk w = ws_walk_of<BN, CLUSTER, SCHED, CONS>(tile_rows, tile_cols, tail_split, o.m);

    if (threadIdx.x == 0)
        ws_init_barriers<BN, CLUSTER, SCHED, NB, CONS>(s);
    if (CLUSTER > 1) /* the peer's barriers exist before anything is multicast or arrived on (released by the fence) */
        cluster_sync_relaxed();
    else
        __syncthreads();

    if (wg == 0) {
        regs_dealloc<shape::producer_regs>();
        if (threadIdx.x == 0) {
            ws_produce<BN, CLUSTER, SCHED, NB, CONS>(&tma_a, &tma_b, s, w, k_blocks);
        } else if (handover && threadIdx.x >= EW_FIRST_THREAD) {
            if constexpr (cfg::tma_fused) {
                /* a fused epilogue has no split tail (ws_tail_split): the walk is whole tiles */
                ew_run<BN, NB>(o, &tma_d, &tma_r, s.ew, w.items, [&](int local, int &m0, int &n0) {
                    const ws_item it = ws_walk_item<CLUSTER, shape::bm, BN>(w, local, 0);
                    m0 = it.m0;
                    n0 = it.n0;
                });
            }
        }
        if (CLUSTER > 1) /* nothing of this warpgroup's arrives on the peer's barriers */
            cluster_arrive_relaxed();
    } else {
        regs_alloc<shape::consumer_regs>();
        ws_consume<BN, CLUSTER, SCHED, NB, CONS>(&tma_d, &tma_r, &tma_t, tma_store, o, k_blocks, s, w, handover, wg);
    }
    /* The peer may still arrive on this CTA's barriers: stay until it is done. Each thread arrived once it had made
     * its last arrival on the peer's barriers, a consumer before its last tile's epilogue: arriving after the stores
     * (one cluster_sync at the end) waited for them to complete first, ~1 µs of a one-wave launch. */
    if (CLUSTER > 1)
        cluster_wait();
}

/* The launch of `ctas` persistent CTAs in clusters of `cluster` along x (attr must outlive cfg). */
static void ws_launch_config(cudaLaunchConfig_t *cfg, cudaLaunchAttribute *attr, int ctas, int threads, int cluster,
                             size_t smem, cudaStream_t stream)
{
    *cfg = cudaLaunchConfig_t{};
    cfg->gridDim = dim3(ctas);
    cfg->blockDim = dim3(threads);
    cfg->dynamicSmemBytes = smem;
    cfg->stream = stream;
    if (cluster > 1) {
        attr->id = cudaLaunchAttributeClusterDimension;
        attr->val.clusterDim.x = cluster;
        attr->val.clusterDim.y = 1;
        attr->val.clusterDim.z = 1;
        cfg->attrs = attr;
        cfg->numAttrs = 1;
    }
}

/* Clusters the GPU can hold at once for this kernel (max_active_clusters, sm90_common.cuh); cached per device. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS> static int ws_max_clusters(int device, int sms)
{
    static int cached[64];
    return max_active_clusters_cached(cached, (const void *)gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS>,
                                      ws_shape<CONS>::threads, ws_config<BN, SCHED, NB, CONS>::smem_bytes, CLUSTER,
                                      device, sms);
}

/* The split tail (see the top), for a kernel that splits (ws_tail): a plain D (the fused epilogue's warps walk whole
 * tiles), at least one whole round, and a last round at most half full. */
static int ws_tail_split(bool splits, int fused, long long tiles, int clusters)
{
    const long long tail = tiles % clusters;
    return splits && !fused && tiles >= clusters && tail > 0 && 2 * tail <= clusters;
}

static bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* CONS: consumer warpgroups, 64 tile rows each (ws_shape). */
template <int BN, int CLUSTER, int SCHED, int NB = 2, int CONS = 2>
static cudaError_t launch_ws(const pl_gemm_problem *p, cudaStream_t stream)
{
    typedef ws_config<BN, SCHED, NB, CONS> cfg;
    typedef ws_shape<CONS> shape;
    static_assert(cfg::stages >= 3 && cfg::stages <= 16, "stage count out of range");
    static_assert(cfg::smem_bytes <= SMEM_LIMIT, "shared memory over the limit");
    static_assert(BN % 16 == 0 && (BN % (8 * CLUSTER)) == 0, "whole 16-column tail subtiles, whole 8-row B boxes");
    static_assert((cfg::b_bytes / CLUSTER) % 1024 == 0, "each CTA's share of B keeps the 1024-byte swizzle alignment");
    CUtensorMap ta, tb;
    cudaError_t e = pl_tensor_map_bf16(&ta, p->a, (uint64_t)p->m, (uint64_t)p->k, shape::bm, WS_BK);
    if (e == cudaSuccess)
        e = pl_tensor_map_bf16(&tb, p->b, (uint64_t)p->n, (uint64_t)p->k, BN / CLUSTER, WS_BK);
    /* TMA stores D (and loads the residual and bias) when rows are 16-byte multiples and the pointers 16-byte
     * aligned; otherwise the consumers store from registers. A tile width that is not a multiple of 64 ends in a
     * narrower subtile with a dense map of its own (tt); such kernels, and three consumers, store a fused D from
     * registers (ws_config::tma_fused). */
    const pl_gemm_out out = pl_gemm_out_of(p);
    CUtensorMap td = ta, tr = ta, tt = ta;
    const int tma_store =
        p->n % 8 == 0 && aligned16(p->d) && aligned16(p->epi.bias) && aligned16(p->epi.residual) &&
        (cfg::tma_fused || !out.fused) &&
        pl_tensor_map_bf16(&td, p->d, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, EPI_SUB) == cudaSuccess &&
        (BN % EPI_SUB == 0 ||
         pl_tensor_map_bf16_dense(&tt, p->d, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, BN % EPI_SUB) == cudaSuccess) &&
        (!p->epi.residual ||
         pl_tensor_map_bf16(&tr, p->epi.residual, (uint64_t)p->m, (uint64_t)p->n, EPI_SUB, EPI_SUB) == cudaSuccess);
    int device = 0, sms = 0;
    if (e == cudaSuccess)
        e = kernel_launch_prepare((const void *)gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS>, cfg::smem_bytes,
                                  &device, &sms);
    if (e != cudaSuccess)
        return e;

    const int tiles_m = (p->m + shape::bm - 1) / shape::bm, tile_cols = (p->n + BN - 1) / BN;
    const int tile_rows = (tiles_m + CLUSTER - 1) / CLUSTER; /* in cluster units */
    const long long tiles = (long long)tile_rows * tile_cols;
    int clusters = CLUSTER > 1 ? ws_max_clusters<BN, CLUSTER, SCHED, NB, CONS>(device, sms) : sms;
    if (clusters > tiles)
        clusters = (int)tiles;
    const int tail_split = ws_tail_split(ws_tail<BN, CLUSTER, SCHED, CONS>::splits, out.fused, tiles, clusters);

    cudaLaunchConfig_t lc;
    cudaLaunchAttribute attr;
    ws_launch_config(&lc, &attr, clusters * CLUSTER, shape::threads, CLUSTER, cfg::smem_bytes, stream);
    e = cudaLaunchKernelEx(&lc, gemm_wgmma_ws_kernel<BN, CLUSTER, SCHED, NB, CONS>, ta, tb, td, tr, tt, tma_store, out,
                           (p->k + WS_BK - 1) / WS_BK, tile_rows, tile_cols, tail_split);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 1, WS_COOPERATIVE>(p, stream);
}

/* 128×192: three quarters of the 128×256 tile, for shapes whose tile count the wider tile quantizes badly (a
 * second wave a quarter full, or one wave with a third of the SMs idle: 1000×3000, 4104×4104). */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x192(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<192, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x192_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<192, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_pp_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 1, WS_PINGPONG>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 2, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_pp_128x128_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<128, 2, WS_PINGPONG>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x256_s3(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<256, 1, WS_COOPERATIVE, 4>(p, stream);
}

/* ---- tiles fitted to the shape, as cuBLAS fits them ---- */

/* 192×176 (cuBLAS's tile at 4104²: 22 × 24 = 528 tiles, four whole rounds of 132 CTAs where 128-row tiles leave a
 * fifth): three consumer warpgroups of 64 rows (ws_shape<3>), wgmma m64n176k16 (88 accumulators a thread), 176 columns
 * stored as two 64-column subtiles and a 48-column one, in 2-CTA clusters sharing B. Three stages and a whole tile of
 * epilogue buffers (three a consumer): at 4104² 0.4-0.7% over three stages with two buffers, 3% over four with one;
 * the same tile without a cluster 19% under it (H100, 2026-11-27; docs/perf/gemm.md). */
extern "C" cudaError_t pl_gemm_wgmma_ws_192x176_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<176, 2, WS_COOPERATIVE, 3, 3>(p, stream);
}

/* 128×176: two consumers, five stages (where 128×192 has four): mixtral_w1 384×14336×4096 3 × 82 tiles */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x176(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<176, 1, WS_COOPERATIVE, 2, 2>(p, stream);
}

/* 128×224 in 4-CTA clusters (four tile rows share each B panel, a quarter loaded and multicast by each CTA): 1000×3000
 * in 28 clusters, within the 30 of four an H100 holds at once (cuBLAS runs 128×200 tiles in clusters of four there) */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x224_c4(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 4, WS_COOPERATIVE>(p, stream);
}

/* ---- 128×224 without clusters of four ----
 * For M ≈ 200 and N a multiple of 224 (llama3_8b_up 200×14336×4096: 2 × 64 = 128 tiles, one wave on 128 SMs, where
 * 128×256 leaves 112 tiles and 20 SMs idle; 0.80 of cuBLAS on an H200, 2026-11-27). In pairs, the
 * two tile rows of a column share their B panel. On the H100 2-3% over 128×256 there (the weights' stream bounds
 * both; 2026-11-27). */
extern "C" cudaError_t pl_gemm_wgmma_ws_128x224(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 1, WS_COOPERATIVE>(p, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_ws_128x224_c2(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_ws<224, 2, WS_COOPERATIVE>(p, stream);
}
