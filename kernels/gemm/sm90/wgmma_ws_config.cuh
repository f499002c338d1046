/* The warp-specialized persistent BF16 kernel's configuration (wgmma_ws_sm90a.cu's top says how the kernel works):
 * its warpgroups and registers (ws_shape), its stages, epilogue buffers and shared memory (ws_config), which kernels
 * split their last round (ws_tail), where the CTA's shared memory holds what (ws_smem), and the CTA's walk over the
 * tiles (ws_walk, over gemm/device/tile_scheduler.cuh). sm_90a only. */
#ifndef PERFLAB_GEMM_SM90_WGMMA_WS_CONFIG_CUH
#define PERFLAB_GEMM_SM90_WGMMA_WS_CONFIG_CUH

#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"
#include "common/sm90_common.cuh"
#include "gemm/device/tile_scheduler.cuh"
#include "gemm/device/sm90_epilogue.cuh"
#include "gemm/device/sm90_epilogue_warps.cuh"

#define WS_BK         64
#define WS_GROUP_ROWS 16     /* tile rows per raster group of the scheduler */
#define WS_SMEM_LIMIT 232448 /* the largest dynamic shared memory a block may ask for on sm_90 (227 KB) */

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
    static constexpr int stages = (WS_SMEM_LIMIT - 1024 - extra_bytes) / stage_bytes;
    static constexpr int smem_bytes = 1024 + stages * stage_bytes + extra_bytes;
    static constexpr int readers = SCHED == WS_PINGPONG ? 4 : 4 * CONS; /* consumer warps that read each stage */
    /* the fused epilogue through TMA (the epilogue warps' hand-over, the ping-pong consumers' own) takes whole
     * 64-column subtiles and two consumers; other kernels store a fused D from registers (the launcher clears
     * tma_store) */
    static constexpr bool tma_fused = CONS == 2 && BN % EPI_SUB == 0;
};

/* The kernels that split their last round (the split tail: wgmma_ws_sm90a.cu's top): the 2-CTA cooperative ones of
 * 128×256 tiles (a wgmma of half the width; 128×128 tiles cut to 128×64 lost as often as they won). */
template <int BN, int CLUSTER, int SCHED, int CONS = 2> struct ws_tail {
    static constexpr bool splits = CLUSTER == 2 && SCHED == WS_COOPERATIVE && BN == 256 && CONS == 2;
};

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
    w.group = WS_GROUP_ROWS / CLUSTER;
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

#endif
