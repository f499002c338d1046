/* The reference of a grouped GEMM (gemm/grouped.h): group g's rows of D = its rows of A times B_gᵀ, in float64 on
 * the host for small problems, else one cuBLAS GEMM per group with fp32 accumulation and output. */
#ifndef PERFLAB_LABS_GROUPED_REF_H
#define PERFLAB_LABS_GROUPED_REF_H

#include <cublas_v2.h>

#include "common/gemm_host.h"

/* offsets: groups + 1 host row offsets; a: rows × K bf16, b: groups × N × K bf16 (device). Synchronises. */
int pl_grouped_reference_make(pl_ctx *ctx, cublasHandle_t h, const int *offsets, int groups, int n, int k,
                              const uint16_t *a, const uint16_t *b, pl_gemm_reference *out);

#endif
