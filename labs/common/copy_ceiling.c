#include "common/copy_ceiling.h"

#include <string.h>

int pl_copy_ceiling_check(pl_ctx *ctx, const void *dst, const void *expect, size_t bytes, void *scratch,
                          pl_verification *v)
{
    PL_CUDA(ctx, cudaMemcpyAsync(scratch, dst, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    const unsigned char *a = scratch, *b = expect;
    size_t first = bytes;
    if (memcmp(a, b, bytes) != 0)
        for (first = 0; first < bytes && a[first] == b[first]; first++)
            ;
    memset(v, 0, sizeof *v);
    v->elements = bytes;
    v->dtype = PL_DTYPE_I32;
    if (first < bytes) {
        v->max_error_index = first;
        pl_verify_set(v, 0, "the ceiling copy differs from its source at byte %zu of %zu", first, bytes);
    } else {
        pl_verify_set(v, 1, "a copy of the same bytes (the ceiling, not the target's result): all %zu bytes equal",
                      bytes);
    }
    return 0;
}
