/* cuBLASLt's FP8 GEMM in the row-major terms of pl_gemm_fp8_problem: the reference the native FP8 kernels are
 * measured against. Column-major view: D (M×N row-major) is Dᵀ (N×M, ld N) = Bᵀ·Aᵀ, so cuBLASLt's "A" is our B
 * (N×K row-major = K×N column-major, transposed) and its "B" our A (K×M column-major): their scales swap too. */
#include <stdlib.h>

#include "gemm/fp8.h"

struct pl_fp8_cublaslt {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    const void *a, *b;
    void *d;
    void *ws;
    size_t ws_bytes;
};

void pl_fp8_cublaslt_free(pl_fp8_cublaslt *plan)
{
    if (!plan)
        return;
    if (plan->ld)
        cublasLtMatrixLayoutDestroy(plan->ld);
    if (plan->lb)
        cublasLtMatrixLayoutDestroy(plan->lb);
    if (plan->la)
        cublasLtMatrixLayoutDestroy(plan->la);
    if (plan->op)
        cublasLtMatmulDescDestroy(plan->op);
    free(plan);
}

cublasStatus_t pl_fp8_cublaslt_plan(cublasLtHandle_t lt, const pl_gemm_fp8_problem *p, void *workspace,
                                    size_t workspace_bytes, pl_fp8_cublaslt **out)
{
    *out = NULL;
    pl_fp8_cublaslt *c = calloc(1, sizeof *c);
    if (!c)
        return CUBLAS_STATUS_ALLOC_FAILED;
    c->lt = lt;
    c->a = p->a;
    c->b = p->b;
    c->d = p->d;
    c->ws = workspace;
    c->ws_bytes = workspace_bytes;
    const uint64_t m = (uint64_t)p->m, n = (uint64_t)p->n, k = (uint64_t)p->k;
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const void *lt_a_scale = p->scale_b, *lt_b_scale = p->scale_a; /* cuBLASLt's A is our B */
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t h;
    int returned = 0;
    cublasStatus_t st = cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (st == CUBLAS_STATUS_SUCCESS) {
        const int8_t fast = p->fast_accum ? 1 : 0;
        st = cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast);
    }
    if (p->scaling == PL_FP8_SCALING_BLOCK) {
        const int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
                      mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof mode_a);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof mode_b);
    }
    if (st == CUBLAS_STATUS_SUCCESS && lt_a_scale)
        st =
            cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &lt_a_scale, sizeof lt_a_scale);
    if (st == CUBLAS_STATUS_SUCCESS && lt_b_scale)
        st =
            cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &lt_b_scale, sizeof lt_b_scale);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->la, CUDA_R_8F_E4M3, k, n, (int64_t)k);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->lb, CUDA_R_8F_E4M3, k, m, (int64_t)k);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&c->ld, CUDA_R_16BF, n, m, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                  sizeof workspace_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(lt, c->op, c->la, c->lb, c->ld, c->ld, pref, 1, &h, &returned);
    if (st == CUBLAS_STATUS_SUCCESS && (returned == 0 || h.state != CUBLAS_STATUS_SUCCESS))
        st = CUBLAS_STATUS_NOT_SUPPORTED;
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) {
        pl_fp8_cublaslt_free(c);
        return st;
    }
    c->algo = h.algo;
    *out = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t pl_fp8_cublaslt_run(const pl_fp8_cublaslt *c, cudaStream_t stream)
{
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(c->lt, c->op, &alpha, c->b, c->la, c->a, c->lb, &beta, c->d, c->ld, c->d, c->ld, &c->algo,
                          c->ws, c->ws_bytes, stream);
}
