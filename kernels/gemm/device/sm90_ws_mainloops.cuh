/* The FP8 mainloops in straight-line runs of sm90_ws_scaled.cuh's kernel: the promotion off the critical path
 * (ACCS = SW_HALVES: each k-block's wgmma in two commit groups, the 128×192 tile's column halves,
 * one half promoted while the other runs, in runs of 4 k-blocks; block scales read from the stage's bulk-copied copy),
 * the tensor-scaled promotion every PROMOTE k-blocks, whose consumer overlaps a tile's epilogue with
 * the next tile's first k-block, and two full-width promotion accumulators alternating by k-block
 * (ACCS = SW_TWO_PARTS: 128-wide tiles, no drain inside a tile). Built on the kernel's pieces
 * (sm90_ws_parts.cuh); include only from sm_90a code. */
#ifndef PERFLAB_GEMM_DEVICE_SM90_WS_MAINLOOPS_CUH
#define PERFLAB_GEMM_DEVICE_SM90_WS_MAINLOOPS_CUH

#include "gemm/device/sm90_ws_parts.cuh"

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

/* One k-block of 128 e4m3 (four k32 steps) of width N into d as one commit group, from the descriptors of its A rows
 * and B: from scale-d 0 (FROM_ZERO), or adding to what d holds. The caller fences d (wgmma_fence). */
template <int N, bool FROM_ZERO = true>
__device__ __forceinline__ void sw_wgmma_kblock(float (&d)[N / 2], uint64_t da, uint64_t db)
{
#pragma unroll
    for (int j = 0; j < 4; j++)
        sw_wgmma_e4m3<N>(d, wgmma_desc_step(da, j), wgmma_desc_step(db, j), FROM_ZERO && j == 0 ? 0 : 1);
    wgmma_commit();
}

/* The same from the stage's A rows' and B's shared-memory addresses, fenced first. */
template <int N, bool FROM_ZERO = true>
__device__ __forceinline__ void sw_issue_kblock_e4m3(float (&d)[N / 2], uint32_t a_st, uint32_t b_st)
{
    wgmma_fence(); /* d was read (promoted) since its last wgmma */
    const uint64_t da = wgmma_desc_k128(a_st), db = wgmma_desc_k128(b_st);
    sw_wgmma_kblock<N, FROM_ZERO>(d, da, db);
}

/* What a consumer's mainloop needs of the ring and of its tile: the stages' base, the block scales' copies, the full
 * and empty barriers, its A rows' offset in a stage, its two rows' offset in a stage's A scales (sw_scale_offset),
 * the tile's first column in its second B block (for the block scales) and its lane. */
struct sw_stage_at {
    uint32_t base, scales, full, empty, a_off, sc_off;
    int split, lane;
    uint32_t rank;     /* this CTA's in its cluster */
    uint32_t desc_lo0; /* sw_params.desc_lo0: stage 0's descriptor low word, from the constant bank */
};

/* The view of consumer `consumer` (thread lane `lane`) on tile tl of a kernel whose stages hold sw_config<BN, SCALE ==
 * SW_SCALE_BLOCK>'s layout, with the barriers at `full` and `empty`. */
template <int BN, int SCALE>
__device__ __forceinline__ sw_stage_at sw_stage_view(const sw_params &p, const sw_tile &tl, uint32_t base,
                                                     uint32_t full, uint32_t empty, int consumer, int lane,
                                                     uint32_t rank)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    const int r = tl.m0 + consumer * 64 + ((threadIdx.x / 32) & 3) * 16 + (lane >> 2); /* rows r and r + 8 */
    return {base,
            full + cfg::barrier_bytes,
            full,
            empty,
            (uint32_t)consumer * 64 * SW_ROW_BYTES,
            sw_scale_offset(p, tl, r),
            128 - tl.n0 % 128,
            lane,
            rank,
            p.desc_lo0};
}

/* The products of k-block kb's block scales (sw_products) from stage `stage`'s bulk-copied copy. */
__device__ __forceinline__ sw_block_products sw_stage_products(const sw_stage_at &h, int stage, int kb)
{
    return sw_products(sw_stage_scales(h.scales + stage * SW_SC_STAGE, h.sc_off, kb), h.split <= 64);
}

/* acc += part once part's wgmma are done: times the k-block's scale products q with block scales, as it is with
 * tensor scaling (the one scale multiplies the finished tile). */
template <int BN, int SCALE>
__device__ __forceinline__ void sw_promote(float (&acc)[BN / 2], float (&part)[BN / 2], const sw_block_products &q)
{
    accumulators_fence(part);
    if constexpr (SCALE == SW_SCALE_BLOCK)
        sw_promote_block<BN>(acc, part, q);
    else
        sw_promote_add<BN>(acc, part);
}

/* One promotion group of the FP8 mainloop: PROMOTE k-blocks in straight-line code into `part`
 * (the first from scale-d 0), one wgmma group kept in flight and each stage released as soon as the group after it
 * is issued and its own is done; at the group's end the consumer drains (wait_group 0) and adds part into acc: for
 * tensor scaling as it is (the one scale multiplies the finished tile), for block scaling (PROMOTE = 1: its scales
 * change every k-block) times the k-block's scale products, read from the stage before it is released (read after
 * the wgmma are issued instead, the block kernel ran 11% slower on the H100, 2026-11-26). FIRST_ISSUED: the group's
 * first k-block is already on the tensor cores (issued by sw_consume_overlap before the previous tile's epilogue).
 * Written as a loop with the group's first and last k-block decided at run time, the wgmma sat in a branch and ptxas
 * serialized them (C7518): that build measured 1051 against 1174 TFLOP/s (H200, 2026-11-27; docs/perf/gemm.md, FP8), a
 * measurement of the serialization rather than of the interval. */
template <int BN, int SCALE, int CLUSTER, int PROMOTE, bool FIRST_ISSUED>
__device__ __forceinline__ void sw_promote_group(const sw_stage_at &h, int kb, float (&acc)[BN / 2],
                                                 float (&part)[BN / 2], uint32_t &kcount)
{
    static_assert(SCALE == SW_SCALE_TENSOR || PROMOTE == 1, "block scales change every k-block");
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    sw_block_scales cur = {0.0f, 0.0f, 0.0f, 0.0f};
    sw_block_products q = {};
    int held = 0; /* the stage of the previous k-block of the group, still read by its wgmma group */
#pragma unroll
    for (int u = 0; u < PROMOTE; u++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        if (!FIRST_ISSUED || u > 0) {
            /* The descriptors are stage 0's plus the stage's offset, one add each. Built from the stage's address,
             * ptxas rebuilt that address from the shared window's base (S2R SR_CgaCtaId and a chain of dependent ALU
             * ops) every k-block on the way to the first wgmma (ncu source counters). Measured A/B on an H200
             * (2026-11-27, 8192³):
             * - block scaling, stage 0's taken from h.base: fp8_block 1.031-1.033 -> 1.005-1.006 ms;
             * - tensor scaling the same way spilled in its loop (364 LDL against 17) and lost 1.8%, so it reads stage
             *   0's descriptor from the constant bank (sw_params.desc_lo0, no register held): fp8_tensor 923-929 ->
             *   906-916 µs. The block kernels, whose form of it won as measured, keep theirs. With the consumer
             *   index warp-uniform (sw_consumer_index), the tensor kernels in the block form no longer spilled, and
             * measured fp8_tensor level but fp8_tensor_p4 1.1% slower (H200, 2026-11-27): the parameter stays. */
            sw_wait_stage<STAGES>(h.base, h.full, kcount, cfg::stage_bytes); /* its address is not needed */
            if (SCALE == SW_SCALE_BLOCK)
                cur = sw_stage_scales(h.scales + stage * SW_SC_STAGE, h.sc_off, kb + u);
            const uint32_t at = (uint32_t)stage * (cfg::stage_bytes / 16);
            uint64_t da, db;
            if constexpr (SCALE == SW_SCALE_BLOCK) {
                da = wgmma_desc_k128_from_lo(wgmma_desc_k128_lo(h.base + h.a_off) + at);
                db = wgmma_desc_k128_from_lo(wgmma_desc_k128_lo(h.base + cfg::a_bytes) + at);
            } else { /* tensor scaling: stage 0's descriptor from the kernel parameter */
                da = wgmma_desc_k128_from_lo(h.desc_lo0 + at + h.a_off / 16);
                db = wgmma_desc_k128_from_lo(h.desc_lo0 + at + cfg::a_bytes / 16);
            }
            wgmma_fence(); /* part was read (promoted) since its last wgmma */
            if (u == 0)
                sw_wgmma_kblock<BN, true>(part, da, db);
            else
                sw_wgmma_kblock<BN, false>(part, da, db);
        } else if (SCALE == SW_SCALE_BLOCK) {
            cur = sw_stage_scales(h.scales + stage * SW_SC_STAGE, h.sc_off, kb + u);
        }
        if (SCALE == SW_SCALE_BLOCK) /* while the wgmma run, not after them */
            q = sw_products(cur, h.split <= 64);
        if (u + 1 < PROMOTE) {
            wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
            if (u > 0)
                sw_release<SCALE, CLUSTER>(h.empty, held, h.lane, h.rank);
            held = stage;
        } else {
            wgmma_wait<0>();
            if (u > 0)
                sw_release<SCALE, CLUSTER>(h.empty, held, h.lane, h.rank);
            sw_release<SCALE, CLUSTER>(h.empty, stage, h.lane, h.rank);
        }
    }
    sw_promote<BN, SCALE>(acc, part, q);
}

/* The FP8 mainloop of one tile promoting every PROMOTE k-blocks (1: every k-block, fp8_tensor and block scaling), its
 * first k-block already issued (into part, from scale-d 0): whole groups, then the k-blocks past the last whole group
 * one at a time, each promoted. acc starts at zero. */
template <int BN, int SCALE, int CLUSTER, int PROMOTE>
__device__ __forceinline__ void sw_mainloop_promote(const sw_params &p, const sw_stage_at &h, float (&acc)[BN / 2],
                                                    float (&part)[BN / 2], uint32_t &kcount)
{
    int kb;
    if (p.k_blocks >= PROMOTE) {
        sw_promote_group<BN, SCALE, CLUSTER, PROMOTE, true>(h, 0, acc, part, kcount);
        for (kb = PROMOTE; kb + PROMOTE <= p.k_blocks; kb += PROMOTE)
            sw_promote_group<BN, SCALE, CLUSTER, PROMOTE, false>(h, kb, acc, part, kcount);
    } else { /* fewer k-blocks than a group: the issued one alone */
        sw_promote_group<BN, SCALE, CLUSTER, 1, true>(h, 0, acc, part, kcount);
        kb = 1;
    }
    for (; kb < p.k_blocks; kb++)
        sw_promote_group<BN, SCALE, CLUSTER, 1, false>(h, kb, acc, part, kcount);
}

/* The FP8 mainloop of one tile with two full-width promotion accumulators that alternate (ACCS = SW_TWO_PARTS):
 * k-block kb goes into part[kb % 2] from scale-d 0, and while it runs the consumer waits for kb - 1's
 * group (wait_group 1), releases its stage and promotes it. So a consumer never drains inside a tile: its tensor
 * work stays queued while it promotes, every k-block, at the 128-K interval. The price is registers, three
 * accumulators (64 each at 128 wide), so the tile is 128×128. The tile's first k-block is already issued into p0
 * (sw_consume_overlap); step() is one k-block issued into `cur` with `prev` promoted, last() the drain at the end.
 * With block scales the products of kb's scales are formed when its stage has landed and used at its promotion. */
template <int BN, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_two_parts_step(const sw_stage_at &h, int kb, float (&acc)[BN / 2],
                                                  float (&cur)[BN / 2], float (&prev)[BN / 2], sw_block_products &q,
                                                  uint32_t &kcount)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    const int stage = (int)(kcount % STAGES);
    const uint32_t st = sw_wait_stage<STAGES>(h.base, h.full, kcount, cfg::stage_bytes);
    sw_block_products next = {};
    if (SCALE == SW_SCALE_BLOCK)
        next = sw_stage_products(h, stage, kb);
    sw_issue_kblock_e4m3<BN, true>(cur, st + h.a_off, st + cfg::a_bytes);
    wgmma_wait<1>(); /* k-block kb - 1 is done, kb runs */
    sw_release<SCALE, CLUSTER>(h.empty, (int)((kcount - 1) % STAGES), h.lane, h.rank);
    sw_promote<BN, SCALE>(acc, prev, q);
    q = next;
    kcount++;
}

template <int BN, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_two_parts_last(const sw_stage_at &h, float (&acc)[BN / 2], float (&prev)[BN / 2],
                                                  const sw_block_products &q, uint32_t kcount)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    wgmma_wait<0>();
    sw_release<SCALE, CLUSTER>(h.empty, (int)((kcount - 1) % cfg::stages), h.lane, h.rank);
    sw_promote<BN, SCALE>(acc, prev, q);
}

template <int BN, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_mainloop_two_parts(const sw_params &p, const sw_stage_at &h, float (&acc)[BN / 2],
                                                      float (&p0)[BN / 2], float (&p1)[BN / 2], uint32_t &kcount)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    sw_block_products q = {}; /* k-block 0's (already issued into p0; its stage has landed) */
    if (SCALE == SW_SCALE_BLOCK)
        q = sw_stage_products(h, (int)(kcount % cfg::stages), 0);
    kcount++;
    int kb = 1;
    for (; kb + 2 <= p.k_blocks; kb += 2) {
        sw_two_parts_step<BN, SCALE, CLUSTER>(h, kb, acc, p1, p0, q, kcount);
        sw_two_parts_step<BN, SCALE, CLUSTER>(h, kb + 1, acc, p0, p1, q, kcount);
    }
    if (kb < p.k_blocks) { /* an even count: one more into p1 */
        sw_two_parts_step<BN, SCALE, CLUSTER>(h, kb, acc, p1, p0, q, kcount);
        sw_two_parts_last<BN, SCALE, CLUSTER>(h, acc, p1, q, kcount);
    } else {
        sw_two_parts_last<BN, SCALE, CLUSTER>(h, acc, p0, q, kcount);
    }
}

/* The FP8 mainloop of one tile with the promotion off the critical path (ACCS = SW_HALVES). Each k-block's wgmma go in
 * two commit groups, the tile's left and right halves of BN/2 columns (m64n96k32 for the 128×192 tile), each into a
 * half accumulator of its own (lo, hi: BN/4 registers each, as many as the one full-width `part` they replace). The
 * order per k-block kb: wait for lo(kb) (hi(kb) still runs), promote lo, issue lo(kb + 1), wait for hi(kb) (lo(kb +
 * 1) runs), release kb's stage, promote hi, issue hi(kb + 1). So this consumer always has a wgmma group on the
 * tensor cores while it promotes, instead of draining (wait_group 0) and promoting with its tensor work done. The
 * price: A is read from shared memory twice per k-block (once per half): 80 KB of wgmma reads instead of 64 per
 * 128×192 k-block. The last k-block of a run is peeled so that no wgmma sits in a branch (ptxas serializes those).
 * Unlike the tensor-scaled consumer (sw_consume_overlap), this one does not issue a tile's first k-block before the
 * previous tile's epilogue: tried (2026-11-27), this kernel (then fp8_block, now fp8_block_halves) ran 2% slower
 * (H100, three processes). */
/* sw_issue_kblock_e4m3 for both halves of the stage at st. */
template <int BN>
__device__ __forceinline__ void sw_issue_halves(float (&lo)[BN / 4], float (&hi)[BN / 4], uint32_t st, uint32_t a_off,
                                                uint32_t b_off)
{
    sw_issue_kblock_e4m3<BN / 2>(lo, st + a_off, st + b_off);
    sw_issue_kblock_e4m3<BN / 2>(hi, st + a_off, st + b_off + (BN / 2) * SW_ROW_BYTES);
}

/* One straight-line run of RUN k-blocks from kb. */
template <int BN, int SCALE, int CLUSTER, int RUN>
__device__ __forceinline__ void sw_halves_run(const sw_stage_at &h, int kb, float (&acc)[BN / 2], float (&lo)[BN / 4],
                                              float (&hi)[BN / 4], uint32_t &kcount)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    const uint32_t b_off = cfg::a_bytes, hi_off = (BN / 2) * SW_ROW_BYTES;
    sw_block_products q = {}; /* the k-block's scale products (block scaling) */
    uint32_t st = sw_wait_stage<STAGES>(h.base, h.full, kcount, cfg::stage_bytes);
    sw_issue_halves<BN>(lo, hi, st, h.a_off, b_off);
#pragma unroll
    for (int u = 0; u < RUN; u++, kcount++) {
        if (SCALE == SW_SCALE_BLOCK) /* read before the stage is released */
            q = sw_stage_products(h, (int)(kcount % STAGES), kb + u);
        wgmma_wait<1>(); /* lo(u) is done, hi(u) runs */
        accumulators_fence(lo);
        sw_promote_half<BN, SCALE, 0>(acc, lo, q);
        if (u + 1 < RUN) {
            st = sw_wait_stage<STAGES>(h.base, h.full, kcount + 1, cfg::stage_bytes);
            sw_issue_kblock_e4m3<BN / 2>(lo, st + h.a_off, st + b_off);
            wgmma_wait<1>(); /* hi(u) is done, lo(u + 1) runs */
        } else {
            wgmma_wait<0>();
        }
        sw_release<SCALE, CLUSTER>(h.empty, (int)(kcount % STAGES), h.lane, h.rank);
        accumulators_fence(hi);
        sw_promote_half<BN, SCALE, 1>(acc, hi, q);
        if (u + 1 < RUN)
            sw_issue_kblock_e4m3<BN / 2>(hi, st + h.a_off, st + b_off + hi_off);
    }
}

template <int BN, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_mainloop_halves(const sw_params &p, const sw_stage_at &h, float (&acc)[BN / 2],
                                                   float (&lo)[BN / 4], float (&hi)[BN / 4], uint32_t &kcount)
{
    constexpr int RUN = 4; /* k-blocks per straight-line run */
    int kb = 0;
    for (; kb + RUN <= p.k_blocks; kb += RUN)
        sw_halves_run<BN, SCALE, CLUSTER, RUN>(h, kb, acc, lo, hi, kcount);
    for (; kb < p.k_blocks; kb++) /* the k-blocks past the last whole run, one at a time */
        sw_halves_run<BN, SCALE, CLUSTER, 1>(h, kb, acc, lo, hi, kcount);
}

/* The FP8 consumer of sw_mainloop_promote (tensor scaling promoting every PROMOTE k-blocks, block scaling every
 * k-block), every tile: its first k-block goes to the tensor cores before the previous tile's epilogue, which then
 * runs while that k-block does (the accumulators being stored, acc, are not the ones the wgmma write, part). Without
 * it the tensor cores idle for the epilogue: both consumers finish a tile at once, and a 128×192 tile's stores take
 * about as long as two of its 64 k-blocks at K = 8192. Measured on an H100 (2026-11-27, three processes each):
 * fp8_tensor +3%, fp8_tensor_p4 +1%. */
template <int BN, int SCALE, int CLUSTER, int PROMOTE, bool TWO_PARTS, bool GROUPED, int PARTS2>
__device__ __forceinline__ void
sw_consume_overlap(const sw_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_tail, float (&acc)[BN / 2],
                   float (&part)[BN / 2], float (&part2)[PARTS2], float tensor_scale, uint32_t base, uint32_t bufs,
                   uint32_t full, uint32_t empty, uint32_t rank, int cluster, int clusters)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    const int consumer = sw_consumer_index(), lane = threadIdx.x & 31;
    const uint32_t a_off = consumer * 64 * SW_ROW_BYTES;
    uint32_t kcount = 0; /* k-blocks consumed: the ring position */
    sw_walk w;
    w.init();
    sw_tile tl, prev;
    bool pending = false; /* acc holds prev's finished tile, not yet stored */
    for (int t = cluster; w.at<BN, CLUSTER>(p, t, rank, tl); t += clusters) {
        if (sw_idle(p, tl, consumer)) {
            if (pending)
                sw_store<BN, GROUPED>(p, tma_d, tma_tail, prev, acc, bufs, consumer);
            pending = false;
            sw_pass_tile<STAGES, SCALE, CLUSTER>(p, full, empty, lane, rank, kcount);
            continue;
        }
        const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
        sw_issue_kblock_e4m3<BN, true>(part, st + a_off, st + cfg::a_bytes);
        if (pending)
            sw_store<BN, GROUPED>(p, tma_d, tma_tail, prev, acc, bufs, consumer);
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            acc[i] = 0.0f;
        const sw_stage_at h = sw_stage_view<BN, SCALE>(p, tl, base, full, empty, consumer, lane, rank);
        if constexpr (TWO_PARTS)
            sw_mainloop_two_parts<BN, SCALE, CLUSTER>(p, h, acc, part, part2, kcount);
        else
            sw_mainloop_promote<BN, SCALE, CLUSTER, PROMOTE>(p, h, acc, part, kcount);
        if constexpr (SCALE == SW_SCALE_TENSOR) {
#pragma unroll
            for (int i = 0; i < BN / 2; i++)
                acc[i] *= tensor_scale;
        }
        prev = tl;
        pending = true;
    }
    if (pending)
        sw_store<BN, GROUPED>(p, tma_d, tma_tail, prev, acc, bufs, consumer);
}

#endif
