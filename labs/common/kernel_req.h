/* The kernel library's needs (kernels/common/needs.h) as the harness's requirements (perflab/target.h). */
#ifndef PERFLAB_LABS_KERNEL_REQ_H
#define PERFLAB_LABS_KERNEL_REQ_H

#include "common/needs.h"
#include "perflab/target.h"

/* A GPU requirement: needs_gpu set, the capability range and the features carried over. */
pl_requirements pl_requirements_of_kernel(pl_kernel_needs needs);

#endif
