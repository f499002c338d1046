/* The KV transfer's plan on the host (engine/kv_transfer.h): pages consecutive on both sides coalesce into one run,
 * a break on either side starts a new one, tables in any order keep their order, and the copy count per run. */
#include "engine/kv_transfer.h"
#include "testutil.h"

START_TEST(runs_coalesce_on_both_sides)
{
    const int src[] = {4, 5, 6, 9, 10, 11, 3, 2};
    const int dst[] = {0, 1, 2, 3, 8, 9, 10, 11};
    pl_kv_run r[8];
    const int n = pl_kv_transfer_runs(src, dst, 8, r);
    /* 4,5,6 -> 0,1,2; 9 -> 3 (dst continues, src jumps); 10,11 -> 8,9 (src continues, dst jumps); 3 -> 10; 2 -> 11
     * (descending src ids never coalesce) */
    ck_assert_int_eq(n, 5);
    const pl_kv_run want[] = {{4, 0, 3}, {9, 3, 1}, {10, 8, 2}, {3, 10, 1}, {2, 11, 1}};
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(r[i].src, want[i].src);
        ck_assert_int_eq(r[i].dst, want[i].dst);
        ck_assert_int_eq(r[i].n, want[i].n);
    }
    ck_assert_int_eq(pl_kv_transfer_runs(src, dst, 0, r), 0);
    /* a fresh pool's pages (ascending) on both sides: one run */
    const int a[] = {0, 1, 2, 3, 4}, b[] = {7, 8, 9, 10, 11};
    ck_assert_int_eq(pl_kv_transfer_runs(a, b, 5, r), 1);
    ck_assert_int_eq(r[0].n, 5);
}
END_TEST

START_TEST(copies_per_run)
{
    ck_assert_int_eq((int)pl_kv_transfer_copies(32, PL_KV_BF16, 3), 32 * 2 * 3);
    ck_assert_int_eq((int)pl_kv_transfer_copies(32, PL_KV_FP8_E4M3, 3), 32 * 4 * 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kv_transfer_plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, runs_coalesce_on_both_sides);
    tcase_add_test(tc, copies_per_run);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
