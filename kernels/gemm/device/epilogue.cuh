/* The GEMM kernels' output stage: the bf16 epilogue of kernels/common (bias, GELU, residual in fp32, one rounding,
 * predicated stores) and pl_gemm_out_of, which fills its pl_gemm_out from a pl_gemm_problem. */
#ifndef PERFLAB_GEMM_DEVICE_EPILOGUE_CUH
#define PERFLAB_GEMM_DEVICE_EPILOGUE_CUH

#include "common/bf16_epilogue.cuh"
#include "gemm/gemm.h"

static inline pl_gemm_out pl_gemm_out_of(const pl_gemm_problem *p)
{
    pl_gemm_out o;
    o.d = p->d;
    o.bias = p->epi.bias;
    o.residual = p->epi.residual;
    o.m = p->m;
    o.n = p->n;
    o.gelu = p->epi.gelu;
    o.fused = p->epi.bias || p->epi.residual || p->epi.gelu;
    return o;
}

#endif
