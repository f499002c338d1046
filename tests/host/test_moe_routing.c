/* The MoE routing of moe:grouped_gemm (labs/common/moe_routing.h) and the FP8 scale layouts (gemm/fp8.h): counts sum
 * to T·k, none above T, offsets are their prefix sums, the multiset depends on (E, T, k, alpha) and not on the
 * seed, the seed moves the hot experts, zero-token experts appear where T·k is small against E, and bad parameters
 * are refused with a reason. */
#include <stdlib.h>
#include <string.h>

#include "common/moe_routing.h"
#include "gemm/fp8.h"
#include "testutil.h"

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

static void check_invariants(const pl_moe_routing *r)
{
    long long sum = 0;
    ck_assert_int_eq(r->offsets[0], 0);
    for (int e = 0; e < r->experts; e++) {
        ck_assert_int_ge(r->counts[e], 0);
        ck_assert_int_le(r->counts[e], r->tokens);
        ck_assert_int_eq(r->offsets[e + 1] - r->offsets[e], r->counts[e]);
        sum += r->counts[e];
    }
    ck_assert_int_eq(sum, (long long)r->tokens * r->topk);
    ck_assert_int_eq(r->rows, r->tokens * r->topk);
    ck_assert_int_eq(r->offsets[r->experts], r->rows);
}

START_TEST(counts_sum_and_cap)
{
    char err[256];
    static const int cases[][3] = {{64, 8192, 2}, {8, 8192, 2}, {128, 8192, 2}, {40, 37, 2}, {4, 1, 1}, {8, 100, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int a = 0; a < 4; a++) {
            pl_moe_routing r;
            ck_assert_msg(pl_moe_routing_make(&r, cases[i][0], cases[i][1], cases[i][2], a * 1.0, 7, err, sizeof err) ==
                              0,
                          "%s", err);
            check_invariants(&r);
            pl_moe_routing_free(&r);
        }
}
END_TEST

START_TEST(skew_and_zero_experts)
{
    char err[256];
    pl_moe_routing r;
    /* uniform: every expert within one token of the mean */
    ck_assert(pl_moe_routing_make(&r, 64, 8192, 2, 0.0, 1, err, sizeof err) == 0);
    for (int e = 0; e < 64; e++)
        ck_assert_int_eq(r.counts[e], 256);
    ck_assert_int_eq(r.empty, 0);
    pl_moe_routing_free(&r);
    /* the default: skewed (the busiest expert takes 16384 / H_64 ≈ 3456), no expert empty */
    ck_assert(pl_moe_routing_make(&r, 64, 8192, 2, 1.0, 1, err, sizeof err) == 0);
    ck_assert_int_ge(r.max_count, 3400);
    ck_assert_int_le(r.max_count, 3500);
    ck_assert(r.gini > 0.3 && r.max_over_mean > 13);
    pl_moe_routing_free(&r);
    /* the small values: 74 rows over 40 experts leave some empty */
    ck_assert(pl_moe_routing_make(&r, 40, 37, 2, 1.0, 1, err, sizeof err) == 0);
    ck_assert_int_gt(r.empty, 0);
    pl_moe_routing_free(&r);
    /* a steep skew is capped at T: the busiest experts take every token */
    ck_assert(pl_moe_routing_make(&r, 8, 100, 2, 4.0, 1, err, sizeof err) == 0);
    ck_assert_int_eq(r.max_count, 100);
    check_invariants(&r);
    pl_moe_routing_free(&r);
}
END_TEST

START_TEST(seed_places_not_shapes)
{
    char err[256];
    pl_moe_routing a, b;
    ck_assert(pl_moe_routing_make(&a, 64, 8192, 2, 1.0, 1, err, sizeof err) == 0);
    ck_assert(pl_moe_routing_make(&b, 64, 8192, 2, 1.0, 2, err, sizeof err) == 0);
    ck_assert_msg(memcmp(a.counts, b.counts, 64 * sizeof(int)) != 0, "the seed must move the hot experts");
    qsort(a.counts, 64, sizeof(int), cmp_int);
    qsort(b.counts, 64, sizeof(int), cmp_int);
    ck_assert_msg(memcmp(a.counts, b.counts, 64 * sizeof(int)) == 0,
                  "the counts' multiset must not depend on the seed");
    pl_moe_routing_free(&a);
    pl_moe_routing_free(&b);
    /* same seed, same routing */
    ck_assert(pl_moe_routing_make(&a, 64, 8192, 2, 1.0, 5, err, sizeof err) == 0);
    ck_assert(pl_moe_routing_make(&b, 64, 8192, 2, 1.0, 5, err, sizeof err) == 0);
    ck_assert(memcmp(a.counts, b.counts, 64 * sizeof(int)) == 0);
    pl_moe_routing_free(&a);
    pl_moe_routing_free(&b);
}
END_TEST

START_TEST(bad_parameters)
{
    char err[256];
    pl_moe_routing r;
    ck_assert_int_eq(pl_moe_routing_make(&r, 4, 100, 5, 1.0, 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--topk") != NULL, "%s", err);
    ck_assert_int_eq(pl_moe_routing_make(&r, 4, 100, 2, -1.0, 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--alpha") != NULL, "%s", err);
    ck_assert_int_eq(pl_moe_routing_make(&r, 4, 1 << 30, 4, 1.0, 1, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--tokens") != NULL, "%s", err);
}
END_TEST

START_TEST(fp8_scale_layouts)
{
    /* cuBLASLt's sm_90 layouts: A's leading dimension is M rounded up to 4, B's the K blocks rounded up to 4 */
    ck_assert_int_eq(pl_fp8_kblocks(272), 3);
    ck_assert_int_eq(pl_fp8_kblocks(256), 2);
    ck_assert_int_eq(pl_fp8_scale_a_ld(301), 304);
    ck_assert_int_eq(pl_fp8_scale_a_ld(300), 300);
    ck_assert_int_eq(pl_fp8_scale_b_ld(272), 4);
    ck_assert_int_eq(pl_fp8_scale_b_ld(8192), 64);
    ck_assert_int_eq((int)pl_fp8_scale_a_count(301, 272), 3 * 304);
    ck_assert_int_eq((int)pl_fp8_scale_b_count(392, 272), 4 * 4);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("moe_routing");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, counts_sum_and_cap);
    tcase_add_test(tc, skew_and_zero_experts);
    tcase_add_test(tc, seed_places_not_shapes);
    tcase_add_test(tc, bad_parameters);
    tcase_add_test(tc, fp8_scale_layouts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
