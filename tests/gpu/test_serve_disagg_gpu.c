/* perflab serve --disaggregate on two GPUs with a tiny model: prefill on GPU 0, decode on GPU 1, each prompt's KV
 * pages copied between them. Every request receives exactly the greedy tokens it receives served alone on one GPU
 * (--max-num-seqs 1 --max-concurrency 1, the same seed: the same weights, prompts and chunking), under load, with a
 * decode pool small enough to preempt (a preempted request is prefilled and moved again), for a bf16 and an FP8
 * cache. The report carries the copies (at least one a request, whole pages, a rate in GB/s above zero, their time
 * beside the prefill's) and both lanes' steps. Exits 77 below 2 GPUs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/results_json.h"
#include "core/util.h"
#include "multigpu.h"
#include "serve_check.h"
#include "testutil.h"

#define WORKLOAD                                                                                                       \
    "serve --executor gpu --model tiny-dense --num-prompts 24 --random-input-len 40 --random-output-len 12 "           \
    "--random-range-ratio 0.5 --page-size 16 --max-num-batched-tokens 64 --seed 3 --warmup-requests 2"

static void disaggregated_matches_alone(const char *kv)
{
    /* 12 pages on each GPU: the 24 requests (up to 60 + 18 tokens each) preempt one another on the decode GPU */
    char *args = pl_strfmt("--disaggregate --request-rate 8,inf --num-pages 12 --kv-dtype %s", kv);
    char *split = pl_serve_check_run(WORKLOAD, args, "serve_disagg_gpu");
    char *path = pl_path_join(split, "report.json"), err[512];
    json_t *doc = pl_json_load_file(path, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s", err);
    ck_assert(json_is_true(json_object_get(doc, "disaggregated")));
    json_t *d = json_object_get(doc, "disaggregation");
    printf("%s cache: %s\n", kv, json_string_value(json_object_get(d, "kv_copies")));
    size_t i;
    json_t *r;
    int preemptions = 0;
    json_array_foreach(json_object_get(doc, "rates"), i, r)
    {
        json_t *m = json_object_get(r, "metrics"), *g = json_object_get(r, "disaggregated");
        json_t *k = json_object_get(g, "kv_copies");
        ck_assert_int_eq((int)pl_json_get_real(m, "completed"), 24);
        ck_assert_msg(pl_json_get_real(m, "output_throughput") > 0, "no output throughput");
        ck_assert_msg(pl_json_get_real(k, "count") >= 24, "fewer copies than requests of more than one token");
        ck_assert_msg(pl_json_get_real(k, "gb_per_s") > 0 && pl_json_get_real(k, "seconds") > 0, "copies untimed");
        ck_assert_msg(pl_json_get_real(g, "prefill_steps") > 0 && pl_json_get_real(g, "decode_steps") > 0,
                      "a GPU ran no step");
        printf("  rate %s: %.0f copies, %.0f bytes, %.2f GB/s, %.1f%% of prefill; TTFT p99 %.3f ms, TPOT p99 %.3f ms\n",
               json_is_string(json_object_get(r, "request_rate")) ? "inf" : "8", pl_json_get_real(k, "count"),
               pl_json_get_real(k, "bytes"), pl_json_get_real(k, "gb_per_s"),
               100 * pl_json_get_real(k, "seconds_over_prefill_busy"), pl_json_get_real(m, "p99_ttft_ms"),
               pl_json_get_real(m, "p99_tpot_ms"));
        preemptions += (int)pl_json_get_real(m, "preemptions");
    }
    ck_assert_msg(preemptions > 0, "the 12-page decode pool should preempt");
    pl_serve_check_matches_alone(WORKLOAD, split, kv, 24, "disaggregated");
    json_decref(doc);
    free(path);
    free(split);
    free(args);
}

START_TEST(bf16_disaggregated_matches_one_gpu)
{
    disaggregated_matches_alone("bf16");
}
END_TEST

START_TEST(fp8_disaggregated_matches_one_gpu)
{
    disaggregated_matches_alone("fp8");
}
END_TEST

int main(void)
{
    if (!pl_test_gpu_count(2, "perflab serve --disaggregate"))
        return 77;
    Suite *s = suite_create("serve_disagg_gpu");
    TCase *tc = tcase_create("serve_disagg_gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, bf16_disaggregated_matches_one_gpu);
    tcase_add_test(tc, fp8_disaggregated_matches_one_gpu);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
