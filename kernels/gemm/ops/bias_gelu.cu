/* The GEMM epilogue as separate passes over D: the unfused baseline of fusion:gemm_bias_gelu (bf16 in and out,
 * fp32 math, as the fused kernels do it) and the float64 version that turns an fp32 reference product into the
 * reference of the whole fused computation. */
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"

#define EPI_THREADS 256

static unsigned epi_grid(size_t items)
{
    size_t blocks = (items + EPI_THREADS - 1) / EPI_THREADS;
    const size_t cap = 132u * 16u; /* a few waves of a full GPU; the loops stride past it */
    return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

/* Eight elements (one 16-byte word of each operand) per iteration: n % 8 == 0 keeps them in one row. */
__global__ void __launch_bounds__(EPI_THREADS)
    bias_gelu_vec8_kernel(const uint4 *__restrict__ d, uint4 *__restrict__ out, const uint16_t *__restrict__ bias,
                          const uint4 *__restrict__ residual, int gelu, size_t groups, int n)
{
    for (size_t g = blockIdx.x * (size_t)EPI_THREADS + threadIdx.x; g < groups; g += (size_t)gridDim.x * EPI_THREADS) {
        const int col = (int)((g * 8) % (size_t)n);
        uint4 dv = d[g];
        uint4 rv = residual ? residual[g] : make_uint4(0, 0, 0, 0);
        uint32_t *dw = &dv.x, *rw = &rv.x;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            float v[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float x = pl_bf16_bits_to_float((uint16_t)(dw[w] >> (16 * h)));
                if (bias)
                    x += pl_bf16_bits_to_float(bias[col + 2 * w + h]);
                if (gelu)
                    x = pl_gelu(x);
                if (residual)
                    x += pl_bf16_bits_to_float((uint16_t)(rw[w] >> (16 * h)));
                v[h] = x;
            }
            dw[w] = (uint32_t)pl_float_to_bf16_bits(v[0]) | (uint32_t)pl_float_to_bf16_bits(v[1]) << 16;
        }
        out[g] = dv;
    }
}

__global__ void __launch_bounds__(EPI_THREADS)
    bias_gelu_scalar_kernel(const uint16_t *__restrict__ d, uint16_t *__restrict__ out,
                            const uint16_t *__restrict__ bias, const uint16_t *__restrict__ residual, int gelu,
                            size_t total, int n)
{
    for (size_t i = blockIdx.x * (size_t)EPI_THREADS + threadIdx.x; i < total; i += (size_t)gridDim.x * EPI_THREADS) {
        float x = pl_bf16_bits_to_float(d[i]);
        if (bias)
            x += pl_bf16_bits_to_float(bias[i % (size_t)n]);
        if (gelu)
            x = pl_gelu(x);
        if (residual)
            x += pl_bf16_bits_to_float(residual[i]);
        out[i] = pl_float_to_bf16_bits(x);
    }
}

extern "C" cudaError_t pl_gemm_bias_gelu(const uint16_t *d, uint16_t *out, int m, int n, const pl_gemm_epilogue *epi,
                                         cudaStream_t stream)
{
    const size_t total = (size_t)m * (size_t)n;
    const int aligned =
        n % 8 == 0 && (uintptr_t)d % 16 == 0 && (uintptr_t)out % 16 == 0 && (uintptr_t)epi->residual % 16 == 0;
    if (aligned)
        bias_gelu_vec8_kernel<<<epi_grid(total / 8), EPI_THREADS, 0, stream>>>(
            reinterpret_cast<const uint4 *>(d), reinterpret_cast<uint4 *>(out), epi->bias,
            reinterpret_cast<const uint4 *>(epi->residual), epi->gelu, total / 8, n);
    else
        bias_gelu_scalar_kernel<<<epi_grid(total), EPI_THREADS, 0, stream>>>(d, out, epi->bias, epi->residual,
                                                                             epi->gelu, total, n);
    return cudaGetLastError();
}

__global__ void epilogue_reference_kernel(float *ref, const uint16_t *bias, const uint16_t *residual, int gelu,
                                          size_t total, int n)
{
    for (size_t i = blockIdx.x * (size_t)EPI_THREADS + threadIdx.x; i < total; i += (size_t)gridDim.x * EPI_THREADS) {
        double x = ref[i];
        if (bias)
            x += pl_bf16_bits_to_float(bias[i % (size_t)n]);
        if (gelu)
            x = 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
        if (residual)
            x += pl_bf16_bits_to_float(residual[i]);
        ref[i] = (float)x;
    }
}

extern "C" cudaError_t pl_gemm_epilogue_reference_f32(float *ref, int m, int n, const pl_gemm_epilogue *epi,
                                                      cudaStream_t stream)
{
    const size_t total = (size_t)m * (size_t)n;
    epilogue_reference_kernel<<<epi_grid(total), EPI_THREADS, 0, stream>>>(ref, epi->bias, epi->residual, epi->gelu,
                                                                           total, n);
    return cudaGetLastError();
}
