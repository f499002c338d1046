/* Element conversions that give the selector its fp16 and fp8 inputs from the harness's bf16 random fill, and
 * bring fp8 inputs back to bf16 (exactly) for the reference product. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "gemm/gemm.h"

#define CONV_THREADS 256

static unsigned conv_grid(size_t n)
{
    size_t blocks = (n + CONV_THREADS - 1) / CONV_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > 132 * 16 ? 132 * 16 : blocks);
}

#define GRID_STRIDE(i, n)                                                                                              \
    for (size_t i = blockIdx.x * (size_t)CONV_THREADS + threadIdx.x; i < (n); i += (size_t)gridDim.x * CONV_THREADS)

__global__ void bf16_to_f16_kernel(const __nv_bfloat16 *in, __half *out, size_t n)
{
    GRID_STRIDE(i, n)
    out[i] = __float2half_rn(__bfloat162float(in[i]));
}

__global__ void bf16_to_e4m3_kernel(const __nv_bfloat16 *in, __nv_fp8_e4m3 *out, size_t n)
{
    GRID_STRIDE(i, n)
    out[i] = __nv_fp8_e4m3(__bfloat162float(in[i])); /* round to nearest, saturate to ±448 */
}

__global__ void e4m3_to_bf16_kernel(const __nv_fp8_e4m3 *in, __nv_bfloat16 *out, size_t n)
{
    GRID_STRIDE(i, n)
    out[i] = __float2bfloat16_rn(float(in[i]));
}

extern "C" cudaError_t pl_convert_bf16_to_f16(const uint16_t *in, uint16_t *out, size_t n, cudaStream_t stream)
{
    bf16_to_f16_kernel<<<conv_grid(n), CONV_THREADS, 0, stream>>>(reinterpret_cast<const __nv_bfloat16 *>(in),
                                                                  reinterpret_cast<__half *>(out), n);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_convert_bf16_to_e4m3(const uint16_t *in, uint8_t *out, size_t n, cudaStream_t stream)
{
    bf16_to_e4m3_kernel<<<conv_grid(n), CONV_THREADS, 0, stream>>>(reinterpret_cast<const __nv_bfloat16 *>(in),
                                                                   reinterpret_cast<__nv_fp8_e4m3 *>(out), n);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_convert_e4m3_to_bf16(const uint8_t *in, uint16_t *out, size_t n, cudaStream_t stream)
{
    e4m3_to_bf16_kernel<<<conv_grid(n), CONV_THREADS, 0, stream>>>(reinterpret_cast<const __nv_fp8_e4m3 *>(in),
                                                                   reinterpret_cast<__nv_bfloat16 *>(out), n);
    return cudaGetLastError();
}
