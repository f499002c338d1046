#include "common/fp8_operands.h"

#include <string.h>

#include "perflab/device.h"

#define MAGNITUDE_EXP 3 /* source blocks scaled by 2^-3 .. 2^3 */

int pl_fp8_sources_fill(pl_ctx *ctx, uint16_t *a, int rows_a, uint16_t *b, int rows_b_total, int k, uint64_t stream_a,
                        uint64_t stream_b, pl_fp8_inputs inputs)
{
    const float lo = inputs == PL_FP8_INPUTS_POSITIVE ? 0.0f : -1.0f;
    PL_TRY(pl_fill_uniform_bf16(ctx, a, (size_t)rows_a * k, lo, 1.0f, stream_a));
    PL_TRY(pl_fill_uniform_bf16(ctx, b, (size_t)rows_b_total * k, lo, 1.0f, stream_b));
    PL_CUDA(ctx,
            pl_bf16_scale_blocks_pow2(a, rows_a, k, 1, PL_FP8_BLOCK, MAGNITUDE_EXP, ctx->seed ^ stream_a, ctx->stream));
    PL_CUDA(ctx, pl_bf16_scale_blocks_pow2(b, rows_b_total, k, PL_FP8_BLOCK, PL_FP8_BLOCK, MAGNITUDE_EXP,
                                           ctx->seed ^ stream_b, ctx->stream));
    return 0;
}

int pl_fp8_operands_make(pl_ctx *ctx, const uint16_t *a_src, int rows_a, const uint16_t *b_src, int batch, int rows_b,
                         int k, pl_fp8_scaling scaling, pl_fp8_operands *o)
{
    memset(o, 0, sizeof *o);
    o->rows_a = rows_a;
    o->batch = batch;
    o->rows_b = rows_b;
    o->k = k;
    o->scaling = scaling;
    const size_t na = (size_t)rows_a * k, nb = (size_t)batch * rows_b * k;
    o->a = pl_device_alloc(ctx, na + 16);
    o->b = pl_device_alloc(ctx, nb + 16);
    if (!o->a || !o->b)
        return -1;
    if (scaling == PL_FP8_SCALING_TENSOR) {
        unsigned *amax = pl_device_alloc(ctx, sizeof *amax);
        o->sa = pl_device_alloc(ctx, sizeof(float));
        o->sb = pl_device_alloc(ctx, sizeof(float));
        if (!amax || !o->sa || !o->sb)
            return -1;
        PL_CUDA(ctx, pl_fp8_quantize_tensor(a_src, na, o->a, o->sa, amax, ctx->stream));
        PL_CUDA(ctx, pl_fp8_quantize_tensor(b_src, nb, o->b, o->sb, amax, ctx->stream));
        return 0;
    }
    const size_t ca = pl_fp8_scale_a_count(rows_a, k), cb = (size_t)batch * pl_fp8_scale_b_count(rows_b, k);
    o->sa = pl_device_alloc(ctx, ca * sizeof(float));
    o->sb = pl_device_alloc(ctx, cb * sizeof(float));
    if (!o->sa || !o->sb)
        return -1;
    /* the padding of the leading dimensions is never read; give it a value all the same */
    PL_CUDA(ctx, cudaMemsetAsync(o->sa, 0, ca * sizeof(float), ctx->stream));
    PL_CUDA(ctx, cudaMemsetAsync(o->sb, 0, cb * sizeof(float), ctx->stream));
    PL_CUDA(ctx, pl_fp8_quantize_rows(a_src, rows_a, k, o->a, o->sa, pl_fp8_scale_a_ld(rows_a), ctx->stream));
    PL_CUDA(ctx, pl_fp8_quantize_blocks(b_src, batch, rows_b, k, o->b, o->sb, pl_fp8_scale_b_ld(k), ctx->stream));
    return 0;
}

int pl_fp8_operands_dequantize(pl_ctx *ctx, const pl_fp8_operands *o, uint16_t *a16, uint16_t *b16)
{
    const int block = o->scaling == PL_FP8_SCALING_BLOCK;
    PL_CUDA(ctx, pl_fp8_dequantize(o->a, 1, o->rows_a, o->k, block ? PL_FP8_SCALE_ROWS : PL_FP8_SCALE_TENSOR, o->sa,
                                   pl_fp8_scale_a_ld(o->rows_a), a16, ctx->stream));
    PL_CUDA(ctx, pl_fp8_dequantize(o->b, block ? o->batch : 1, block ? o->rows_b : o->batch * o->rows_b, o->k,
                                   block ? PL_FP8_SCALE_BLOCKS : PL_FP8_SCALE_TENSOR, o->sb, pl_fp8_scale_b_ld(o->k),
                                   b16, ctx->stream));
    return 0;
}
