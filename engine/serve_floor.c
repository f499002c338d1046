/* The floor executor: a serving step timed at max(FLOPs / peak, bytes / bandwidth). */
#include "engine/serve_floor.h"

#include <stdlib.h>
#include <string.h>

static int grow(pl_serve_floor *f, int n)
{
    if (n <= f->cap)
        return 0;
    int *lens = realloc(f->lens, (size_t)n * sizeof *lens);
    if (!lens)
        return -1;
    f->lens = lens;
    f->cap = n;
    return 0;
}

int pl_serve_floor_step(void *ctx, const pl_serve_step *step, double *seconds)
{
    pl_serve_floor *f = ctx;
    if (grow(f, step->n_prefill > step->n_decode ? step->n_prefill : step->n_decode) != 0)
        return -1;
    pl_step_cost pf = {0}, dc = {0};
    if (step->n_prefill > 0) {
        for (int i = 0; i < step->n_prefill; i++)
            f->lens[i] = step->prefill[i].tokens;
        const pl_step_batch b = {.n = step->n_prefill, .lens = f->lens, .kv_dtype = f->kv_dtype};
        if (pl_model_prefill_cost(f->model, f->dtype, f->layers, &b, &pf) != 0)
            return -1;
    }
    if (step->n_decode > 0) {
        for (int i = 0; i < step->n_decode; i++)
            f->lens[i] = step->decode[i].start + 1;
        const pl_step_batch b = {.n = step->n_decode, .lens = f->lens, .kv_dtype = f->kv_dtype};
        if (pl_model_decode_cost(f->model, f->dtype, f->layers, &b, &dc) != 0)
            return -1;
    }
    pl_step_cost sum = {.flops = pf.flops + dc.flops, .bytes = pf.bytes + dc.bytes};
    if (step->n_prefill > 0 && step->n_decode > 0) /* the weights are read once */
        sum.bytes -= pf.weight_bytes < dc.weight_bytes ? pf.weight_bytes : dc.weight_bytes;
    *seconds = pl_step_floor_s(&sum, &f->ceilings);
    return 0;
}

void pl_serve_floor_free(pl_serve_floor *f)
{
    free(f->lens);
    f->lens = NULL;
    f->cap = 0;
}
