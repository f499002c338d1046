/* The `[reference]` ceiling of a memory-bound target: cudaMemcpyAsync device-to-device of the bytes the target
 * moves. It computes a copy, not the target's result, so it is checked as a copy: every byte of dst equal to the
 * source, and its verification says so. */
#ifndef PERFLAB_LABS_COPY_CEILING_H
#define PERFLAB_LABS_COPY_CEILING_H

#include <stddef.h>
#include "perflab/perflab.h"

/* Copies `bytes` of dst back into `scratch` (host, at least `bytes`) and compares them with `expect` (the source as
 * the GPU holds it, on the host). Returns -1 only when a CUDA call fails. */
int pl_copy_ceiling_check(pl_ctx *ctx, const void *dst, const void *expect, size_t bytes, void *scratch,
                          pl_verification *v);

#endif
