/* norm, version 3 — LayerNorm's fused pass with the row staged in shared memory by cp.async (a second optimized
 * variant of norm:layernorm).
 *
 * Technique: asynchronous global-to-shared copies (cp.async, sm_80+). fused.cu holds the row in registers, so the
 * bytes a block has in flight are bounded by registers: 64 registers x 256 threads fit 4 blocks on an SM, 64 KB
 * of loads, and while a block reduces (LayerNorm: twice) it has none in flight. Here each thread copies its
 * vectors of the row straight into shared memory (cp.async.cg: no registers, L1 bypassed), waits for its own
 * copies, and reads them back for the mean, the variance and the output: the kernel needs 32 registers, so 8
 * blocks of 256 (128 KB of rows) fit an SM by registers and shared memory. Same group shapes (common/rows.h),
 * same arithmetic (norm_rows.cuh), same edge handling as fused.cu; rows too long for the shape's limit take
 * fused.cu's looped kernel.
 *
 * Measured on an H200 at 16384 x 8192 (docs/perf/norm.md, run 2): 149.9 us against the register version's 160.2,
 * 85.8% of cudaMemcpy. The same staging applied to RMSNorm (150-154 us against the register version's 136) and
 * to softmax (163 against 150.5) was slower and was removed: staging through shared memory seems to have a ceiling
 * of its own near 150 us here, which only LayerNorm's register version sat above (the cause is not established:
 * the shared-memory carveout, the achieved occupancy and the LDGSTS path are the candidates, for ncu). */
#include "norm/norm_kernels.h"
#include "norm/norm_rows.cuh"

/* 32 registers up to 4 vectors per thread: 8 blocks of 256 threads per SM, the most an SM holds (2048 threads);
 * 40 at 8 (the addresses of 8 vectors do not fit in 32 without spilling). */
template <int NV>
__global__ void __maxnreg__(NV > 4 ? 40 : 32)
    layernorm_async_kernel(const uint16_t *__restrict__ x, const uint16_t *__restrict__ w,
                           const uint16_t *__restrict__ b, uint16_t *__restrict__ y, int rows, int cols, float eps,
                           int group)
{
    extern __shared__ uint4 stage[];
    __shared__ float red[32];
    const rows_at a = rows_at_of(x, rows, cols, group);
    const rows_group g = a.g;
    const bool live = a.live;
    const size_t base = a.base;
    const int lead = a.lead, nvec = a.nvec;
    uint4 *row = stage + (size_t)(threadIdx.x / (unsigned)group) * NV * group;
    rows_stage<NV>(row, x + base, lead, cols, nvec, g.t, group, live, 0);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group;
        if (live && j < nvec)
            s += sum8(row[j]);
    }
    const float mean = rows_group_sum(s, group, red) / (float)cols;
    float d = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group;
        if (live && j < nvec)
            d += sqdev8(row[j], mean, 8 * j - lead, cols);
    }
    const float var = rows_group_sum(d, group, red) / (float)cols;
    if (!live)
        return;
    const float rstd = rsqrtf(var + eps);
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = g.t + k * group, c0 = 8 * j - lead;
        if (j < nvec)
            rows_store8(y + base, c0, cols,
                        ln_apply8(row[j], rows_load8(w, c0, cols, 0), rows_load8(b, c0, cols, 0), mean, rstd));
    }
}

/* ---- launchers ---- */

/* The shape, or -1 when the arguments are unusable; *smem: the dynamic shared memory of a block (0: looped). */
static int async_shape(const uint16_t *x, const uint16_t *y, int rows, int cols, int nv, pl_rows_shape *sh,
                       size_t *smem)
{
    if (pl_rows_launch_shape(x, y, rows, cols, nv, PL_NORM_NV_MAX, sh) != 0)
        return -1;
    *smem = (size_t)sh->threads * (size_t)sh->nv * sizeof(uint4);
    return 0;
}

/* Shared memory beyond the default 48 KB must be asked for per kernel (large groups at 8 vectors per thread). */
template <typename K> static cudaError_t allow_smem(K kernel, size_t smem)
{
    return smem > 48 * 1024 ? cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)
                            : cudaSuccess;
}

template <int NV>
static cudaError_t layernorm_async_launch(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                          int rows, int cols, float eps, const pl_rows_shape *sh, size_t smem,
                                          cudaStream_t stream)
{
    cudaError_t err = allow_smem(layernorm_async_kernel<NV>, smem);
    if (err != cudaSuccess)
        return err;
    layernorm_async_kernel<NV><<<sh->blocks, sh->threads, smem, stream>>>(x, w, b, y, rows, cols, eps, sh->group);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_layernorm_async(const uint16_t *x, const uint16_t *w, const uint16_t *b, uint16_t *y,
                                          int rows, int cols, float eps, int nv, cudaStream_t stream)
{
    pl_rows_shape sh;
    size_t smem;
    if (!w || !b || async_shape(x, y, rows, cols, nv, &sh, &smem) != 0)
        return cudaErrorInvalidValue;
    switch (sh.nv) {
    case 1: return layernorm_async_launch<1>(x, w, b, y, rows, cols, eps, &sh, smem, stream);
    case 2: return layernorm_async_launch<2>(x, w, b, y, rows, cols, eps, &sh, smem, stream);
    case 4: return layernorm_async_launch<4>(x, w, b, y, rows, cols, eps, &sh, smem, stream);
    case 8: return layernorm_async_launch<8>(x, w, b, y, rows, cols, eps, &sh, smem, stream);
    default: return pl_layernorm_fused(x, w, b, y, rows, cols, eps, nv, stream);
    }
}
