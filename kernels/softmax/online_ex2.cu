/* softmax, version 3 — online_fused's pass with the arithmetic cut to what the special-function unit does in one
 * instruction, and the exponentials recomputed instead of kept (the second optimized variant of softmax:rows).
 *
 * Technique: online.cu keeps each thread's 32 exponentials as fp32 between its reduction and its output, so it
 * needs ~64 registers (capped at 48 with spills: 5 blocks of 256 per SM), and its exp2f adds range scaling around
 * each MUFU.EX2. Here:
 *   - the exponent is one FFMA and one ex2.approx.ftz: x log2(e) - m log2(e), log2(e) folded into the scale
 *     (common/rows.cuh rows_ex2; a term below 2^-126 flushes to 0, which bf16 would round it to anyway);
 *   - the thread's maximum is taken on the packed bf16 pairs (HMNMX2: exact, 4 instructions per 8 elements);
 *   - nothing but the row's 16 bf16 registers lives across the reduction: the output recomputes each term as
 *     2^(x log2(e) - (M log2(e) + log2 S)), one FFMA and one MUFU.EX2 from the raw x, so the division by S is folded
 *     into the exponent too. Two exponentials per element (2 x 134M MUFU ops at 16 per SM per clock: ~64 us of
 *     the special-function pipe, under the ~135 us of memory time) buy a kernel of 40 registers without spills:
 *     6 blocks of 256 per SM, 96 KB of loads in flight against online.cu's 80 KB.
 * Measured on an H200 at 16384 x 8192 (docs/perf/softmax.md, run 3): 137.3 us against online.cu's 145.2 in the
 * same run; keeping the exponentials (ex2 and the packed maximum only, 48 registers) gave 138.7, so the
 * instructions saved, more than the sixth block, are what counts.
 * Same group shapes (common/rows.h), the same single (max, sum) reduction, -inf filled edge vectors; rows too long
 * for the registers take online.cu's looped kernel. */
#include "common/rows.cuh"
#include "softmax/softmax_kernels.h"

/* The largest of this thread's elements, by packed bf16 pairs. */
template <int NV> __device__ __forceinline__ float max_packed(const uint4 (&v)[NV])
{
    uint32_t m = v[0].x;
#pragma unroll
    for (int k = 0; k < NV; k++)
        m = rows_max2(rows_max2(m, v[k].x), rows_max2(rows_max2(v[k].y, v[k].z), v[k].w));
    return fmaxf(rows_bf16_lo(m), rows_bf16_hi(m));
}

/* 40 registers: 6 blocks of 256 threads per SM, no spills (32 spills 52 bytes and measured 182.7 us). */
template <int NV>
__global__ void __maxnreg__(40)
    softmax_ex2_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int rows, int cols, int group)
{
    __shared__ float2 red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    uint4 v[NV];
    rows_load_regs<NV>(v, x, a, cols, group, ROWS_NEG_INF);
    const float m = max_packed<NV>(v);
    /* a thread with no element of the row (m = -inf) keeps s = 0 and stores nothing */
    const float ml = m == -INFINITY ? 0.0f : m * ROWS_LOG2E;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        float f[8];
        rows_unpack8(v[k], f);
#pragma unroll
        for (int e = 0; e < 8; e++)
            s += rows_ex2(fmaf(f[e], ROWS_LOG2E, -ml)); /* the -inf fill gives 0 */
    }
    float big = m, total = s;
    rows_group_softmax(&big, &total, group, red);
    if (!a.live)
        return;
    const float off = fmaf(big, ROWS_LOG2E, rows_lg2(total)); /* log2(e^M S): y = 2^(x log2(e) - off) */
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = a.g.t + k * group;
        if (j < a.nvec) {
            float f[8];
            rows_unpack8(v[k], f);
#pragma unroll
            for (int e = 0; e < 8; e++)
                f[e] = rows_ex2(fmaf(f[e], ROWS_LOG2E, -off));
            rows_store8(y + a.base, 8 * j - a.lead, cols, rows_pack8(f));
        }
    }
}

extern "C" cudaError_t pl_softmax_online_ex2(const uint16_t *x, uint16_t *y, int rows, int cols, int nv,
                                             cudaStream_t stream)
{
    pl_rows_shape sh;
    if (pl_rows_launch_shape(x, y, rows, cols, nv, PL_SOFTMAX_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    switch (sh.nv) {
    case 1: softmax_ex2_kernel<1><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 2: softmax_ex2_kernel<2><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 4: softmax_ex2_kernel<4><<<sh.blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    default: return pl_softmax_online(x, y, rows, cols, nv, stream); /* the looped kernel */
    }
    return cudaGetLastError();
}
