/* The FP8 (e4m3) paged KV cache's numbers, one definition for the host (the reference, the tests) and the device (the
 * engine's KV write, the decode kernels).
 *
 * Scale granularity: one float per cache row, that is per (token, kv head): the row's head_dim values are stored as
 * e4m3 q and read back as q · s. A page is filled one token per decode step, so a scale per page (or per page and kv
 * head) would have to be fixed before the page's later tokens exist: they would saturate, or the page would be
 * re-quantized on every write. A row's scale is set once, when the row is written, from that row alone, and never
 * changes. It costs 4 bytes beside every head_dim bytes (3.1% at head_dim 128, 6.3% at 64).
 *
 * The scale is a power of two, s = 2^e with e the smallest exponent for which 448 · 2^e >= amax (the row's largest
 * |value|; e = 0 for an all-zero row), clamped to [-100, 100]: q = e4m3(x / s) then divides exactly, and q · s is
 * exactly a bf16 value (e4m3's 3 mantissa bits within bf16's 7, every q · 2^e within bf16's normal range), so the
 * dequantized cache has one exact bf16 meaning that the host reference and the kernels share.
 *
 * e4m3 (OCP FP8, as cuda_fp8.h's __NV_E4M3): bias 7, no infinities, 0x7f / 0xff NaN, largest finite 448 (0x7e),
 * smallest subnormal 2^-9. Conversion rounds to nearest even and saturates (|x| >= 448, infinities included, to
 * ±448: the satfinite conversion); NaN becomes 0x7f. */
#ifndef PERFLAB_ATTENTION_KV_FP8_H
#define PERFLAB_ATTENTION_KV_FP8_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PL_KV_FP8_HD __host__ __device__
#else
#define PL_KV_FP8_HD
#endif

#define PL_KV_E4M3_MAX      448.0f
#define PL_KV_E4M3_NAN      0x7f
#define PL_KV_FP8_EXP_LIMIT 100 /* |e| of a row's scale 2^e */

/* The exponent e of a row's scale 2^e for the row's largest magnitude amax (NaN and 0: e = 0; infinite: the limit):
 * the smallest e with 448 · 2^e >= amax. amax = f · 2^x with f in [0.5, 1), 448 = 0.875 · 2^9: e = x - 9 when
 * f <= 0.875, else x - 8. Integer logic on frexp's exact split, so the host and the device agree bit for bit. */
static inline PL_KV_FP8_HD int pl_kv_fp8_scale_exp(float amax)
{
    if (!(amax > 0.0f))
        return 0;
    if (isinf(amax))
        return PL_KV_FP8_EXP_LIMIT;
    int x = 0;
    const float f = frexpf(amax, &x);
    const int e = f <= 0.875f ? x - 9 : x - 8;
    return e < -PL_KV_FP8_EXP_LIMIT ? -PL_KV_FP8_EXP_LIMIT : e > PL_KV_FP8_EXP_LIMIT ? PL_KV_FP8_EXP_LIMIT : e;
}

/* e4m3 bits of f: round to nearest even, saturating at ±448, NaN to 0x7f (the host's conversion; the device uses
 * the hardware's cvt.rn.satfinite, which the GPU tests compare with this bit for bit). */
static inline PL_KV_FP8_HD uint8_t pl_kv_e4m3_from_float(float f)
{
    if (isnan(f))
        return PL_KV_E4M3_NAN;
    const uint8_t sign = signbit(f) ? 0x80 : 0x00;
    const float a = fabsf(f);
    if (a >= PL_KV_E4M3_MAX)
        return (uint8_t)(sign | 0x7e);
    if (a < 0.015625f) /* below 2^-6: subnormal steps of 2^-9 (8 rounds up into the smallest normal, 0x08) */
        return (uint8_t)(sign | (uint8_t)rintf(a * 512.0f));
    int x = 0;
    const float m = frexpf(a, &x); /* a = m · 2^x, m in [0.5, 1): exponent field x - 1 + 7 */
    int mant = (int)rintf((2.0f * m - 1.0f) * 8.0f), exp_field = x + 6;
    if (mant == 8) /* rounded up into the next binade */
        mant = 0, exp_field++;
    return (uint8_t)(sign | exp_field << 3 | mant); /* a < 448: at most 0x7e */
}

/* The value of e4m3 bits b (NaN for 0x7f / 0xff). */
static inline PL_KV_FP8_HD float pl_kv_e4m3_to_float(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7)
        return NAN;
    const float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    return (b & 0x80) ? -v : v;
}

#endif
