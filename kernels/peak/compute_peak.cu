/* CUDA-core and warp-level tensor-core rates. FMA: PL_FMA_CHAINS independent chains per thread hide the FMA
 * latency (4 cycles) with 2+ warps per scheduler. mma.sync: PL_MMA_ACCS independent accumulators per warp on
 * fixed fragments, so nothing but the tensor core is busy. Every result is written out and checked. */
#include <math.h>
#include "peak/peak_kernels.h"

__host__ __device__ static inline double fma_seed(unsigned thread, int chain)
{
    return (double)((thread * PL_FMA_CHAINS + (unsigned)chain) % 1000u) * 1e-3;
}

__global__ void __launch_bounds__(PL_FMA_BLOCK) fma_f32_kernel(int iterations, float b, float c, float *out)
{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    float x[PL_FMA_CHAINS];
#pragma unroll
    for (int k = 0; k < PL_FMA_CHAINS; k++)
        x[k] = (float)fma_seed(t, k);
#pragma unroll 8
    for (int it = 0; it < iterations; it++)
#pragma unroll
        for (int k = 0; k < PL_FMA_CHAINS; k++)
            x[k] = fmaf(x[k], b, c);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < PL_FMA_CHAINS; k++)
        s += x[k];
    out[t] = s;
}

__global__ void __launch_bounds__(PL_FMA_BLOCK) fma_f64_kernel(int iterations, double b, double c, double *out)
{
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    double x[PL_FMA_CHAINS];
#pragma unroll
    for (int k = 0; k < PL_FMA_CHAINS; k++)
        x[k] = fma_seed(t, k);
#pragma unroll 8
    for (int it = 0; it < iterations; it++)
#pragma unroll
        for (int k = 0; k < PL_FMA_CHAINS; k++)
            x[k] = fma(x[k], b, c);
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < PL_FMA_CHAINS; k++)
        s += x[k];
    out[t] = s;
}

extern "C" cudaError_t pl_fma_f32(int iterations, unsigned grid, float b, float c, float *out, cudaStream_t stream)
{
    if (iterations < 1 || grid == 0)
        return cudaErrorInvalidValue;
    fma_f32_kernel<<<grid, PL_FMA_BLOCK, 0, stream>>>(iterations, b, c, out);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_fma_f64(int iterations, unsigned grid, double b, double c, double *out, cudaStream_t stream)
{
    if (iterations < 1 || grid == 0)
        return cudaErrorInvalidValue;
    fma_f64_kernel<<<grid, PL_FMA_BLOCK, 0, stream>>>(iterations, b, c, out);
    return cudaGetLastError();
}

extern "C" double pl_fma_flops(int iterations, unsigned grid)
{
    return 2.0 * PL_FMA_CHAINS * (double)iterations * grid * PL_FMA_BLOCK;
}

extern "C" float pl_fma_f32_expected(int iterations, unsigned thread, float b, float c)
{
    float s = 0.f;
    for (int k = 0; k < PL_FMA_CHAINS; k++) {
        float x = (float)fma_seed(thread, k);
        for (int it = 0; it < iterations; it++)
            x = fmaf(x, b, c);
        s += x;
    }
    return s;
}

extern "C" double pl_fma_f64_expected(int iterations, unsigned thread, double b, double c)
{
    double s = 0.0;
    for (int k = 0; k < PL_FMA_CHAINS; k++) {
        double x = fma_seed(thread, k);
        for (int it = 0; it < iterations; it++)
            x = fma(x, b, c);
        s += x;
    }
    return s;
}

/* ---- mma.sync.m16n8k16 bf16: fragments as the PTX ISA lays them out for .row.col ---- */

__device__ __forceinline__ unsigned pack_bf16(const uint16_t *p)
{
    return (unsigned)p[0] | ((unsigned)p[1] << 16); /* the lower k in the lower half */
}

__global__ void __launch_bounds__(PL_MMA_BLOCK)
    mma_bf16_kernel(const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, int iterations, float *d)
{
    const unsigned lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
    const unsigned a0 = pack_bf16(a + g * 16 + 2 * tig), a1 = pack_bf16(a + (g + 8) * 16 + 2 * tig);
    const unsigned a2 = pack_bf16(a + g * 16 + 2 * tig + 8), a3 = pack_bf16(a + (g + 8) * 16 + 2 * tig + 8);
    const unsigned b0 = pack_bf16(b + g * 16 + 2 * tig), b1 = pack_bf16(b + g * 16 + 2 * tig + 8);
    float acc[PL_MMA_ACCS][4];
#pragma unroll
    for (int j = 0; j < PL_MMA_ACCS; j++)
        acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
    for (int it = 0; it < iterations; it++) {
#pragma unroll
        for (int j = 0; j < PL_MMA_ACCS; j++)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                         "{%8,%9}, {%0,%1,%2,%3};"
                         : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    /* every accumulator is used, or the assembler would drop the MMAs that feed the unused ones */
    float sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < PL_MMA_ACCS; j++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            sum[i] += acc[j][i];
    if (blockIdx.x == 0 && threadIdx.x < 32) {
        d[g * 8 + 2 * tig] = sum[0];
        d[g * 8 + 2 * tig + 1] = sum[1];
        d[(g + 8) * 8 + 2 * tig] = sum[2];
        d[(g + 8) * 8 + 2 * tig + 1] = sum[3];
    }
}

extern "C" cudaError_t pl_mma_bf16(const uint16_t *a, const uint16_t *b, int iterations, unsigned grid, float *d,
                                   cudaStream_t stream)
{
    if (iterations < 1 || grid == 0)
        return cudaErrorInvalidValue;
    mma_bf16_kernel<<<grid, PL_MMA_BLOCK, 0, stream>>>(a, b, iterations, d);
    return cudaGetLastError();
}

extern "C" double pl_mma_bf16_flops(int iterations, unsigned grid)
{
    return 2.0 * 16 * 8 * 16 * PL_MMA_ACCS * (double)iterations * grid * (PL_MMA_BLOCK / 32);
}
