/* The host reference of the FP8 GEMM quantizers (labs/common/fp8_quant_ref.h): the power-of-two scale, per tensor,
 * 1×128 (activations) and 128×128 (weights) blocks with their layouts (gemm/fp8.h), partial blocks at the edges, a
 * block of zeros, and the dequantized values. tests/gpu/test_engine_layer_fp8w.c compares the device's weight
 * quantization with it byte for byte and uses it for the activations in the layer's float64 reference. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fp8_quant_ref.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "perflab/verify.h"
#include "testutil.h"

static uint16_t b16(float f)
{
    return pl_bf16_round_host(f);
}

START_TEST(scale_pow2)
{
    ck_assert(pl_fp8_ref_scale(448.0f) == 1.0f);
    ck_assert(pl_fp8_ref_scale(449.0f) == 2.0f);
    ck_assert(pl_fp8_ref_scale(224.0f) == 0.5f);
    ck_assert(pl_fp8_ref_scale(225.0f) == 1.0f);
    ck_assert(pl_fp8_ref_scale(1.0f) == ldexpf(1.0f, -8)); /* 1/448 = 2^-8.8: up to 2^-8 */
    ck_assert(pl_fp8_ref_scale(0.0f) == 1.0f);
    ck_assert(pl_fp8_ref_scale(NAN) == 1.0f);
    ck_assert(pl_fp8_ref_scale(INFINITY) == 1.0f);
    pl_rng r;
    pl_rng_seed(&r, 128);
    for (int i = 0; i < 100000; i++) {
        const float amax = ldexpf((float)pl_rng_uniform(&r) + 0.5f, (int)(pl_rng_uniform(&r) * 80.0) - 40);
        const float s = pl_fp8_ref_scale(amax);
        int e;
        ck_assert_msg(frexpf(s, &e) == 0.5f, "amax %g: scale %g is no power of two", (double)amax, (double)s);
        ck_assert_msg(amax / s <= 448.0f && amax / s > 224.0f, "amax %g: scale %g", (double)amax, (double)s);
    }
}
END_TEST

START_TEST(tensor)
{
    const uint16_t x[4] = {b16(896.0f), b16(3.0f), b16(-5.0f), b16(0.0f)};
    uint8_t q[4];
    float s = 0;
    uint16_t deq[4];
    pl_fp8_ref_quantize(x, 2, 2, PL_FP8_SCALE_TENSOR, 0, q, &s, deq);
    ck_assert(s == 2.0f);
    ck_assert_uint_eq(q[0], 0x7e); /* 448 */
    ck_assert_uint_eq(q[1], 0x3c); /* 1.5 */
    ck_assert_uint_eq(q[2], 0xc2); /* -2.5 */
    ck_assert_uint_eq(q[3], 0x00);
    for (int i = 0; i < 4; i++)
        ck_assert(deq[i] == x[i]); /* each exactly representable at this scale */
}
END_TEST

/* x [rows][cols], uniform in ±1 times 2^e per block (e from the block's index): block scales that differ. */
static uint16_t *blocky(int rows, int cols, int brows, pl_rng *r)
{
    uint16_t *x = malloc((size_t)rows * cols * 2);
    ck_assert(x != NULL);
    for (int i = 0; i < rows; i++)
        for (int c = 0; c < cols; c++) {
            const int e = ((i / brows) * 7 + (c / 128) * 3) % 9 - 4;
            x[(size_t)i * cols + c] = b16(ldexpf((float)(2.0 * pl_rng_uniform(r) - 1.0), e));
        }
    return x;
}

/* Every element: |deq - x| within half an e4m3 step of its block (x / 16 in the top binades, scale · 2^-10 below),
 * and the block's scale tight (its amax / scale in (224, 448]). */
static void check_blocks(const uint16_t *x, const uint16_t *deq, int rows, int cols, int brows, const float *scale,
                         pl_fp8_scale_kind kind, int ld)
{
    for (int i = 0; i < rows; i++)
        for (int kb = 0; kb < pl_fp8_kblocks(cols); kb++) {
            const float s =
                kind == PL_FP8_SCALE_ROWS ? scale[(size_t)kb * ld + i] : scale[(size_t)(i / brows) * ld + kb];
            float amax = 0;
            for (int r = i / brows * brows; r < (i / brows + 1) * brows && r < rows; r++)
                for (int c = kb * 128; c < (kb + 1) * 128 && c < cols; c++)
                    amax = fmaxf(amax, fabsf((float)pl_bf16_to_double(x[(size_t)r * cols + c])));
            ck_assert_msg(amax / s <= 448.0f && amax / s > 224.0f, "row %d block %d: amax %g, scale %g", i, kb,
                          (double)amax, (double)s);
            for (int c = kb * 128; c < (kb + 1) * 128 && c < cols; c++) {
                const double v = pl_bf16_to_double(x[(size_t)i * cols + c]),
                             d = pl_bf16_to_double(deq[(size_t)i * cols + c]);
                ck_assert_msg(fabs(d - v) <= fmax(fabs(v) / 16.0, s * ldexp(1.0, -10)), "(%d, %d): %g came back %g", i,
                              c, v, d);
            }
        }
}

START_TEST(rows_1x128)
{
    pl_rng r;
    pl_rng_seed(&r, 7);
    const int rows = 5, cols = 200, ld = pl_fp8_scale_a_ld(rows); /* two k-blocks, the second 72 wide; ld 8 */
    uint16_t *x = blocky(rows, cols, 1, &r), *deq = malloc((size_t)rows * cols * 2);
    uint8_t *q = malloc((size_t)rows * cols);
    float *s = calloc(pl_fp8_scale_a_count(rows, cols), sizeof *s);
    ck_assert(deq && q && s);
    pl_fp8_ref_quantize(x, rows, cols, PL_FP8_SCALE_ROWS, ld, q, s, deq);
    check_blocks(x, deq, rows, cols, 1, s, PL_FP8_SCALE_ROWS, ld);
    ck_assert(s[rows] == 0.0f); /* the ld's padding untouched */
    /* in place gives the same values */
    uint16_t *y = malloc((size_t)rows * cols * 2);
    ck_assert(y != NULL);
    memcpy(y, x, (size_t)rows * cols * 2);
    pl_fp8_ref_quantize(y, rows, cols, PL_FP8_SCALE_ROWS, ld, NULL, NULL, y);
    ck_assert(memcmp(y, deq, (size_t)rows * cols * 2) == 0);
    free(x), free(deq), free(q), free(s), free(y);
}
END_TEST

START_TEST(blocks_128x128)
{
    pl_rng r;
    pl_rng_seed(&r, 8);
    const int rows = 130, cols = 200, ld = pl_fp8_scale_b_ld(cols); /* 2 × 2 blocks, the edges partial; ld 4 */
    uint16_t *x = blocky(rows, cols, 128, &r), *deq = malloc((size_t)rows * cols * 2);
    uint8_t *q = malloc((size_t)rows * cols);
    float *s = calloc(pl_fp8_scale_b_count(rows, cols), sizeof *s);
    ck_assert(deq && q && s);
    /* a block of zeros: rows 128-129, columns 128-199 */
    for (int i = 128; i < rows; i++)
        for (int c = 128; c < cols; c++)
            x[(size_t)i * cols + c] = 0;
    pl_fp8_ref_quantize(x, rows, cols, PL_FP8_SCALE_BLOCKS, ld, q, s, deq);
    ck_assert(s[1 * ld + 1] == 1.0f && q[(size_t)129 * cols + 199] == 0);
    x[(size_t)129 * cols + 199] = b16(1.0f); /* then check the rest with a non-zero block (its own scale) */
    pl_fp8_ref_quantize(x, rows, cols, PL_FP8_SCALE_BLOCKS, ld, q, s, deq);
    check_blocks(x, deq, rows, cols, 128, s, PL_FP8_SCALE_BLOCKS, ld);
    ck_assert(s[2] == 0.0f && s[3] == 0.0f); /* the ld's padding untouched */
    free(x), free(deq), free(q), free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fp8_quant_ref");
    TCase *tc = tcase_create("fp8_quant_ref");
    tcase_add_test(tc, scale_pow2);
    tcase_add_test(tc, tensor);
    tcase_add_test(tc, rows_1x128);
    tcase_add_test(tc, blocks_128x128);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
