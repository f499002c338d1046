/* What the bf16 row kernels share (norm, softmax, fusion): eight bf16 as one 16-byte vector and back, masked edge
 * vectors, the reductions of a group of threads that owns a row, and the plain shared-memory tree the baselines use.
 *
 * A row seen as 16-byte vectors. Row r starts at x + r * cols; `lead` = how many elements of its first 16-byte
 * vector belong to the row before it (0 when the row starts 16-byte aligned). Vector j of the row holds its
 * elements c0 = 8j - lead ... c0 + 7; those outside [0, cols) belong to the neighbouring rows. Such an edge vector
 * is read and written element by element (never the neighbour's elements: another block writes them); every
 * other vector is one 16-byte access. So any cols works, and a row of cols % 8 == 0 from a 16-byte aligned x has
 * no edge vectors at all. */
#ifndef PERFLAB_KERNELS_ROWS_CUH
#define PERFLAB_KERNELS_ROWS_CUH

#include <math.h>
#include <stdint.h>
#include <cuda_bf16.h>

#include "common/rows.h"

#define ROWS_LOG2E   1.4426950408889634f
#define ROWS_NEG_INF 0xff80u /* bf16 -infinity: the filler of a max */

__device__ __forceinline__ float rows_bf16(uint16_t bits)
{
    return __uint_as_float((uint32_t)bits << 16);
}

__device__ __forceinline__ uint16_t rows_to_bf16(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

__device__ __forceinline__ float rows_bf16_lo(uint32_t w)
{
    return __uint_as_float(w << 16);
}

__device__ __forceinline__ float rows_bf16_hi(uint32_t w)
{
    return __uint_as_float(w & 0xffff0000u);
}

/* Two floats to two bf16 (round to nearest even), lo in the low half: one cvt.rn.bf16x2.f32. */
__device__ __forceinline__ uint32_t rows_pack2(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

__device__ __forceinline__ void rows_unpack8(uint4 v, float f[8])
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
        f[2 * k] = rows_bf16_lo(w[k]);
        f[2 * k + 1] = rows_bf16_hi(w[k]);
    }
}

__device__ __forceinline__ uint4 rows_pack8(const float f[8])
{
    return make_uint4(rows_pack2(f[0], f[1]), rows_pack2(f[2], f[3]), rows_pack2(f[4], f[5]), rows_pack2(f[6], f[7]));
}

/* 2^x by the special-function unit alone (ex2.approx.ftz: relative error ~2^-22, subnormal results flushed to 0,
 * 2^-inf = 0): one MUFU.EX2, where exp2f adds the range scaling that keeps subnormal results (never needed here:
 * a softmax term below 2^-126 rounds to 0 in bf16 anyway). */
__device__ __forceinline__ float rows_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* log2(x) by the special-function unit (lg2.approx.ftz: absolute error ~2^-22 for x in normal range). */
__device__ __forceinline__ float rows_lg2(float x)
{
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The element-wise maximum of two bf16 pairs, packed (one HMNMX2.BF16: exact, a max needs no rounding). */
__device__ __forceinline__ uint32_t rows_max2(uint32_t a, uint32_t b)
{
    __nv_bfloat162 r =
        __hmax2(*reinterpret_cast<const __nv_bfloat162 *>(&a), *reinterpret_cast<const __nv_bfloat162 *>(&b));
    return *reinterpret_cast<uint32_t *>(&r);
}

/* The largest of eight bf16 */
__device__ __forceinline__ float rows_max8(uint4 v)
{
    float f[8], m = -INFINITY;
    rows_unpack8(v, f);
#pragma unroll
    for (int e = 0; e < 8; e++)
        m = fmaxf(m, f[e]);
    return m;
}

/* The element-by-element edge of rows_load8 / rows_store8. */
__device__ __forceinline__ uint4 rows_load8_edge(const uint16_t *__restrict__ p, int c0, int n, uint16_t fill)
{
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int a = c0 + 2 * k, b = a + 1;
        const uint32_t lo = a >= 0 && a < n ? p[a] : fill;
        const uint32_t hi = b >= 0 && b < n ? p[b] : fill;
        w[k] = lo | hi << 16;
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ void rows_store8_edge(uint16_t *__restrict__ p, int c0, int n, uint4 v)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int e = 0; e < 8; e++)
        if (c0 + e >= 0 && c0 + e < n)
            p[c0 + e] = (uint16_t)(w[e / 2] >> (16 * (e % 2)));
}

/* Elements c0 .. c0+7 of p: one 16-byte load when all lie in [0, n) and p + c0 is 16-byte aligned; else element by
 * element, `fill` (bf16 bits) outside [0, n). */
__device__ __forceinline__ uint4 rows_load8(const uint16_t *__restrict__ p, int c0, int n, uint16_t fill)
{
    if (c0 >= 0 && c0 + 8 <= n && ((uintptr_t)(p + c0) & 15u) == 0)
        return *reinterpret_cast<const uint4 *>(p + c0);
    return rows_load8_edge(p, c0, n, fill);
}

/* Store elements c0 .. c0+7 of v into p, only those in [0, n): one 16-byte store where all are and it is aligned. */
__device__ __forceinline__ void rows_store8(uint16_t *__restrict__ p, int c0, int n, uint4 v)
{
    if (c0 >= 0 && c0 + 8 <= n && ((uintptr_t)(p + c0) & 15u) == 0)
        *reinterpret_cast<uint4 *>(p + c0) = v;
    else
        rows_store8_edge(p, c0, n, v);
}

/* Elements of the row before its first 16-byte boundary (see the top of this file). */
__device__ __forceinline__ int rows_lead(const uint16_t *row)
{
    return (int)(((uintptr_t)row & 15u) >> 1);
}

/* ---- staging a row in shared memory with cp.async (the *_async versions) ---- */

/* 16 bytes global -> shared without passing through registers (sm_80+); .cg: cached in L2 only. */
__device__ __forceinline__ void rows_cp_async16(void *smem, const void *gmem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

/* Wait for every cp.async this thread issued. */
__device__ __forceinline__ void rows_cp_async_wait_all(void)
{
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

/* Copy this thread's vectors of a row (j = t, t + group, ...; NV of them) into stage[j]: whole vectors by cp.async,
 * edge vectors by a masked load (`fill` outside the row) and a shared store. Returns when they have landed. Each
 * thread later reads back only the slots it filled, so no barrier is needed. */
template <int NV>
__device__ __forceinline__ void rows_stage(uint4 *stage, const uint16_t *row, int lead, int cols, int nvec, int t,
                                           int group, bool live, uint16_t fill)
{
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = t + k * group, c0 = 8 * j - lead;
        if (!live || j >= nvec)
            continue;
        if (c0 >= 0 && c0 + 8 <= cols)
            rows_cp_async16(stage + j, row + c0);
        else
            stage[j] = rows_load8_edge(row, c0, cols, fill);
    }
    rows_cp_async_wait_all();
}

/* The group that owns a row: `group` consecutive threads of the block (rows.h). */
struct rows_group {
    int t;      /* this thread's index in its group */
    size_t row; /* the row it owns; >= rows for the idle groups of the last block */
};

__device__ __forceinline__ rows_group rows_group_of(int group)
{
    rows_group g;
    g.t = (int)(threadIdx.x % (unsigned)group);
    g.row = (size_t)blockIdx.x * (blockDim.x / (unsigned)group) + threadIdx.x / (unsigned)group;
    return g;
}

/* Where a group's row lies. */
struct rows_at {
    rows_group g;
    bool live;   /* a real row; the idle groups of the last block still take part in the block's barriers */
    size_t base; /* the row's first element (row 0's for an idle group) */
    int lead;    /* rows_lead of the row */
    int nvec;    /* the 16-byte vectors it touches */
};

__device__ __forceinline__ rows_at rows_at_of(const uint16_t *x, int rows, int cols, int group)
{
    rows_at a;
    a.g = rows_group_of(group);
    a.live = a.g.row < (size_t)rows;
    a.base = (a.live ? a.g.row : 0) * (size_t)cols;
    a.lead = rows_lead(x + a.base);
    a.nvec = (a.lead + cols + 7) >> 3;
    return a;
}

/* This thread's vectors of its row into registers: v[k] = vector t + k * group of the row, `fill` (bf16 bits) for
 * elements outside it and for vectors past its end. */
template <int NV>
__device__ __forceinline__ void rows_load_regs(uint4 (&v)[NV], const uint16_t *x, const rows_at &a, int cols, int group,
                                               uint16_t fill)
{
    const uint32_t f2 = (uint32_t)fill * 0x10001u;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = a.g.t + k * group;
        v[k] = a.live && j < a.nvec ? rows_load8(x + a.base, 8 * j - a.lead, cols, fill) : make_uint4(f2, f2, f2, f2);
    }
}

/* Sum over the group. Within a warp by shuffles (xor offsets below the group size stay inside it); a group of
 * several warps then exchanges one value per warp through red[32]. Every thread of the block calls it: the
 * multi-warp case holds two __syncthreads (group is the same for the whole block, so all take that branch). */
__device__ __forceinline__ float rows_group_sum(float v, int group, float *red)
{
    for (int o = (group < 32 ? group : 32) >> 1; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (group <= 32)
        return v;
    const int warp = (int)(threadIdx.x >> 5), per = group >> 5, first = warp / per * per;
    if ((threadIdx.x & 31u) == 0)
        red[warp] = v;
    __syncthreads();
    float s = 0.0f;
    for (int k = 0; k < per; k++)
        s += red[first + k];
    __syncthreads(); /* red is free for the next reduction */
    return s;
}

/* The sums of a pair of values over the group (as rows_group_sum, one exchange for both). */
__device__ __forceinline__ float2 rows_group_sum2(float2 v, int group, float2 *red)
{
    for (int o = (group < 32 ? group : 32) >> 1; o > 0; o >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
    }
    if (group <= 32)
        return v;
    const int warp = (int)(threadIdx.x >> 5), per = group >> 5, first = warp / per * per;
    if ((threadIdx.x & 31u) == 0)
        red[warp] = v;
    __syncthreads();
    float2 s = make_float2(0.0f, 0.0f);
    for (int k = 0; k < per; k++) {
        s.x += red[first + k].x;
        s.y += red[first + k].y;
    }
    __syncthreads();
    return s;
}

/* Softmax partial state: m the largest element seen, s = sum of exp(x - m) over the elements seen. Two merge as
 * (max(m1, m2), s1 exp(m1 - M) + s2 exp(m2 - M)); a state that saw nothing is (-inf, 0). */
__device__ __forceinline__ void rows_softmax_combine(float *m, float *s, float m2, float s2)
{
    const float big = fmaxf(*m, m2);
    if (big == -INFINITY)
        return; /* both empty */
    *s = *s * rows_ex2((*m - big) * ROWS_LOG2E) + s2 * rows_ex2((m2 - big) * ROWS_LOG2E);
    *m = big;
}

/* The softmax state merged over the group (as rows_group_sum). */
__device__ __forceinline__ void rows_group_softmax(float *m, float *s, int group, float2 *red)
{
    for (int o = (group < 32 ? group : 32) >> 1; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, *m, o), s2 = __shfl_xor_sync(0xffffffffu, *s, o);
        rows_softmax_combine(m, s, m2, s2);
    }
    if (group <= 32)
        return;
    const int warp = (int)(threadIdx.x >> 5), per = group >> 5, first = warp / per * per;
    if ((threadIdx.x & 31u) == 0)
        red[warp] = make_float2(*m, *s);
    __syncthreads();
    float mm = -INFINITY, ss = 0.0f;
    for (int k = 0; k < per; k++)
        rows_softmax_combine(&mm, &ss, red[first + k].x, red[first + k].y);
    __syncthreads();
    *m = mm;
    *s = ss;
}

/* Welford / Chan state of a set of values: count, mean, sum of squared deviations from the mean. */
struct rows_moments {
    float n, mean, m2;
};

__device__ __forceinline__ rows_moments rows_moments_merge(rows_moments a, rows_moments b)
{
    const float n = a.n + b.n;
    if (n == 0.0f)
        return a;
    const float d = b.mean - a.mean, fb = b.n / n;
    rows_moments r;
    r.n = n;
    r.mean = fmaf(d, fb, a.mean);
    r.m2 = a.m2 + b.m2 + d * d * a.n * fb;
    return r;
}

/* The moments merged over the group (as rows_group_sum). */
__device__ __forceinline__ rows_moments rows_group_moments(rows_moments v, int group, float4 *red)
{
    for (int o = (group < 32 ? group : 32) >> 1; o > 0; o >>= 1) {
        rows_moments u;
        u.n = __shfl_xor_sync(0xffffffffu, v.n, o);
        u.mean = __shfl_xor_sync(0xffffffffu, v.mean, o);
        u.m2 = __shfl_xor_sync(0xffffffffu, v.m2, o);
        v = rows_moments_merge(v, u);
    }
    if (group <= 32)
        return v;
    const int warp = (int)(threadIdx.x >> 5), per = group >> 5, first = warp / per * per;
    if ((threadIdx.x & 31u) == 0)
        red[warp] = make_float4(v.n, v.mean, v.m2, 0.0f);
    __syncthreads();
    rows_moments r = {0.0f, 0.0f, 0.0f};
    for (int k = 0; k < per; k++) {
        const rows_moments u = {red[first + k].x, red[first + k].y, red[first + k].z};
        r = rows_moments_merge(r, u);
    }
    __syncthreads();
    return r;
}

/* The baselines' reduction: the textbook shared-memory tree over a block of power-of-two size (sh: blockDim.x
 * floats), of the sum or (take_max) the maximum. The result is returned to every thread. */
__device__ __forceinline__ float rows_block_tree(float v, float *sh, int take_max)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            if (take_max)
                sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + half]);
            else
                sh[threadIdx.x] += sh[threadIdx.x + half];
        }
        __syncthreads();
    }
    const float total = sh[0];
    __syncthreads();
    return total;
}

#endif
