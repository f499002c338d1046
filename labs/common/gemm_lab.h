/* What the GEMM targets (gemm:bf16, fullstack:cluster_gemm, fusion:gemm_bias_gelu) share: random bf16 operands,
 * the reference (float64 on the host for small shapes, else cuBLAS fp32), the check, and running a registry
 * kernel with its fallback or cuBLAS. Not a target itself. */
#ifndef PERFLAB_LABS_COMMON_GEMM_LAB_H
#define PERFLAB_LABS_COMMON_GEMM_LAB_H

#include <cublas_v2.h>

#include "gemm/gemm.h"
#include "common/gemm_host.h"
#include "perflab/perflab.h"

enum gemm_lab_flags {
    GEMM_LAB_EPILOGUE = 1u << 0, /* bias + GELU, and the residual when the target's `residual` parameter is set */
    GEMM_LAB_UNFUSED = 1u << 1,  /* a scratch product for variants that run the epilogue as a separate pass */
};

typedef struct gemm_lab {
    pl_gemm_problem p; /* the whole computation: D = epilogue(A·B) */
    pl_gemm_reference ref;
    cublasHandle_t cublas;
    uint16_t *product; /* GEMM_LAB_UNFUSED: A·B before the epilogue pass */
    uint64_t warned;   /* one fallback note per kernel of the kernel table (64 at most) */
    char kernel[64];   /* the registry kernel of the native variants, for targets with a `kernel` parameter */
} gemm_lab;

/* FLOPs and the fewest bytes: A, B (and bias, residual) read once, D written once. */
void gemm_lab_counters(const pl_params *p, unsigned flags, pl_counters *c);
/* Reads the parameters m, n, k and, where declared, layout and residual. */
int gemm_lab_setup(pl_ctx *ctx, const pl_params *params, unsigned flags, void **state);
int gemm_lab_poison(pl_ctx *ctx, void *state);
int gemm_lab_check(pl_ctx *ctx, void *state, pl_verification *v);
void gemm_lab_teardown(pl_ctx *ctx, void *state);

/* D = A·B (+ the epilogue when `fused`; else the bare product into lab->product) with the registry kernel
 * `name`, or with the fallback when that kernel cannot take the shape (said once on stderr, in the log). */
int gemm_lab_native(pl_ctx *ctx, gemm_lab *lab, const char *name, int fused);
/* The bare product with cuBLAS (default algorithm) into `d`. */
int gemm_lab_cublas(pl_ctx *ctx, gemm_lab *lab, uint16_t *d);
/* D = epilogue(lab->product): the separate pass of the unfused variants. */
int gemm_lab_epilogue_pass(pl_ctx *ctx, gemm_lab *lab);

#endif
