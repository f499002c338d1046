/* The pieces of the FP8 and grouped warp-specialized kernel (sm90_ws_scaled.cuh) that its mainloops
 * (sm90_ws_mainloops.cuh) and its consumer share: the tile shapes and stage layout (sw_config), the kernel's
 * parameters (sw_params), the tile walk over plain and grouped problems (sw_walk), the block scales' reads and the
 * promotion of a k-block's accumulator into fp32, the stage release, and the epilogue's store. sm_90a only. */
#ifndef PERFLAB_GEMM_DEVICE_SM90_WS_PARTS_CUH
#define PERFLAB_GEMM_DEVICE_SM90_WS_PARTS_CUH

#include "gemm/device/epilogue.cuh"
#include "gemm/fp8.h"
#include "common/sm90_common.cuh"
#include "gemm/device/tile_scheduler.cuh"
#include "gemm/device/sm90_epilogue.cuh"
#include "gemm/device/sm90_wgmma_fp8_ops.cuh"
#include "gemm/host/tensor_map.h"

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
 * 128×192 mainloop (fp8_tensor 20 bytes of spill loads, its 2-CTA pairs 1828): none with the broadcast (ptxas,
 * 2026-11-27). */
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
 * (epilogue_lines_m64). From registers, those stores cost grouped, grouped_c2 and the FP8
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

#endif
