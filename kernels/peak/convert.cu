/* float32 -> the operand types of the tensor-core GEMMs, rounding to nearest even, so that the host can read
 * back exactly the values the GPU multiplies. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "peak/peak_kernels.h"

__global__ void convert_kernel(const float *src, void *dst, size_t n, int to)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float x = src[i];
        switch (to) {
        case PL_CONVERT_BF16: ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(x); break;
        case PL_CONVERT_F16: ((__half *)dst)[i] = __float2half_rn(x); break;
        case PL_CONVERT_E4M3: ((__nv_fp8_e4m3 *)dst)[i] = __nv_fp8_e4m3(x); break;
        default: {
            /* tf32: 10 explicit mantissa bits; round the 13 dropped bits to nearest even */
            unsigned u = __float_as_uint(x);
            u += 0xFFFu + ((u >> 13) & 1u);
            ((float *)dst)[i] = __uint_as_float(u & 0xFFFFE000u);
        }
        }
    }
}

extern "C" cudaError_t pl_convert_f32(const float *src, void *dst, size_t n, int to, cudaStream_t stream)
{
    if (to < PL_CONVERT_BF16 || to > PL_CONVERT_TF32)
        return cudaErrorInvalidValue;
    convert_kernel<<<2048, 256, 0, stream>>>(src, dst, n, to);
    return cudaGetLastError();
}
