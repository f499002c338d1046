/* Rung 1 of the GEMM ladder — naive SIMT: one thread per element of D, a dot product of K fp32 FMAs read
 * straight from global memory. Every A and B element is fetched from memory (or cache) N and M times: the
 * kernel is bound by load traffic, not arithmetic, and sets the floor the next rungs climb from. */
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"

#define NAIVE_BLOCK 16

__global__ void __launch_bounds__(NAIVE_BLOCK *NAIVE_BLOCK)
    gemm_naive_kernel(pl_gemm_out o, const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, int k, int b_kn)
{
    /* threads of a warp take neighbouring columns: A's element is shared by the warp, B's are not */
    const int col = blockIdx.x * NAIVE_BLOCK + threadIdx.x;
    const int row = blockIdx.y * NAIVE_BLOCK + threadIdx.y;
    if (row >= o.m || col >= o.n)
        return;
    const uint16_t *arow = a + (size_t)row * k;
    float acc = 0.0f;
    if (b_kn) {
        for (int kk = 0; kk < k; kk++)
            acc = fmaf(pl_bf16_bits_to_float(arow[kk]), pl_bf16_bits_to_float(b[(size_t)kk * o.n + col]), acc);
    } else {
        const uint16_t *bcol = b + (size_t)col * k;
        for (int kk = 0; kk < k; kk++)
            acc = fmaf(pl_bf16_bits_to_float(arow[kk]), pl_bf16_bits_to_float(bcol[kk]), acc);
    }
    pl_gemm_store1(o, row, col, acc);
}

extern "C" cudaError_t pl_gemm_naive(const pl_gemm_problem *p, cudaStream_t stream)
{
    dim3 block(NAIVE_BLOCK, NAIVE_BLOCK);
    dim3 grid((p->n + NAIVE_BLOCK - 1) / NAIVE_BLOCK, (p->m + NAIVE_BLOCK - 1) / NAIVE_BLOCK);
    gemm_naive_kernel<<<grid, block, 0, stream>>>(pl_gemm_out_of(p), p->a, p->b, p->k, p->b_layout == PL_GEMM_B_KN);
    return cudaGetLastError();
}
