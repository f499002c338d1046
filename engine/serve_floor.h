/* A step executor whose step takes the floor of engine/step_cost.h: max(FLOPs / peak, bytes / bandwidth) of the
 * step's prefill chunks and decodes together, the weights read once. Run through the scheduler it gives the
 * engine's own ceiling for a workload (output tokens/s no implementation of these steps can pass at those
 * ceilings), the figure `perflab serve` compares its measured throughput with.
 *
 * A step's cost: the prefill chunks as prompts of their chunk length from an empty cache, the decodes at their
 * cache lengths (start + 1), FLOPs and bytes summed, less one copy of the weights when a step has both (the smaller
 * of the two weight reads: a MoE step's experts touched are those of the larger part). A chunk after the first
 * attends to the cache before it as well; that attention and its KV reads are left out, so the floor is a little
 * low for chunked prompts (the ceiling a little high). */
#ifndef PERFLAB_ENGINE_SERVE_FLOOR_H
#define PERFLAB_ENGINE_SERVE_FLOOR_H

#include "engine/model_config.h"
#include "engine/serve_sched.h"
#include "engine/step_cost.h"

typedef struct pl_serve_floor {
    const pl_model_config *model;
    pl_weight_dtype dtype;
    pl_kv_dtype kv_dtype; /* the KV cache's: its bytes read and written */
    int layers;           /* 0: the config's */
    pl_ceilings ceilings;
    int *lens, cap; /* scratch, grown as needed; free with pl_serve_floor_free */
} pl_serve_floor;

/* The executor's step (ctx: a pl_serve_floor). 0, or -1 on a malformed step or no host memory. */
int pl_serve_floor_step(void *ctx, const pl_serve_step *step, double *seconds);
void pl_serve_floor_free(pl_serve_floor *f);

#endif
