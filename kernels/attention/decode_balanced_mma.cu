/* Paged decode, version 4 — balanced_mma: split_kv_mma's tensor-core tile step on a persistent, evenly cut grid.
 *
 * Flash-decoding cuts each (sequence, kv head) KV range into fixed chunks, one CTA each: thousands of short CTAs,
 * each paying a pipeline fill (two tiles' DRAM latency with nothing to compute) and a drain and merge, a partial
 * result for every chunk, and a last wave that leaves SMs idle. Here the grid is exactly the CTAs the GPU holds at
 * once (SMs × CTAs per SM), and the work is cut evenly among them in the manner of stream-K: the 64-token tiles
 * of every (sequence, kv head) pair, laid end to end (pairs in (kv head, sequence) order), form one range of T
 * tiles, and CTA c takes tiles [c·T/C, (c+1)·T/C). C is a multiple of the kv heads, so that each kv head has
 * C / kv_heads CTAs whose ranges sit at the same places of the same sequences: the CTAs of the eight heads read
 * the eight 256-byte rows of the same tokens (one 2 KB stretch of a page) at about the same time, as
 * split_kv_mma's launch order makes them do, rather than 256 bytes of each 2 KB at eight different times. A CTA walks
 * its range with one 3-stage cp.async pipeline that runs across the pairs' boundaries (the loads of the next pair's
 * first tiles are in flight while the last tiles of this one are computed), so there is one fill per CTA, and every CTA
 * ends at the same time whatever the lengths. Where its range ends a pair, the CTA merges its four warps' states
 * through shared memory: a pair it covers whole goes straight to O; a pair cut by a range boundary (at most two per
 * CTA: its first and its last) leaves a partial (max, sum, unnormalised output per head) in slot 0 or 1 of the CTA's
 * workspace, and a second kernel combines the two or more CTAs' slots of each cut pair. The CTA that computes a pair's
 * first tile records which CTAs share it (the combine kernel's map; each launch rewrites it).
 *
 * Each CTA finds its first pair from the lengths itself (a block scan over the batch: a few hundred cycles for a
 * batch of 64; it reads the whole length array, which grows with the batch). */
#include <math.h>

#include "attention/attention.h"
#include "attention/decode_mma_tile.cuh"
#include "attention/decode_balanced.cuh"
#include "attention/decode_split.cuh"

#define DB_STAGES 3

template <int D> struct db_smem {
    static constexpr int stage_bytes = 2 * DM_TILE * D * 2; /* K and V of one tile */
    static constexpr int merge_offset = DB_STAGES * stage_bytes;
    static constexpr int bytes = merge_offset + dm_merge<D>::bytes;
};

struct db_args {
    pl_decode_problem p;
    int group, ctas;
    float scale_log2;
    db_work w; /* partials of one kv head (sub 1) per slot; blocks of one kv head */
};

extern "C" size_t pl_decode_balanced_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    return db_workspace_bytes(p, ctas, 1);
}

template <int D, bool EF> __global__ void __launch_bounds__(DM_THREADS, 2) decode_balanced_mma_kernel(const db_args a)
{
    typedef db_smem<D> sm;
    extern __shared__ __align__(128) uint8_t smem[];
    __shared__ db_scan_smem scan_sm;
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    float *merge = reinterpret_cast<float *>(smem + sm::merge_offset);
    const pl_decode_problem &p = a.p;
    const int c = blockIdx.x;

    long long lo, hi, total;
    db_cursor cc, ld; /* the computation's position and the loads' */
    if (!db_find_start<DM_THREADS, DM_TILE>(p, p.kv_heads, a.ctas, &scan_sm, &lo, &hi, &total, &cc)) {
        db_mark_empty(a.w, c);
        return;
    }
    ld = cc;
    const int count = (int)(hi - lo);
    const uint64_t policy = EF ? dm_policy_evict_first() : 0;

#pragma unroll
    for (int s = 0; s < DB_STAGES - 1; s++) {
        if (s < count) {
            dm_load_tile<D, EF>(sbase + s * sm::stage_bytes, p, p.block_table + (long long)ld.b * p.max_pages, ld.h,
                                ld.tile * DM_TILE, ld.len, policy);
            db_advance<DM_TILE>(ld, p);
        }
        cp_async_commit();
    }

    uint32_t qa[D / 16][4];
    dm_state<D> st;
    int seg_first = 0; /* the flat index (from lo) of the current pair's first tile in this range */
    for (int i = 0; i < count; i++) {
        cp_async_wait<DB_STAGES - 2>();
        __syncthreads(); /* tile i visible; every warp is done with the stage refilled next */
        if (i + DB_STAGES - 1 < count) {
            dm_load_tile<D, EF>(sbase + ((i + DB_STAGES - 1) % DB_STAGES) * sm::stage_bytes, p,
                                p.block_table + (long long)ld.b * p.max_pages, ld.h, ld.tile * DM_TILE, ld.len, policy);
            db_advance<DM_TILE>(ld, p);
        }
        cp_async_commit();
        if (i == 0 || cc.tile == 0) { /* a pair starts */
            seg_first = i;
            dm_load_q<D>(qa, p, a.group, cc.b, cc.h);
            dm_state_reset<D>(st);
            if (cc.tile == 0 && threadIdx.x == 0) { /* this CTA holds the pair's first tile: the combine's map */
                const long long t0 = lo + i;
                db_write_map(a.w.map + ((long long)cc.b * p.kv_heads + cc.h) * 4, c, t0, cc.n, total, a.ctas, i == 0);
            }
        }
        dm_tile_step<D>(st, qa, sbase + (i % DB_STAGES) * sm::stage_bytes, cc.tile * DM_TILE, cc.len, a.scale_log2);
        const int last_of_pair = cc.tile == cc.n - 1;
        if (last_of_pair || i == count - 1) { /* the pair ends here (or the range does): merge the warps */
            const int whole = last_of_pair && cc.tile == i - seg_first; /* it began at the pair's tile 0 */
            const int slot = seg_first == 0 ? 0 : 1;
            dm_stash_state<D>(merge, st, a.group);
            __syncthreads();
            for (int e = threadIdx.x; e < a.group * D; e += DM_THREADS) {
                const int g = e / D, d = e % D;
                float mm, ll;
                const float o = ds_merge_warps<D, DM_WARPS, 8>(merge, merge + DM_WARPS * 8 * D,
                                                               merge + DM_WARPS * 8 * (D + 1), g, d, mm, ll);
                if (whole) {
                    const long long h = (long long)cc.b * p.heads + cc.h * a.group + g;
                    p.o[h * D + d] = __bfloat16_as_ushort(__float2bfloat16_rn(o / ll));
                } else {
                    const long long k = db_slot(a.w, c, slot, 0, g);
                    a.w.o[k * D + d] = o;
                    if (d == 0) {
                        a.w.ml[k * 2] = mm;
                        a.w.ml[k * 2 + 1] = ll;
                    }
                }
            }
            /* the next write of the merge area comes after the next iteration's barrier */
        }
        db_advance<DM_TILE>(cc, p);
    }
    cp_async_wait<0>();
}

extern "C" int pl_decode_balanced_ctas(const pl_decode_problem *p, int sm_count)
{
    const int per_sm = p->head_dim == 64
                           ? db_ctas_per_sm(decode_balanced_mma_kernel<64, false>, DM_THREADS, db_smem<64>::bytes)
                           : db_ctas_per_sm(decode_balanced_mma_kernel<128, false>, DM_THREADS, db_smem<128>::bytes);
    return db_grid(per_sm, sm_count, p->kv_heads);
}

template <int D, bool EF> static cudaError_t launch_balanced(const db_args &a, cudaStream_t stream)
{
    return db_launch<D>(decode_balanced_mma_kernel<D, EF>, a, a.ctas, DM_THREADS, db_smem<D>::bytes, a.p, a.group, a.w,
                        stream);
}

extern "C" cudaError_t pl_decode_balanced_mma(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                              cudaStream_t stream)
{
    char why[160];
    if (!pl_decode_problem_valid(p, why, sizeof why) || ctas < 1 || !workspace || ((uintptr_t)workspace & 255u) != 0)
        return cudaErrorInvalidValue;
    db_args a;
    a.p = *p;
    a.group = p->heads / p->kv_heads;
    a.ctas = ctas;
    a.scale_log2 = p->scale * PL_ATTN_LOG2E;
    a.w = db_carve(workspace, p, ctas, 1, 1);
    if (p->head_dim == 64)
        return evict_first ? launch_balanced<64, true>(a, stream) : launch_balanced<64, false>(a, stream);
    return evict_first ? launch_balanced<128, true>(a, stream) : launch_balanced<128, false>(a, stream);
}
