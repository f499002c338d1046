/* On a GPU: the bf16 row targets (norm:rmsnorm, norm:layernorm, softmax:rows, fusion:elementwise_chain) verified
 * at edge shapes and at shapes that are no multiple of any block, vector or group size, each shape reaching a
 * different launch shape of the fused kernels (part of a warp per row, a warp, a block with 1 to 8 vectors per
 * thread, the looped kernel for rows too long for the registers, rows not 16-byte aligned), plus every
 * vectors-per-thread setting forced, and a bad one refused with the fix. Exits 77 (skipped) without a GPU. */
#include <stdio.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

#define ROW_TARGETS "norm,softmax:rows,fusion:elementwise_chain"

/* `perflab verify` of the four targets, all at rows x cols plus `extra` for the targets that take it, every
 * variant ok and verified. */
static void verify_shape(const char *tag, int rows, int cols, const char *norm_extra, const char *softmax_extra)
{
    char args[2048];
    snprintf(args, sizeof args,
             "verify --targets " ROW_TARGETS " --target-extra-arg 'norm:rmsnorm=--rows %d --cols %d %s' "
             "--target-extra-arg 'norm:layernorm=--rows %d --cols %d %s' "
             "--target-extra-arg 'softmax:rows=--rows %d --cols %d %s' "
             "--target-extra-arg 'fusion:elementwise_chain=--rows %d --cols %d'",
             rows, cols, norm_extra, rows, cols, norm_extra, rows, cols, softmax_extra, rows, cols);
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load(tag, args, &run, &r);
    ck_assert_msg(code == 0, "%d x %d: exit %d\n%s%s", rows, cols, code, r.out, r.err);
    ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), 4);
    printf("verified %d x %d %s\n", rows, cols, norm_extra);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}

START_TEST(edge_shapes)
{
    verify_shape("rows-1x1", 1, 1, "", "");     /* one element: a group of one thread, 256 rows per block */
    verify_shape("rows-1x7", 1, 7, "", "");     /* less than one vector */
    verify_shape("rows-33x24", 33, 24, "", ""); /* 3 vectors: groups of 4 threads, a partial last block */
    verify_shape("rows-130x9", 130, 9, "", ""); /* rows straddling vectors, one row per 2-thread group */
}
END_TEST

START_TEST(odd_shapes)
{
    verify_shape("rows-77x1000", 77, 1000, "", ""); /* 125 vectors: a warp per row, 4 each */
    verify_shape("rows-77x1001", 77, 1001, "", ""); /* rows not 16-byte aligned: edge vectors */
    verify_shape("rows-3x8193", 3, 8193, "", "");   /* a block per row, one vector too many for 256 threads */
    verify_shape("rows-5x4096", 5, 4096, "", "");   /* a block of 128 per row */
    verify_shape("rows-7x40000", 7, 40000, "", ""); /* norms: 8 vectors per thread; softmax: the looped kernel */
    verify_shape("rows-2x70001", 2, 70001, "", ""); /* every target beyond the registers: the looped kernels */
    verify_shape("rows-3x65536", 3, 65536, "", ""); /* the largest register-resident norm row: 1024 x 8 vectors */
}
END_TEST

START_TEST(forced_vectors_per_thread)
{
    /* every instantiation of the fused kernels at a size that is no multiple of their group */
    verify_shape("rows-vpt1", 9, 4000, "--vpt 1", "--vpt 1");
    verify_shape("rows-vpt2", 9, 4000, "--vpt 2", "--vpt 2");
    verify_shape("rows-vpt4", 9, 4001, "--vpt 4", "--vpt 4");
    verify_shape("rows-vpt8", 9, 4001, "--vpt 8", "--vpt 4");
}
END_TEST

START_TEST(bad_vpt_is_refused)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("rows-badvpt",
                                    "verify --targets norm:rmsnorm --target-extra-arg 'norm:rmsnorm=--rows 4 --cols "
                                    "100 --vpt 3'",
                                    &run, &r);
    ck_assert_int_eq(code, 1);
    const pl_target_result *t = pl_run_find_target(&run, "norm:rmsnorm");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_ne(t->status, PL_STATUS_OK);
    ck_assert_msg(t->reason && strstr(t->reason, "--vpt 3") && strstr(t->reason, "use --vpt 0"), "reason: %s",
                  t->reason ? t->reason : "(none)");
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suite1_rows");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, edge_shapes);
    tcase_add_test(tc, odd_shapes);
    tcase_add_test(tc, forced_vectors_per_thread);
    tcase_add_test(tc, bad_vpt_is_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
