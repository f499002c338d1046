#include "gemm/cublas/gemm_cublas.h"

cublasStatus_t pl_gemm_cublas(cublasHandle_t h, int m, int n, int k, pl_gemm_b_layout layout, const void *a,
                              const void *b, cudaDataType ab_type, void *d, cudaDataType d_type)
{
    const float alpha = 1.0f, beta = 0.0f;
    /* Column-major view: A (M×K row-major) is Aᵀ (K×M, ld K); D is Dᵀ (N×M, ld N). B N×K row-major is a K×N
     * column-major matrix (ld K) that must be transposed; B K×N row-major is N×K column-major (ld N), used as is. */
    if (layout == PL_GEMM_B_NK)
        return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, b, ab_type, k, a, ab_type, k, &beta, d,
                            d_type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ab_type, n, a, ab_type, k, &beta, d, d_type, n,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
