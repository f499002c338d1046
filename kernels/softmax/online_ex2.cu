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
 *     the special-function pipe, under the ~135 us of memory time) buy a kernel of ~32-40 registers: 6-8 blocks
 *     of 256 per SM, 96-128 KB of loads in flight against online.cu's 80 KB.
 * Same group shapes (common/rows.h), the same single (max, sum) reduction, -inf filled edge vectors; rows too long
 * for the registers take online.cu's looped kernel. */
#include "softmax/softmax_kernels.h"
#include "softmax/softmax_rows.cuh"

/* RPB consecutive rows per group; the next row's loads are issued before this row's reduction. */
template <int NV, int KEEP, int RPB, int REGS>
__global__ void __maxnreg__(REGS)
    softmax_ex2_kernel(const uint16_t *__restrict__ x, uint16_t *__restrict__ y, int rows, int cols, int group)
{
    __shared__ float2 red[32];
    const rows_group g = rows_group_of(group);
    const size_t first = g.row * RPB;
    uint4 v[RPB > 1 ? 2 : 1][NV];
    rows_at a = rows_at_row(x, rows, cols, g.t, first);
    rows_load_regs<NV>(v[0], x, a, cols, group, ROWS_NEG_INF);
#pragma unroll
    for (int i = 0; i < RPB; i++) {
        rows_at an = a;
        if (i + 1 < RPB) {
            an = rows_at_row(x, rows, cols, g.t, first + i + 1);
            rows_load_regs<NV>(v[(i + 1) & 1], x, an, cols, group, ROWS_NEG_INF);
        }
        ex2_row<NV, KEEP>(v[i & 1], a, y, cols, group, red);
        a = an;
    }
}

/* ---- launchers ---- */

template <int KEEP, int RPB, int REGS>
static cudaError_t softmax_ex2_launch(const uint16_t *x, uint16_t *y, int rows, int cols, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!x || !y || (((uintptr_t)x ^ (uintptr_t)y) & 15u) != 0 || ((uintptr_t)x & 1u) != 0 ||
        pl_rows_pick_shape(rows, cols, pl_rows_aligned(x, cols), nv, PL_SOFTMAX_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    const size_t per = (size_t)sh.rows_per_block * RPB;
    const unsigned blocks = (unsigned)(((size_t)rows + per - 1) / per);
    switch (sh.nv) {
    case 1: softmax_ex2_kernel<1, KEEP, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 2: softmax_ex2_kernel<2, KEEP, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    case 4: softmax_ex2_kernel<4, KEEP, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, y, rows, cols, sh.group); break;
    default: return pl_softmax_online(x, y, rows, cols, nv, stream); /* the looped kernel */
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pl_softmax_online_ex2(const uint16_t *x, uint16_t *y, int rows, int cols, int nv,
                                             cudaStream_t stream)
{
    return softmax_ex2_launch<0, 1, 40>(x, y, rows, cols, nv, stream);
}

/* EXPERIMENT (wave A only) */
extern "C" cudaError_t pl_softmax_ex2_cap(const uint16_t *x, uint16_t *y, int rows, int cols, int nv, int keep,
                                          int regs, int rpb, cudaStream_t stream)
{
    if (rpb == 2)
        return regs == 48 ? softmax_ex2_launch<0, 2, 48>(x, y, rows, cols, nv, stream)
                          : softmax_ex2_launch<0, 2, 64>(x, y, rows, cols, nv, stream);
    if (keep)
        return regs == 40 ? softmax_ex2_launch<1, 1, 40>(x, y, rows, cols, nv, stream)
                          : softmax_ex2_launch<1, 1, 48>(x, y, rows, cols, nv, stream);
    return regs == 32 ? softmax_ex2_launch<0, 1, 32>(x, y, rows, cols, nv, stream)
                      : softmax_ex2_launch<0, 1, 40>(x, y, rows, cols, nv, stream);
}
