#include "common/affine_io.h"

int pl_affine_io_setup(pl_ctx *ctx, size_t n, uint64_t stream_id, pl_affine_io *io)
{
    const size_t bytes = n * sizeof(float);
    io->n = n;
    io->x = pl_device_alloc(ctx, bytes);
    io->y = pl_device_alloc(ctx, bytes);
    io->y_host = pl_host_alloc(ctx, bytes);
    io->ref = pl_host_alloc(ctx, n * sizeof(double));
    if (!io->x || !io->y || !io->y_host || !io->ref)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, io->x, n, -1.0f, 1.0f, stream_id));
    /* The reference starts from the input as the GPU holds it; y_host is free until the first check. */
    PL_CUDA(ctx, cudaMemcpyAsync(io->y_host, io->x, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < n; i++)
        io->ref[i] = (double)PL_AFFINE_A * (double)io->y_host[i] + (double)PL_AFFINE_B;
    return 0;
}

int pl_affine_io_poison(pl_ctx *ctx, const pl_affine_io *io)
{
    return pl_poison(ctx, io->y, io->n * sizeof(float));
}

int pl_affine_io_check(pl_ctx *ctx, const pl_affine_io *io, pl_verification *v)
{
    PL_CUDA(ctx, cudaMemcpyAsync(io->y_host, io->y, io->n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_f32(io->y_host, io->ref, io->n, PL_DTYPE_F32, 0.0, v);
    return 0;
}
