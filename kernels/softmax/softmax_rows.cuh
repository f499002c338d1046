/* The arithmetic of the ex2 softmax versions on a row held in registers (online_ex2.cu: loaded by the threads,
 * online_tma.cu: copied into shared memory by TMA first), so that both compute exactly the same function. */
#ifndef PERFLAB_SOFTMAX_ROWS_CUH
#define PERFLAB_SOFTMAX_ROWS_CUH

#include "common/rows.cuh"

/* The largest of this thread's elements, by packed bf16 pairs. */
template <int NV> __device__ __forceinline__ float max_packed(const uint4 (&v)[NV])
{
    uint32_t m = v[0].x;
#pragma unroll
    for (int k = 0; k < NV; k++)
        m = rows_max2(rows_max2(m, v[k].x), rows_max2(rows_max2(v[k].y, v[k].z), v[k].w));
    return fmaxf(rows_bf16_lo(m), rows_bf16_hi(m));
}

/* log2(e^M S) of the row whose vectors t + k * group the threads of the group hold in v (-inf outside the row): M
 * its maximum, S = sum e^(x - M). Each thread's exponentials about its own maximum (one FFMA and one MUFU.EX2 per
 * element), then one (max, sum) reduction over the group. Every thread of the group calls it (its barriers). */
template <int NV> __device__ __forceinline__ float ex2_offset(const uint4 (&v)[NV], int group, float2 *red)
{
    const float m = max_packed<NV>(v);
    /* a thread with no element of the row (m = -inf) keeps s = 0 */
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
    return fmaf(big, ROWS_LOG2E, rows_lg2(total));
}

/* The row's softmax from the registers, each term recomputed as 2^(x log2(e) - off): 16-byte stores. */
template <int NV>
__device__ __forceinline__ void ex2_store_row(const uint4 (&v)[NV], const rows_at &a, uint16_t *__restrict__ y,
                                              int cols, float off, int group)
{
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

/* One row from the thread's registers: the exponentials about its own maximum, the one (max, sum) reduction, the
 * output. Every thread of the block calls it (the reduction's barriers); an idle group stores nothing.
 * KEEP (an experiment of run 3): the exponentials kept in fp32 registers and scaled instead of recomputed. */
template <int NV, int KEEP>
__device__ __forceinline__ void ex2_row(const uint4 (&v)[NV], const rows_at &a, uint16_t *__restrict__ y, int cols,
                                        int group, float2 *red)
{
    if (!KEEP) {
        const float off = ex2_offset<NV>(v, group, red);
        if (a.live)
            ex2_store_row<NV>(v, a, y, cols, off, group);
        return;
    }
    const float m = max_packed<NV>(v);
    /* a thread with no element of the row (m = -inf) keeps s = 0 and stores nothing */
    const float ml = m == -INFINITY ? 0.0f : m * ROWS_LOG2E;
    float p[KEEP ? NV : 1][8], s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        float f[8];
        rows_unpack8(v[k], f);
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const float q = rows_ex2(fmaf(f[e], ROWS_LOG2E, -ml)); /* the -inf fill gives 0 */
            s += q;
            if (KEEP)
                p[KEEP ? k : 0][e] = q;
        }
    }
    float big = m, total = s;
    rows_group_softmax(&big, &total, group, red);
    if (!a.live)
        return;
    const float off = fmaf(big, ROWS_LOG2E, rows_lg2(total)); /* log2(e^M S) */
    const float scale = KEEP ? rows_ex2(ml - off) : 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = a.g.t + k * group;
        if (j < a.nvec) {
            float f[8];
            rows_unpack8(v[k], f);
#pragma unroll
            for (int e = 0; e < 8; e++)
                f[e] = KEEP ? p[KEEP ? k : 0][e] * scale : rows_ex2(fmaf(f[e], ROWS_LOG2E, -off));
            rows_store8(y + a.base, 8 * j - a.lead, cols, rows_pack8(f));
        }
    }
}

#endif
