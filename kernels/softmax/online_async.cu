/* softmax, version 3 — fused online softmax with the row staged in shared memory by cp.async (a second optimized
 * variant of softmax:rows).
 *
 * Technique: asynchronous global-to-shared copies (cp.async, sm_80+). online.cu keeps the row and its
 * exponentials in registers: 48 registers per thread, 5 blocks of 256 per SM, 80 KB of the rows in flight, none
 * while a block reduces. Here each thread copies its vectors straight into shared memory (cp.async.cg: no
 * registers, L1 bypassed), waits for its own copies and reads them back: 32 registers, 8 blocks per SM, 128 KB
 * in flight. The thread's (max, sum of exp) runs the online recurrence vector by vector over its slots (one exp
 * per element), the group merges the pairs in one reduction as online.cu does, and the output pass reads the
 * slots again and recomputes exp(x - M) (a second exp per element: the special-function units have the time,
 * the registers do not). Rows too long for the shape's limit go to online.cu's looped kernel. */
#include "common/rows.cuh"
#include "softmax/softmax_kernels.h"

/* 32 registers: 8 blocks of 256 threads per SM, the most an SM holds (2048 threads). */
template <int NV>
__global__ void __maxnreg__(32)
    softmax_async_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int rows, int cols, int group)
{
    extern __shared__ uint4 stage[];
    __shared__ float2 red[32];
    const rows_group g = rows_group_of(group);
    const bool live = g.row < (size_t)rows; /* idle groups still take part in the block's barriers */
    const size_t base = (live ? g.row : 0) * (size_t)cols;
    const int lead = rows_lead(x + base), nvec = (lead + cols + 7) >> 3;
    uint4 *row = stage + (size_t)(threadIdx.x / (unsigned)group) * NV * group; /* row[j] = vector j */
    rows_stage<NV>(row, x + base, lead, cols, nvec, g.t, group, live, ROWS_NEG_INF);
    float m = -INFINITY, s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group;
        if (!live || j >= nvec)
            continue;
        float f[8];
        rows_unpack8(row[j], f);
        float vm = -INFINITY;
#pragma unroll
        for (int e = 0; e < 8; e++)
            vm = fmaxf(vm, f[e]); /* every vector of the row holds at least one of its elements */
        if (vm > m) {
            s *= exp2f((m - vm) * ROWS_LOG2E); /* 0 while m is still -inf */
            m = vm;
        }
        const float ml = m * ROWS_LOG2E;
#pragma unroll
        for (int e = 0; e < 8; e++)
            s += exp2f(fmaf(f[e], ROWS_LOG2E, -ml)); /* the -inf fill gives 0 */
    }
    rows_group_softmax(&m, &s, group, red);
    if (!live)
        return;
    const float ml = m * ROWS_LOG2E, inv = 1.0f / s;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group;
        if (j >= nvec)
            continue;
        float f[8];
        rows_unpack8(row[j], f);
#pragma unroll
        for (int e = 0; e < 8; e++)
            f[e] = exp2f(fmaf(f[e], ROWS_LOG2E, -ml)) * inv;
        rows_store8(y + base, 8 * j - lead, cols, rows_pack8(f));
    }
}

template <int NV>
static cudaError_t softmax_async_launch(const uint16_t *x, uint16_t *y, int rows, int cols, const pl_rows_shape *sh,
                                        cudaStream_t stream)
{
    const size_t smem = (size_t)sh->threads * NV * sizeof(uint4);
    if (smem > 48 * 1024) { /* beyond the default: ask for it (large groups) */
        cudaError_t err =
            cudaFuncSetAttribute(softmax_async_kernel<NV>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess)
            return err;
    }
    softmax_async_kernel<NV><<<sh->blocks, sh->threads, smem, stream>>>(x, y, rows, cols, sh->group);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_softmax_online_async(const uint16_t *x, uint16_t *y, int rows, int cols, int nv,
                                               cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!x || !y || (((uintptr_t)x ^ (uintptr_t)y) & 15u) != 0 || ((uintptr_t)x & 1u) != 0 ||
        pl_rows_pick_shape(rows, cols, pl_rows_aligned(x, cols), nv, PL_SOFTMAX_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    switch (sh.nv) {
    case 1: return softmax_async_launch<1>(x, y, rows, cols, &sh, stream);
    case 2: return softmax_async_launch<2>(x, y, rows, cols, &sh, stream);
    case 4: return softmax_async_launch<4>(x, y, rows, cols, &sh, stream);
    default: return pl_softmax_online(x, y, rows, cols, nv, stream); /* the looped kernel */
    }
}
