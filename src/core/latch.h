/* The latch: a kernel that holds the stream until the host has enqueued a whole sample (start event, the
 * runs, stop event), so that the events time the GPU's work and not the host's launch latency. Variants whose
 * lesson is the host's cost (PL_VARIANT_HOST_BOUND) are timed without it. */
#ifndef PERFLAB_CORE_LATCH_H
#define PERFLAB_CORE_LATCH_H

#include "perflab/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_LATCH_TIMEOUT_NS 200000000ull /* 0.2 s: if the launch queue fills, the latch gives way */

typedef struct pl_latch {
    volatile int *flag;      /* host-mapped: 0 holds, 1 releases */
    volatile int *timed_out; /* host-mapped: set by the kernel when it gave way */
    int *dev_flag, *dev_timed_out;
} pl_latch;

int pl_latch_init(pl_ctx *ctx, pl_latch *l);
/* Enqueue the latch kernel on ctx->stream; what is enqueued after it waits. */
int pl_latch_hold(pl_ctx *ctx, pl_latch *l);
void pl_latch_release(pl_latch *l);
/* Whether the last hold gave way on its timeout (then the sample included launch latency). */
int pl_latch_gave_way(pl_latch *l);
void pl_latch_free(pl_latch *l);

#ifdef __cplusplus
}
#endif

#endif
