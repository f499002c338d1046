/* What the FP8 targets (gemm:fp8, moe:grouped_gemm) share: bf16 sources whose magnitude varies from block to block,
 * their e4m3 quantization with tensor or block scales (gemm/fp8.h), and the quantized values back in bf16
 * (exactly: the scales are powers of two), which is what the references multiply. */
#ifndef PERFLAB_LABS_FP8_OPERANDS_H
#define PERFLAB_LABS_FP8_OPERANDS_H

#include "gemm/fp8.h"
#include "perflab/ctx.h"

/* A is rows_a × K; B is `batch` matrices of rows_b × K one after another (a GEMM's weight, or every expert's). */
typedef struct pl_fp8_operands {
    int rows_a, batch, rows_b, k;
    pl_fp8_scaling scaling;
    uint8_t *a, *b; /* e4m3 */
    float *sa, *sb; /* device. tensor: one float each; block: A 1×128, B 128×128 per matrix (gemm/fp8.h) */
} pl_fp8_operands;

/* The sources' signs. SIGNED: uniform [-1, 1), a sum over K that grows like √K. POSITIVE: uniform [0, 1) in A and
 * B, a sum that grows like K, the hardest case for a long FP8 accumulation (the tensor core's truncated adds lose
 * the most against a large running sum): what tells promotion intervals apart. */
typedef enum { PL_FP8_INPUTS_SIGNED = 0, PL_FP8_INPUTS_POSITIVE = 1 } pl_fp8_inputs;

/* Uniform bf16 of the given signs (seed streams stream_a, stream_b of ctx->seed), each 1×128 block of A and
 * 128×128 block of B (counted over the whole B, batch·rows_b rows) multiplied by 2^e, e in [-3, 3]: block scales
 * then differ by up to 64×, so one applied to the wrong block shows in the error. */
int pl_fp8_sources_fill(pl_ctx *ctx, uint16_t *a, int rows_a, uint16_t *b, int rows_b_total, int k, uint64_t stream_a,
                        uint64_t stream_b, pl_fp8_inputs inputs);

/* Quantize the bf16 sources (pl_device_alloc'd results). */
int pl_fp8_operands_make(pl_ctx *ctx, const uint16_t *a_src, int rows_a, const uint16_t *b_src, int batch, int rows_b,
                         int k, pl_fp8_scaling scaling, pl_fp8_operands *out);

/* The quantized operands dequantized to bf16 into a16 (rows_a × K) and b16 (batch × rows_b × K), exactly. */
int pl_fp8_operands_dequantize(pl_ctx *ctx, const pl_fp8_operands *o, uint16_t *a16, uint16_t *b16);

#endif
