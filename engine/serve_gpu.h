/* The serving scheduler's GPU step executor (serve_sched.h's pl_serve_executor): each step's prefill chunks and
 * decodes run through the whole model (model.h) on the GPU, greedy, with the scheduler's own KV pool (its page ids
 * are the model's cache pages).
 *
 * A request's tokens: its prompt's are drawn from (seed, request id, position) (uniform over the vocabulary), the
 * rest are the tokens it emitted, which the executor keeps: a decode feeds the last one, a preempted request's
 * recompute feeds them again. So a request's tokens depend on nothing but itself: served alone or in any batch it
 * receives the same tokens (up to the rare argmax flip that a different summation order makes on a near-tie).
 *
 * A step's rows: chunks that start a prompt (position 0) go through the prefill's flash attention; decodes and
 * chunks that continue a cache go through the paged decode kernel row by row. A step of decodes only runs as a CUDA
 * graph, captured once per batch-size bucket (powers of two; the padding rows write their K/V into a page of their
 * own and are not sampled). *seconds is the host wall time from the step's inputs leaving the host to the stream's
 * synchronisation after the sampled tokens came back: what a serving loop waits for. */
#ifndef PERFLAB_ENGINE_SERVE_GPU_H
#define PERFLAB_ENGINE_SERVE_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "engine/memory_plan.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/serve_sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_serve_gpu_options {
    const pl_model_config *model;
    pl_weight_dtype dtype;    /* bf16 only so far */
    pl_kv_dtype kv_dtype;     /* the KV cache: bf16 or fp8 (e4m3, a scale per row); its pages planned in it */
    int layers;               /* 0: the config's */
    int page_size, num_pages; /* the KV pool the scheduler uses; num_pages 0: as many as fit */
    int max_num_seqs, max_num_batched_tokens;
    uint64_t seed;
    int device;
} pl_serve_gpu_options;

typedef struct pl_serve_gpu pl_serve_gpu;

/* Sizes everything against free memory first (pl_plan_make); 0 or -1 with one line in err. When num_pages is 0 it
 * takes as many pages as fit and writes the count into *num_pages_out. */
int pl_serve_gpu_create(const pl_serve_gpu_options *o, pl_serve_gpu **out, int *num_pages_out, char *err,
                        size_t errlen);
/* The executor's step (ctx: a pl_serve_gpu). 0, or a CUDA error code (the run stops). */
int pl_serve_gpu_step(void *ctx, const pl_serve_step *step, double *seconds);
/* The token each part of the last step emitted, in the step's order (prefill parts, then decodes); -1 where none. */
const int *pl_serve_gpu_last_tokens(const pl_serve_gpu *g);
/* g reads and records requests' tokens in owner's table from now on (owner's own owner, if it shares): the prefill
 * and decode executors of a disaggregated run see one history per request, as a router forwards the emitted token
 * ids with a request; a request preempted on the decode GPU is prefilled again on the prefill GPU with them. */
void pl_serve_gpu_share_tokens(pl_serve_gpu *g, pl_serve_gpu *owner);
/* The executor's model (its KV cache: the pool's pages) and its GPU. */
const pl_model *pl_serve_gpu_model(const pl_serve_gpu *g);
int pl_serve_gpu_device(const pl_serve_gpu *g);
/* Forgets every request's emitted tokens (in the shared table, when it shares): a new run's ids start at 0. */
void pl_serve_gpu_reset(pl_serve_gpu *g);
void pl_serve_gpu_destroy(pl_serve_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
