/* What the memory targets that compute y = a*x + b over n fp32 share (memory:coalescing, occupancy:ilp): the random
 * input, the output, the float64 reference from the exact input the GPU holds, the poison and the check. */
#ifndef PERFLAB_LABS_AFFINE_IO_H
#define PERFLAB_LABS_AFFINE_IO_H

#include <stddef.h>

#include "perflab/perflab.h"

/* Any fixed coefficients do; these keep y in x's range and make a copy (a = 1, b = 0) fail the check. */
#define PL_AFFINE_A 1.5f
#define PL_AFFINE_B (-0.25f)

typedef struct pl_affine_io {
    size_t n;
    float *x, *y;  /* device */
    float *y_host; /* the checked output, copied back */
    double *ref;   /* a*x + b in float64 */
} pl_affine_io;

/* Allocates (tracked), fills x with uniform values in [-1, 1) from the seed stream `stream_id`, computes ref. */
int pl_affine_io_setup(pl_ctx *ctx, size_t n, uint64_t stream_id, pl_affine_io *io);
int pl_affine_io_poison(pl_ctx *ctx, const pl_affine_io *io);
/* Copies y back and compares it with ref (fp32 tolerance). */
int pl_affine_io_check(pl_ctx *ctx, const pl_affine_io *io, pl_verification *v);

#endif
