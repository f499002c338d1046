/* The balanced (stream-K) schedule of the paged decode kernels decode_balanced_mma.cu and decode_balanced_pages.cu:
 * the tiles of every (head, sequence) pair — `heads` is the kv heads or the blocks of kv heads a CTA computes
 * together — laid end to end in (head, sequence, tile) order, T in all, and CTA c of C taking [c·T/C, (c+1)·T/C).
 * A cursor walks a CTA's range; the CTA that holds a pair's first tile knows which CTAs share the pair. */
#ifndef PERFLAB_ATTENTION_DECODE_BALANCED_CUH
#define PERFLAB_ATTENTION_DECODE_BALANCED_CUH

#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/decode_mma_tile.cuh" /* dm_state: the warp-per-kv-head kernels' finish */

static inline size_t db_align(size_t n)
{
    return (n + 255) / 256 * 256;
}

/* The first tile of CTA c's range: floor(c·T/C). */
__device__ __forceinline__ long long db_range_start(long long c, long long total, int ctas)
{
    return c * total / ctas;
}

/* The CTA whose range holds tile t: the largest c with floor(c·T/C) <= t. */
__device__ __forceinline__ int db_owner(long long t, long long total, int ctas)
{
    return (int)(((t + 1) * ctas - 1) / total);
}

struct db_scan_smem {
    long long warp_sums[8];    /* up to 256 threads */
    long long first_seq_tiles; /* the head's tiles before the sequence of a CTA's first tile */
    int first_seq;
};

/* Exclusive prefix sum of v over the CTA's NT threads; *all gets the CTA's sum. */
template <int NT> __device__ __forceinline__ long long db_block_scan(long long v, db_scan_smem *sm, long long *all)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long long x = v;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
        const long long y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off)
            x += y;
    }
    if (lane == 31)
        sm->warp_sums[warp] = x;
    __syncthreads();
    long long before = 0, sum = 0;
#pragma unroll
    for (int w = 0; w < NT / 32; w++) {
        before += w < warp ? sm->warp_sums[w] : 0;
        sum += sm->warp_sums[w];
    }
    __syncthreads(); /* warp_sums free for the next call */
    *all = sum;
    return before + x - v;
}

/* Where a walk through the tiles stands: head h, sequence b, tile of the pair; n tiles in the pair. */
struct db_cursor {
    int b, h, tile, n, len;
};

template <int TILE> __device__ __forceinline__ void db_enter_sequence(db_cursor &c, const pl_decode_problem &p, int b)
{
    c.b = b;
    c.len = b < p.batch ? p.seq_lens[b] : 1;
    c.n = (c.len + TILE - 1) / TILE;
}

template <int TILE> __device__ __forceinline__ void db_advance(db_cursor &c, const pl_decode_problem &p)
{
    if (++c.tile < c.n)
        return;
    c.tile = 0;
    if (c.b + 1 < p.batch) {
        db_enter_sequence<TILE>(c, p, c.b + 1);
        return;
    }
    db_enter_sequence<TILE>(c, p, 0);
    c.h++;
}

/* CTA blockIdx.x's range [*lo, *hi) of the *total tiles of `heads` heads, and the cursor at *lo: a block scan of
 * the lengths (each CTA reads them all). 0 when the range is empty (fewer tiles than CTAs). */
template <int NT, int TILE>
__device__ __forceinline__ int db_find_start(const pl_decode_problem &p, int heads, int ctas, db_scan_smem *sm,
                                             long long *lo, long long *hi, long long *total, db_cursor *cur)
{
    long long per_head = 0;
    for (int b0 = 0; b0 < p.batch; b0 += NT) {
        const int b = b0 + threadIdx.x;
        long long part;
        db_block_scan<NT>(b < p.batch ? (p.seq_lens[b] + TILE - 1) / TILE : 0, sm, &part);
        per_head += part;
    }
    *total = per_head * heads;
    *lo = db_range_start(blockIdx.x, *total, ctas);
    *hi = db_range_start(blockIdx.x + 1, *total, ctas);
    if (*lo >= *hi)
        return 0;
    const int h0 = (int)(*lo / per_head);
    const long long in_head = *lo - h0 * per_head;
    long long carry = 0;
    for (int b0 = 0; b0 < p.batch; b0 += NT) {
        const int b = b0 + threadIdx.x;
        const long long n = b < p.batch ? (p.seq_lens[b] + TILE - 1) / TILE : 0;
        long long part;
        const long long before = carry + db_block_scan<NT>(n, sm, &part);
        if (b < p.batch && in_head >= before && in_head < before + n) {
            sm->first_seq = b;
            sm->first_seq_tiles = before;
        }
        carry += part;
    }
    __syncthreads();
    db_enter_sequence<TILE>(*cur, p, sm->first_seq);
    cur->h = h0;
    cur->tile = (int)(in_head - sm->first_seq_tiles);
    return 1;
}

/* The CTAs of a cut pair's partials: the combine kernels' map, [pairs][4] = first CTA, last CTA, the first CTA's
 * slot (0 when the pair starts its range, else 1). Written by the CTA holding the pair's first tile, t0 (flat). */
__device__ __forceinline__ void db_write_map(int *map, int c, long long t0, int n, long long total, int ctas,
                                             int first_of_range)
{
    map[0] = c;
    map[1] = db_owner(t0 + n - 1, total, ctas);
    map[2] = first_of_range ? 0 : 1;
}

/* The partial results of a launch: each CTA has two slots (its first pair and its last), each holding `sub` kv
 * heads (1 in balanced_mma, the head block in balanced_pages) × 8 query heads of the group; the combine's map. */
struct db_work {
    float *o;            /* [ctas][2][sub][8][D] unnormalised outputs */
    float *ml;           /* [ctas][2][sub][8][2] maxima (base 2) and sums */
    int *map;            /* [batch][blocks][4] */
    int sub, hb, blocks; /* hb kv heads a CTA computes together (sub slots of them), blocks = kv_heads / hb */
};

static inline size_t db_workspace_bytes(const pl_decode_problem *p, int ctas, int sub)
{
    if (ctas < 1)
        return 0;
    const size_t slots = (size_t)ctas * 2 * sub * 8;
    return db_align(slots * p->head_dim * sizeof(float)) + db_align(slots * 2 * sizeof(float)) +
           db_align((size_t)p->batch * p->kv_heads * 4 * sizeof(int));
}

/* The arrays in the workspace (256-byte aligned), for kv heads in blocks of hb. */
static inline db_work db_carve(void *workspace, const pl_decode_problem *p, int ctas, int sub, int hb)
{
    const size_t slots = (size_t)ctas * 2 * sub * 8;
    char *w = static_cast<char *>(workspace);
    db_work r;
    r.o = reinterpret_cast<float *>(w);
    w += db_align(slots * p->head_dim * sizeof(float));
    r.ml = reinterpret_cast<float *>(w);
    w += db_align(slots * 2 * sizeof(float));
    r.map = reinterpret_cast<int *>(w);
    r.sub = sub;
    r.hb = hb;
    r.blocks = p->kv_heads / hb;
    return r;
}

/* The grid: the resident CTAs, a multiple of the head blocks (their CTAs in step) unless there are fewer slots. */
static inline int db_grid(int per_sm, int sm_count, int blocks)
{
    const int slots = per_sm * (sm_count > 0 ? sm_count : 1);
    return slots >= blocks ? slots / blocks * blocks : slots;
}

/* Index of (CTA c, slot, kv head w of its block, query head g of the group) in the partials. */
__device__ __forceinline__ long long db_slot(const db_work &w, int c, int slot, int kh, int g)
{
    return (((long long)c * 2 + slot) * w.sub + kh) * 8 + g;
}

/* An empty range (fewer tiles than CTAs): slot 0 marked with a -inf max, which a cut pair's combine skips.
 * Threads 0 .. sub·8 - 1 of the CTA. */
__device__ __forceinline__ void db_mark_empty(const db_work &w, int c)
{
    if (threadIdx.x < w.sub * 8)
        w.ml[db_slot(w, c, 0, threadIdx.x / 8, threadIdx.x % 8) * 2] = -INFINITY;
}

/* One block of D threads per (sequence, query head) of a cut pair: the CTAs' partials into O. Pairs a single CTA
 * covered were written by it. */
template <int D> __global__ void __launch_bounds__(D) db_combine_kernel(const pl_decode_problem p, int group, db_work w)
{
    const int bh = blockIdx.x, b = bh / p.heads, h = bh % p.heads, kvh = h / group, g = h % group;
    const int blk = kvh / w.hb, kh = kvh % w.hb;
    const int *map = w.map + ((long long)b * w.blocks + blk) * 4;
    const int c0 = map[0], c1 = map[1], slot0 = map[2];
    if (c1 == c0)
        return;
    float mm = -INFINITY;
    for (int c = c0; c <= c1; c++)
        mm = fmaxf(mm, w.ml[db_slot(w, c, c == c0 ? slot0 : 0, kh, g) * 2]);
    float ll = 0.0f, o = 0.0f;
    for (int c = c0; c <= c1; c++) {
        const long long k = db_slot(w, c, c == c0 ? slot0 : 0, kh, g);
        if (w.ml[k * 2] == -INFINITY)
            continue; /* an empty range between the pair's CTAs (more CTAs than tiles) */
        const float f = attn_exp2(w.ml[k * 2] - mm);
        ll += w.ml[k * 2 + 1] * f;
        o += w.o[k * D + threadIdx.x] * f;
    }
    p.o[(long long)bh * D + threadIdx.x] = __bfloat16_as_ushort(__float2bfloat16_rn(o / ll));
}

template <int D>
static cudaError_t db_launch_combine(const pl_decode_problem &p, int group, const db_work &w, cudaStream_t stream)
{
    db_combine_kernel<D><<<(unsigned)(p.batch * p.heads), D, 0, stream>>>(p, group, w);
    return cudaGetLastError();
}

/* How many CTAs of `kernel` (threads, smem bytes of dynamic shared memory) an SM holds; 0 when the query fails. */
template <typename A> static int db_ctas_per_sm(void (*kernel)(A), int threads, int smem)
{
    int n = 0;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess)
        return 0;
    return n;
}

/* A balanced kernel on its `ctas` CTAs, then the combine of the cut pairs. */
template <int D, typename A>
static cudaError_t db_launch(void (*kernel)(A), const A &a, int ctas, int threads, int smem, const pl_decode_problem &p,
                             int group, const db_work &w, cudaStream_t stream)
{
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess)
        return e;
    kernel<<<(unsigned)ctas, threads, smem, stream>>>(a);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    return db_launch_combine<D>(p, group, w, stream);
}

/* ---- the warp-per-kv-head kernels (balanced_pages, rows_deep, rows_bulk): a CTA computes a block of hb kv heads,
 * warp w the block's head w over the CTA's whole range (no merge of warps) ---- */

struct dp_args {
    pl_decode_problem p;
    int group, ctas;
    float scale_log2;
    db_work w; /* hb kv heads per block (divides kv_heads, <= the warps a CTA), sub = the warps a CTA */
};

/* kv heads per block: the largest divisor of kv_heads up to nw. */
static inline int dp_heads_per_block(int kv_heads, int nw)
{
    for (int hb = nw; hb > 1; hb--)
        if (kv_heads % hb == 0)
            return hb;
    return 1;
}

/* Dimension and values of pair i (0 .. D/8 - 1) of this lane's D/4 output columns of row g: the mma's own columns
 * (o[i][0], o[i][1] at dims 8i + 2q, +1), or (PERM: dimension φ(dt, n) = n·D/8 + dt of n-tile dt, column n, as
 * decode_fp8_frag.cuh's P·V lays them out) o[dt][e] at dim (2q + e)·D/8 + dt, paired over dt and dt + 1. */
template <int D, bool PERM>
__device__ __forceinline__ int dp_out_pair(const dm_state<D> &st, int i, int qd, float &x, float &y)
{
    if (!PERM) {
        x = st.o[i][0];
        y = st.o[i][1];
        return i * 8 + 2 * qd;
    }
    const int e = i / (D / 16), dt = 2 * (i % (D / 16));
    x = st.o[dt][e];
    y = st.o[dt + 1][e];
    return (2 * qd + e) * (D / 8) + dt;
}

/* The end of a warp's pair (or of its part of one): O itself when the CTA computed the whole pair, else the
 * partial (max, sum, unnormalised output) of each head of the group in the CTA's slot. The accumulated outputs are
 * st.o times `unit` (1, or the FP8 fragment kernel's running unit of P·V), their columns as dp_out_pair<PERM>. */
template <int D, bool PERM = false>
__device__ __forceinline__ void dp_finish(const dp_args &a, dm_state<D> &st, int b, int kvh, int whole, int slot,
                                          float unit = 1.0f)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, qd = lane & 3;
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 1);
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 2);
    if (g >= a.group)
        return;
    if (whole) {
        uint32_t *o = reinterpret_cast<uint32_t *>(a.p.o + ((long long)b * a.p.heads + kvh * a.group + g) * D);
        const float inv = unit / st.l;
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            float x, y;
            const int d = dp_out_pair<D, PERM>(st, i, qd, x, y);
            o[d / 2] = attn_pack_bf16(x * inv, y * inv);
        }
        return;
    }
    const long long k = db_slot(a.w, blockIdx.x, slot, warp, g);
    float2 *o = reinterpret_cast<float2 *>(a.w.o + k * D);
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        float x, y;
        const int d = dp_out_pair<D, PERM>(st, i, qd, x, y);
        o[d / 2] = make_float2(x * unit, y * unit);
    }
    if (qd == 0)
        reinterpret_cast<float2 *>(a.w.ml)[k] = make_float2(st.m, st.l);
}

/* The bf16 kernels' per-pair hooks (the FP8 fragment kernel overloads them on its state, decode_fp8_frag.cuh): Q of
 * kv head kvh of sequence b as A fragments, a fresh state, the finish. */
template <int D>
__device__ __forceinline__ void dp_load_q(uint32_t (&qa)[D / 16][4], dm_state<D> &, const dp_args &a, int b, int kvh)
{
    dm_load_q<D>(qa, a.p, a.group, b, kvh);
}

template <int D> __device__ __forceinline__ void dp_reset(dm_state<D> &st)
{
    dm_state_reset<D>(st);
}

template <int D>
__device__ __forceinline__ void dp_finish_state(const dp_args &a, dm_state<D> &st, int b, int kvh, int whole, int slot)
{
    dp_finish<D>(a, st, b, kvh, whole, slot);
}

/* Where tile i of a CTA's range (the cursor cc at it) starts a pair, or is the range's first: the warp's Q of its
 * head (active warps), a fresh state, and (the pair's first tile) the combine's map entry. ST: the kernel's state. */
template <int D, typename ST>
__device__ __forceinline__ void dp_pair_begin(const dp_args &a, const db_cursor &cc, int i, long long lo,
                                              long long total, int active, uint32_t (&qa)[D / 16][4], ST &st,
                                              int &seg_first)
{
    if (i != 0 && cc.tile != 0)
        return;
    seg_first = i;
    if (active)
        dp_load_q<D>(qa, st, a, cc.b, cc.h * a.w.hb + (threadIdx.x >> 5));
    dp_reset<D>(st);
    if (cc.tile == 0 && threadIdx.x == 0)
        db_write_map(a.w.map + ((long long)cc.b * a.w.blocks + cc.h) * 4, blockIdx.x, lo + i, cc.n, total, a.ctas,
                     i == 0);
}

/* Where tile i ends its pair or the CTA's range (count tiles): the active warps' finish. */
template <int D, typename ST>
__device__ __forceinline__ void dp_pair_end(const dp_args &a, const db_cursor &cc, int i, int count, int seg_first,
                                            int active, ST &st)
{
    const int last_of_pair = cc.tile == cc.n - 1;
    if (active && (last_of_pair || i == count - 1))
        dp_finish_state<D>(a, st, cc.b, cc.h * a.w.hb + (threadIdx.x >> 5), last_of_pair && cc.tile == i - seg_first,
                           seg_first == 0 ? 0 : 1);
}

#endif
