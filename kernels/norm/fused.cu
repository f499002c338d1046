/* norm, version 2 — one fused pass per row (the optimized variant of norm:rmsnorm and norm:layernorm).
 *
 * Technique: one kernel reads each row once and writes it once. The row belongs to a group of threads sized by
 * its length (common/rows.h: part of a warp for short rows, a warp up to 1024 columns, a block beyond), each
 * thread holds NV 16-byte vectors of it in registers (x leaves HBM once), the statistics are reduced by warp
 * shuffles (plus one shared-memory exchange when several warps share the row), and the normalized row is
 * written from the registers with 16-byte stores. Rows that do not start 16-byte aligned (cols % 8 != 0) are
 * handled with element-wise edge vectors (common/rows.cuh). LayerNorm takes its variance as a register two-pass:
 * the mean first, then the sum of (x - mean)^2 from the registers, no cancellation of E[x^2] - E[x]^2.
 * Rows too long for the registers of 1024 threads (more than 1024 * NV_MAX vectors) take the looped kernels:
 * the statistics in one pass over the row (LayerNorm's by Welford/Chan merging), the output in a second pass
 * that reads the row again (mostly from L2). */
#include "norm/norm_kernels.h"
#include "norm/norm_rows.cuh"

/* ---- the row in registers: NV vectors per thread, `group` threads per row ---- */

template <int NV>
__global__ void __launch_bounds__(PL_ROWS_MAX_GROUP)
    rmsnorm_regs_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, uint16_t *__restrict__ y,
                        int rows, int cols, float eps, int group)
{
    __shared__ float red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    const rows_group g = a.g;
    const size_t base = a.base;
    const int lead = a.lead, nvec = a.nvec;
    uint4 v[NV];
    rows_load_regs<NV>(v, x, a, cols, group, 0);
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        ss += sumsq8(v[k]); /* the zero fill adds nothing */
    ss = rows_group_sum(ss, group, red);
    if (!a.live)
        return;
    const float r = rsqrtf(ss / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group, c0 = 8 * j - lead;
        if (j < nvec)
            rows_store8(y + base, c0, cols, rms_apply8(v[k], rows_load8(w, c0, cols, 0), r));
    }
}

/* The compiler's own register choice (64 at 4 vectors: 4 blocks of 256 per SM). A 48-register cap (5 blocks) was
 * measured slower on an H200: 164 against 160 us at 16384 x 8192, its 48 bytes of spills cost more than the fifth
 * block gained (docs/perf/norm.md, run 2). */
template <int NV>
__global__ void __launch_bounds__(PL_ROWS_MAX_GROUP)
    layernorm_regs_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                          const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int rows, int cols, float eps,
                          int group)
{
    __shared__ float red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    const rows_group g = a.g;
    const size_t base = a.base;
    const int lead = a.lead, nvec = a.nvec;
    uint4 v[NV];
    rows_load_regs<NV>(v, x, a, cols, group, 0);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        s += sum8(v[k]);
    const float mean = rows_group_sum(s, group, red) / (float)cols;
    float d = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        d += sqdev8(v[k], mean, 8 * (g.t + k * group) - lead, cols); /* vectors past the row lie past cols */
    const float var = rows_group_sum(d, group, red) / (float)cols;
    if (!a.live)
        return;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group, c0 = 8 * j - lead;
        if (j < nvec)
            rows_store8(y + base, c0, cols,
                        ln_apply8(v[k], rows_load8(w, c0, cols, 0), rows_load8(b, c0, cols, 0), mean, rstd));
    }
}

/* ---- rows longer than the registers hold: a block per row, two passes over it ---- */

__global__ void __launch_bounds__(PL_ROWS_MAX_GROUP)
    rmsnorm_looped_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w, uint16_t *__restrict__ y,
                          int cols, float eps)
{
    __shared__ float red[32];
    const size_t base = (size_t)blockIdx.x * cols;
    const int lead = rows_lead(x + base), nvec = (lead + cols + 7) >> 3;
    float ss = 0.0f;
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x)
        ss += sumsq8(rows_load8(x + base, 8 * j - lead, cols, 0));
    const float r = rsqrtf(rows_group_sum(ss, (int)blockDim.x, red) / (float)cols + eps);
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x) {
        const int c0 = 8 * j - lead;
        rows_store8(y + base, c0, cols, rms_apply8(rows_load8(x + base, c0, cols, 0), rows_load8(w, c0, cols, 0), r));
    }
}

__global__ void __launch_bounds__(PL_ROWS_MAX_GROUP)
    layernorm_looped_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                            const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int cols, float eps)
{
    __shared__ float4 red[32];
    const size_t base = (size_t)blockIdx.x * cols;
    const int lead = rows_lead(x + base), nvec = (lead + cols + 7) >> 3;
    rows_moments m = {0.0f, 0.0f, 0.0f};
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x) {
        const int c0 = 8 * j - lead;
        m = rows_moments_merge(m, moments8(rows_load8(x + base, c0, cols, 0), c0, cols));
    }
    m = rows_group_moments(m, (int)blockDim.x, red);
    const float rstd = rsqrtf(m.m2 / (float)cols + eps);
    for (int j = (int)threadIdx.x; j < nvec; j += (int)blockDim.x) {
        const int c0 = 8 * j - lead;
        rows_store8(y + base, c0, cols,
                    ln_apply8(rows_load8(x + base, c0, cols, 0), rows_load8(w, c0, cols, 0), rows_load8(b, c0, cols, 0),
                              m.mean, rstd));
    }
}

/* ---- launchers ---- */

extern "C" cudaError_t pl_rmsnorm_fused(const uint16_t *x, const uint16_t *w, uint16_t *y, int rows, int cols,
                                        float eps, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!w || pl_rows_launch_shape(x, y, rows, cols, nv, PL_NORM_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    switch (sh.nv) {
    case 1: rmsnorm_regs_kernel<1><<<sh.blocks, sh.threads, 0, stream>>>(x, w, y, rows, cols, eps, sh.group); break;
    case 2: rmsnorm_regs_kernel<2><<<sh.blocks, sh.threads, 0, stream>>>(x, w, y, rows, cols, eps, sh.group); break;
    case 4: rmsnorm_regs_kernel<4><<<sh.blocks, sh.threads, 0, stream>>>(x, w, y, rows, cols, eps, sh.group); break;
    case 8: rmsnorm_regs_kernel<8><<<sh.blocks, sh.threads, 0, stream>>>(x, w, y, rows, cols, eps, sh.group); break;
    default: rmsnorm_looped_kernel<<<(unsigned)rows, PL_ROWS_MAX_GROUP, 0, stream>>>(x, w, y, cols, eps); break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t pl_layernorm_fused(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                          int rows, int cols, float eps, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    if (!w || !b || pl_rows_launch_shape(x, y, rows, cols, nv, PL_NORM_NV_MAX, &sh) != 0)
        return cudaErrorInvalidValue;
    const int gr = sh.group;
    switch (sh.nv) {
    case 1: layernorm_regs_kernel<1><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 2: layernorm_regs_kernel<2><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 4: layernorm_regs_kernel<4><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    case 8: layernorm_regs_kernel<8><<<sh.blocks, sh.threads, 0, stream>>>(x, w, b, y, rows, cols, eps, gr); break;
    default: layernorm_looped_kernel<<<(unsigned)rows, PL_ROWS_MAX_GROUP, 0, stream>>>(x, w, b, y, cols, eps); break;
    }
    return cudaGetLastError();
}
