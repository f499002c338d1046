/* The shared harness glue of the bf16 row targets (rows_lab.h). */
#include <string.h>

#include "common/rows.h"
#include "common/rows_lab.h"

int rows_lab_check_memory(const pl_params *p, const struct pl_gpu_record *gpu, double extra_per_row,
                          double extra_per_elem, char *err, size_t errlen)
{
    const double rows = (double)pl_param_int(p, "rows"), n = rows * (double)pl_param_int(p, "cols");
    return pl_check_device_memory(gpu, (2.0 * 2.0 + extra_per_elem) * n + extra_per_row * rows, "use fewer rows",
                                  err, errlen);
}

int rows_lab_init(pl_ctx *ctx, const pl_params *p, rows_lab *io, float lo, float hi, size_t extra_bytes,
                  void (*reference)(const void *state, double *ref))
{
    io->rows = (int)pl_param_int(p, "rows");
    io->cols = (int)pl_param_int(p, "cols");
    io->n = (size_t)io->rows * (size_t)io->cols;
    io->reference = reference;
    const size_t bytes = io->n * sizeof(uint16_t);
    const double need = 2.0 * (double)bytes + (double)extra_bytes;
    if (ctx->device && need > 0.9 * (double)ctx->device->global_mem_bytes)
        return pl_fail(ctx, "--rows %d x --cols %d needs %.1f GB of device memory, %s has %.1f GB: use fewer rows",
                       io->rows, io->cols, need / 1e9, ctx->device->name, (double)ctx->device->global_mem_bytes / 1e9);
    io->x = pl_device_alloc(ctx, bytes);
    io->y = pl_device_alloc(ctx, bytes);
    io->x_host = pl_host_alloc(ctx, bytes);
    io->y_host = pl_host_alloc(ctx, bytes);
    if (!io->x || !io->y || !io->x_host || !io->y_host)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, io->x, io->n, lo, hi, ROWS_STREAM_X));
    PL_CUDA(ctx, cudaMemcpyAsync(io->x_host, io->x, bytes, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

uint16_t *rows_lab_vector(pl_ctx *ctx, size_t n, float lo, float hi, uint64_t stream_id, uint16_t **host)
{
    uint16_t *dev = pl_device_alloc(ctx, n * sizeof(uint16_t));
    *host = pl_host_alloc(ctx, n * sizeof(uint16_t));
    if (!dev || !*host)
        return NULL;
    if (pl_fill_uniform_bf16(ctx, dev, n, lo, hi, stream_id) != 0)
        return NULL;
    cudaError_t err = cudaMemcpyAsync(*host, dev, n * sizeof(uint16_t), cudaMemcpyDeviceToHost, ctx->stream);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(ctx->stream);
    if (err != cudaSuccess) {
        pl_fail_cuda(ctx, err, "copying a parameter vector back", __FILE__, __LINE__);
        return NULL;
    }
    return dev;
}

void rows_lab_counters(const pl_params *p, int vectors, double flops, pl_counters *c)
{
    const double rows = (double)pl_param_int(p, "rows"), cols = (double)pl_param_int(p, "cols");
    c->elements = rows * cols;
    c->bytes_read = 2.0 * rows * cols + 2.0 * cols * vectors;
    c->bytes_written = 2.0 * rows * cols;
    c->flops = flops * rows * cols;
}

int rows_lab_poison(pl_ctx *ctx, void *state)
{
    rows_lab *io = state;
    return pl_poison(ctx, io->y, io->n * sizeof(uint16_t));
}

/* The copy variant's output is x itself. */
static void check_copy(const rows_lab *io, pl_verification *v)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < io->n; i++)
        if (io->y_host[i] != io->x_host[i] && bad++ == 0)
            first = i;
    v->dtype = PL_DTYPE_BF16;
    v->elements = io->n;
    if (bad)
        pl_verify_set(v, 0, "the copy differs from x in %zu of %zu elements (first at %zu)", bad, io->n, first);
    else
        pl_verify_set(v, 1, "a bit-exact copy of x (this variant times the bytes, not the computation)");
}

int rows_lab_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    rows_lab *io = state;
    PL_CUDA(ctx, cudaMemcpyAsync(io->y_host, io->y, io->n * sizeof(uint16_t), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    if (io->ran_copy) {
        check_copy(io, v);
        return 0;
    }
    if (!io->ref) {
        io->ref = pl_host_alloc(ctx, io->n * sizeof(double));
        if (!io->ref)
            return -1;
        io->reference(state, io->ref);
    }
    pl_verify_bf16(io->y_host, io->ref, io->n, 0, v);
    if (!v->passed)
        return 0;
    size_t first;
    double rms;
    const size_t bad = rows_outliers(io->y_host, io->ref, io->n, &first, &rms);
    if (bad) {
        const size_t r = first / (size_t)io->cols, c = first % (size_t)io->cols;
        pl_verify_set(v, 0,
                      "%zu elements beyond |d| <= 2^-7 |ref| + 2^-8 rms(ref), first at row %zu col %zu: %.6g, "
                      "want %.6g (relative L2 error %.3g)",
                      bad, r, c, pl_bf16_to_double(io->y_host[first]), io->ref[first], v->rel_l2_error);
    } else {
        const double rel = v->rel_l2_error;
        pl_verify_set(v, 1, "relative L2 error %.3g <= %.3g (bf16); every element within 2^-7 |ref| + 2^-8 rms(ref)",
                      rel, v->tolerance);
    }
    return 0;
}

int rows_lab_run_copy(pl_ctx *ctx, void *state)
{
    rows_lab *io = state;
    io->ran_copy = 1;
    PL_CUDA(ctx, cudaMemcpyAsync(io->y, io->x, io->n * sizeof(uint16_t), cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

int rows_lab_check_vpt(pl_ctx *ctx, const rows_lab *io, int vpt, int vpt_max)
{
    pl_rows_shape sh;
    if (pl_rows_pick_shape(io->rows, io->cols, pl_rows_aligned(io->x, io->cols), vpt, vpt_max, &sh) != 0)
        return pl_fail(ctx,
                       "--vpt %d does not fit --cols %d: the fused kernel holds 1, 2, 4%s vectors of 8 per thread "
                       "with at most %d threads per row; use --vpt 0 (picks by --cols)",
                       vpt, io->cols, vpt_max >= 8 ? " or 8" : "", PL_ROWS_MAX_GROUP);
    return 0;
}
