/* The host side of the bf16 row targets: the launch shapes the fused kernels take for a row length, the float64
 * references on inputs small enough to work out by hand, and the per-element bound that catches one wrong row. */
#include <math.h>
#include <string.h>

#include "common/rows.h"
#include "common/rows_lab.h"
#include "testutil.h"

static uint16_t bf16(float f)
{
    return pl_bf16_round_host(f);
}

START_TEST(shape_by_row_length)
{
    pl_rows_shape s;
    /* 16384 x 8192, aligned: a block of 256 per row, 4 vectors each, one row per block */
    ck_assert_int_eq(pl_rows_pick_shape(16384, 8192, 1, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 4);
    ck_assert_int_eq(s.group, 256);
    ck_assert_int_eq(s.rows_per_block, 1);
    ck_assert_uint_eq(s.blocks, 16384);
    /* 1000 columns: 125 vectors, a warp per row with 4 each, 8 rows per block */
    ck_assert_int_eq(pl_rows_pick_shape(77, 1000, 1, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 4);
    ck_assert_int_eq(s.group, 32);
    ck_assert_int_eq(s.rows_per_block, 8);
    ck_assert_uint_eq(s.blocks, 10);
    /* one column: a thread per row, 256 rows per block */
    ck_assert_int_eq(pl_rows_pick_shape(1, 1, 0, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 1);
    ck_assert_int_eq(s.group, 1);
    ck_assert_int_eq(s.threads, 256);
    ck_assert_uint_eq(s.blocks, 1);
    /* unaligned rows may touch one vector more: 24 columns -> up to 4 vectors, 3 when aligned */
    ck_assert_int_eq(pl_rows_vectors(24, 1), 3);
    ck_assert_int_eq(pl_rows_vectors(24, 0), 4);
    ck_assert_int_eq(pl_rows_vectors(1, 0), 1);
    ck_assert_int_eq(pl_rows_vectors(9, 0), 2);
    /* 40000 aligned columns: 5000 vectors, beyond 4 x 1024: 8 per thread (norms), looped (softmax's limit is 4) */
    ck_assert_int_eq(pl_rows_pick_shape(7, 40000, 1, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 8);
    ck_assert_int_eq(s.group, 640);
    ck_assert_int_eq(pl_rows_pick_shape(7, 40000, 1, 0, 4, &s), 0);
    ck_assert_int_eq(s.nv, 0);
    ck_assert_int_eq(s.group, 1024);
    ck_assert_int_eq(s.rows_per_block, 1);
    /* 65536 aligned: exactly 1024 x 8; 70001 unaligned: beyond, looped */
    ck_assert_int_eq(pl_rows_pick_shape(3, 65536, 1, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 8);
    ck_assert_int_eq(s.group, 1024);
    ck_assert_int_eq(pl_rows_pick_shape(2, 70001, 0, 0, 8, &s), 0);
    ck_assert_int_eq(s.nv, 0);
}
END_TEST

START_TEST(shape_requests)
{
    pl_rows_shape s;
    ck_assert_int_eq(pl_rows_pick_shape(9, 4000, 1, 1, 8, &s), 0); /* 500 vectors at 1 each: 512 threads */
    ck_assert_int_eq(s.group, 512);
    ck_assert_int_eq(pl_rows_pick_shape(9, 4000, 1, 8, 8, &s), 0); /* 63 threads -> 2 warps, 4 rows per block */
    ck_assert_int_eq(s.group, 64);
    ck_assert_int_eq(s.rows_per_block, 4);
    ck_assert_int_eq(pl_rows_pick_shape(9, 4000, 1, 3, 8, &s), -1);  /* not a power of two */
    ck_assert_int_eq(pl_rows_pick_shape(9, 4000, 1, 8, 4, &s), -1);  /* beyond the kernel's limit */
    ck_assert_int_eq(pl_rows_pick_shape(9, 16384, 1, 1, 8, &s), -1); /* 2048 threads for one row */
    ck_assert_int_eq(pl_rows_pick_shape(0, 16, 1, 0, 8, &s), -1);
    ck_assert_int_eq(pl_rows_pick_shape(1, 0, 1, 0, 8, &s), -1);
}
END_TEST

START_TEST(references_by_hand)
{
    /* rows [3, 4] and [1, -1]; w = [1, 2]; b = [0.5, -0.5] */
    const uint16_t x[4] = {bf16(3), bf16(4), bf16(1), bf16(-1)};
    const uint16_t w[2] = {bf16(1), bf16(2)}, b[2] = {bf16(0.5f), bf16(-0.5f)};
    double ref[4];
    rows_ref_rmsnorm(x, w, 2, 2, 0.0, ref);
    const double r0 = sqrt(12.5);
    ck_assert_double_eq_tol(ref[0], 3 / r0, 1e-12);
    ck_assert_double_eq_tol(ref[1], 8 / r0, 1e-12);
    ck_assert_double_eq_tol(ref[2], 1.0, 1e-12);
    ck_assert_double_eq_tol(ref[3], -2.0, 1e-12);
    rows_ref_layernorm(x, w, b, 2, 2, 0.0, ref); /* each row: mean +-0.5 away, std 0.5 -> (-1, 1) */
    ck_assert_double_eq_tol(ref[0], -1 * 1 + 0.5, 1e-12);
    ck_assert_double_eq_tol(ref[1], 1 * 2 - 0.5, 1e-12);
    ck_assert_double_eq_tol(ref[2], 1 * 1 + 0.5, 1e-12);
    ck_assert_double_eq_tol(ref[3], -1 * 2 - 0.5, 1e-12);
    rows_ref_softmax(x, 2, 2, ref);
    ck_assert_double_eq_tol(ref[0], 1 / (1 + exp(1.0)), 1e-12);
    ck_assert_double_eq_tol(ref[0] + ref[1], 1.0, 1e-12);
    ck_assert_double_eq_tol(ref[2], exp(2.0) / (1 + exp(2.0)), 1e-12);
    /* GELU: 0 at 0, x for large x, 0 for very negative x, the tanh form at 1 */
    ck_assert_double_eq_tol(rows_ref_gelu(0), 0, 1e-15);
    ck_assert_double_eq_tol(rows_ref_gelu(10), 10, 1e-9);
    ck_assert_double_eq_tol(rows_ref_gelu(-10), 0, 1e-9);
    ck_assert_double_eq_tol(rows_ref_gelu(1), 0.5 * (1 + tanh(sqrt(2 / 3.14159265358979323846) * 1.044715)), 1e-15);
    rows_ref_chain(x, b, 2, 2, 2.0, ref);
    ck_assert_double_eq_tol(ref[0], 2 * rows_ref_gelu(3.5), 1e-12);
    ck_assert_double_eq_tol(ref[3], 2 * rows_ref_gelu(-1.5), 1e-12);
}
END_TEST

START_TEST(one_wrong_row_is_caught)
{
    enum { ROWS = 256, COLS = 64 };
    static uint16_t out[ROWS * COLS];
    static double ref[ROWS * COLS];
    for (size_t i = 0; i < ROWS * COLS; i++) {
        ref[i] = sin((double)i) + 0.01;
        out[i] = bf16((float)ref[i]); /* a bf16 rounding: within the bound */
    }
    size_t first;
    double rms;
    ck_assert_uint_eq(rows_outliers(out, ref, ROWS * COLS, &first, &rms), 0);
    ck_assert(rms > 0.5 && rms < 1);
    /* row 100 scaled by 1.1 (a wrong statistic): the relative L2 error over the matrix stays under 1e-2 ... */
    for (size_t c = 0; c < COLS; c++)
        out[100 * COLS + c] = bf16((float)(1.1 * ref[100 * COLS + c]));
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < ROWS * COLS; i++) {
        const double d = pl_bf16_to_double(out[i]) - ref[i];
        e2 += d * d;
        r2 += ref[i] * ref[i];
    }
    ck_assert(sqrt(e2 / r2) < 1e-2);
    /* ... but the per-element bound sees it */
    ck_assert_uint_gt(rows_outliers(out, ref, ROWS * COLS, &first, &rms), COLS / 2);
    ck_assert_uint_eq(first / COLS, 100);
    /* and a NaN is never within it */
    out[100 * COLS] = bf16((float)ref[100 * COLS]);
    for (size_t c = 0; c < COLS; c++)
        out[100 * COLS + c] = bf16((float)ref[100 * COLS + c]);
    out[7] = 0x7fc0;
    ck_assert_uint_eq(rows_outliers(out, ref, ROWS * COLS, &first, &rms), 1);
    ck_assert_uint_eq(first, 7);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("rows");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, shape_by_row_length);
    tcase_add_test(tc, shape_requests);
    tcase_add_test(tc, references_by_hand);
    tcase_add_test(tc, one_wrong_row_is_caught);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
