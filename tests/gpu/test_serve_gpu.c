/* perflab serve with the GPU executor on a tiny model: the run completes at two rates with a pool small enough to
 * preempt; the figures are measured (not the floor), below the engine's computed ceiling; energy is reported or its
 * absence explained; and every request receives, under load and preemption, exactly the greedy tokens it receives
 * when served alone (--max-num-seqs 1 --max-concurrency 1, the same seed); the same with an FP8 KV cache
 * (--kv-dtype fp8, both runs: the report states it). Exits 77 without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/results_json.h"
#include "core/util.h"
#include "serve_check.h"
#include "testutil.h"

#define WORKLOAD                                                                                                       \
    "serve --executor gpu --model tiny-dense --num-prompts 24 --random-input-len 40 --random-output-len 12 "           \
    "--random-range-ratio 0.5 --page-size 16 --max-num-batched-tokens 64 --seed 3 --warmup-requests 2"

/* kv: the --kv-dtype value both runs take */
static void measures_and_matches_alone(const char *kv)
{
    /* 12 pages of 16 tokens: at rate inf the 24 requests (up to 60 + 18 tokens each) preempt one another */
    char *args = pl_strfmt("--request-rate 8,inf --num-pages 12 --kv-dtype %s", kv);
    char *loaded = pl_serve_check_run(WORKLOAD, args, "serve_gpu_load");
    char *path = pl_path_join(loaded, "report.json"), err[512];
    json_t *doc = pl_json_load_file(path, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s", err);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "executor")), "gpu");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(json_object_get(doc, "config"), "model"), "kv_dtype")), kv);
    ck_assert(json_is_false(json_object_get(doc, "computed_ceiling")));
    size_t i;
    json_t *r;
    int preemptions = 0;
    json_array_foreach(json_object_get(doc, "rates"), i, r)
    {
        json_t *m = json_object_get(r, "metrics"), *e = json_object_get(r, "energy");
        const double tok = pl_json_get_real(m, "output_throughput"),
                     pct = pl_json_get_real(r, "output_throughput_pct_of_ceiling");
        ck_assert_msg(tok > 0, "no output throughput");
        ck_assert_msg(pct > 0 && pct <= 100.0, "measured at %.1f%% of the computed ceiling", pct);
        ck_assert_int_eq((int)pl_json_get_real(m, "completed"), 24);
        ck_assert_msg(json_is_true(json_object_get(e, "available"))
                          ? pl_json_get_real(e, "joules") > 0
                          : json_string_length(json_object_get(e, "reason")) > 0,
                      "energy neither measured nor explained");
        preemptions += (int)pl_json_get_real(m, "preemptions");
    }
    ck_assert_msg(preemptions > 0, "the 12-page pool should preempt");
    pl_serve_check_matches_alone(WORKLOAD, loaded, kv, 24, "under load");
    json_decref(doc);
    free(path);
    free(loaded);
    free(args);
}

START_TEST(gpu_executor_measures_and_matches_alone)
{
    measures_and_matches_alone("bf16");
}
END_TEST

START_TEST(fp8_kv_cache_matches_alone)
{
    measures_and_matches_alone("fp8");
}
END_TEST

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    Suite *s = suite_create("serve_gpu");
    TCase *tc = tcase_create("serve_gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, gpu_executor_measures_and_matches_alone);
    tcase_add_test(tc, fp8_kv_cache_matches_alone);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
