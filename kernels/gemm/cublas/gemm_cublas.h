/* cuBLAS in the row-major terms of pl_gemm_problem: what the native kernels are compared with. */
#ifndef PERFLAB_GEMM_CUBLAS_H
#define PERFLAB_GEMM_CUBLAS_H

#include <cublas_v2.h>

#include "gemm/gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* D (M×N row-major, d_type) = A·B with cublasGemmEx, fp32 accumulation, the default algorithm: the row-major
 * product is computed as the column-major Dᵀ = Bᵀ·Aᵀ. ab_type is CUDA_R_16BF or CUDA_R_16F. */
cublasStatus_t pl_gemm_cublas(cublasHandle_t h, int m, int n, int k, pl_gemm_b_layout layout, const void *a,
                              const void *b, cudaDataType ab_type, void *d, cudaDataType d_type);

#ifdef __cplusplus
}
#endif
#endif
