/* On a GPU: the memory-hierarchy chapter verified at sizes that are no multiple of any tile, block or
 * vector width, at edge sizes, and on the skewed histogram; and one short timed run that checks what run.json says
 * of the occupancy and the references. Exits 77 (skipped) without a GPU. */
#include <string.h>

#include "core/results_json.h"
#include "testutil.h"

#define TARGETS                                                                                                        \
    "memory:transpose,reduce:sum,memory:async_prefetch,occupancy:ilp,atomics:histogram,memory:l2_persistence"

/* `perflab verify` with these arguments passes, every variant of the `targets` targets verified */
static void verify_ok(const char *tag, const char *args, int targets)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load(tag, args, &run, &r);
    ck_assert_msg(code == 0, "%s: exit %d\n%s%s", tag, code, r.out, r.err);
    ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), targets);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}

START_TEST(odd_sizes)
{
    /* transpose with rows and columns not multiples of 4 (single-word path) */
    verify_ok("s1m-odd",
              "verify --targets " TARGETS " --target-extra-arg 'memory:transpose=--rows 777 --cols 1001'"
              " --target-extra-arg 'reduce:sum=--n 1000003'"
              " --target-extra-arg 'memory:async_prefetch=--rows 333 --cols 1001'"
              " --target-extra-arg 'occupancy:ilp=--n 1000003'"
              " --target-extra-arg 'atomics:histogram=--n 1000003 --bins 250'"
              " --target-extra-arg 'memory:l2_persistence=--hot 100003 --stream 250007 --kernels 3'",
              6);
    /* 16-byte paths with partial tiles; bf16; other pipeline depths and ILP; a skewed histogram */
    verify_ok("s1m-odd2",
              "verify --targets " TARGETS " --target-extra-arg 'memory:transpose=--rows 1000 --cols 1004'"
              " --target-extra-arg 'reduce:sum=--n 1000003 --dtype bf16'"
              " --target-extra-arg 'memory:async_prefetch=--rows 65 --cols 260 --stages 2 "
              "--blocks_per_sm 1'"
              " --target-extra-arg 'occupancy:ilp=--n 1000001 --ilp 16 --low_blocks 1'"
              " --target-extra-arg 'atomics:histogram=--n 1000003 --bins 250 --dist zipf --skew 1.5'"
              " --target-extra-arg 'memory:l2_persistence=--hot 65536 --stream 1000003 --kernels 2'",
              6);
}
END_TEST

START_TEST(edge_sizes)
{
    /* one element, one row or column, fewer vectors than blocks, a tail after the vectors, one bin, all keys in few
     * bins */
    verify_ok("s1m-edge",
              "verify --targets " TARGETS " --target-extra-arg 'memory:transpose=--rows 1 --cols 5'"
              " --target-extra-arg 'reduce:sum=--n 1'"
              " --target-extra-arg 'memory:async_prefetch=--rows 1 --cols 1 --stages 3'"
              " --target-extra-arg 'occupancy:ilp=--n 3'"
              " --target-extra-arg 'atomics:histogram=--n 5 --bins 1'"
              " --target-extra-arg 'memory:l2_persistence=--hot 1 --stream 7 --kernels 1'",
              6);
    verify_ok("s1m-edge2",
              "verify --targets " TARGETS " --target-extra-arg 'memory:transpose=--rows 67 --cols 1'"
              " --target-extra-arg 'reduce:sum=--n 65539'" /* fp32: 16384 vectors + 3 */
              " --target-extra-arg 'memory:async_prefetch=--rows 33 --cols 129'"
              " --target-extra-arg 'occupancy:ilp=--n 4100 --ilp 1'"
              " --target-extra-arg 'atomics:histogram=--n 100003 --bins 16384 --dist zipf --skew 3'"
              " --target-extra-arg 'memory:l2_persistence=--hot 3 --stream 1001 --kernels 2'",
              6);
    verify_ok("s1m-edge3", "verify --targets reduce:sum --target-extra-arg 'reduce:sum=--n 65543 --dtype bf16'", 1);
    /* transpose: a matrix smaller than one tile (16-byte paths), and a tall one with a partial last tile row */
    verify_ok("s1m-edge4", "verify --targets memory:transpose --target-extra-arg 'memory:transpose=--rows 4 --cols 8'",
              1);
    verify_ok("s1m-edge5",
              "verify --targets memory:transpose --target-extra-arg 'memory:transpose=--rows 4100 --cols 96'", 1);
}
END_TEST

/* memory:gather: odd dim (rows whose table and output offsets differ within 16 bytes take 2-byte accesses, the
 * others fewer vectors than one chunk of 128); dim 3000 (every row 16-byte aligned: two whole chunks and a partial
 * one); dim 8 (one vector a row); one element a row; sorted ids; more rows than the table has (ids repeat, and the
 * ceiling copies the table several times over) */
START_TEST(gather_sizes)
{
    verify_ok("s1m-gather1",
              "verify --targets memory:gather --target-extra-arg 'memory:gather=--vocab 5003 --dim 1001 --rows 333'",
              1);
    verify_ok("s1m-gather2",
              "verify --targets memory:gather --target-extra-arg 'memory:gather=--vocab 5003 --dim 3000 --rows 333'",
              1);
    verify_ok("s1m-gather3",
              "verify --targets memory:gather --target-extra-arg 'memory:gather=--vocab 5003 --dim 8 --rows 100003'",
              1);
    verify_ok("s1m-gather4",
              "verify --targets memory:gather --target-extra-arg 'memory:gather=--vocab 3 --dim 1 --rows 5 --sorted'",
              1);
    verify_ok("s1m-gather5",
              "verify --targets memory:gather --target-extra-arg 'memory:gather=--vocab 40 --dim 131 --rows 101 "
              "--sorted true'",
              1);
}
END_TEST

START_TEST(timed_run_reports_occupancy_and_references)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("s1m-run",
                                    "run --targets occupancy:ilp,reduce:sum --iterations 5 --target-extra-arg "
                                    "'occupancy:ilp=--n 16m' --target-extra-arg 'reduce:sum=--n 16m'",
                                    &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    pl_test_expect_all_ok(&run, 1);
    const pl_target_result *t = pl_run_find_target(&run, "occupancy:ilp");
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < t->n_variants; i++)
        ck_assert_msg(strstr(t->variants[i].verification.message, "warps per SM") != NULL, "%s: %s",
                      t->variants[i].name, t->variants[i].verification.message);
    /* the low-occupancy variants are held to 2 blocks of 128 threads: 8 of 64 warps */
    ck_assert_ptr_nonnull(strstr(pl_target_find_variant(t, "baseline")->verification.message, "occupancy 8/64"));
    const pl_target_result *sum = pl_run_find_target(&run, "reduce:sum");
    ck_assert(pl_target_find_variant(sum, "cub")->is_reference);
    ck_assert(pl_target_find_variant(sum, "hbm_copy")->is_reference);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suite1_memory");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, odd_sizes);
    tcase_add_test(tc, edge_sizes);
    tcase_add_test(tc, gather_sizes);
    tcase_add_test(tc, timed_run_reports_occupancy_and_references);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
