/* norm, version 4 — LayerNorm's fused pass with one reduction: the moments about a shift (a third optimized variant
 * of norm:layernorm).
 *
 * Technique: fused.cu's register two-pass reduces twice across the row's threads (the mean, then the squared
 * deviations from it), and the second reduction cannot start before the first has finished: for a block of 256
 * threads two chains of shuffles and four barriers during which the block has none of its loads in flight.
 * Here each thread sums, in one pass over its registers, x and (x - k)^2 for a shift k that every thread knows
 * without a reduction (the row's first element, one broadcast load beside the row's loads), and the group reduces
 * the pair S1 = sum (x - k), S2 = sum (x - k)^2 once: mean = k + S1 / n, var = S2 / n - (S1 / n)^2. That is the E[x^2]
 * - E[x]^2 formula about k instead of about 0, so its cancellation is bounded by how far the mean lies from k, not by
 * how far it lies from zero: k is an element of the row, so (mean - k)^2 <= (n - 1) var, and for data whose spread is
 * comparable to its offset (mean - k)^2 ~ var: the relative error of var is the sums' few fp32 ulps times (1 + (mean -
 * k)^2 / var), ~1e-6 in a typical row; the adversarial row (k a lone outlier that carries all the variance) loses
 * about log2(n) of var's 24 bits: 1e-3 relative (5e-4 on 1/std) for 8192 N(0, 1) values after a lone 300 at k, in
 * a float32 emulation of this summation order, under bf16's 2^-9 output rounding; rows offset far from zero (mean
 * 100 or 1000) stay near 5e-8, where E[x^2] - E[x]^2 about zero loses 3e-5 to 8e-5. The elements of the
 * thread's vectors that lie outside the row hold 0: each added -k to S1 and k^2 to S2, removed in one step (no
 * per-element mask). With one reduction and no mask the kernel fits 48 registers without spills (63 uncapped):
 * 5 blocks of 256 threads per SM instead of fused.cu's 4, 80 KB of loads in flight instead of 64. Everything else
 * — the group shapes (common/rows.h), the output arithmetic (norm_rows.cuh), the edge vectors — is fused.cu's; rows
 * too long for the registers take fused.cu's looped kernel (Welford). */
#include "norm/norm_kernels.h"
#include "norm/norm_rows.cuh"

/* The elements of the vector at c0 that lie in the row [0, cols). */
__device__ __forceinline__ int in_row8(int c0, int cols)
{
    const int lo = c0 > 0 ? c0 : 0, hi = c0 + 8 < cols ? c0 + 8 : cols;
    return hi > lo ? hi - lo : 0;
}

/* 48 registers up to 4 vectors per thread (measured on an H200 at 16384 x 8192, docs/perf/norm.md run 3: 138.8 us
 * against 148.8 uncapped at 63 registers and 142.2 at 40 with 16 bytes of spills); 64 at 8 vectors, which fits
 * blocks of 1024 threads. */
template <int NV>
__global__ void __maxnreg__(NV > 4 ? 64 : 48)
    layernorm_shifted_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                             const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int rows, int cols, float eps,
                             int group)
{
    __shared__ float2 red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    uint4 v[NV];
    rows_load_regs<NV>(v, x, a, cols, group, 0);
    const float k = rows_bf16(x[a.base]); /* the shift: the row's first element (one L1 line for the whole group) */
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
    if (!a.live)
        return;
    const float inv_n = 1.0f / (float)cols, dk = t.x * inv_n, mean = k + dk;
    const float rstd = rsqrtf(fmaxf(fmaf(-dk, dk, t.y * inv_n), 0.0f) + eps);
#pragma unroll
    for (int q = 0; q < NV; q++) {
        const int j = a.g.t + q * group, c0 = 8 * j - a.lead;
        if (j < a.nvec)
            rows_store8(y + a.base, c0, cols,
                        ln_apply8(v[q], rows_load8(w, c0, cols, 0), rows_load8(b, c0, cols, 0), mean, rstd));
    }
}

extern "C" cudaError_t pl_layernorm_shifted(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                            int rows, int cols, float eps, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!w || !b || pl_rows_launch_shape(x, y, rows, cols, nv, PL_NORM_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    const int gr = sh.group;
    switch (sh.nv) {
    case 1: layernorm_shifted_kernel<1><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 2: layernorm_shifted_kernel<2><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 4: layernorm_shifted_kernel<4><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 8: layernorm_shifted_kernel<8><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    default: return pl_layernorm_fused(x, w, b, y, rows, cols, eps, nv, stream); /* the looped kernel */
    }
    return cudaGetLastError();
}
