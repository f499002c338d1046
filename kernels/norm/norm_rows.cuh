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

#endif
