/* The e2e: targets' memory floor (e2e_floor.h). */
#include <stdint.h>
#include <stdlib.h>

#include "common/e2e_floor.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"

static const pl_stream_config read_config = {.unroll = 8, .waves = 0, .streaming = 1};

int e2e_floor_add(pl_ctx *ctx, e2e_floor *f, const void *p, size_t bytes)
{
    if (f->n == E2E_FLOOR_REGIONS)
        return pl_fail(ctx, "the floor holds at most %d regions", E2E_FLOOR_REGIONS);
    if (bytes < 4)
        return 0;
    f->src[f->n] = (const float *)p;
    f->words[f->n++] = bytes / 4;
    return 0;
}

int e2e_floor_ready(pl_ctx *ctx, e2e_floor *f)
{
    unsigned resident = 0;
    PL_CUDA(ctx, pl_stream_resident_blocks(PL_STREAM_READ, &read_config, &resident));
    f->most = 1;
    for (int i = 0; i < f->n; i++) {
        f->grid[i] = pl_stream_grid(f->words[i], &read_config, resident);
        f->most = f->grid[i] > f->most ? f->grid[i] : f->most;
    }
    f->partial = pl_device_alloc(ctx, f->most * sizeof(float));
    return f->partial ? 0 : -1;
}

int e2e_floor_read(pl_ctx *ctx, const e2e_floor *f)
{
    for (int i = 0; i < f->n; i++)
        PL_CUDA(ctx, pl_stream_read(f->src[i], f->words[i], &read_config, f->grid[i], f->partial, ctx->stream));
    return 0;
}

int e2e_floor_poison(pl_ctx *ctx, const e2e_floor *f)
{
    return pl_poison(ctx, f->partial, f->most * sizeof(float));
}

int e2e_floor_check(pl_ctx *ctx, const e2e_floor *f, pl_verification *v)
{
    uint32_t *h = malloc(f->most * sizeof *h);
    if (!h)
        return pl_fail(ctx, "out of host memory for the check");
    if (cudaMemcpy(h, f->partial, f->most * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return pl_fail(ctx, "copying the floor's partial sums back failed");
    }
    size_t unwritten = 0;
    for (unsigned i = 0; i < f->most; i++)
        unwritten += h[i] == 0xffffffffu;
    free(h);
    pl_verify_set(v, unwritten == 0, "the floor's reads ran: %zu of %u blocks' partial sums unwritten", unwritten,
                  f->most);
    return 0;
}
