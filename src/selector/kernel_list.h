/* The native GEMM kernels perflab gemm can pick from, as data: what `perflab gemm --list-kernels` prints. */
#ifndef PERFLAB_SELECTOR_KERNEL_LIST_H
#define PERFLAB_SELECTOR_KERNEL_LIST_H

#include <jansson.h>

/* One object per kernel enumerated now (bf16, or fp8 when fp8 != 0): name, rung, technique, tile [m, n, k],
 * stages, cluster, threads, min_cc, max_cc, flags (names), searched (0 for teaching rungs the search leaves out). */
json_t *pl_gemm_kernel_list(int fp8);

#endif
