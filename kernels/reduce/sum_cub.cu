/* The library a user would call instead: CUB's device-wide reduction, which ships with the CUDA toolkit.
 * fp32: cub::DeviceReduce::Sum. bf16 into an fp32 result: DeviceReduce::Sum cannot pick an accumulator for a bf16
 * input and a float output (float + __nv_bfloat16 is ambiguous), so it is DeviceReduce::Reduce with an fp32 plus
 * and a 0.0f initial value, which is what Sum runs (a plus and a zero of the output type), with each bf16 widened
 * to fp32 on load. */
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <cuda_bf16.h>
#include "reduce/reduce.h"

extern "C" cudaError_t pl_reduce_sum_cub(const void *in, pl_reduce_dtype dtype, size_t n, float *out, void *temp,
                                         size_t *temp_bytes, cudaStream_t stream)
{
    cudaError_t e;
    if (dtype == PL_REDUCE_BF16)
        e = cub::DeviceReduce::Reduce(temp, *temp_bytes, static_cast<const __nv_bfloat16 *>(in), out, (int64_t)n,
                                      cuda::std::plus<float>(), 0.0f, stream);
    else
        e = cub::DeviceReduce::Sum(temp, *temp_bytes, static_cast<const float *>(in), out, (int64_t)n, stream);
    if (e != cudaSuccess || temp == NULL)
        return e;
    return cudaGetLastError();
}
