/* fusion:elementwise_chain, version 1 — three kernels (the baseline).
 *
 * Technique: none on purpose; what a chain of framework operations does. Bias add, GELU and scale each run as
 * their own kernel and pass a bf16 intermediate through memory: 2 bytes read and 2 written per element per
 * kernel, 12 in all. The kernels themselves are as good as the fused one's (the same 16-byte walk, chain.cuh),
 * so the difference between the two versions is the bytes alone. */
#include "fusion/chain.cuh"
#include "fusion/elementwise_chain.h"

__global__ void __launch_bounds__(CHAIN_THREADS)
    chain_bias_kernel(const uint16_t *x, const uint16_t *__restrict__ bias, uint16_t *t, size_t n, int cols)
{
    chain_walk(x, t, bias, n, cols, 1.0f, CHAIN_BIAS);
}

__global__ void __launch_bounds__(CHAIN_THREADS) chain_gelu_kernel(uint16_t *t, size_t n)
{
    chain_walk(t, t, NULL, n, 1, 1.0f, CHAIN_GELU);
}

__global__ void __launch_bounds__(CHAIN_THREADS) chain_scale_kernel(const uint16_t *t, uint16_t *y, size_t n, float s)
{
    chain_walk(t, y, NULL, n, 1, s, CHAIN_SCALE);
}

extern "C" cudaError_t pl_chain_unfused(const uint16_t *x, const uint16_t *bias, uint16_t *tmp, uint16_t *y, int rows,
                                        int cols, float scale, cudaStream_t stream)
{
    if (!chain_args_ok(x, tmp, y, bias, rows, cols))
        return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * (size_t)cols;
    chain_bias_kernel<<<chain_grid(n), CHAIN_THREADS, 0, stream>>>(x, bias, tmp, n, cols);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        return err;
    chain_gelu_kernel<<<chain_grid(n), CHAIN_THREADS, 0, stream>>>(tmp, n);
    if ((err = cudaGetLastError()) != cudaSuccess)
        return err;
    chain_scale_kernel<<<chain_grid(n), CHAIN_THREADS, 0, stream>>>(tmp, y, n, scale);
    return cudaGetLastError();
}
