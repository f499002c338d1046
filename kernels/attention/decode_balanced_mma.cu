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
    float *ws_o;  /* [ctas][2][8][D] partial outputs of a CTA's first (slot 0) and last (slot 1) pairs */
    float *ws_ml; /* [ctas][2][8][2] their maxima and sums */
    int *ws_map;  /* [batch·kv_heads][4]: first CTA, last CTA, the first CTA's slot of each pair */
};

extern "C" size_t pl_decode_balanced_workspace_bytes(const pl_decode_problem *p, int ctas)
{
    if (ctas < 1)
        return 0;
    return db_align((size_t)ctas * 2 * 8 * p->head_dim * sizeof(float)) +
           db_align((size_t)ctas * 2 * 8 * 2 * sizeof(float)) + db_align((size_t)p->batch * p->kv_heads * 4 * 4);
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
        /* fewer tiles than CTAs: an empty range, which a cut pair's combine skips by its -inf max */
        if (threadIdx.x < 8)
            a.ws_ml[((long long)c * 2 * 8 + threadIdx.x) * 2] = -INFINITY;
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
                db_write_map(a.ws_map + ((long long)cc.b * p.kv_heads + cc.h) * 4, c, t0, cc.n, total, a.ctas, i == 0);
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
                    const long long k = ((long long)c * 2 + slot) * 8 + g;
                    a.ws_o[k * D + d] = o;
                    if (d == 0) {
                        a.ws_ml[k * 2] = mm;
                        a.ws_ml[k * 2 + 1] = ll;
                    }
                }
            }
            /* the next write of the merge area comes after the next iteration's barrier */
        }
        db_advance<DM_TILE>(cc, p);
    }
    cp_async_wait<0>();
}

/* One block of D threads per (sequence, query head) of a cut pair: the CTAs' partials into O. Pairs a single CTA
 * covered were written by it. */
template <int D> __global__ void __launch_bounds__(D) decode_balanced_combine_kernel(const db_args a)
{
    const pl_decode_problem &p = a.p;
    const int bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, kvh = h / a.group, g = h % a.group;
    const int *map = a.ws_map + ((long long)b * p.kv_heads + kvh) * 4;
    const int c0 = map[0], c1 = map[1], slot0 = map[2];
    if (c1 == c0)
        return;
    float mm = -INFINITY;
    for (int c = c0; c <= c1; c++)
        mm = fmaxf(mm, a.ws_ml[(((long long)c * 2 + (c == c0 ? slot0 : 0)) * 8 + g) * 2]);
    float ll = 0.0f, o = 0.0f;
    for (int c = c0; c <= c1; c++) {
        const long long k = ((long long)c * 2 + (c == c0 ? slot0 : 0)) * 8 + g;
        if (a.ws_ml[k * 2] == -INFINITY)
            continue; /* an empty range between the pair's CTAs (more CTAs than tiles) */
        const float f = attn_exp2(a.ws_ml[k * 2] - mm);
        ll += a.ws_ml[k * 2 + 1] * f;
        o += a.ws_o[k * D + threadIdx.x] * f;
    }
    p.o[(long long)bh * D + threadIdx.x] = __bfloat16_as_ushort(__float2bfloat16_rn(o / ll));
}

template <int D, bool EF> static int db_ctas_per_sm()
{
    int n = 0;
    if (cudaFuncSetAttribute(decode_balanced_mma_kernel<D, EF>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             db_smem<D>::bytes) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, decode_balanced_mma_kernel<D, EF>, DM_THREADS,
                                                      db_smem<D>::bytes) != cudaSuccess)
        return 0;
    return n;
}

extern "C" int pl_decode_balanced_ctas(const pl_decode_problem *p, int sm_count)
{
    const int per_sm = p->head_dim == 64 ? db_ctas_per_sm<64, false>() : db_ctas_per_sm<128, false>();
    const int slots = per_sm * (sm_count > 0 ? sm_count : 1);
    /* a multiple of the kv heads (the heads' CTAs in step), unless there are more heads than slots */
    return slots >= p->kv_heads ? slots / p->kv_heads * p->kv_heads : slots;
}

template <int D, bool EF> static cudaError_t launch_balanced(const db_args &a, cudaStream_t stream)
{
    cudaError_t e = cudaFuncSetAttribute(decode_balanced_mma_kernel<D, EF>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         db_smem<D>::bytes);
    if (e != cudaSuccess)
        return e;
    decode_balanced_mma_kernel<D, EF><<<(unsigned)a.ctas, DM_THREADS, db_smem<D>::bytes, stream>>>(a);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    decode_balanced_combine_kernel<D><<<(unsigned)(a.p.batch * a.p.heads), D, 0, stream>>>(a);
    return cudaGetLastError();
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
    char *w = static_cast<char *>(workspace);
    a.ws_o = reinterpret_cast<float *>(w);
    w += db_align((size_t)ctas * 2 * 8 * p->head_dim * sizeof(float));
    a.ws_ml = reinterpret_cast<float *>(w);
    w += db_align((size_t)ctas * 2 * 8 * 2 * sizeof(float));
    a.ws_map = reinterpret_cast<int *>(w);
    if (p->head_dim == 64)
        return evict_first ? launch_balanced<64, true>(a, stream) : launch_balanced<64, false>(a, stream);
    return evict_first ? launch_balanced<128, true>(a, stream) : launch_balanced<128, false>(a, stream);
}
