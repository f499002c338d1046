/* norm, version 4 — LayerNorm's fused pass with one reduction: the moments about a shift (a third optimized variant
 * of norm:layernorm).
 *
 * Technique: fused.cu's register two-pass reduces twice across the row's threads (the mean, then the squared
 * deviations from it), and the second reduction cannot start before the first has finished: for a block of 256
 * threads two chains of shuffles and four barriers during which the block has none of its loads in flight.
 * Here each thread sums, in one pass over its registers, x and (x - k)^2 for a shift k that every thread knows
 * without a reduction (the row's first element, one broadcast load beside the row's loads), and the group reduces
 * the pair S1 = sum (x - k), S2 = sum (x - k)^2 once: mean = k + S1 / n, var = S2 / n - (S1 / n)^2. That is the E[x^2] - E[x]^2 formula about k instead
 * of about 0, so its cancellation is bounded by how far the mean lies from k, not by how far it lies from zero: k
 * is an element of the row, so (mean - k)^2 <= (n - 1) var, and for data whose spread is comparable to its
 * offset (mean - k)^2 ~ var: the relative error of var is the sums' few fp32 ulps times (1 + (mean - k)^2 / var),
 * ~1e-6 in a typical row; the adversarial row (k a lone outlier that carries all the variance) loses log2(n) of
 * var's 24 bits, ~2^-11 relative at n = 8192, still under bf16's 2^-9 output rounding. The elements of the
 * thread's vectors that lie outside the row hold 0: each added -k to S1 and k^2 to S2, removed in one step (no
 * per-element mask). Everything else — the group shapes (common/rows.h), the
 * output arithmetic (norm_rows.cuh), the edge vectors — is fused.cu's; rows too long for the registers take
 * fused.cu's looped kernel (Welford). */
#include "norm/norm_kernels.h"
#include "norm/norm_rows.cuh"

/* One row: the shifted statistics of the thread's registers with their one reduction, then the output. Every
 * thread of the block calls it (the reduction's barriers); an idle group (a.live false) stores nothing. */
template <int NV>
__device__ __forceinline__ void shifted_row(const uint4 (&v)[NV], const rows_at &a, float k,
                                            const uint16_t *__restrict__ w, const uint16_t *__restrict__ b,
                                            uint16_t *__restrict__ y, int cols, float eps, int group, float2 *red)
{
    const float2 st = ln_shifted_stats<NV>(v, a, k, cols, eps, group, red);
    if (a.live)
        ln_store_row<NV>(v, a, w, b, y, cols, st.x, st.y, group);
}

/* RPB consecutive rows per group; the next row's loads are issued before this row's reduction, so that a block
 * that reduces still has a row of loads in flight. */
template <int NV, int RPB, int REGS>
__global__ void __maxnreg__(REGS)
    layernorm_shifted_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                             const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int rows, int cols, float eps,
                             int group)
{
    __shared__ float2 red[32];
    const rows_group g = rows_group_of(group);
    const size_t first = g.row * RPB;
    uint4 v[RPB > 1 ? 2 : 1][NV];
    rows_at a = rows_at_row(x, rows, cols, g.t, first);
    rows_load_regs<NV>(v[0], x, a, cols, group, 0);
    float k = rows_bf16(x[a.base]); /* the shift: the row's first element (one L1 line for the whole group) */
#pragma unroll
    for (int i = 0; i < RPB; i++) {
        rows_at an = a;
        float kn = k;
        if (i + 1 < RPB) {
            an = rows_at_row(x, rows, cols, g.t, first + i + 1);
            rows_load_regs<NV>(v[(i + 1) & 1], x, an, cols, group, 0);
            kn = rows_bf16(x[an.base]);
        }
        shifted_row<NV>(v[i & 1], a, k, w, b, y, cols, eps, group, red);
        a = an;
        k = kn;
    }
}

/* ---- launchers ---- */

template <int RPB, int REGS>
static cudaError_t layernorm_shifted_launch(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                            int rows, int cols, float eps, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!x || !y || !w || !b || (((uintptr_t)x ^ (uintptr_t)y) & 15u) != 0 || ((uintptr_t)x & 1u) != 0 ||
        pl_rows_pick_shape(rows, cols, pl_rows_aligned(x, cols), nv, PL_NORM_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    const int gr = sh.group;
    const unsigned blocks = (unsigned)(((size_t)rows + (size_t)sh.rows_per_block * RPB - 1) / ((size_t)sh.rows_per_block * RPB));
    switch (sh.nv) {
    case 1: layernorm_shifted_kernel<1, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 2: layernorm_shifted_kernel<2, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 4: layernorm_shifted_kernel<4, RPB, REGS><<<blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 8: layernorm_shifted_kernel<8, RPB, 64><<<blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    default: return pl_layernorm_fused(x, w, b, y, rows, cols, eps, nv, stream); /* the looped kernel */
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pl_layernorm_shifted(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                            int rows, int cols, float eps, int nv, cudaStream_t stream)
{
    return layernorm_shifted_launch<1, 64>(x, w, b, y, rows, cols, eps, nv, stream);
}

/* EXPERIMENT (wave A only): register caps and rows per group */
extern "C" cudaError_t pl_layernorm_shifted_cap(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                                int rows, int cols, float eps, int nv, int regs, int rpb,
                                                cudaStream_t stream)
{
    if (rpb == 2)
        return regs == 64 ? layernorm_shifted_launch<2, 64>(x, w, b, y, rows, cols, eps, nv, stream)
                          : layernorm_shifted_launch<2, 80>(x, w, b, y, rows, cols, eps, nv, stream);
    switch (regs) {
    case 40: return layernorm_shifted_launch<1, 40>(x, w, b, y, rows, cols, eps, nv, stream);
    case 48: return layernorm_shifted_launch<1, 48>(x, w, b, y, rows, cols, eps, nv, stream);
    default: return layernorm_shifted_launch<1, 64>(x, w, b, y, rows, cols, eps, nv, stream);
    }
}
