/* The host reference of gemm/fp8.h's quantizers (kernels/gemm/ops/fp8_quant.cu), bit for bit: bf16 in, e4m3 out,
 * each scale the power of two 2^⌈log2(amax/448)⌉ computed as the device computes it (amax/448 in float, frexpf),
 * 1 for a block of zeros; e4m3 by round to nearest even, saturating (attention/kv_fp8.h's conversion, which the GPU
 * tests compare with the hardware's cvt.rn.satfinite). The dequantized values (q · scale) are exact bf16 values:
 * what a float64 reference multiplies to get an FP8 GEMM's ideal result. */
#ifndef PERFLAB_LABS_FP8_QUANT_REF_H
#define PERFLAB_LABS_FP8_QUANT_REF_H

#include <stdint.h>

#include "gemm/fp8.h"

/* The scale of a block whose largest magnitude is amax (NaN and Inf: 1, as the device's). */
float pl_fp8_ref_scale(float amax);

/* x [rows][cols] bf16 quantized with `kind`'s scales (PL_FP8_SCALE_TENSOR: scale[0]; PL_FP8_SCALE_ROWS: 1×128 at
 * scale[kb · ld + row]; PL_FP8_SCALE_BLOCKS: 128×128 at scale[nb · ld + kb], one matrix): the e4m3 bytes into q,
 * the scales into scale, q · scale as bf16 into deq; any of the three may be NULL, deq may be x. */
void pl_fp8_ref_quantize(const uint16_t *x, int rows, int cols, pl_fp8_scale_kind kind, int ld, uint8_t *q,
                         float *scale, uint16_t *deq);

#endif
