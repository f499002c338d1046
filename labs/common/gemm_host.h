/* The harness's side of the GEMM kernels, shared by the labs and the selector: the reference product (float64 on the host for small problems, else cuBLAS with fp32
 * accumulation and output), and verification of an output against it. */
#ifndef PERFLAB_GEMM_HOST_H
#define PERFLAB_GEMM_HOST_H

#include <cublas_v2.h>

#include "gemm/gemm.h"
#include "gemm/cublas/gemm_cublas.h"
#include "perflab/cublas_check.h"
#include "perflab/target.h"
#include "perflab/ctx.h"
#include "perflab/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Requirements of the kernel families, for the labs' variants (static initialisers of pl_requirements). */
#define PL_GEMM_REQ_ANY {.needs_gpu = 1}
#define PL_GEMM_REQ_MMA {.needs_gpu = 1, .min_cc = 80}
#define PL_GEMM_REQ_WGMMA {.needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA}
#define PL_GEMM_REQ_CLUSTER                                                                                            \
    {.needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA | PL_FEAT_CLUSTERS}

/* Problems of at most this many multiply-adds get a float64 host reference; larger ones cuBLAS's fp32 one. */
#define PL_GEMM_HOST_REFERENCE_MACS (64.0 * 1024 * 1024)

/* The reference of a problem, epilogue included, as fp32 on the device, and what the comparison needs. */
typedef struct pl_gemm_reference {
    float *ref; /* M×N, pl_device_alloc'd */
    size_t elems;
    double rms;    /* sqrt(mean(ref²)): the scale of the elementwise tolerance */
    int row_len;   /* > 0: each row of row_len elements scales its own elements' tolerance by its rms instead */
    void *scratch; /* device scratch of pl_gemm_compare */
    char how[96];  /* "float64 host reference" or "cuBLAS fp32 reference" */
} pl_gemm_reference;

/* p->a and p->b hold ab_dtype bits (PL_DTYPE_BF16 or PL_DTYPE_F16); p->epi applies. Synchronises. */
int pl_gemm_reference_make(pl_ctx *ctx, cublasHandle_t h, const pl_gemm_problem *p, pl_dtype ab_dtype,
                           pl_gemm_reference *out);

/* Compare an output (out_dtype bits, M×N) with the reference: relative L2 error within `tolerance` (<= 0: the
 * dtype's default, 1e-2 for bf16/fp16), no unwritten or non-finite element, and every element within
 * rtol·|ref| + atol_rms·rms (GEMM outputs are one rounding away from the reference, so this catches a wrong
 * element that the L2 norm would average away); rms is the reference's, or each row's where r->row_len > 0.
 * Returns -1 only on a CUDA error. */
int pl_gemm_verify(pl_ctx *ctx, const pl_gemm_reference *r, const uint16_t *out, pl_dtype out_dtype, double tolerance,
                   double rtol, double atol_rms, pl_verification *v);

/* The elementwise bounds for an output of bf16/fp16 from inputs of `in_dtype`: 2^-7 relative plus 2^-7 of the
 * RMS (four times a bf16 rounding), wider for fp8 inputs, whose products the tensor cores accumulate with a
 * shorter mantissa. */
void pl_gemm_elementwise_tolerance(pl_dtype in_dtype, double *rtol, double *atol_rms);

#ifdef __cplusplus
}
#endif
#endif
