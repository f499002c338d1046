/* The FP8 mainloops in straight-line runs of sm90_ws_scaled.cuh's kernel: the promotion off the critical path
 * (HALVES = 2, issue 14, session 3: each k-block's wgmma in two commit groups, the 128×192 tile's column halves, one
 * half promoted while the other runs, in runs of 4 k-blocks; block scales read from the stage's bulk-copied copy),
 * and the tensor-scaled promotion every PROMOTE k-blocks (session 13). Included by sm90_ws_scaled.cuh after its types
 * and promotion helpers; include only from sm_90a code. */
#ifndef PERFLAB_GEMM_SM90_WS_HALVES_CUH
#define PERFLAB_GEMM_SM90_WS_HALVES_CUH

/* One half of a 128×192 tile's promotion (HALF 0: columns 0-95, 1: 96-191): block scaling by the k-block's scale
 * products (sw_products), tensor scaling adds. */
template <int BN, int SCALE, int HALF>
__device__ __forceinline__ void sw_promote_half(float (&acc)[BN / 2], const float (&part)[BN / 4],
                                                const sw_block_products &q)
{
    static_assert(BN == 192, "the halves are the 128×192 tile's");
    constexpr int HN = BN / 2, OFF = HALF * BN / 4;
    if constexpr (SCALE == SW_SCALE_BLOCK)
        sw_promote_block<HN, HALF * HN, OFF>(acc, part, q);
    else
        sw_promote_add<HN, OFF>(acc, part);
}

/* Wait until the ring's k-block number kcount has landed; its stage's shared-memory address. */
template <int STAGES>
__device__ __forceinline__ uint32_t sw_wait_stage(uint32_t base, uint32_t full, uint32_t kcount, int stage_bytes)
{
    const int stage = (int)(kcount % STAGES);
    mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
    return base + stage * stage_bytes;
}

/* One k-block of 128 e4m3 (four k32 steps) of width N into d as one commit group: from scale-d 0 (FROM_ZERO), or
 * adding to what d holds. */
template <int N, bool FROM_ZERO = true>
__device__ __forceinline__ void sw_issue_kblock_e4m3(float (&d)[N / 2], uint32_t a_st, uint32_t b_st)
{
    wgmma_fence(); /* d was read (promoted) since its last wgmma */
    const uint64_t da = wgmma_desc_k128(a_st), db = wgmma_desc_k128(b_st);
#pragma unroll
    for (int j = 0; j < 4; j++)
        sw_wgmma_e4m3<N>(d, wgmma_desc_step(da, j), wgmma_desc_step(db, j), FROM_ZERO && j == 0 ? 0 : 1);
    wgmma_commit();
}

/* The tensor-scaled FP8 mainloop of one tile promoting every PROMOTE k-blocks (issue 14, session 13): each group of
 * PROMOTE k-blocks runs in straight-line code into `part` (the first from scale-d 0), one wgmma group kept in flight
 * and each stage released as soon as the group after it is issued and its own is done; at the group's end the
 * consumer drains (wait_group 0) and adds part into acc. The k-blocks past the last whole group go one at a time,
 * each promoted. Written as a loop with the group's first and last k-block decided at run time, the wgmma sat in a
 * branch and ptxas serialized them (C7518): that build measured 1051 against 1174 TFLOP/s (docs/perf/gemm.md, FP8
 * request 3), a measurement of the serialization rather than of the interval. */
template <int BN, int CLUSTER, int PROMOTE>
__device__ __forceinline__ void sw_mainloop_promote(const sw_params &p, float (&acc)[BN / 2], float (&part)[BN / 2],
                                                    uint32_t base, uint32_t full, uint32_t empty, int consumer,
                                                    int lane, uint32_t &kcount)
{
    typedef sw_config<BN, 0> cfg;
    constexpr int STAGES = cfg::stages;
    static_assert(PROMOTE > 1, "PROMOTE = 1 is sw_consume's own loop");
    const uint32_t a_off = consumer * 64 * SW_ROW_BYTES, b_off = cfg::a_bytes;
    int kb = 0;
    for (; kb + PROMOTE <= p.k_blocks; kb += PROMOTE) {
        int held = 0; /* the stage of the previous k-block of the group, still read by its wgmma group */
#pragma unroll
        for (int u = 0; u < PROMOTE; u++, kcount++) {
            const int stage = (int)(kcount % STAGES);
            const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
            if (u == 0)
                sw_issue_kblock_e4m3<BN, true>(part, st + a_off, st + b_off);
            else
                sw_issue_kblock_e4m3<BN, false>(part, st + a_off, st + b_off);
            if (u + 1 < PROMOTE) {
                wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
                if (u > 0)
                    release_stage<CLUSTER>(empty, held, lane);
                held = stage;
            } else {
                wgmma_wait<0>();
                if (u > 0)
                    release_stage<CLUSTER>(empty, held, lane);
                release_stage<CLUSTER>(empty, stage, lane);
            }
        }
        accumulators_fence(part);
        sw_promote_add<BN>(acc, part);
    }
    for (; kb < p.k_blocks; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
        sw_issue_kblock_e4m3<BN, true>(part, st + a_off, st + b_off);
        wgmma_wait<0>();
        release_stage<CLUSTER>(empty, stage, lane);
        accumulators_fence(part);
        sw_promote_add<BN>(acc, part);
    }
}

/* The FP8 mainloop of one tile with the promotion off the critical path (HALVES = 2). Each k-block's wgmma go in two
 * commit groups, the tile's left and right halves of BN/2 columns (m64n96k32 for the 128×192 tile), each into a
 * half accumulator of its own (lo, hi: BN/4 registers each, as many as the one full-width `part` they replace). The
 * order per k-block kb: wait for lo(kb) (hi(kb) still runs), promote lo, issue lo(kb + 1), wait for hi(kb) (lo(kb +
 * 1) runs), release kb's stage, promote hi, issue hi(kb + 1). So this consumer always has a wgmma group on the
 * tensor cores while it promotes, instead of draining (wait_group 0) and promoting with its tensor work done. The
 * price: A is read from shared memory twice per k-block (once per half): 80 KB of wgmma reads instead of 64 per
 * 128×192 k-block. The last k-block is peeled so that no wgmma sits in a branch (ptxas serializes those). */
template <int BN, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_mainloop_halves(const sw_params &p, const sw_tile &tl, int r, float (&acc)[BN / 2],
                                                   float (&lo)[BN / 4], float (&hi)[BN / 4], uint32_t base,
                                                   uint32_t scales, uint32_t full, uint32_t empty, int consumer,
                                                   int lane, uint32_t &kcount)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages, HN = BN / 2, RUN = 4; /* k-blocks per straight-line run */
    const int split = 128 - tl.n0 % 128;                      /* the first column of the tile in the next B block */
    const uint32_t a_off = consumer * 64 * SW_ROW_BYTES, b_off = cfg::a_bytes, hi_off = HN * SW_ROW_BYTES;
    const uint32_t sc_off = sw_scale_offset(p, tl, r); /* this thread's row in a stage's A scales */
    sw_block_products q = {};                          /* the k-block's scale products (block scaling) */
    int kb = 0;
    for (; kb + RUN <= p.k_blocks; kb += RUN) {
        uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
        sw_issue_kblock_e4m3<HN>(lo, st + a_off, st + b_off);
        sw_issue_kblock_e4m3<HN>(hi, st + a_off, st + b_off + hi_off);
#pragma unroll
        for (int u = 0; u < RUN; u++, kcount++) {
            if (SCALE == SW_SCALE_BLOCK) /* read before the stage is released */
                q = sw_products(sw_stage_scales(scales + (kcount % STAGES) * SW_SC_STAGE, sc_off, kb + u), split <= 64);
            wgmma_wait<1>(); /* lo(u) is done, hi(u) runs */
            accumulators_fence(lo);
            sw_promote_half<BN, SCALE, 0>(acc, lo, q);
            if (u + 1 < RUN) {
                st = sw_wait_stage<STAGES>(base, full, kcount + 1, cfg::stage_bytes);
                sw_issue_kblock_e4m3<HN>(lo, st + a_off, st + b_off);
                wgmma_wait<1>(); /* hi(u) is done, lo(u + 1) runs */
            } else {
                wgmma_wait<0>();
            }
            release_stage<CLUSTER>(empty, (int)(kcount % STAGES), lane);
            accumulators_fence(hi);
            sw_promote_half<BN, SCALE, 1>(acc, hi, q);
            if (u + 1 < RUN)
                sw_issue_kblock_e4m3<HN>(hi, st + a_off, st + b_off + hi_off);
        }
    }
    for (; kb < p.k_blocks; kb++, kcount++) { /* the k-blocks past the last whole run, one at a time */
        const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
        if (SCALE == SW_SCALE_BLOCK)
            q = sw_products(sw_stage_scales(scales + (kcount % STAGES) * SW_SC_STAGE, sc_off, kb), split <= 64);
        sw_issue_kblock_e4m3<HN>(lo, st + a_off, st + b_off);
        sw_issue_kblock_e4m3<HN>(hi, st + a_off, st + b_off + hi_off);
        wgmma_wait<1>();
        accumulators_fence(lo);
        sw_promote_half<BN, SCALE, 0>(acc, lo, q);
        wgmma_wait<0>();
        release_stage<CLUSTER>(empty, (int)(kcount % STAGES), lane);
        accumulators_fence(hi);
        sw_promote_half<BN, SCALE, 1>(acc, hi, q);
    }
}

#endif
