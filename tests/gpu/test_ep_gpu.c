/* `perflab moe-readiness --ep` on 2, 4 and 8 GPUs (those this machine has; exit 77 with the reason below 2), ranks as
 * threads, both variants (nccl; peer where the GPUs reach each other's memory, else skipped with the reason): the
 * decode size (128 tokens x 7168, top-8 of 256 experts) at uniform and skewed routing, and an odd one (77 tokens x
 * 7168, top-3 of 12 experts; 24 on 8 ranks). Every point must have run on every rank and passed its check: every
 * expert-major row bit for bit what its source sent, every combined output within the fp32 + bf16 bound of the
 * float64 weighted sum, nothing left poisoned; the figures consistent (fabric bytes, p50 <= p99, GB/s). Also: one GPU
 * asked for is refused with the reason (exit 3 on a one-GPU machine is the verb's; here --gpus 1 exits 2 or 3). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "multigpu.h"
#include "testutil.h"

static int g_gpus;
static const int rank_counts[] = {2, 4, 8};

static void expect_ep_points(json_t *report, int nranks, size_t expect_points)
{
    json_t *pts = json_object_get(report, "points");
    ck_assert_uint_eq(json_array_size(pts), expect_points);
    size_t i;
    json_t *p;
    json_array_foreach(pts, i, p)
    {
        const char *status = json_string_value(json_object_get(p, "status"));
        const char *what = json_string_value(json_object_get(p, "variant")),
                   *phase = json_string_value(json_object_get(p, "phase"));
        ck_assert_msg(strcmp(status, "ok") == 0, "%d ranks, point %zu (%s %s): %s: %s", nranks, i, what, phase, status,
                      json_string_value(json_object_get(p, "reason")));
        ck_assert_int_eq(json_integer_value(json_object_get(p, "ranks_reported")), nranks);
        json_t *check = json_object_get(p, "check");
        ck_assert(json_is_true(json_object_get(check, "passed")));
        ck_assert_int_eq(json_integer_value(json_object_get(check, "wrong")), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(check, "unwritten")), 0);
        ck_assert(json_integer_value(json_object_get(check, "elements")) > 0);
        json_t *lat = json_object_get(p, "latency_ms");
        const double p50 = pl_json_get_real(lat, "p50"), p99 = pl_json_get_real(lat, "p99");
        ck_assert(p50 > 0 && p50 <= p99);
        const double bytes = (double)json_integer_value(json_object_get(p, "fabric_bytes"));
        ck_assert(bytes > 0);
        ck_assert(fabs(pl_json_get_real(p, "gbps_p50") - bytes / nranks / (p50 * 1e-3) / 1e9) <=
                  1e-6 * pl_json_get_real(p, "gbps_p50"));
        printf("%d ranks, %lld tokens, skew %.2f, %s %s: p50 %.1f us, p99 %.1f us, %.1f GB/s\n", nranks,
               (long long)json_integer_value(json_object_get(p, "tokens")), pl_json_get_real(p, "skew"), what, phase,
               p50 * 1e3, p99 * 1e3, pl_json_get_real(p, "gbps_p50"));
    }
}

static json_t *run_ep(const char *args, int nranks)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "'%s': exit %d\n%s", args, r.exit_code, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j, "'%s': stdout is not JSON: %s", args, je.text);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "settings"), "ranks")), nranks);
    pl_cmd_result_free(&r);
    return j;
}

START_TEST(ep_runs_and_verifies)
{
    const int n = rank_counts[_i];
    char why[256], args[512];
    if (n > g_gpus) {
        printf("ep at %d GPUs: skipped, this machine has %d\n", n, g_gpus);
        return;
    }
    const char *impls = "nccl,peer";
    if (!pl_test_peers_ok(n, why, sizeof why)) {
        printf("ep at %d GPUs: the peer variant skipped, %s\n", n, why);
        impls = "nccl";
    }
    const int n_impls = strchr(impls, ',') ? 2 : 1;
    snprintf(args, sizeof args,
             "moe-readiness --ep --gpus %d --ep-impl %s --tokens 128 --skews 0,1.5 -n 20 -w 2 --json -q "
             "--out-dir " PERFLAB_TEST_TMP "/ep_decode_%d",
             n, impls, n);
    json_t *j = run_ep(args, n);
    expect_ep_points(j, n, (size_t)2 * n_impls * 2);
    json_decref(j);
    snprintf(args, sizeof args,
             "moe-readiness --ep --gpus %d --ep-impl %s --tokens 77 --hidden 7168 --topk 3 --experts %d --skews 1.0 "
             "-n 10 -w 1 --json -q --out-dir " PERFLAB_TEST_TMP "/ep_odd_%d",
             n, impls, 12 % n == 0 ? 12 : 24, n);
    j = run_ep(args, n);
    expect_ep_points(j, n, (size_t)n_impls * 2);
    json_decref(j);
}
END_TEST

START_TEST(one_gpu_refused)
{
    pl_cmd_result r = pl_run_perflab(NULL, "moe-readiness --ep --gpus 1 -q --out-dir " PERFLAB_TEST_TMP "/ep_one");
    ck_assert_msg(r.exit_code == 2 || r.exit_code == 3, "exit %d\n%s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "2 or more ranks"), "%s", r.err);
    pl_cmd_result_free(&r);
}
END_TEST

int main(void)
{
    g_gpus = pl_test_gpu_count(2, "the EP dispatch and combine test");
    if (!g_gpus)
        return 77;
    Suite *s = suite_create("ep");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, ep_runs_and_verifies, 0, 3);
    tcase_add_test(tc, one_gpu_refused);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
