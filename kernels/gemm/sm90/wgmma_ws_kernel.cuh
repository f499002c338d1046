/* The warp-specialized persistent BF16 kernel, gemm_wgmma_ws_kernel, as its phases (wgmma_ws_sm90a.cu's top says
 * how they work together): ws_init_barriers; the producer thread, ws_produce; the fused epilogue's warps, ew_run
 * (gemm/device/sm90_epilogue_warps.cuh); each consumer warpgroup, ws_consume: per item of its walk ws_mainloop then
 * ws_epilogue, or ws_split_item in a split tail. Its configuration is wgmma_ws_config.cuh. sm_90a only. */
#ifndef PERFLAB_GEMM_SM90_WGMMA_WS_KERNEL_CUH
#define PERFLAB_GEMM_SM90_WGMMA_WS_KERNEL_CUH

#include "gemm/device/sm90_operand.cuh"
#include "gemm/sm90/wgmma_ws_config.cuh"

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
 * item this CTA's half from itself. BL: how B is laid out (gemm/device/sm90_operand.cuh). */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS, typename BL>
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
            if (split) { /* K-major: its box is BN/2 rows */
                if constexpr (SPLITS)
                    BL::template load<BN / 2>(st + cfg::a_bytes, tma_b, bar, kb * WS_BK, n0);
            } else if (CLUSTER == 1)
                BL::template load<BN>(st + cfg::a_bytes, tma_b, bar, kb * WS_BK, n0);
            else
                BL::template load_share<BN, CLUSTER>(st + cfg::a_bytes, tma_b, bar, kb * WS_BK, n0, w.rank);
            if (++stage == cfg::stages) {
                stage = 0;
                phase ^= 1;
            }
        }
    }
}

/* One k16 step of the consumer's wgmma: its 64 rows × BN (cooperative), or both 64-row halves of a 128×128 tile
 * (ping-pong, scale_d 0 on a tile's first step: it overwrites, no zeroing pass, 0.987× with one on an H200,
 * 2026-11-26). TB: wgmma's imm-trans-b (B's layout policy's trans). */
template <int BN, int SCHED, int TB>
__device__ __forceinline__ void ws_wgmma_k16(float (&acc)[BN / 2], float (&acc_hi)[SCHED == WS_PINGPONG ? 64 : 1],
                                             uint32_t st, int consumer, uint64_t db, int j, int scale_d)
{
    if constexpr (SCHED == WS_PINGPONG) {
        pl_wgmma_m64n128k16_bf16<TB>(acc, wgmma_desc_k128(st + j * 32), db, scale_d);
        pl_wgmma_m64n128k16_bf16<TB>(acc_hi, wgmma_desc_k128(st + 64 * 128 + j * 32), db, scale_d);
    } else if constexpr (BN == 256) {
        pl_wgmma_m64n256k16_bf16<TB>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 192) {
        pl_wgmma_m64n192k16_bf16<TB>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 176) {
        pl_wgmma_m64n176k16_bf16<TB>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else if constexpr (BN == 224) {
        pl_wgmma_m64n224k16_bf16<TB>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    } else {
        pl_wgmma_m64n128k16_bf16<TB>(acc, wgmma_desc_k128(st + consumer * 64 * 128 + j * 32), db, 1);
    }
}

/* The consumer mainloop of one tile: each k-block's wgmma from its stage, one group kept in flight, the previous
 * stage released as soon as its group is done; the fused epilogue's operands prefetched (ping-pong) a few k-blocks
 * before the end, early enough to arrive, late enough not to be evicted by the operands streaming through L2. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS, typename BL>
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
            ws_wgmma_k16<BN, SCHED, BL::trans>(acc, acc_hi, st, consumer, BL::desc(st + cfg::a_bytes, j), j,
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

/* A split item of the consumer warpgroup `consumer` (the split tail: wgmma_ws_sm90a.cu's top): its 64 rows × BN/2
 * columns over all of K, from this CTA's own stages, released on its own barriers only (both arrivals a warp owes, on
 * this CTA's barrier: its producer alone wrote them), then stored. The ring position `kcount` advances as in the main
 * loop. */
template <int BN, int STAGES, int STAGE_BYTES, int A_BYTES, int NB, typename BL>
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
            const uint64_t db = BL::desc(st + A_BYTES, j);
            const uint64_t da = wgmma_desc_k128(st + consumer * 64 * 128 + j * 32);
            pl_wgmma_m64n128k16_bf16<BL::trans>(acc, da, db, 1);
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

/* A consumer warpgroup: its items of the walk (ping-pong: every other one), each a mainloop then an epilogue, or a
 * split item (ws_split_item). Arrives on the cluster barrier once it has made its last arrival on the peer's barriers,
 * before its last tile's epilogue. */
template <int BN, int CLUSTER, int SCHED, int NB, int CONS, typename BL>
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
                ws_split_item<BN, cfg::stages, cfg::stage_bytes, cfg::a_bytes, NB, BL>(
                    o, tma_d, tma_store, s.base, s.full, s.empty, fs.bufs, consumer, k_blocks, kcount, m0, n0);
                continue;
            }
        }
        if (SCHED == WS_PINGPONG && local > 0) /* the other consumer has issued all of tile local-1 */
            mbar_wait(s.order + 8 * consumer, (uint32_t)((mine - (consumer == 0 ? 1 : 0)) & 1));
        ws_mainloop<BN, CLUSTER, SCHED, NB, CONS, BL>(acc, acc_hi, s, o, tma_r, fs, fused_tma, consumer, lane, k_blocks,
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
template <int BN, int CLUSTER, int SCHED, int NB, int CONS, typename BL>
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
            ws_produce<BN, CLUSTER, SCHED, NB, CONS, BL>(&tma_a, &tma_b, s, w, k_blocks);
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
        ws_consume<BN, CLUSTER, SCHED, NB, CONS, BL>(&tma_d, &tma_r, &tma_t, tma_store, o, k_blocks, s, w, handover,
                                                     wg);
    }
    /* The peer may still arrive on this CTA's barriers: stay until it is done. Each thread arrived once it had made
     * its last arrival on the peer's barriers, a consumer before its last tile's epilogue: arriving after the stores
     * (one cluster_sync at the end) waited for them to complete first, ~1 µs of a one-wave launch. */
    if (CLUSTER > 1)
        cluster_wait();
}

#endif
