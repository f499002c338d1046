/* TEMPORARY, deleted when engine/serve_gpu.h lands: the GPU step executor's API exactly as engine/serve_gpu.h
 * declares it, so that `perflab serve --executor gpu` is written against it now. serve_gpu_api.h includes the
 * engine's header instead as soon as it exists. */
#ifndef PERFLAB_SERVE_SERVE_GPU_MISSING_H
#define PERFLAB_SERVE_SERVE_GPU_MISSING_H

#include <stddef.h>
#include <stdint.h>

#include "engine/memory_plan.h"
#include "engine/model_config.h"
#include "engine/serve_sched.h"

typedef struct pl_serve_gpu_options {
    const pl_model_config *model;
    pl_weight_dtype dtype;
    int layers;               /* 0: the config's */
    int page_size, num_pages; /* the KV pool the scheduler uses */
    int max_num_seqs, max_num_batched_tokens;
    uint64_t seed;
    int device;
} pl_serve_gpu_options;
typedef struct pl_serve_gpu pl_serve_gpu;
int pl_serve_gpu_create(const pl_serve_gpu_options *o, pl_serve_gpu **out, int *num_pages_out, char *err,
                        size_t errlen);
int pl_serve_gpu_step(void *ctx, const pl_serve_step *step, double *seconds);
const int *pl_serve_gpu_last_tokens(const pl_serve_gpu *g);
void pl_serve_gpu_destroy(pl_serve_gpu *g);

#endif
