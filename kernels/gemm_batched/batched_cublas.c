/* cuBLAS's strided-batched GEMM in the row-major terms of pl_gemm_batch. */
#include "gemm_batched/gemm_batched.h"

cublasStatus_t pl_gemm_batched_cublas_strided(cublasHandle_t h, const pl_gemm_batch *p)
{
    const float alpha = 1.0f, beta = 0.0f;
    const long long sa = (long long)p->m * p->k, sb = (long long)p->n * p->k, sd = (long long)p->m * p->n;
    /* column-major view (as pl_gemm_cublas): Dᵀ (N×M, ld N) = op(B)·Aᵀ with B N×K row-major read as K×N column-major
     * (ld K) and transposed, Aᵀ as K×M column-major (ld K) */
    return cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, p->n, p->m, p->k, &alpha, p->b, CUDA_R_16BF, p->k,
                                      sb, p->a, CUDA_R_16BF, p->k, sa, &beta, p->d, CUDA_R_16BF, p->n, sd, p->count,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
