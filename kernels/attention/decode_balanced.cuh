/* The balanced (stream-K) schedule of the paged decode kernels decode_balanced_mma.cu and decode_balanced_pages.cu:
 * the tiles of every (head, sequence) pair — `heads` is the kv heads or the blocks of kv heads a CTA computes
 * together — laid end to end in (head, sequence, tile) order, T in all, and CTA c of C taking [c·T/C, (c+1)·T/C).
 * A cursor walks a CTA's range; the CTA that holds a pair's first tile knows which CTAs share the pair. */
#ifndef PERFLAB_ATTENTION_DECODE_BALANCED_CUH
#define PERFLAB_ATTENTION_DECODE_BALANCED_CUH

#include "attention/attention.h"

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

#endif
