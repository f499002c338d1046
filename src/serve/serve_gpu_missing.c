/* TEMPORARY, deleted when engine/serve_gpu.{h,cu} land: weak stubs of the GPU step executor that refuse with
 * "the GPU executor is not built", so that `perflab serve --executor gpu` links and says so. Compiled to nothing
 * once the engine's header exists (a weak symbol in a static archive could otherwise shadow the real one). */
#include "serve/serve_gpu_api.h"

#ifndef PL_SERVE_HAVE_GPU_EXECUTOR
#include <stdio.h>

__attribute__((weak)) int pl_serve_gpu_create(const pl_serve_gpu_options *o, pl_serve_gpu **out, int *num_pages_out,
                                              char *err, size_t errlen)
{
    (void)o;
    (void)num_pages_out;
    *out = NULL;
    snprintf(err, errlen,
             "the GPU executor is not built (engine/serve_gpu is missing from this build); "
             "--executor floor computes the engine's ceiling instead");
    return -1;
}

__attribute__((weak)) int pl_serve_gpu_step(void *ctx, const pl_serve_step *step, double *seconds)
{
    (void)ctx;
    (void)step;
    *seconds = 0;
    return -1;
}

__attribute__((weak)) const int *pl_serve_gpu_last_tokens(const pl_serve_gpu *g)
{
    (void)g;
    return NULL;
}

__attribute__((weak)) void pl_serve_gpu_destroy(pl_serve_gpu *g)
{
    (void)g;
}
#endif
