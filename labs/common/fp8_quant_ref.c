/* The host reference of the FP8 quantizers (fp8_quant_ref.h). */
#include <math.h>
#include <stddef.h>

#include "attention/kv_fp8.h"
#include "common/fp8_quant_ref.h"
#include "perflab/device.h"
#include "perflab/verify.h"

float pl_fp8_ref_scale(float amax)
{
    if (!(amax > 0.0f) || !isfinite(amax))
        return 1.0f;
    int e;
    const float m = frexpf(amax / PL_FP8_E4M3_MAX, &e); /* in float, as the device divides */
    return ldexpf(1.0f, m > 0.5f ? e : e - 1);
}

static float bf16_float(uint16_t b)
{
    return (float)pl_bf16_to_double(b);
}

/* The block rows [r0, r1) × cols [c0, c1) of x (row stride cols) quantized with one scale. */
static float quantize_block(const uint16_t *x, int cols, int r0, int r1, int c0, int c1, uint8_t *q, uint16_t *deq)
{
    float amax = 0.0f;
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) {
            const float a = fabsf(bf16_float(x[(size_t)r * cols + c]));
            amax = a > amax ? a : amax; /* NaN compares false: left out, as the device's fmaxf leaves it */
        }
    const float s = pl_fp8_ref_scale(amax), inv = 1.0f / s;
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) {
            const size_t i = (size_t)r * cols + c;
            const uint8_t b = pl_kv_e4m3_from_float(bf16_float(x[i]) * inv);
            if (q)
                q[i] = b;
            if (deq)
                deq[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(b) * s);
        }
    return s;
}

void pl_fp8_ref_quantize(const uint16_t *x, int rows, int cols, pl_fp8_scale_kind kind, int ld, uint8_t *q,
                         float *scale, uint16_t *deq)
{
    if (kind == PL_FP8_SCALE_TENSOR) {
        const float s = quantize_block(x, cols, 0, rows, 0, cols, q, deq);
        if (scale)
            scale[0] = s;
        return;
    }
    const int kblocks = pl_fp8_kblocks(cols), rstep = kind == PL_FP8_SCALE_ROWS ? 1 : PL_FP8_BLOCK;
    for (int r0 = 0; r0 < rows; r0 += rstep)
        for (int kb = 0; kb < kblocks; kb++) {
            const int r1 = r0 + rstep < rows ? r0 + rstep : rows;
            const int c0 = kb * PL_FP8_BLOCK, c1 = c0 + PL_FP8_BLOCK < cols ? c0 + PL_FP8_BLOCK : cols;
            const float s = quantize_block(x, cols, r0, r1, c0, c1, q, deq);
            if (scale)
                scale[kind == PL_FP8_SCALE_ROWS ? (size_t)kb * ld + r0 : (size_t)(r0 / PL_FP8_BLOCK) * ld + kb] = s;
        }
}
