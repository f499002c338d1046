/* The arithmetic both fused norm versions apply to eight bf16 at a time (fused.cu: the row in registers,
 * fused_async.cu: the row staged in shared memory), so that the two compute exactly the same function. */
#ifndef PERFLAB_NORM_ROWS_CUH
#define PERFLAB_NORM_ROWS_CUH

#include "common/rows.cuh"

__device__ __forceinline__ float sumsq8(uint4 v)
{
    float f[8], s = 0.0f;
    rows_unpack8(v, f);
#pragma unroll
    for (int e = 0; e < 8; e++)
        s = fmaf(f[e], f[e], s);
    return s;
}

__device__ __forceinline__ float sum8(uint4 v)
{
    float f[8], s = 0.0f;
    rows_unpack8(v, f);
#pragma unroll
    for (int e = 0; e < 8; e++)
        s += f[e];
    return s;
}

/* sum of (x - mean)^2 over the elements of the vector that lie in the row ([0, cols) from c0) */
__device__ __forceinline__ float sqdev8(uint4 v, float mean, int c0, int cols)
{
    float f[8], s = 0.0f;
    rows_unpack8(v, f);
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const float d = f[e] - mean;
        s = (unsigned)(c0 + e) < (unsigned)cols ? fmaf(d, d, s) : s;
    }
    return s;
}

/* the moments of the vector's elements in the row (the looped LayerNorm's Welford step, eight at a time) */
__device__ __forceinline__ rows_moments moments8(uint4 v, int c0, int cols)
{
    const int lo = c0 < 0 ? -c0 : 0, hi = cols - c0 < 8 ? cols - c0 : 8;
    rows_moments m = {0.0f, 0.0f, 0.0f};
    if (hi <= lo)
        return m;
    m.n = (float)(hi - lo);
    float f[8];
    rows_unpack8(v, f);
#pragma unroll
    for (int e = 0; e < 8; e++)
        m.mean += e >= lo && e < hi ? f[e] : 0.0f;
    m.mean /= m.n;
    m.m2 = sqdev8(v, m.mean, c0, cols);
    return m;
}

__device__ __forceinline__ uint4 rms_apply8(uint4 v, uint4 wv, float r)
{
    float f[8], g[8];
    rows_unpack8(v, f);
    rows_unpack8(wv, g);
#pragma unroll
    for (int e = 0; e < 8; e++)
        f[e] = f[e] * r * g[e];
    return rows_pack8(f);
}

__device__ __forceinline__ uint4 ln_apply8(uint4 v, uint4 wv, uint4 bv, float mean, float rstd)
{
    float f[8], g[8], h[8];
    rows_unpack8(v, f);
    rows_unpack8(wv, g);
    rows_unpack8(bv, h);
#pragma unroll
    for (int e = 0; e < 8; e++)
        f[e] = fmaf((f[e] - mean) * rstd, g[e], h[e]);
    return rows_pack8(f);
}

/* ---- LayerNorm's statistics in one reduction, about a shift (shifted.cu, tma_ring.cu) ---- */

/* The elements of the vector at c0 that lie in the row [0, cols). */
__device__ __forceinline__ int in_row8(int c0, int cols)
{
    const int lo = c0 > 0 ? c0 : 0, hi = c0 + 8 < cols ? c0 + 8 : cols;
    return hi > lo ? hi - lo : 0;
}

/* (mean, 1/sqrt(var + eps)) of the row whose vectors t + q * group the threads of the group hold in v (zeros
 * outside the row), from S1 = sum (x - k) and S2 = sum (x - k)^2 reduced once over the group; k is the same for
 * the whole group (shifted.cu explains the choice and the accuracy). Every thread of the group calls it. */
template <int NV>
__device__ __forceinline__ float2 ln_shifted_stats(const uint4 (&v)[NV], const rows_at &a, float k, int cols,
                                                   float eps, int group, float2 *red)
{
    float s1 = 0.0f, s2 = 0.0f;
    int n = 0;
#pragma unroll
    for (int q = 0; q < NV; q++) {
        const int j = a.g.t + q * group;
        n += a.live && j < a.nvec ? in_row8(8 * j - a.lead, cols) : 0;
        float f[8];
        rows_unpack8(v[q], f);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const float d = f[e] - k;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }
    }
    const float fill = (float)(8 * NV - n); /* zero-filled slots: each added -k to s1 and k^2 to s2 */
    s1 = fmaf(fill, k, s1);
    s2 = fmaf(-fill * k, k, s2);
    const float2 t = rows_group_sum2(make_float2(s1, s2), group, red);
    const float inv_n = 1.0f / (float)cols, dk = t.x * inv_n;
    const float var = fmaxf(fmaf(-dk, dk, t.y * inv_n), 0.0f);
    return make_float2(k + dk, rsqrtf(var + eps));
}

/* The normalized row from the registers: y = (x - mean) rstd w + b, 16-byte stores (edge vectors element-wise). */
template <int NV>
__device__ __forceinline__ void ln_store_row(const uint4 (&v)[NV], const rows_at &a, const uint16_t *__restrict__ w,
                                             const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int cols,
                                             float mean, float rstd, int group)
{
#pragma unroll
    for (int q = 0; q < NV; q++) {
        const int j = a.g.t + q * group, c0 = 8 * j - a.lead;
        if (j < a.nvec)
            rows_store8(y + a.base, c0, cols,
                        ln_apply8(v[q], rows_load8(w, c0, cols, 0), rows_load8(b, c0, cols, 0), mean, rstd));
    }
}

#endif
