/* Paged decode, version 5 — balanced_pages: whole token rows of every kv head in one CTA, one warp per kv head, on
 * the balanced (stream-K) persistent grid; version 6 — rows_deep: the same in two CTAs an SM, early refill.
 *
 * The page layout, [page][token][kv head][head_dim] (NHD), puts a token's K rows of all kv heads side by side: 2 KB
 * per token at 8 kv heads × 128 dims, a whole page (16 tokens) 32 KB in one piece. The kernels before this one
 * give each kv head its own CTAs, so each reads 256 bytes out of every 2 KB, and the eight heads' CTAs pass over
 * the same stretch at eight different times; the hypothesis tested here is that the DRAM, seeing 256-byte pieces
 * scattered over the whole cache instead of a stream, is what holds them below cuDNN's decode, which reads a
 * contiguous [batch][kv head][seq][dim] cache, each CTA one 2 MB stream.
 *
 * Here a CTA of eight warps computes a block of up to eight kv heads (the largest divisor of kv_heads up to 8;
 * all of them at the decode shape) together: each stage is 16 tokens × all the block's heads, K then V — at page
 * size 16 exactly one K page and one V page, two contiguous 32 KB reads — copied with 16-byte cp.async (chunks
 * XOR-swizzled within each head's 256-byte row, so that ldmatrix does not conflict), three stages deep. Warp w
 * computes kv head w of the block over the stage's 16 tokens with split_kv_mma's tensor-core step (the GQA group
 * as the rows of mma.sync m16n8k16) and keeps its head's state across the whole of the CTA's range: no merge of
 * warps, each warp writes its own heads' results. The work is cut as in balanced_mma: the (head block, sequence)
 * pairs' 16-token tiles end to end, CTA c of C (the CTAs the GPU holds at once) taking [c·T/C, (c+1)·T/C), a
 * combine kernel for the pairs a range boundary cuts.
 *
 * The loader: a thread keeps one head and 16-byte chunk of the token row for the whole stage and steps the token's
 * page by increments (a full block; the general loop with three divisions per copy is kept for blocks smaller
 * than the warps). With that general loop on every copy (~70 instructions per 16 bytes) this variant measured
 * 2.97 TB/s; with the stepping loader, 4.28-4.30 TB/s (H200, 2026-11-23, commit 0d4f56f: 0.500-0.503 ms at the
 * decode shape, 0.96× cuDNN), above the device-to-device copy, while the per-head balanced_mma stays at 3.89.
 *
 * rows_deep is the same kernel in CTAs of four warps (two CTAs an SM, blocks of up to four kv heads: 1 KB of each
 * token row) or of eight, with an early refill: each stage is refilled as soon as the warps are done with it,
 * before the wait for the next tile (three stages in flight instead of two), at the cost of a second barrier per
 * tile.
 *
 * rows_deep_fp8 is rows_deep (four warps, early refill) over an FP8 cache (attention/kv_fp8.h): each stage holds the
 * block's e4m3 token rows (512 B a token at 4 kv heads × 128) and the rows' float scales, four stages deep (a stage
 * is half a bf16 stage's bytes, so one more keeps as many bytes in flight, within two CTAs an SM); each warp converts
 * its head's 16 K and V rows into a bf16 tile of its own (times each row's scale: exact) and runs the bf16 tile step
 * on it unchanged. The prediction: K and V at half the bytes, so about half of rows_deep's time at the decode shape
 * if the conversion (about 30 instructions a lane per 8 elements) stays under the memory time. Measured (H200,
 * 2026-11-28): 0.479 ms against rows_deep's 0.385, bound by the shared-memory round trip of the bf16 tile.
 *
 * rows_frag_fp8 is rows_deep_fp8's schedule and stages with the fragment step of decode_fp8_frag.cuh instead of the
 * tile: no bf16 tile, each byte of a stage read from shared memory once by a conflict-free 16-byte load (the stage's
 * chunks XORed by df_frag_swz instead of unswizzled; the scales stored in the lanes' order) and converted in
 * registers into f16 mma operands (not yet run on a GPU; docs/perf/attention.md has the counts and the
 * prediction). */
#include <math.h>

#include "attention/attention.h"
#include "attention/decode_balanced.cuh"
#include "attention/decode_fp8_frag.cuh"
#include "attention/decode_fp8_tile.cuh"
#include "attention/decode_mma_tile.cuh"

#define DP_WARPS      8  /* balanced_pages: warps a CTA, the most kv heads a block holds */
#define DR_WARPS      4  /* rows_deep's default: the same with four, two CTAs an SM */
#define DP_TILE       16 /* tokens per stage */
#define DP_STAGES     3
#define DP_FP8_STAGES 4 /* rows_deep_fp8: stages of half the bytes, one more of them in flight */

/* The cache and how a warp computes on it: bf16 rows (balanced_pages, rows_deep); e4m3 rows converted into a bf16
 * tile (rows_deep_fp8, decode_fp8_tile.cuh); e4m3 rows converted in the mma fragments (rows_frag_fp8,
 * decode_fp8_frag.cuh). */
enum { DP_BF16 = 0, DP_FP8_TILE = 1, DP_FP8_FRAG = 2 };

/* A CTA's shared memory: `stages` stages of the block's token rows (K, then V; FP8: e4m3 rows and then their
 * scales, 16·NW floats of K and of V), and (FP8_TILE) each warp's bf16 K and V tiles converted from its head's rows.
 * FP8_FRAG keeps FP8_TILE's four stages, so that the two differ in the conversion alone. */
template <int D, int NW, int KV = DP_BF16> struct dp_smem {
    static constexpr int elem = KV != DP_BF16 ? 1 : 2;
    static constexpr int stages = KV != DP_BF16 ? DP_FP8_STAGES : DP_STAGES;
    static constexpr int row_bytes = NW * D * elem; /* one token's rows of the block's heads */
    static constexpr int kv_bytes = DP_TILE * row_bytes;
    static constexpr int scale_bytes = KV != DP_BF16 ? 2 * DP_TILE * NW * 4 : 0;
    static constexpr int stage_bytes = 2 * kv_bytes + scale_bytes;
    static constexpr int conv_warp_bytes = KV == DP_FP8_TILE ? 2 * DP_TILE * D * 2 : 0; /* a warp's bf16 K and V */
    static constexpr int bytes = stages * stage_bytes + NW * conv_warp_bytes;
};

/* A warp's state: the bf16 step's, or the fragment step's (outputs in a running unit). */
template <int D, int KV> struct dp_state {
    typedef dm_state<D> t;
};
template <int D> struct dp_state<D, DP_FP8_FRAG> {
    typedef df_state<D> t;
};

/* A cache element: bf16 bits, or (FP8) an e4m3 byte. */
template <bool FP8> struct dp_elem {
    typedef uint16_t t;
};
template <> struct dp_elem<true> {
    typedef uint8_t t;
};

/* Byte offset in a stage of 16-byte chunk ch of head h's row of token tok (a row of rs bytes holding the block's
 * heads): bf16, each head's chunks XOR-swizzled by the token (dm_swz, for ldmatrix); FP8_TILE as they are (the
 * conversion reads them); FP8_FRAG the row's chunks XORed by df_frag_swz (the fragment step's loads). */
template <int D, int KV> __device__ __forceinline__ uint32_t dp_chunk_at(int tok, int h, int ch, int rs)
{
    constexpr int CPH = KV != DP_BF16 ? D / 16 : D / 8; /* chunks a head row */
    if (KV == DP_BF16)
        return (uint32_t)(h * D * 2) + dm_swz(tok, ch, rs);
    if (KV == DP_FP8_TILE)
        return (uint32_t)(h * D + tok * rs + ch * 16);
    return (uint32_t)(tok * rs + (((h * CPH + ch) ^ df_frag_swz<D>(tok)) << 4));
}

/* The K (v = 0) or V pool of p as elements of the cache's type. */
template <bool FP8>
__device__ __forceinline__ const typename dp_elem<FP8>::t *dp_pool(const pl_decode_problem &p, int v)
{
    const void *pool = FP8 ? (v ? (const void *)p.v_fp8 : (const void *)p.k_fp8)
                           : (v ? (const void *)p.v_cache : (const void *)p.k_cache);
    return (const typename dp_elem<FP8>::t *)pool;
}

/* Stage of tokens [t0, t0 + 16) of a sequence of `len` tokens, the heads of block blk: K and V, zeros past len
 * (FP8: the e4m3 rows, placed by dp_chunk_at, and their scales). The pools are indexed in elements of the cache's type,
 * so the bf16 instantiation is the code rows_deep had before the FP8 cache (the same machine code). */
template <int D, bool EF, int NW, int KV = DP_BF16>
__device__ __forceinline__ void dp_load_tile(uint32_t stage, const dp_args &a, const int *table, int blk, int t0,
                                             int len, uint64_t policy)
{
    constexpr bool FP8 = KV != DP_BF16;
    typedef dp_smem<D, NW, KV> sm;
    typedef typename dp_elem<FP8>::t elem;
    constexpr int EPC = 16 / (int)sizeof(elem), CPH = D / EPC; /* elements a 16-byte chunk, chunks a head row */
    const pl_decode_problem &p = a.p;
    if (FP8)
        df_load_scales<KV == DP_FP8_FRAG>(stage + 2 * sm::kv_bytes, NW, p, table, blk * a.w.hb, a.w.hb, t0, len);
    if (a.w.hb == NW) { /* a full block: each thread keeps its head and chunk, the token's page by increments */
        constexpr int CPT = NW * CPH, TPP = NW * 32 / CPT; /* chunks per token, tokens per pass (< any page) */
        const int tok0 = threadIdx.x / CPT, rem = threadIdx.x % CPT, ch = rem % CPH;
        const long long col = (long long)(blk * NW + rem / CPH) * D + ch * EPC;
        int t = t0 + tok0, pg = t / p.page_size, off = t - pg * p.page_size;
#pragma unroll
        for (int i = 0; i < DP_TILE / TPP; i++) {
            const int tok = tok0 + i * TPP;
            const elem *ks = dp_pool<FP8>(p, 0), *vs = dp_pool<FP8>(p, 1);
            if (t < len) {
                const long long row = ((long long)table[pg] * p.page_size + off) * p.kv_heads;
                ks += row * D + col;
                vs += row * D + col;
            }
            const uint32_t dst = stage + dp_chunk_at<D, KV>(tok, rem / CPH, ch, sm::row_bytes);
            dm_cp_async16<EF>(dst, ks, t < len ? 16 : 0, policy);
            dm_cp_async16<EF>(dst + sm::kv_bytes, vs, t < len ? 16 : 0, policy);
            t += TPP;
            off += TPP;
            if (off >= p.page_size) {
                off -= p.page_size;
                pg++;
            }
        }
        return;
    }
    const int cpt = a.w.hb * CPH, n = DP_TILE * cpt;
    for (int q = threadIdx.x; q < n; q += NW * 32) {
        const int tok = q / cpt, rem = q - tok * cpt, h = rem / CPH, ch = rem % CPH, t = t0 + tok;
        const elem *ks = dp_pool<FP8>(p, 0), *vs = dp_pool<FP8>(p, 1);
        if (t < len) {
            const long long row =
                ((long long)table[t / p.page_size] * p.page_size + t % p.page_size) * p.kv_heads + blk * a.w.hb + h;
            ks += row * D + ch * EPC;
            vs += row * D + ch * EPC;
        }
        const uint32_t dst = stage + dp_chunk_at<D, KV>(tok, h, ch, sm::row_bytes);
        dm_cp_async16<EF>(dst, ks, t < len ? 16 : 0, policy);
        dm_cp_async16<EF>(dst + sm::kv_bytes, vs, t < len ? 16 : 0, policy);
    }
}

/* Warp `warp`'s step on the stage's 16 tokens of its head: the bf16 rows as they are, or (FP8_TILE) its head's e4m3
 * rows converted into the warp's own bf16 tiles first. */
template <int D, int NW, int KV>
__device__ __forceinline__ void dp_stage_step(dm_state<D> &st, const uint32_t (&qa)[D / 16][4], uint32_t stage,
                                              uint32_t conv, const db_cursor &cc, float scale_log2, int warp)
{
    typedef dp_smem<D, NW, KV> sm;
    if (KV == DP_BF16) {
        const uint32_t kb = stage + warp * D * 2;
        dm_rows_step<D>(st, qa, kb, kb + sm::kv_bytes, sm::row_bytes, cc.tile * DP_TILE, cc.len, scale_log2);
        return;
    }
    const uint32_t mine = conv + warp * sm::conv_warp_bytes;
    df_convert_rows<D>(stage + warp * D, sm::row_bytes, sm::kv_bytes, stage + 2 * sm::kv_bytes, NW, warp, mine);
    dm_rows_step<D>(st, qa, mine, mine + DP_TILE * D * 2, D * 2, cc.tile * DP_TILE, cc.len, scale_log2);
}

/* (FP8_FRAG) the same on the e4m3 rows themselves, converted in the mma fragments. */
template <int D, int NW, int KV>
__device__ __forceinline__ void dp_stage_step(df_state<D> &st, const uint32_t (&qa)[D / 16][4], uint32_t stage,
                                              uint32_t, const db_cursor &cc, float, int warp)
{
    typedef dp_smem<D, NW, KV> sm;
    df_frag_step<D>(st, qa, stage, stage + sm::kv_bytes, stage + 2 * sm::kv_bytes, NW, warp, sm::row_bytes,
                    cc.tile * DP_TILE, cc.len);
}

/* NW warps a CTA (8: one CTA an SM; 4: two). EARLY (rows_deep): each stage's refill is
 * issued as soon as every warp is done with it, before the wait for the next tile (three tiles in flight while
 * the CTA waits, not two), at the cost of a second barrier per tile. KV: the cache and the step (FP8_TILE:
 * rows_deep_fp8, FP8_FRAG: rows_frag_fp8; e4m3 rows and their scales, four stages; dp_stage_step). */
template <int D, bool EF, int NW, bool EARLY, int KV = DP_BF16>
__global__ void __launch_bounds__(NW * 32, 8 / NW) decode_balanced_pages_kernel(const dp_args a)
{
    typedef dp_smem<D, NW, KV> sm;
    constexpr int STAGES = sm::stages;
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ db_scan_smem scan_sm;
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem), conv = sbase + STAGES * sm::stage_bytes;
    const pl_decode_problem &p = a.p;
    const int c = blockIdx.x, warp = threadIdx.x >> 5;
    long long lo, hi, total;
    db_cursor cc, ld; /* the computation's position (h: the head block) and the loads' */
    if (!db_find_start<NW * 32, DP_TILE>(p, a.w.blocks, a.ctas, &scan_sm, &lo, &hi, &total, &cc)) {
        db_mark_empty(a.w, c);
        return;
    }
    ld = cc;
    const int count = (int)(hi - lo);
    const uint64_t policy = EF ? dm_policy_evict_first() : 0;
    const int active = warp < a.w.hb; /* this warp has a kv head */

    constexpr int PRE = EARLY ? STAGES : STAGES - 1; /* tiles loaded before the loop */
#pragma unroll
    for (int s = 0; s < PRE; s++) {
        if (s < count) {
            dp_load_tile<D, EF, NW, KV>(sbase + s * sm::stage_bytes, a, p.block_table + (long long)ld.b * p.max_pages,
                                        ld.h, ld.tile * DP_TILE, ld.len, policy);
            db_advance<DP_TILE>(ld, p);
        }
        cp_async_commit();
    }

    uint32_t qa[D / 16][4];
    typename dp_state<D, KV>::t st;
    int seg_first = 0; /* the index (from lo) of the current pair's first tile in this range */
    for (int i = 0; i < count; i++) {
        cp_async_wait<PRE - 1>();
        __syncthreads(); /* tile i visible; (not EARLY) every warp is done with the stage refilled next */
        if (!EARLY) {
            if (i + STAGES - 1 < count) {
                dp_load_tile<D, EF, NW, KV>(sbase + ((i + STAGES - 1) % STAGES) * sm::stage_bytes, a,
                                            p.block_table + (long long)ld.b * p.max_pages, ld.h, ld.tile * DP_TILE,
                                            ld.len, policy);
                db_advance<DP_TILE>(ld, p);
            }
            cp_async_commit();
        }
        dp_pair_begin<D>(a, cc, i, lo, total, active, qa, st, seg_first);
        if (active)
            dp_stage_step<D, NW, KV>(st, qa, sbase + (i % STAGES) * sm::stage_bytes, conv, cc, a.scale_log2, warp);
        dp_pair_end<D>(a, cc, i, count, seg_first, active, st);
        db_advance<DP_TILE>(cc, p);
        if (EARLY) {
            __syncthreads(); /* every warp is done with tile i's stage: refill it with tile i + STAGES */
            if (i + STAGES < count) {
                dp_load_tile<D, EF, NW, KV>(sbase + (i % STAGES) * sm::stage_bytes, a,
                                            p.block_table + (long long)ld.b * p.max_pages, ld.h, ld.tile * DP_TILE,
                                            ld.len, policy);
                db_advance<DP_TILE>(ld, p);
            }
            cp_async_commit();
        }
    }
    cp_async_wait<0>();
}

template <int NW, bool EARLY, int KV = DP_BF16> static int pages_ctas(const pl_decode_problem *p, int sm_count)
{
    const int per_sm = p->head_dim == 64 ? db_ctas_per_sm(decode_balanced_pages_kernel<64, false, NW, EARLY, KV>,
                                                          NW * 32, dp_smem<64, NW, KV>::bytes)
                                         : db_ctas_per_sm(decode_balanced_pages_kernel<128, false, NW, EARLY, KV>,
                                                          NW * 32, dp_smem<128, NW, KV>::bytes);
    return db_grid(per_sm, sm_count, p->kv_heads / dp_heads_per_block(p->kv_heads, NW));
}

extern "C" int pl_decode_pages_ctas(const pl_decode_problem *p, int sm_count)
{
    return pages_ctas<DP_WARPS, false>(p, sm_count);
}

extern "C" int pl_decode_rows_ctas(const pl_decode_problem *p, int warps, int sm_count)
{
    return warps == DP_WARPS ? pages_ctas<DP_WARPS, true>(p, sm_count) : pages_ctas<DR_WARPS, true>(p, sm_count);
}

extern "C" int pl_decode_rows_fp8_ctas(const pl_decode_problem *p, int sm_count)
{
    return pages_ctas<DR_WARPS, true, DP_FP8_TILE>(p, sm_count);
}

extern "C" int pl_decode_rows_frag_fp8_ctas(const pl_decode_problem *p, int sm_count)
{
    return pages_ctas<DR_WARPS, true, DP_FP8_FRAG>(p, sm_count);
}

extern "C" size_t pl_decode_pages_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    return db_workspace_bytes(p, ctas, DP_WARPS);
}

extern "C" size_t pl_decode_rows_workspace_bytes(const pl_decode_problem *p, int warps, int ctas)
{
    return db_workspace_bytes(p, ctas, warps == DP_WARPS ? DP_WARPS : DR_WARPS);
}

extern "C" size_t pl_decode_rows_fp8_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    return db_workspace_bytes(p, ctas, DR_WARPS);
}

extern "C" size_t pl_decode_rows_frag_fp8_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    return pl_decode_rows_fp8_workspace_bytes(p, ctas);
}

template <int D, bool EF, int NW, bool EARLY, int KV>
static cudaError_t launch_pages(const dp_args &a, cudaStream_t stream)
{
    return db_launch<D>(decode_balanced_pages_kernel<D, EF, NW, EARLY, KV>, a, a.ctas, NW * 32,
                        dp_smem<D, NW, KV>::bytes, a.p, a.group, a.w, stream);
}

/* NW = 8 without EARLY: balanced_pages; rows_deep: NW = 4 or 8, with the early refill; FP8_TILE: rows_deep_fp8,
 * FP8_FRAG: rows_frag_fp8 (NW = 4, EARLY), an FP8 cache. */
template <int NW, bool EARLY, int KV = DP_BF16>
static cudaError_t pages_run(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                             cudaStream_t stream)
{
    char why[160];
    const int valid = KV != DP_BF16 ? pl_decode_problem_valid_any(p, why, sizeof why) && p->kv_dtype == PL_KV_FP8_E4M3
                                    : pl_decode_problem_valid(p, why, sizeof why);
    if (!valid || ctas < 1 || !workspace || ((uintptr_t)workspace & 255u) != 0)
        return cudaErrorInvalidValue;
    dp_args a;
    a.p = *p;
    a.group = p->heads / p->kv_heads;
    a.ctas = ctas;
    a.scale_log2 = p->scale * PL_ATTN_LOG2E;
    a.w = db_carve(workspace, p, ctas, NW, dp_heads_per_block(p->kv_heads, NW));
    if (p->head_dim == 64)
        return evict_first ? launch_pages<64, true, NW, EARLY, KV>(a, stream)
                           : launch_pages<64, false, NW, EARLY, KV>(a, stream);
    return evict_first ? launch_pages<128, true, NW, EARLY, KV>(a, stream)
                       : launch_pages<128, false, NW, EARLY, KV>(a, stream);
}

extern "C" cudaError_t pl_decode_balanced_pages(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                                cudaStream_t stream)
{
    return pages_run<DP_WARPS, false>(p, ctas, evict_first, workspace, stream);
}

extern "C" cudaError_t pl_decode_rows_deep(const pl_decode_problem *p, int warps, int ctas, int evict_first,
                                           void *workspace, cudaStream_t stream)
{
    if (warps != DR_WARPS && warps != DP_WARPS)
        return cudaErrorInvalidValue;
    return warps == DP_WARPS ? pages_run<DP_WARPS, true>(p, ctas, evict_first, workspace, stream)
                             : pages_run<DR_WARPS, true>(p, ctas, evict_first, workspace, stream);
}

extern "C" cudaError_t pl_decode_rows_deep_fp8(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                               cudaStream_t stream)
{
    return pages_run<DR_WARPS, true, DP_FP8_TILE>(p, ctas, evict_first, workspace, stream);
}

extern "C" cudaError_t pl_decode_rows_frag_fp8(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                               cudaStream_t stream)
{
    return pages_run<DR_WARPS, true, DP_FP8_FRAG>(p, ctas, evict_first, workspace, stream);
}
