/* The e2e: targets' memory floor: regions of device memory (a step's weights, its KV pages) read once with 16-byte
 * streaming loads, the reference row a step's time is judged against, measured in the same process. */
#ifndef PERFLAB_LABS_E2E_FLOOR_H
#define PERFLAB_LABS_E2E_FLOOR_H

#include <stddef.h>

#include "perflab/ctx.h"
#include "perflab/verify.h"

#define E2E_FLOOR_REGIONS 256 /* a model's layers with their K and V pools (3 x 80 for Llama-3-70B) and its head */

typedef struct e2e_floor {
    int n;
    const float *src[E2E_FLOOR_REGIONS];
    size_t words[E2E_FLOOR_REGIONS]; /* 4-byte words read */
    unsigned grid[E2E_FLOOR_REGIONS], most;
    float *partial; /* every block's sum of what it read (the check's evidence that the reads ran) */
} e2e_floor;

/* Adds `bytes` (a multiple of 4, 16-byte aligned) from p; 0, or -1 through pl_fail when the regions are full. */
int e2e_floor_add(pl_ctx *ctx, e2e_floor *f, const void *p, size_t bytes);
/* The grids and the partial sums' buffer, once the regions are added. */
int e2e_floor_ready(pl_ctx *ctx, e2e_floor *f);
/* The reads, enqueued on ctx->stream. */
int e2e_floor_read(pl_ctx *ctx, const e2e_floor *f);
/* Before a checked run: the partial sums poisoned. */
int e2e_floor_poison(pl_ctx *ctx, const e2e_floor *f);
/* The floor computes nothing to compare: its reads are checked for having run, every block's partial sum written
 * over the poison. */
int e2e_floor_check(pl_ctx *ctx, const e2e_floor *f, pl_verification *v);

#endif
