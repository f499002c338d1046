/* softmax, version 2 — fused online softmax, one pass over the row (the optimized variant of softmax:rows).
 *
 * Technique: one kernel reads each row once and writes it once. The row belongs to a group of threads sized by
 * its length (common/rows.h: part of a warp, a warp, a block), each thread holding NV 16-byte vectors of it in
 * registers. Each thread computes its own maximum m_t and s_t = sum exp(x - m_t), keeping the exponentials in
 * fp32 registers; the group merges the (m, s) pairs in a single reduction with the online-softmax rule
 * (max(m1, m2), s1 e^(m1 - M) + s2 e^(m2 - M)), so there is one reduction instead of two (max, then sum) and one
 * exponential per element; the output is the kept exponential times e^(m_t - M) / S. Rows too long for the
 * registers stream through the same recurrence vector by vector and read the row a second time for the output
 * (mostly from L2). Edge vectors of rows not 16-byte aligned are filled with -inf (common/rows.cuh). */
#include "common/rows.cuh"
#include "softmax/softmax_kernels.h"

/* At most 48 registers (the compiler's own choice at 4 vectors is 64, which fits 4 blocks of 256 on an SM; 48 fits
 * 5, for 4 bytes of spills): measured on an H200 at 16384 x 8192, 150.5 us against 157.5 uncapped
 * (docs/perf/softmax.md, run 2). Any block up to 1024 threads fits. */
template <int NV>
__global__ void __maxnreg__(48)
    softmax_regs_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int rows, int cols, int group)
{
    __shared__ float2 red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    const rows_group g = a.g;
    const size_t base = a.base;
    const int lead = a.lead, nvec = a.nvec;
    uint4 v[NV];
    rows_load_regs<NV>(v, x, a, cols, group, ROWS_NEG_INF);
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < NV; k++)
        m = fmaxf(m, rows_max8(v[k]));
    /* a thread with no element of the row (m = -inf) keeps s = 0 and stores nothing */
    const float ml = m == -INFINITY ? 0.0f : m * ROWS_LOG2E;
    float p[NV][8], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        float f[8];
        rows_unpack8(v[k], f);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            p[k][e] = exp2f(fmaf(f[e], ROWS_LOG2E, -ml)); /* the -inf fill gives 0 */
            s += p[k][e];
        }
    }
    float big = m, total = s;
    rows_group_softmax(&big, &total, group, red);
    if (!a.live)
        return;
    const float scale = exp2f(ml - big * ROWS_LOG2E) / total;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group;
        if (j < nvec) {
#pragma unroll
            for (int e = 0; e < 8; e++)
                p[k][e] *= scale;
            rows_store8(y + base, 8 * j - lead, cols, rows_pack8(p[k]));
        }
    }
}

/* Rows longer than the registers hold: a block per row; the online recurrence over the thread's vectors, the
 * merge, then a second read of the row for the output. */
__global__ void __launch_bounds__(PL_ROWS_MAX_GROUP)
    softmax_looped_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int cols)
{
    __shared__ float2 red[32];
    const size_t base = (size_t)blockIdx.x * cols;
    const int lead = rows_lead(x + base), nvec = (lead + cols + 7) >> 3;
    float m = -INFINITY, s = 0.0f;
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x) {
        const uint4 v = rows_load8(x + base, 8 * j - lead, cols, ROWS_NEG_INF);
        const float vm = rows_max8(v); /* every vector of the row holds at least one of its elements */
        if (vm > m) {
            s *= exp2f((m - vm) * ROWS_LOG2E); /* 0 while m is still -inf */
            m = vm;
        }
        float f[8];
        rows_unpack8(v, f);
#pragma unroll
        for (int e = 0; e < 8; e++)
            s += exp2f((f[e] - m) * ROWS_LOG2E);
    }
    rows_group_softmax(&m, &s, (int)blockDim.x, red);
    const float ml = m * ROWS_LOG2E, inv = 1.0f / s;
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x) {
        const int c0 = 8 * j - lead;
        float f[8];
        rows_unpack8(rows_load8(x + base, c0, cols, ROWS_NEG_INF), f);
#pragma unroll
        for (int e = 0; e < 8; e++)
            f[e] = exp2f(fmaf(f[e], ROWS_LOG2E, -ml)) * inv;
        rows_store8(y + base, c0, cols, rows_pack8(f));
    }
}

extern "C" cudaError_t pl_softmax_online(const uint16_t *x, uint16_t *y, int rows, int cols, int nv,
                                         cudaStream_t stream)
{
    pl_rows_shape sh;
    if (pl_rows_launch_shape(x, y, rows, cols, nv, PL_SOFTMAX_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    switch (sh.nv) {
    case 1: softmax_regs_kernel<1><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 2: softmax_regs_kernel<2><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 4: softmax_regs_kernel<4><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    default: softmax_looped_kernel<<<(unsigned)rows, PL_ROWS_MAX_GROUP, 0, stream>>>(x, y, cols); break;
    }
    return cudaGetLastError();
}
