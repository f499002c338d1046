/* On a GPU: perflab verify of every GPU target, and short runs of the quick suite in hot, cold, graph and
 * minimal-profile settings, checking what the artifacts say. Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

START_TEST(verify_every_gpu_target)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("gpu-verify", "verify --targets all,selftest:gpu_spin", &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    /* the single-GPU targets run everywhere (the fabric target needs 2 GPUs) */
    ck_assert_int_ge(pl_test_expect_all_ok(&run, 0), 4);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(quick_suite_runs_and_reports)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("gpu-quick", "run --max-time-s 1", &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    pl_test_expect_all_ok(&run, 1);
    printf("%s", r.out); /* the table, for the log */
    /* provenance names the GPU */
    ck_assert(run.prov.n_gpus >= 1 && run.prov.gpus[0].sm_count > 0);
    ck_assert_ptr_nonnull(run.prov.hardware_key);
    /* derived figures are where the counters say they should be */
    const pl_target_result *copy = pl_run_find_target(&run, "memory:vectorized_copy");
    ck_assert_ptr_nonnull(copy);
    const pl_variant_result *vec = pl_target_find_variant(copy, "vector16");
    ck_assert(vec->gbps > 100 && !isnan(vec->pct_of_reference) && vec->has_speedup);
    ck_assert(pl_target_find_variant(copy, "cuda_memcpy")->is_reference);
    /* the spin self-test passed its 2% accuracy check (else its status would not be ok) */
    const pl_target_result *spin = pl_run_find_target(&run, "selftest:gpu_spin");
    ck_assert_ptr_nonnull(spin);
    ck_assert(fabs(spin->variants[0].stats.median / 1.0 - 1) <= 0.02);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(cold_graph_and_minimal_profile)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("gpu-cold",
                                    "run --targets memory:vectorized_copy,selftest:gpu_spin --mode cold --graph "
                                    "--profile minimal --iterations 20 --target-extra-arg "
                                    "'memory:vectorized_copy=--n 16m'",
                                    &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    pl_test_expect_all_ok(&run, 1);
    const pl_target_result *copy = pl_run_find_target(&run, "memory:vectorized_copy");
    for (size_t i = 0; i < copy->n_variants; i++) {
        ck_assert_int_eq((int)copy->variants[i].n_samples, 20);
        ck_assert_int_eq(copy->variants[i].graph, 1);
        ck_assert_int_eq(copy->variants[i].reps_per_sample, 1); /* cold: one run per sample */
        /* profile minimal: NVML telemetry of the variant's own window (a GPU machine has NVML with its driver) */
        ck_assert(copy->variants[i].has_telemetry && copy->variants[i].telemetry.sm_clock_mhz.n > 0);
        ck_assert(copy->variants[i].telemetry.power_w.mean > 0);
    }
    ck_assert_str_eq(run.settings.mode, "cold");
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(odd_sizes_verify)
{
    /* sizes that are no multiple of any block or vector width */
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("gpu-odd",
                                    "verify --targets memory,launch --target-extra-arg 'memory:coalescing=--n 1000003 "
                                    "--stride 7' --target-extra-arg 'memory:vectorized_copy=--n 1000003' "
                                    "--target-extra-arg 'launch:cuda_graphs=--elements 1001 --kernels 101'",
                                    &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    pl_test_expect_all_ok(&run, 0);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
    code = pl_test_run_and_load("gpu-tiny",
                                "verify --targets memory --target-extra-arg 'memory:coalescing=--n 3' "
                                "--target-extra-arg 'memory:vectorized_copy=--n 3'",
                                &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    pl_test_expect_all_ok(&run, 0);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpu_suite");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, verify_every_gpu_target);
    tcase_add_test(tc, quick_suite_runs_and_reports);
    tcase_add_test(tc, cold_graph_and_minimal_profile);
    tcase_add_test(tc, odd_sizes_verify);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
