/* The FP8 KV cache's host helpers (kernels/attention/kv_fp8.h): e4m3 conversion (round to nearest even, saturation
 * at 448, NaN, subnormals) and the rows' power-of-two scale exponent. The device's conversion (cvt.rn.satfinite) is
 * compared with these bit for bit by tests/gpu/test_engine_layer.c. */
#include <math.h>
#include <stdint.h>

#include "attention/kv_fp8.h"
#include "perflab/stats.h"
#include "testutil.h"

static uint8_t q(float f)
{
    return pl_kv_e4m3_from_float(f);
}

START_TEST(exact_values)
{
    ck_assert_uint_eq(q(0.0f), 0x00);
    ck_assert_uint_eq(q(-0.0f), 0x80);
    ck_assert_uint_eq(q(1.0f), 0x38); /* exponent field 7 */
    ck_assert_uint_eq(q(-1.0f), 0xb8);
    ck_assert_uint_eq(q(448.0f), 0x7e);
    ck_assert_uint_eq(q(0.015625f), 0x08);     /* 2^-6: the smallest normal */
    ck_assert_uint_eq(q(ldexpf(1.0f, -9)), 1); /* the smallest subnormal */
    ck_assert_uint_eq(q(ldexpf(7.0f, -9)), 7); /* the largest subnormal */
    ck_assert(pl_kv_e4m3_to_float(0x7e) == 448.0f);
    ck_assert(pl_kv_e4m3_to_float(0xfe) == -448.0f);
    ck_assert(pl_kv_e4m3_to_float(0x01) == ldexpf(1.0f, -9));
    ck_assert(pl_kv_e4m3_to_float(0x38) == 1.0f);
}
END_TEST

/* Every byte but the NaNs converts to a value that converts back to the same byte. */
START_TEST(round_trip_every_byte)
{
    for (int b = 0; b < 256; b++) {
        const float v = pl_kv_e4m3_to_float((uint8_t)b);
        if ((b & 0x7f) == 0x7f) {
            ck_assert_msg(isnan(v), "byte 0x%02x should be NaN", b);
            continue;
        }
        ck_assert_msg(q(v) == b, "byte 0x%02x -> %g -> 0x%02x", b, (double)v, q(v));
    }
}
END_TEST

/* Halfway between two neighbours goes to the one with an even mantissa (the byte's low bit); a hair either side of
 * halfway goes to the nearer one. Every pair of positive neighbours, subnormals included. */
START_TEST(round_to_nearest_even)
{
    for (int b = 0; b < 0x7e; b++) {
        const float lo = pl_kv_e4m3_to_float((uint8_t)b), hi = pl_kv_e4m3_to_float((uint8_t)(b + 1));
        const float mid = 0.5f * (lo + hi); /* exact: neighbours differ by a power of two */
        const int even = (b & 1) == 0 ? b : b + 1;
        ck_assert_msg(q(mid) == even, "halfway %g between 0x%02x and 0x%02x -> 0x%02x", (double)mid, b, b + 1, q(mid));
        ck_assert_uint_eq(q(nextafterf(mid, 0.0f)), b);
        ck_assert_uint_eq(q(nextafterf(mid, INFINITY)), b + 1);
        ck_assert_uint_eq(q(-mid), 0x80 | even);
    }
    ck_assert_uint_eq(q(1.0625f), 0x38);           /* 1 + 1/16: halfway between 1 and 1.125, to 1 (even) */
    ck_assert_uint_eq(q(1.1875f), 0x3a);           /* halfway between 1.125 and 1.25, to 1.25 (even) */
    ck_assert_uint_eq(q(ldexpf(1.0f, -10)), 0x00); /* halfway between 0 and 2^-9 */
    ck_assert_uint_eq(q(ldexpf(3.0f, -10)), 0x02); /* halfway between 2^-9 and 2^-8 */
}
END_TEST

/* Past the largest finite value everything saturates to ±448 (satfinite), infinities included; NaN is 0x7f. */
START_TEST(saturation_and_nan)
{
    ck_assert_uint_eq(q(449.0f), 0x7e);
    ck_assert_uint_eq(q(464.0f), 0x7e); /* halfway to the would-be 480 */
    ck_assert_uint_eq(q(480.0f), 0x7e);
    ck_assert_uint_eq(q(1e30f), 0x7e);
    ck_assert_uint_eq(q(-1e30f), 0xfe);
    ck_assert_uint_eq(q(INFINITY), 0x7e);
    ck_assert_uint_eq(q(-INFINITY), 0xfe);
    ck_assert_uint_eq(q(NAN), 0x7f);
    ck_assert_uint_eq(q(-NAN), 0x7f);
    ck_assert(isnan(pl_kv_e4m3_to_float(0x7f)) && isnan(pl_kv_e4m3_to_float(0xff)));
}
END_TEST

/* The scale 2^e: the smallest e with 448·2^e >= amax, clamped to ±100; 0 for an all-zero row or NaN. */
START_TEST(scale_exponent)
{
    ck_assert_int_eq(pl_kv_fp8_scale_exp(448.0f), 0);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(nextafterf(448.0f, INFINITY)), 1);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(224.0f), -1);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(nextafterf(224.0f, INFINITY)), 0);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(1.0f), -8); /* 448/256 = 1.75 >= 1 > 0.875 */
    ck_assert_int_eq(pl_kv_fp8_scale_exp(0.0f), 0);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(NAN), 0);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(INFINITY), PL_KV_FP8_EXP_LIMIT);
    ck_assert_int_eq(pl_kv_fp8_scale_exp(1e-38f), -PL_KV_FP8_EXP_LIMIT);
    pl_rng r;
    pl_rng_seed(&r, 448);
    for (int i = 0; i < 100000; i++) {
        const float amax = ldexpf((float)pl_rng_uniform(&r) + 0.5f, (int)(pl_rng_uniform(&r) * 120.0) - 60);
        const int e = pl_kv_fp8_scale_exp(amax);
        ck_assert_msg(448.0f * ldexpf(1.0f, e) >= amax && 448.0f * ldexpf(1.0f, e - 1) < amax, "amax %g: e %d",
                      (double)amax, e);
        /* the row's largest element lands in the top binade without saturating, so q · 2^e is within half a step */
        const float back = pl_kv_e4m3_to_float(q(amax / ldexpf(1.0f, e))) * ldexpf(1.0f, e);
        ck_assert_msg(fabsf(back - amax) <= amax / 16.0f, "amax %g came back %g", (double)amax, (double)back);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kv_fp8");
    TCase *tc = tcase_create("kv_fp8");
    tcase_add_test(tc, exact_values);
    tcase_add_test(tc, round_trip_every_byte);
    tcase_add_test(tc, round_to_nearest_even);
    tcase_add_test(tc, saturation_and_nan);
    tcase_add_test(tc, scale_exponent);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
