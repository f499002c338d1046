/* Paged decode, version 7 — rows_bulk: rows_deep's schedule with its K/V rows brought in by bulk copies (the TMA
 * engine's cp.async.bulk, completing on an mbarrier) instead of 16-byte cp.async.
 *
 * rows_deep (decode_balanced_pages.cu with four warps) gives a CTA a block of up to four kv heads, a warp each,
 * and a stage of 16 tokens: 16 × 1 KB of K and of V at head_dim 128 — two thousand 16-byte cp.async a stage, each
 * with its address arithmetic, issued by every thread between the barrier that frees a stage and the next wait.
 * Here one warp issues the whole stage: lane t copies token t's K row and V row of the block (hb · head_dim · 2
 * contiguous bytes each, one bulk copy apiece, 32 copies a stage) and lane 0 tells the stage's mbarrier how many
 * bytes to expect; the copies go from L2 to shared memory without a register, an L1 request or an instruction per
 * 16 bytes. A bulk copy cannot swizzle, so each token's row sits 16 bytes past a multiple of 128 from the last
 * (rows of 4·256 + 16 bytes): eight tokens' same 16-byte chunk fall in eight banks, and the tensor-core step reads
 * them with plain offsets (dm_rows_step<D, true>).
 *
 * Tokens past a sequence's end are not copied: their K scores are masked to -inf and their P is 0, and their V
 * rows hold what an earlier stage left there (a real token's V: finite) or the zeros written when the CTA starts,
 * so 0 · V adds nothing. Every stage is refilled as soon as the four warps are done with it (rows_deep's early
 * refill): three stages, 97 KB a CTA, two CTAs an SM, all six stages in flight while the warps wait.
 *
 * Measured (H200, 2026-11-23, commit 0d4f56f): 4.02-4.04 TB/s at the decode shape, 4% slower than rows_deep (4.16-4.20), with
 * 19% of the SM's issue busy against rows_deep's 46%: the instructions saved were not the limit, and one warp's 32
 * bulk copies a stage, each behind its page lookup, keep fewer bytes in flight early in a stage than 128 threads'
 * cp.async do. It stays as the lesson's negative result. */
#include <math.h>

#include "attention/attention.h"
#include "attention/decode_balanced.cuh"
#include "attention/decode_mma_tile.cuh"
#include "common/sm90_ptx.cuh"

#define RB_WARPS  4
#define RB_TILE   16 /* tokens per stage, one per lane of the issuing warp's first half */
#define RB_STAGES 3

template <int D> struct rb_smem {
    static constexpr int row_bytes = RB_WARPS * D * 2 + 16; /* a token's rows of the block's heads, padded */
    static constexpr int kv_bytes = RB_TILE * row_bytes;
    static constexpr int stage_bytes = 2 * kv_bytes; /* K, then V */
    static constexpr int bytes = RB_STAGES * stage_bytes;
};

/* cp.async.bulk global -> shared, completing on `bar`, with (EF) the L2 evict-first `policy`. */
template <bool EF>
__device__ __forceinline__ void rb_bulk(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar, uint64_t policy)
{
    if (EF)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
                     "[%3], %4;\n" ::"r"(dst),
                     "l"((uint64_t)src), "r"(bytes), "r"(bar), "l"(policy)
                     : "memory");
    else
        bulk_load_1d(dst, src, bytes, bar);
}

/* Warp 0: the stage of tokens [t0, t0 + 16) of a sequence of `len` tokens, head block blk, onto mbarrier `bar`. */
template <int D, bool EF>
__device__ __forceinline__ void rb_load_tile(uint32_t stage, uint32_t bar, const dp_args &a, const int *table, int blk,
                                             int t0, int len, uint64_t policy)
{
    const pl_decode_problem &p = a.p;
    const int lane = threadIdx.x & 31, n = min(RB_TILE, len - t0);
    const uint32_t bytes = (uint32_t)(a.w.hb * D * 2);
    if (lane == 0)
        mbar_arrive_expect_tx(bar, 2u * bytes * (uint32_t)n);
    __syncwarp();
    if (lane < n) {
        const int t = t0 + lane, pg = t / p.page_size;
        const long long row = ((long long)table[pg] * p.page_size + (t - pg * p.page_size)) * p.kv_heads + blk * a.w.hb;
        const uint32_t dst = stage + lane * rb_smem<D>::row_bytes;
        rb_bulk<EF>(dst, p.k_cache + row * D, bytes, bar, policy);
        rb_bulk<EF>(dst + rb_smem<D>::kv_bytes, p.v_cache + row * D, bytes, bar, policy);
    }
}

template <int D, bool EF> __global__ void __launch_bounds__(RB_WARPS * 32, 2) decode_rows_bulk_kernel(const dp_args a)
{
    typedef rb_smem<D> sm;
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ db_scan_smem scan_sm;
    __shared__ __align__(8) uint64_t full[RB_STAGES];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    const pl_decode_problem &p = a.p;
    const int c = blockIdx.x, warp = threadIdx.x >> 5;
    long long lo, hi, total;
    db_cursor cc, ld; /* the computation's position (h: the head block) and the loads' */
    if (!db_find_start<RB_WARPS * 32, RB_TILE>(p, a.w.blocks, a.ctas, &scan_sm, &lo, &hi, &total, &cc)) {
        db_mark_empty(a.w, c);
        return;
    }
    ld = cc;
    const int count = (int)(hi - lo);
    const uint64_t policy = EF ? dm_policy_evict_first() : 0;
    const int active = warp < a.w.hb;

    /* zeros in every stage (V rows past a sequence's end are multiplied by P = 0), visible to the async proxy
     * before the first bulk copy; the barriers initialised */
    for (int i = threadIdx.x; i < sm::bytes / 16; i += RB_WARPS * 32)
        reinterpret_cast<uint4 *>(smem)[i] = make_uint4(0u, 0u, 0u, 0u);
    if (threadIdx.x == 0) {
        for (int s = 0; s < RB_STAGES; s++)
            mbar_init(smem_u32(&full[s]), 1);
        mbar_fence_init();
    }
    fence_proxy_async_shared();
    __syncthreads();

#pragma unroll
    for (int s = 0; s < RB_STAGES; s++)
        if (s < count) {
            if (warp == 0)
                rb_load_tile<D, EF>(sbase + s * sm::stage_bytes, smem_u32(&full[s]), a,
                                    p.block_table + (long long)ld.b * p.max_pages, ld.h, ld.tile * RB_TILE, ld.len,
                                    policy);
            db_advance<RB_TILE>(ld, p);
        }

    uint32_t qa[D / 16][4];
    dm_state<D> st;
    int seg_first = 0; /* the index (from lo) of the current pair's first tile in this range */
    for (int i = 0; i < count; i++) {
        const int s = i % RB_STAGES;
        mbar_wait(smem_u32(&full[s]), (uint32_t)((i / RB_STAGES) & 1)); /* tile i has landed */
        dp_pair_begin<D>(a, cc, i, lo, total, active, qa, st, seg_first);
        if (active) {
            const uint32_t kb = sbase + s * sm::stage_bytes + warp * D * 2;
            dm_rows_step<D, true>(st, qa, kb, kb + sm::kv_bytes, sm::row_bytes, cc.tile * RB_TILE, cc.len,
                                  a.scale_log2);
        }
        dp_pair_end<D>(a, cc, i, count, seg_first, active, st);
        db_advance<RB_TILE>(cc, p);
        __syncthreads(); /* every warp is done with stage s: refill it with tile i + 3 */
        if (i + RB_STAGES < count) {
            if (warp == 0)
                rb_load_tile<D, EF>(sbase + s * sm::stage_bytes, smem_u32(&full[s]), a,
                                    p.block_table + (long long)ld.b * p.max_pages, ld.h, ld.tile * RB_TILE, ld.len,
                                    policy);
            db_advance<RB_TILE>(ld, p);
        }
    }
}

extern "C" int pl_decode_rows_bulk_ctas(const pl_decode_problem *p, int sm_count)
{
    const int per_sm = p->head_dim == 64
                           ? db_ctas_per_sm(decode_rows_bulk_kernel<64, false>, RB_WARPS * 32, rb_smem<64>::bytes)
                           : db_ctas_per_sm(decode_rows_bulk_kernel<128, false>, RB_WARPS * 32, rb_smem<128>::bytes);
    return db_grid(per_sm, sm_count, p->kv_heads / dp_heads_per_block(p->kv_heads, RB_WARPS));
}

extern "C" size_t pl_decode_rows_bulk_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    return db_workspace_bytes(p, ctas, RB_WARPS);
}

template <int D, bool EF> static cudaError_t launch_rows_bulk(const dp_args &a, cudaStream_t stream)
{
    return db_launch<D>(decode_rows_bulk_kernel<D, EF>, a, a.ctas, RB_WARPS * 32, rb_smem<D>::bytes, a.p, a.group, a.w,
                        stream);
}

extern "C" cudaError_t pl_decode_rows_bulk(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                           cudaStream_t stream)
{
    char why[160];
    if (!pl_decode_problem_valid(p, why, sizeof why) || ctas < 1 || !workspace || ((uintptr_t)workspace & 255u) != 0)
        return cudaErrorInvalidValue;
    dp_args a;
    a.p = *p;
    a.group = p->heads / p->kv_heads;
    a.ctas = ctas;
    a.scale_log2 = p->scale * PL_ATTN_LOG2E;
    a.w = db_carve(workspace, p, ctas, RB_WARPS, dp_heads_per_block(p->kv_heads, RB_WARPS));
    if (p->head_dim == 64)
        return evict_first ? launch_rows_bulk<64, true>(a, stream) : launch_rows_bulk<64, false>(a, stream);
    return evict_first ? launch_rows_bulk<128, true>(a, stream) : launch_rows_bulk<128, false>(a, stream);
}
