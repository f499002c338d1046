/* Technique suite II on a GPU: every target verified at its small sizes, at sizes that are no multiple of any block,
 * tile or chunk, and at edges (one element); timed briefly (host-bound, latched and graph-replayed variants all
 * sample); memory:unified refuses a size that could over-subscribe the GPU; nvlink:peer_copy is skipped with its
 * reason on one GPU and verified on two. Exits 77 (skipped) without a GPU. */
#include <stdio.h>
#include <string.h>

#include "core/results_json.h"
#include "testutil.h"

#define SUITE2                                                                                                         \
    "transfer:pinned,streams:overlap,alloc:stream_ordered,gemm:batched,launch:persistent,launch:graph_conditional,"    \
    "memory:unified,nvlink:peer_copy"

static void verify_ok(const char *tag, const char *args)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load(tag, args, &run, &r);
    ck_assert_msg(code == 0, "%s: exit %d\n%s%s", args, code, r.out, r.err);
    pl_test_expect_all_ok(&run, 0);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}

START_TEST(small_sizes_verify)
{
    verify_ok("s2-small", "verify --small --targets " SUITE2);
}
END_TEST

START_TEST(odd_sizes_verify)
{
    verify_ok("s2-odd-a", "verify --targets transfer:pinned,streams:overlap,alloc:stream_ordered,memory:unified "
                          "--target-extra-arg 'transfer:pinned=--bytes 3000017 --direction d2h' "
                          "--target-extra-arg 'streams:overlap=--n 1000003 --iters 5 --chunks 13 --streams 5' "
                          "--target-extra-arg 'alloc:stream_ordered=--n 1000001' "
                          "--target-extra-arg 'memory:unified=--n 1000001'");
    verify_ok("s2-odd-b", "verify --targets gemm:batched,launch:persistent,launch:graph_conditional "
                          "--target-extra-arg 'gemm:batched=--count 5 --m 130 --n 67 --k 200' "
                          "--target-extra-arg 'launch:persistent=--elements 3001 --steps 100 --blocks 3' "
                          "--target-extra-arg 'launch:graph_conditional=--n 100001 --tol 1e-4'");
    /* the element-wise load path of the batched kernel (K not a multiple of 8), and many blocks per tile */
    verify_ok("s2-odd-c", "verify --targets gemm:batched,launch:persistent "
                          "--target-extra-arg 'gemm:batched=--count 7 --m 65 --n 129 --k 71' "
                          "--target-extra-arg 'launch:persistent=--elements 777 --steps 64 --blocks 200'");
    /* rows of D 16-byte aligned (the staged store's vector path) with partial tiles, and several k-tiles */
    verify_ok("s2-odd-d", "verify --targets gemm:batched --target-extra-arg 'gemm:batched=--count 3 --m 100 --n 72 "
                          "--k 136'");
}
END_TEST

START_TEST(edge_sizes_verify)
{
    verify_ok("s2-edge", "verify --targets " SUITE2 " "
                         "--target-extra-arg 'transfer:pinned=--bytes 1' "
                         "--target-extra-arg 'streams:overlap=--n 5 --chunks 5 --streams 16 --iters 1' "
                         "--target-extra-arg 'alloc:stream_ordered=--n 1' "
                         "--target-extra-arg 'gemm:batched=--count 1 --m 1 --n 1 --k 1' "
                         "--target-extra-arg 'launch:persistent=--elements 1 --steps 1' "
                         "--target-extra-arg 'launch:graph_conditional=--n 1 --max-iterations 7' "
                         "--target-extra-arg 'memory:unified=--n 1' "
                         "--target-extra-arg 'nvlink:peer_copy=--n 1'");
}
END_TEST

START_TEST(timed_and_graph_replayed)
{
    const char *modes[] = {"run --small --iterations 3 --targets " SUITE2,
                           "run --small --iterations 3 --graph --targets " SUITE2};
    for (int i = 0; i < 2; i++) {
        pl_run run;
        pl_cmd_result r;
        int code = pl_test_run_and_load(i ? "s2-graph" : "s2-timed", modes[i], &run, &r);
        ck_assert_msg(code == 0, "%s: exit %d\n%s%s", modes[i], code, r.out, r.err);
        pl_test_expect_all_ok(&run, 1);
        /* host-bound variants are timed without the latch, the others with it */
        const pl_target_result *t = pl_run_find_target(&run, "launch:persistent");
        ck_assert(t && !pl_target_find_variant(t, "persistent")->latched);
        t = pl_run_find_target(&run, "streams:overlap");
        ck_assert(t && pl_target_find_variant(t, "streams")->latched);
        pl_cmd_result_free(&r);
        pl_run_free(&run);
    }
}
END_TEST

START_TEST(peer_copy_skips_or_verifies)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("s2-peer", "verify --targets nvlink:peer_copy", &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    const pl_target_result *t = pl_run_find_target(&run, "nvlink:peer_copy");
    ck_assert_ptr_nonnull(t);
    if (run.prov.n_gpus < 2) {
        ck_assert_int_eq(t->status, PL_STATUS_SKIPPED);
        ck_assert_msg(t->reason && strstr(t->reason, "needs 2 GPUs"), "%s", t->reason ? t->reason : "");
        printf("nvlink:peer_copy skipped: %s\n", t->reason);
    } else {
        ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), 1);
    }
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suite2_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, small_sizes_verify);
    tcase_add_test(tc, odd_sizes_verify);
    tcase_add_test(tc, edge_sizes_verify);
    tcase_add_test(tc, timed_and_graph_replayed);
    tcase_add_test(tc, peer_copy_skips_or_verifies);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
