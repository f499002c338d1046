/* Shared-memory bandwidth: every thread reads PL_SMEM_UNROLL 16-byte words per iteration. A warp's 32
 * consecutive float4 are 512 contiguous bytes, four conflict-free wavefronts of 128 B: the most a Hopper or
 * Blackwell SM serves per clock (32 banks x 4 B). The sums are written out so that the host can check a
 * thread's result exactly (small integers times 0.25: every partial sum is exact in float). */
#include "peak/peak_kernels.h"

#define SMEM_WORDS   (2 * PL_SMEM_BLOCK + PL_SMEM_UNROLL * 32) /* float4: a window of 2 x block, plus overrun */
#define WINDOW_WORDS PL_SMEM_BLOCK                             /* the window's start moves within this range */

__device__ __host__ static inline float smem_word_value(unsigned i)
{
    return (float)(i % 97u) * 0.25f;
}

__global__ void __launch_bounds__(PL_SMEM_BLOCK, 2048 / PL_SMEM_BLOCK) smem_read_kernel(int iterations, float *out)
{
    __shared__ float4 words[SMEM_WORDS];
    for (unsigned i = threadIdx.x; i < SMEM_WORDS; i += blockDim.x) {
        float v = smem_word_value(i);
        words[i] = make_float4(v, v + 0.25f, v + 0.5f, v + 0.75f);
    }
    __syncthreads();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    unsigned base = 0;
    for (int it = 0; it < iterations; it++) {
        const float4 *w = words + base + threadIdx.x;
#pragma unroll
        for (int k = 0; k < PL_SMEM_UNROLL; k++) {
            float4 v = w[k * 32];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
        /* the next iteration reads other words, so the loads cannot be hoisted out of the loop */
        base = (base + PL_SMEM_UNROLL * 32) & (WINDOW_WORDS - 1);
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = (acc.x + acc.y) + (acc.z + acc.w);
}

extern "C" cudaError_t pl_smem_read(int iterations, unsigned grid, float *out, cudaStream_t stream)
{
    if (iterations < 1 || grid == 0)
        return cudaErrorInvalidValue;
    smem_read_kernel<<<grid, PL_SMEM_BLOCK, 0, stream>>>(iterations, out);
    return cudaGetLastError();
}

extern "C" double pl_smem_read_bytes(int iterations, unsigned grid)
{
    return (double)grid * PL_SMEM_BLOCK * iterations * PL_SMEM_UNROLL * 16.0;
}

extern "C" float pl_smem_read_expected(int iterations, unsigned thread_in_block)
{
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    unsigned base = 0;
    for (int it = 0; it < iterations; it++) {
        for (int k = 0; k < PL_SMEM_UNROLL; k++) {
            float v = smem_word_value(base + thread_in_block + (unsigned)k * 32u);
            acc[0] += v;
            acc[1] += v + 0.25f;
            acc[2] += v + 0.5f;
            acc[3] += v + 0.75f;
        }
        base = (base + PL_SMEM_UNROLL * 32) & (WINDOW_WORDS - 1);
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
