/* The warp-specialized persistent kernel of the FP8 GEMM and of the grouped (mixture-of-experts) GEMMs, sm_90a.
 * Include only from files compiled for sm_90a.
 *
 * Structure (as wgmma_ws_sm90a.cu, the BF16 kernel it follows): one CTA per SM loops over output tiles. Warpgroups
 * 0 and 1 are the consumers (setmaxnreg.inc to 232 registers), cooperative: each takes 64 rows of every 128×BN
 * tile. Warpgroup 2 is the producer: it gives registers back (setmaxnreg.dec to 40) and one thread issues the TMA
 * loads of A and B into a ring of stages, each counted on its "full" mbarrier, waiting on the stage's "empty"
 * mbarrier before it refills it. ptxas compiles the consumers' code for the 232 registers setmaxnreg gives them
 * (the 128×192 FP8 tile needs ~200: two accumulators of 96), though it reports the launch's 168; a 288-thread
 * layout with a producer warp cannot have more than 168 (an SM sub-partition then holds three of the nine warps).
 * A stage holds one k-block of 128 bytes per row (64 bf16 or 128 e4m3 elements, one 128-byte swizzle row), so the
 * wgmma descriptors are the same for both types: a k-step is +32 bytes (k16 bf16, k32 e4m3). Results leave through
 * shared memory and TMA stores (sm90_epilogue.cuh); where a store must stop at a group's last row, through shared
 * memory and ordinary 16-byte stores; from registers only where N % 8 != 0.
 *
 * FP8 accumulation. Hopper's FP8 wgmma adds its products into the accumulator with a reduced precision (about 14
 * mantissa bits, by DeepSeek-V3's measurements), so a long K loses accuracy. The consumers therefore run each
 * promotion group of PROMOTE k-blocks of 128 (4·PROMOTE wgmma k32) into an accumulator of their own (`part`,
 * scale-d 0 on the group's first) and add it into fp32 registers at the group's end: block scaling promotes every
 * k-block (128 K: its scales change there), times sa[row][kb]·sb[n-block][kb]; tensor scaling every PROMOTE
 * k-blocks, its one scale multiplying the finished accumulator. Inside a group the stages are released one
 * wgmma group behind, as in the BF16 kernel; at a promotion the consumer drains its wgmma (wait_group 0), and the
 * other consumer's wgmma keep the tensor cores busy meanwhile.
 *
 * The tile walk. A plain GEMM walks its tiles in groups of 16 tile rows (CTAs running at once share A and B panels
 * in L2); in 2-CTA clusters the two CTAs take vertically adjacent tiles and multicast their shared B panel. A
 * grouped GEMM (offsets != NULL) walks (group, tile) pairs: group g owns rows offsets[g] .. offsets[g+1] - 1 of A
 * and D and rows g·N .. g·N + N - 1 of B; inside a group its tiles go as a plain GEMM's (bands of 16 tile rows,
 * rows fastest, then columns: a large group's A panel is read from DRAM once per band, not once per wave of
 * columns; ncu at E = 8, N = 14336: 3.3 GB of DRAM reads against 4.2 GB rows first), then the next group; in 2-CTA
 * clusters the pair takes vertically adjacent tiles of one group, and a group's odd last tile row in pairs side by
 * side that multicast their shared A panel instead (no pad tiles past a group's end). Every role walks it from the
 * offsets in device memory with a cursor that only moves forward, so nothing about the group sizes comes back to the
 * host; a group of 0 rows has no tiles. A tile may read rows of the next group (TMA loads whole boxes): those rows are
 * computed and never stored. */
#ifndef PERFLAB_GEMM_SM90_WS_SCALED_CUH
#define PERFLAB_GEMM_SM90_WS_SCALED_CUH

#include "gemm/epilogue.cuh"
#include "gemm/fp8.h"
#include "gemm/sm90_common.cuh"
#include "gemm/sm90_epilogue.cuh"
#include "gemm/sm90_wgmma_fp8_ops.cuh"
#include "gemm/tensor_map.h"

#define SW_BM            128
#define SW_ROW_BYTES     128 /* bytes of a k-block row in a stage */
#define SW_THREADS       384 /* two consumer warpgroups (warps 0-7) and the producer warpgroup (8-11) */
#define SW_PRODUCER      256 /* the thread that issues every TMA load */
#define SW_PRODUCER_REGS 40
#define SW_CONSUMER_REGS 232    /* each SM sub-partition holds one warp of each warpgroup: 40 + 2·232 = 504 of 512 */
#define SW_GROUP_ROWS    16     /* tile rows per raster group of a plain GEMM */
#define SW_SMEM_LIMIT    232448 /* the largest dynamic shared memory a block may ask for on sm_90 */
#define SW_EPI_BUFFERS   2      /* 64×64 subtile buffers per consumer */

enum sw_elem { SW_BF16 = 0, SW_E4M3 = 1 };
enum sw_scale { SW_SCALE_NONE = 0, SW_SCALE_TENSOR = 1, SW_SCALE_BLOCK = 2 };
/* The FP8 consumer's promotion accumulators (the kernel's ACCS parameter): one (sw_mainloop_promote), the tile's two
 * column halves (sw_mainloop_halves), or two full-width ones that alternate by k-block (sw_mainloop_two_parts,
 * 128-wide tiles: three accumulators of 64 registers). bf16 takes SW_ONE_PART and promotes nothing. */
enum sw_accs { SW_ONE_PART = 1, SW_HALVES = 2, SW_TWO_PARTS = 3 };

/* The kernels whose consumers read their wgmma descriptors from sw_params.desc_lo0 (sw_promote_group's tensor path):
 * tensor-scaled FP8 with one promotion accumulator. sw_launch sets it, the kernel checks it, for these only. */
template <int ELEM, int SCALE, int ACCS> __host__ __device__ constexpr bool sw_reads_desc_lo0()
{
    return ELEM == SW_E4M3 && SCALE == SW_SCALE_TENSOR && ACCS == SW_ONE_PART;
}

/* The block scales a stage carries (block scaling: the producer bulk-copies them beside A and B): A's of the tile's
 * rows from the 4-aligned row at or before its first (up to SW_BM + 4 floats), then two 16-byte chunks of B's, the
 * four k-blocks around this one of the tile's first B block and of the next. */
#define SW_SC_B0    ((SW_BM + 4) * 4)
#define SW_SC_B1    (SW_SC_B0 + 16)
#define SW_SC_STAGE (SW_SC_B1 + 16)

template <int BN, int SCALE_SMEM = 0> struct sw_config {
    static constexpr int a_bytes = SW_BM * SW_ROW_BYTES;
    static constexpr int b_bytes = BN * SW_ROW_BYTES;
    static constexpr int stage_bytes = a_bytes + b_bytes;
    static constexpr int scale_bytes = SCALE_SMEM ? SW_SC_STAGE : 0; /* per stage, after the barriers */
    static constexpr int epi_bytes = 2 * SW_EPI_BUFFERS * EPI_SUB_BYTES;
    static constexpr int barrier_bytes = 2 * 16 * 8;
    static constexpr int fit = (SW_SMEM_LIMIT - 1024 - epi_bytes - barrier_bytes) / (stage_bytes + scale_bytes);
    static constexpr int stages = fit > 16 ? 16 : fit;
    static constexpr int smem_bytes = 1024 + stages * (stage_bytes + scale_bytes) + epi_bytes + barrier_bytes;
};

/* What a launch passes by value. */
struct sw_params {
    pl_gemm_out o; /* D: o.m its rows (all groups), o.n its columns (N) */
    int k_blocks;  /* ⌈K / elements per k-block⌉ */
    int tile_rows; /* plain: tile rows over M */
    int tile_cols; /* ⌈N / BN⌉ */
    int tma_store; /* D through TMA and whole 16-byte chunks (N % 8 == 0, D aligned) */
    /* grouped: groups + 1 row offsets in device memory; NULL for one plain GEMM */
    const int *offsets;
    int groups;
    int n;         /* B rows per group */
    int skip_idle; /* a consumer whose rows all lie past the group's end skips the tile's wgmma */
    /* scales (device memory): tensor: scale_a[0], scale_b[0] (NULL reads as 1); block: A at
     * scale_a[kb · lda + row], B at scale_b[(g · nblocks + nb) · ldb + kb] */
    const float *scale_a, *scale_b;
    int lda, ldb, nblocks;
    /* wgmma_desc_k128_lo of the ring's stage 0, the 1024-aligned start of the dynamic shared memory (sw_launch: from
     * the reserved and static shared memory, for the kernels of sw_reads_desc_lo0, which check it and read their
     * descriptors from it: a kernel parameter sits in the constant bank, which costs the consumers no register) */
    uint32_t desc_lo0;
};

struct sw_tile {
    int m0;      /* first row of A and D */
    int row_end; /* rows from row_end on are not this tile's (the group's end, or M) */
    int n0;      /* first column of D */
    int b_row;   /* first row of B */
    int group;
    int a_pair; /* 2-CTA clusters: the pair's tiles lie side by side and share A (a group's odd last tile row) */
};

/* Where a role stands in the walk: the group it is in and that group's first tile, tile count, whole cluster tile
 * rows and rows. */
struct sw_walk {
    int g, first, tiles, crows, start, end;

    __device__ __forceinline__ void init()
    {
        g = -1;
        first = tiles = crows = start = end = 0;
    }

    /* Tile t (t never decreases between calls) of the walk; false once t is past the last tile. In clusters of
     * CLUSTER CTAs, t counts cluster tiles and `rank` picks this CTA's. Over a plain GEMM's M a cluster tile is
     * CLUSTER vertically adjacent tiles sharing their B panel (p.tile_rows of them; the last may hold tiles wholly
     * past M, computed and never stored). In a group, a pair (CLUSTER = 2) takes two vertically adjacent tiles
     * sharing B over the group's whole pairs of tile rows; an odd last tile row goes in pairs side by side sharing
     * its A panel (a_pair), so no CTA computes a tile wholly past the group's end. With an odd column count the last
     * of those pairs holds a tile past N: its CTA loads its A half for the other and computes nothing. */
    template <int BN, int CLUSTER>
    __device__ __forceinline__ bool at(const sw_params &p, int t, uint32_t rank, sw_tile &tl)
    {
        static_assert(CLUSTER == 1 || CLUSTER == 2, "single CTAs or pairs");
        int row, col;
        tl.a_pair = 0;
        if (!p.offsets) {
            if (t >= p.tile_rows * p.tile_cols)
                return false;
            tile_of(t, p.tile_rows, p.tile_cols, SW_GROUP_ROWS / CLUSTER, row, col);
            tl.m0 = (row * CLUSTER + (int)rank) * SW_BM;
            tl.n0 = col * BN;
            tl.row_end = p.o.m;
            tl.b_row = tl.n0;
            tl.group = 0;
            return true;
        }
        while (t >= first + tiles) {
            if (g >= p.groups)
                return false;
            first += tiles;
            if (++g >= p.groups)
                return false;
            group_rows(p.offsets, g, p.o.m, start, end);
            const int trows = (end - start + SW_BM - 1) / SW_BM;
            crows = trows / CLUSTER;
            tiles = crows * p.tile_cols + (trows % CLUSTER ? (p.tile_cols + 1) / 2 : 0);
        }
        const int u = t - first;
        if (CLUSTER == 2 && u >= crows * p.tile_cols) { /* the odd last tile row, pairs side by side */
            tl.m0 = start + 2 * crows * SW_BM;
            tl.n0 = (2 * (u - crows * p.tile_cols) + (int)rank) * BN;
            tl.a_pair = 1;
        } else {
            tile_of(u, crows, p.tile_cols, SW_GROUP_ROWS / CLUSTER, row, col);
            tl.m0 = start + (row * CLUSTER + (int)rank) * SW_BM;
            tl.n0 = col * BN;
        }
        tl.row_end = end;
        tl.b_row = g * p.n + tl.n0;
        tl.group = g;
        return true;
    }
};

/* The block scales at k-block kb of this thread's two rows (r, r + 8) and of the B blocks the tile's columns fall
 * in: b0 for the block of column n0, b1 for the next one (a 192-wide tile spans two). */
struct sw_block_scales {
    float lo, hi, b0, b1;
};

__device__ __forceinline__ float sw_lds(uint32_t addr)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
    return v;
}

/* The first row of A's scales a stage's copy holds: the 4-aligned row at or before the tile's first, and no later
 * than the last 4 of the lda-long rows (a cluster's second tile may lie wholly past M). */
__device__ __forceinline__ int sw_scale_first(const sw_params &p, const sw_tile &tl)
{
    return min(tl.m0 & ~3, p.lda - 4);
}

/* Byte offset of row r's scale (and, 32 bytes on, row r + 8's) in a stage's copy, fixed per tile. Rows past M read
 * floats the copy did not write, from inside the copy: they reach only accumulators that are never stored. */
__device__ __forceinline__ uint32_t sw_scale_offset(const sw_params &p, const sw_tile &tl, int r)
{
    return 4u * (uint32_t)min(r - sw_scale_first(p, tl), SW_BM + 4 - 9);
}

/* The block scales of k-block kb from its stage's bulk-copied copy at `sc`, a_off = sw_scale_offset. A tile whose
 * columns end in its first B block reads that block's scale again as b1 (the producer copies it twice). */
__device__ __forceinline__ sw_block_scales sw_stage_scales(uint32_t sc, uint32_t a_off, int kb)
{
    sw_block_scales s;
    s.lo = sw_lds(sc + a_off);
    s.hi = sw_lds(sc + a_off + 32);
    s.b0 = sw_lds(sc + SW_SC_B0 + 4 * (kb & 3));
    s.b1 = sw_lds(sc + SW_SC_B1 + 4 * (kb & 3));
    return s;
}

/* The products of a k-block's scales a whole tile's promotion multiplies by, formed while its wgmma run: columns 0-63
 * take the first B block's scale, 128 on the second's, and 64-127 the second's when the tile's first column sits at
 * 64 of its B block (mid_second: FP8 tiles start at multiples of 128 or 192, so the second block starts at column
 * 64 or 128). */
struct sw_block_products {
    float lo0, hi0, lom, him, lo1, hi1;
};

__device__ __forceinline__ sw_block_products sw_products(const sw_block_scales &s, bool mid_second)
{
    const float bm = mid_second ? s.b1 : s.b0;
    return {s.lo * s.b0, s.hi * s.b0, s.lo * bm, s.hi * bm, s.lo * s.b1, s.hi * s.b1};
}

/* acc[OFF + i] += part[i] · its scale product, in one body (no branch per k-block). Register i of the m64nN
 * accumulator `part` holds row r (i%4 < 2) or r + 8 and column COL0 + 8·(i/4) + 2·(lane%4) + i%2 of the tile: COL0
 * and OFF place part in a wider accumulator (a 128×192 tile's right half: COL0 = 96 columns, OFF = 48 registers). */
template <int N, int COL0 = 0, int OFF = 0, int ACC>
__device__ __forceinline__ void sw_promote_block(float (&acc)[ACC], const float (&part)[N / 2],
                                                 const sw_block_products &q)
{
    static_assert(OFF + N / 2 <= ACC, "part lies inside acc");
#pragma unroll
    for (int i = 0; i < N / 2; i++) {
        const int col = COL0 + 8 * (i / 4);
        const float lo = col < 64    ? q.lo0
                         : col < 128 ? q.lom
                                     : q.lo1,
                    hi = col < 64    ? q.hi0
                         : col < 128 ? q.him
                                     : q.hi1;
        acc[OFF + i] = fmaf(part[i], (i & 2) ? hi : lo, acc[OFF + i]);
    }
}

/* acc[OFF + i] += part[i]: a tensor-scaled promotion (the one scale multiplies the finished tile), part of N columns
 * placed in a wider accumulator as in sw_promote_block. */
template <int N, int OFF = 0, int ACC>
__device__ __forceinline__ void sw_promote_add(float (&acc)[ACC], const float (&part)[N / 2])
{
    static_assert(OFF + N / 2 <= ACC, "part lies inside acc");
#pragma unroll
    for (int i = 0; i < N / 2; i++)
        acc[OFF + i] += part[i];
}

/* The e4m3 wgmma of width N. */
template <int N>
__device__ __forceinline__ void sw_wgmma_e4m3(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, int scale_d)
{
    if constexpr (N == 192)
        pl_wgmma_m64n192k32_e4m3(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 176)
        pl_wgmma_m64n176k32_e4m3(d, desc_a, desc_b, scale_d);
    else if constexpr (N == 128)
        pl_wgmma_m64n128k32_e4m3(d, desc_a, desc_b, scale_d);
    else
        pl_wgmma_m64n96k32_e4m3(d, desc_a, desc_b, scale_d);
}

/* Whether this consumer computes nothing of tile tl: its rows all past the group's end (skip_idle), or the tile
 * past N (the second of a pair side by side over an odd column count). */
__device__ __forceinline__ bool sw_idle(const sw_params &p, const sw_tile &tl, int consumer)
{
    return (p.skip_idle && tl.m0 + consumer * 64 >= tl.row_end) || tl.n0 >= p.o.n;
}

/* This thread's consumer warpgroup (0 or 1), broadcast from lane 0 of its warp. threadIdx.x / 128 is the same across a
 * warp, but ptxas cannot tell; broadcast, it knows, and keeps what derives from the index (the A rows' offset in a
 * stage, hence the wgmma descriptors) in uniform registers. As threadIdx.x / 128, the FP8 consumers rebuilt their
 * descriptors in ordinary registers and moved them over (R2UR) every k-block, and ptxas spilled around the
 * 128×192 mainloop (fp8_tensor 20 bytes of spill loads, its 2-CTA pairs 1828): none now (issue 14, session 19). */
__device__ __forceinline__ int sw_consumer_index()
{
    return __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
}

/* Arrivals a stage's "empty" barrier counts: one per consumer warp of every CTA of the cluster; with block scales,
 * whose copies in the stage every lane reads with ld.shared, one per consumer thread of this CTA (each orders its
 * own reads before the producer's next copy) and one per consumer warp of the peer. */
template <int SCALE, int CLUSTER> __host__ __device__ constexpr int sw_empty_count()
{
    return SCALE == SW_SCALE_BLOCK ? 256 + 8 * (CLUSTER - 1) : 8 * CLUSTER;
}

/* A consumer thread is done reading stage s (release_stage, or with block scales every lane's own arrival and lane
 * 0's for the peer CTA). */
template <int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_release(uint32_t empty, int s, int lane, uint32_t rank)
{
    if constexpr (SCALE == SW_SCALE_BLOCK) {
        mbar_arrive(empty + 8 * s);
        if (CLUSTER > 1 && lane == 0)
            mbar_arrive_cluster(empty + 8 * s, rank ^ 1u);
    } else {
        release_stage<CLUSTER>(empty, s, lane);
    }
}

/* An idle consumer's tile: pass its stages on as they land. */
template <int STAGES, int SCALE, int CLUSTER>
__device__ __forceinline__ void sw_pass_tile(const sw_params &p, uint32_t full, uint32_t empty, int lane, uint32_t rank,
                                             uint32_t &kcount)
{
    for (int kb = 0; kb < p.k_blocks; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
        sw_release<SCALE, CLUSTER>(empty, stage, lane, rank);
    }
}

/* Store this consumer's 64 rows of tile tl from acc (scaled). TMA stores clip at D's edges, not at a group's last
 * row, so a consumer whose rows cross it stores through shared memory and ordinary 16-byte stores that stop there
 * (epilogue_lines_m64). From registers, as before session 20, those stores cost grouped, grouped_c2 and the FP8
 * grouped kernels 2-5% of a whole launch at E = 64, where 58 of the 155 tile rows hold a crossing consumer. Where D
 * cannot take 16-byte rows (N % 8 != 0), everything goes from registers. A tile width BN that is not a multiple of
 * 64 ends in a narrower subtile stored through tma_tail (a dense map of that box; plain GEMMs only, whose tiles
 * never cross a group's end). */
template <int BN, bool GROUPED>
__device__ __forceinline__ void sw_store(const sw_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_tail,
                                         const sw_tile &tl, const float (&acc)[BN / 2], uint32_t bufs, int consumer)
{
    const int row0 = tl.m0 + consumer * 64;
    if (row0 >= tl.row_end || tl.n0 >= p.o.n)
        return;
    if (p.tma_store && (row0 + 64 <= tl.row_end || tl.row_end == p.o.m)) {
        epilogue_tma_m64<BN, SW_EPI_BUFFERS>(tma_d, acc, bufs, 0, 1 + consumer, row0, tl.n0, tma_tail);
        return;
    }
    if constexpr (GROUPED && BN % EPI_SUB == 0) {
        if (p.tma_store) {
            epilogue_lines_m64<BN>(p.o, acc, bufs, 1 + consumer, row0, tl.n0, tl.row_end - row0);
            return;
        }
    }
    pl_gemm_out o = p.o;
    o.m = tl.row_end;
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    pl_gemm_store_m64<BN>(o, acc, row0 + warp * 16 + (lane >> 2), tl.n0, false);
}

#include "gemm/sm90_ws_halves.cuh" /* needs the types and helpers above */

/* The consumer warpgroups: every tile's mainloop and its epilogue. FP8 promotes every PROMOTE k-blocks, or with
 * ACCS = SW_HALVES every k-block off the critical path (sw_mainloop_halves). */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
__device__ __forceinline__ void sw_consume(const sw_params &p, const CUtensorMap *tma_d, const CUtensorMap *tma_tail,
                                           uint32_t base, uint32_t epi, uint32_t full, uint32_t empty, uint32_t rank,
                                           int cluster, int clusters)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    regs_alloc<SW_CONSUMER_REGS>();
    const int consumer = sw_consumer_index();
    const int lane = threadIdx.x & 31;
    const uint32_t bufs = epi + consumer * SW_EPI_BUFFERS * EPI_SUB_BYTES;
    float acc[BN / 2];
    constexpr int PARTS = SCALE == SW_SCALE_NONE || ACCS == SW_HALVES ? 1 : BN / 2,
                  HALF_PARTS = ACCS == SW_HALVES ? BN / 4 : 1;
    constexpr int PARTS2 = ACCS == SW_TWO_PARTS ? BN / 2 : 1;
    float part[PARTS], part2[PARTS2], lo[HALF_PARTS], hi[HALF_PARTS];
#pragma unroll
    for (int i = 0; i < PARTS2; i++)
        part2[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < PARTS; i++)
        part[i] = 0.0f; /* the first wgmma of every k-block overwrites it (scale-d 0) */
#pragma unroll
    for (int i = 0; i < HALF_PARTS; i++)
        lo[i] = hi[i] = 0.0f;
    float tensor_scale = 1.0f;
    if (SCALE == SW_SCALE_TENSOR)
        tensor_scale = (p.scale_a ? __ldg(p.scale_a) : 1.0f) * (p.scale_b ? __ldg(p.scale_b) : 1.0f);
    if constexpr (ELEM == SW_E4M3 && (ACCS == SW_ONE_PART || ACCS == SW_TWO_PARTS)) {
        sw_consume_overlap<BN, SCALE, CLUSTER, PROMOTE, ACCS == SW_TWO_PARTS, GROUPED>(
            p, tma_d, tma_tail, acc, part, part2, tensor_scale, base, bufs, full, empty, rank, cluster, clusters);
    } else {                 /* bf16, or the FP8 halves */
        uint32_t kcount = 0; /* k-blocks consumed: the ring position */
        sw_walk w;
        w.init();
        sw_tile tl;
        for (int t = cluster; w.at<BN, CLUSTER>(p, t, rank, tl); t += clusters) {
            if (sw_idle(p, tl, consumer)) { /* padding: pass the stages on, compute nothing */
                sw_pass_tile<STAGES, SCALE, CLUSTER>(p, full, empty, lane, rank, kcount);
                continue;
            }
#pragma unroll
            for (int i = 0; i < BN / 2; i++)
                acc[i] = 0.0f;
            if constexpr (ACCS == SW_HALVES) {
                const sw_stage_at h = sw_stage_view<BN, SCALE>(p, tl, base, full, empty, consumer, lane, rank);
                sw_mainloop_halves<BN, SCALE, CLUSTER>(p, h, acc, lo, hi, kcount);
            } else {
                int held = -1; /* the stage whose wgmma group may still be reading it */
                for (int kb = 0; kb < p.k_blocks; kb++, kcount++) {
                    const int stage = (int)(kcount % STAGES);
                    const uint32_t st = sw_wait_stage<STAGES>(base, full, kcount, cfg::stage_bytes);
                    const uint64_t da0 = wgmma_desc_k128(st + consumer * 64 * SW_ROW_BYTES),
                                   db0 = wgmma_desc_k128(st + cfg::a_bytes);
                    wgmma_fence();
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        const uint64_t da = wgmma_desc_step(da0, j), db = wgmma_desc_step(db0, j);
                        if constexpr (BN == 256)
                            pl_wgmma_m64n256k16_bf16<0>(acc, da, db, 1);
                        else
                            pl_wgmma_m64n128k16_bf16<0>(acc, da, db, 1);
                    }
                    wgmma_commit();
                    wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
                    if (held >= 0)
                        release_stage<CLUSTER>(empty, held, lane);
                    held = stage;
                }
                wgmma_wait<0>();
                if (held >= 0)
                    release_stage<CLUSTER>(empty, held, lane);
                accumulators_fence(acc);
            }
            if constexpr (SCALE == SW_SCALE_TENSOR) {
#pragma unroll
                for (int i = 0; i < BN / 2; i++)
                    acc[i] *= tensor_scale;
            }
            sw_store<BN, GROUPED>(p, tma_d, tma_tail, tl, acc, bufs, consumer);
        }
    }
    if (p.tma_store && (threadIdx.x & 127) == 0)
        bulk_wait<0>(); /* the last stores are done before the shared memory they read goes away */
}

template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
__global__ void __launch_bounds__(SW_THREADS, 1)
    sw_gemm_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                   const __grid_constant__ CUtensorMap tma_d, const __grid_constant__ CUtensorMap tma_a_half,
                   const __grid_constant__ CUtensorMap tma_d_tail, const sw_params p)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    constexpr int STAGES = cfg::stages;
    constexpr int KE = ELEM == SW_E4M3 ? 128 : 64; /* elements of a k-block row */
    static_assert(ELEM == SW_E4M3 || SCALE == SW_SCALE_NONE, "bf16 takes no scales");
    static_assert(ELEM == SW_BF16 || BN == 128 || BN == 176 || BN == 192,
                  "FP8 tiles are 128, 176 or 192 wide (two accumulators)");
    static_assert(SCALE != SW_SCALE_BLOCK || BN % 64 == 0, "block scales: a tile spans at most two B blocks");
    static_assert(SCALE != SW_SCALE_BLOCK || PROMOTE == 1, "block scales change every k-block");
    static_assert(ACCS != SW_HALVES || (ELEM == SW_E4M3 && PROMOTE == 1 && BN == 192), "halves: the 128×192 FP8 tile");
    static_assert(ACCS != SW_TWO_PARTS || (ELEM == SW_E4M3 && PROMOTE == 1 && BN <= 128),
                  "two full-width parts and the total: 128-wide FP8 tiles at most");
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
    const uint32_t epi = base + STAGES * cfg::stage_bytes; /* 1024-aligned: the swizzle needs it */
    const uint32_t full = epi + cfg::epi_bytes, empty = full + 8 * STAGES;
    const uint32_t rank = CLUSTER > 1 ? cluster_cta_rank() : 0;
    const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    if constexpr (sw_reads_desc_lo0<ELEM, SCALE, ACCS>())
        if (threadIdx.x == 0 && wgmma_desc_k128_lo(base) != p.desc_lo0)
            __trap(); /* the host's idea of where the dynamic shared memory starts is wrong: never compute with it */

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full + 8 * s, 1); /* the producer's arrive; TMA bytes complete it */
            mbar_init(empty + 8 * s, sw_empty_count<SCALE, CLUSTER>());
        }
        mbar_fence_init();
    }
    if (CLUSTER > 1)
        cluster_sync_relaxed(); /* the peer's barriers exist before anything is multicast into or arrived on here
                                 * (the inits released by fence.mbarrier_init) */
    else
        __syncthreads();

    if (threadIdx.x >= SW_PRODUCER) {
        regs_dealloc<SW_PRODUCER_REGS>();
        if (threadIdx.x == SW_PRODUCER) {
            tma_prefetch_descriptor(&tma_a);
            tma_prefetch_descriptor(&tma_b);
            if (CLUSTER == 2 && p.offsets)
                tma_prefetch_descriptor(&tma_a_half);
            int stage = 0;
            uint32_t phase = 0;
            sw_walk w;
            w.init();
            sw_tile tl;
            for (int t = cluster; w.at<BN, CLUSTER>(p, t, rank, tl); t += clusters)
                for (int kb = 0; kb < p.k_blocks; kb++) {
                    mbar_wait(empty + 8 * stage, phase ^ 1);
                    const uint32_t st = base + stage * cfg::stage_bytes, bar = full + 8 * stage;
                    /* boxes count whole, zero-filled parts too; clustered, half of B comes from the peer */
                    if constexpr (cfg::scale_bytes > 0) { /* the k-block's block scales ride along (bulk copies) */
                        /* a pair's tile past N (a_pair) reads its last B block's scales: in bounds, never used */
                        const int first = sw_scale_first(p, tl), nb = min(tl.n0 / 128, p.nblocks - 1);
                        const uint32_t a_sc = 4u * (uint32_t)min(SW_BM + 4, p.lda - first); /* lda % 4 == 0 */
                        const uint32_t sc = full + cfg::barrier_bytes + stage * SW_SC_STAGE;
                        const float *sb = p.scale_b + ((size_t)tl.group * p.nblocks + nb) * p.ldb + (kb & ~3);
                        mbar_arrive_expect_tx(bar, cfg::stage_bytes + a_sc + 32);
                        bulk_load_1d(sc, p.scale_a + (size_t)kb * p.lda + first, a_sc, bar);
                        bulk_load_1d(sc + SW_SC_B0, sb, 16, bar);
                        bulk_load_1d(sc + SW_SC_B1, nb + 1 < p.nblocks ? sb + p.ldb : sb, 16, bar);
                    } else {
                        mbar_arrive_expect_tx(bar, cfg::stage_bytes);
                    }
                    if (CLUSTER == 1) {
                        tma_load_2d(st, &tma_a, bar, kb * KE, tl.m0);
                        tma_load_2d(st + cfg::a_bytes, &tma_b, bar, kb * KE, tl.b_row);
                    } else if (!tl.a_pair) { /* A whole, half of B from each CTA into both */
                        tma_load_2d(st, &tma_a, bar, kb * KE, tl.m0);
                        tma_load_2d_multicast(st + cfg::a_bytes + rank * (cfg::b_bytes / CLUSTER), &tma_b, bar, kb * KE,
                                              tl.b_row + (int)rank * (BN / CLUSTER), (uint16_t)((1u << CLUSTER) - 1));
                    } else { /* side by side: half of A from each CTA into both, B whole (two half boxes) */
                        tma_load_2d_multicast(st + rank * (cfg::a_bytes / 2), &tma_a_half, bar, kb * KE,
                                              tl.m0 + (int)rank * (SW_BM / 2), (uint16_t)3);
                        tma_load_2d(st + cfg::a_bytes, &tma_b, bar, kb * KE, tl.b_row);
                        tma_load_2d(st + cfg::a_bytes + cfg::b_bytes / 2, &tma_b, bar, kb * KE, tl.b_row + BN / 2);
                    }
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
        }
    } else {
        sw_consume<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(p, &tma_d, &tma_d_tail, base, epi, full, empty,
                                                                     rank, cluster, clusters);
    }
    if (CLUSTER > 1)
        cluster_sync(); /* the peer may still arrive on this CTA's barriers: stay until it is done */
}

/* The scale fields of p for A of `rows` rows, N and K (the layouts of gemm/fp8.h), and D's row count and width. */
static inline void sw_set_out_and_scales(sw_params &p, uint16_t *d, int rows, int n, int k, const float *scale_a,
                                         const float *scale_b)
{
    p.o.d = d;
    p.o.m = rows;
    p.o.n = n;
    p.scale_a = scale_a;
    p.scale_b = scale_b;
    p.lda = pl_fp8_scale_a_ld(rows);
    p.ldb = pl_fp8_scale_b_ld(k);
    p.nblocks = pl_fp8_kblocks(n);
}

/* D's tensor map when D can go through TMA (N % 8 == 0, D 16-byte aligned); *tma_store says whether it can. */
static inline void sw_store_map(CUtensorMap *td, uint16_t *d, int rows, int n, int *tma_store)
{
    *tma_store = rows > 0 && n % 8 == 0 && (uintptr_t)d % 16 == 0 &&
                 pl_tensor_map_bf16(td, d, (uint64_t)rows, (uint64_t)n, EPI_SUB, EPI_SUB) == cudaSuccess;
}

/* Clusters of the kernel the GPU holds at once (the GPCs decide, not only the SM count), cached per device. */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
static int sw_max_clusters(int device, int sms)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    static int cached[64];
    if (CLUSTER == 1)
        return sms;
    return max_active_clusters_cached(cached,
                                      (const void *)sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>,
                                      SW_THREADS, cfg::smem_bytes, CLUSTER, device, sms);
}

/* sw_params.desc_lo0 for the kernel on `device`: its dynamic shared memory starts after the reserved shared memory
 * (cudaDevAttrReservedSharedMemoryPerBlock, 1 KB on sm_90) and its static shared memory, rounded up to 1024 as the
 * kernel rounds it. Cached per device. */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE, int ACCS, bool GROUPED>
static cudaError_t sw_desc_lo0(int device, uint32_t *lo0)
{
    static uint32_t cached[64];
    if (device >= 0 && device < 64 && cached[device]) {
        *lo0 = cached[device];
        return cudaSuccess;
    }
    int reserved = 0;
    cudaFuncAttributes fa;
    cudaError_t e = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device);
    if (e == cudaSuccess)
        e = cudaFuncGetAttributes(&fa, sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>);
    if (e != cudaSuccess)
        return e;
    *lo0 = wgmma_desc_k128_lo(((uint32_t)reserved + (uint32_t)fa.sharedSizeBytes + 1023u) & ~1023u);
    if (device >= 0 && device < 64)
        cached[device] = *lo0;
    return cudaSuccess;
}

/* Launch persistent CTAs of the kernel for (BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS): one per SM (whole clusters),
 * no more than max_tiles work units (tiles, or cluster tiles) ask for. GROUPED: the grouped launches' instantiation,
 * the only one with sw_store's path for a group's crossing rows (in the plain FP8 GEMM's kernels, which never take it,
 * its registers alone made ptxas spill: fp8_tensor 0 -> 16 bytes). */
template <int BN, int ELEM, int SCALE, int CLUSTER, int PROMOTE = 1, int ACCS = SW_ONE_PART, bool GROUPED = false>
static cudaError_t sw_launch(const CUtensorMap &ta, const CUtensorMap &tb, const CUtensorMap &td, const sw_params &p,
                             long long max_tiles, cudaStream_t stream, const CUtensorMap *ta_half = NULL,
                             const CUtensorMap *td_tail = NULL)
{
    typedef sw_config<BN, SCALE == SW_SCALE_BLOCK> cfg;
    static_assert(cfg::stages >= 3, "too few stages");
    static_assert(cfg::smem_bytes <= SW_SMEM_LIMIT, "shared memory over the limit");
    int device = 0, sms = 0;
    cudaError_t e = kernel_launch_prepare(
        (const void *)sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>, cfg::smem_bytes, &device, &sms);
    if (e != cudaSuccess)
        return e;
    sw_params q = p;
    if constexpr (sw_reads_desc_lo0<ELEM, SCALE, ACCS>()) {
        e = sw_desc_lo0<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(device, &q.desc_lo0);
        if (e != cudaSuccess)
            return e;
    }
    long long clusters = sw_max_clusters<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>(device, sms);
    if (clusters > max_tiles)
        clusters = max_tiles < 1 ? 1 : max_tiles;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t lc =
        cluster_launch_config((unsigned)(clusters * CLUSTER), SW_THREADS, cfg::smem_bytes, CLUSTER, stream, &attr);
    if (CLUSTER == 1)
        lc.numAttrs = 0; /* a plain launch */
    e = cudaLaunchKernelEx(&lc, sw_gemm_kernel<BN, ELEM, SCALE, CLUSTER, PROMOTE, ACCS, GROUPED>, ta, tb, td,
                           ta_half ? *ta_half : ta, td_tail ? *td_tail : td, q);
    return e != cudaSuccess ? e : cudaGetLastError();
}

#endif
