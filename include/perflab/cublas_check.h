/* PL_CUBLAS: check a cuBLAS call in code that reports through pl_fail (a target, its glue, perflab peak); include
 * cublas_v2.h before it. */
#ifndef PERFLAB_CUBLAS_CHECK_H
#define PERFLAB_CUBLAS_CHECK_H

#include "perflab/ctx.h"

/* On failure record the status's name and description, the call and where, and return -1 from the enclosing
 * function. */
#define PL_CUBLAS(ctx, call)                                                                                           \
    do {                                                                                                               \
        cublasStatus_t pl_st_ = (call);                                                                                \
        if (pl_st_ != CUBLAS_STATUS_SUCCESS)                                                                           \
            return pl_fail((ctx), "cuBLAS error %s (%s) in %s at %s:%d", cublasGetStatusName(pl_st_),                  \
                           cublasGetStatusString(pl_st_), #call, __FILE__, __LINE__);                                  \
    } while (0)

#endif
