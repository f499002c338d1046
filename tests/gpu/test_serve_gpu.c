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
#include "testutil.h"

#define WORKLOAD                                                                                                       \
    "serve --executor gpu --model tiny-dense --num-prompts 24 --random-input-len 40 --random-output-len 12 "           \
    "--random-range-ratio 0.5 --page-size 16 --max-num-batched-tokens 64 --seed 3 --warmup-requests 2"

/* The run folder perflab serve wrote under dir (the one holding report.json), malloc'd. */
static char *run_folder(const char *dir)
{
    char *found = pl_file_in_subfolder(dir, "report.json");
    ck_assert_ptr_nonnull(found);
    *strrchr(found, '/') = '\0';
    return found;
}

/* Runs the workload with `extra` args; returns its folder. */
static char *serve(const char *extra, const char *tag)
{
    char *dir = pl_test_tmpdir(tag), *cmd = pl_strfmt(WORKLOAD " %s --artifacts-dir %s", extra, dir);
    pl_cmd_result r = pl_run_perflab(NULL, cmd);
    ck_assert_msg(r.exit_code == 0, "perflab %s: exit %d\n%s\n%s", cmd, r.exit_code, r.out, r.err);
    char *folder = run_folder(dir);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
    return folder;
}

/* tokens[id] of one requests-rate-R.jsonl (a JSON object id -> array). */
static json_t *tokens_of(const char *folder, const char *rate)
{
    char *name = pl_strfmt("requests-rate-%s.jsonl", rate), *path = pl_path_join(folder, name);
    char *text = pl_read_file(path, NULL, NULL, 0);
    ck_assert_msg(text != NULL, "no %s", path);
    json_t *out = json_object();
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        ck_assert_msg(o != NULL, "%s: %s", path, e.text);
        json_t *t = json_object_get(o, "tokens");
        ck_assert_msg(json_is_array(t), "%s: a request without tokens", path);
        ck_assert_int_eq((int)json_array_size(t), (int)json_integer_value(json_object_get(o, "output_len")));
        size_t i;
        json_t *v;
        json_array_foreach(t, i, v)
        {
            ck_assert_msg(json_integer_value(v) >= 0 && json_integer_value(v) < 1000,
                          "token %lld out of the vocabulary", (long long)json_integer_value(v));
        }
        char id[16];
        snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(o, "id")));
        json_object_set(out, id, t);
        json_decref(o);
    }
    free(text);
    free(path);
    free(name);
    return out;
}

/* kv: the --kv-dtype value both runs take */
static void measures_and_matches_alone(const char *kv)
{
    /* 12 pages of 16 tokens: at rate inf the 24 requests (up to 60 + 18 tokens each) preempt one another */
    char *args = pl_strfmt("--request-rate 8,inf --num-pages 12 --kv-dtype %s", kv);
    char *loaded = serve(args, "serve_gpu_load");
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
    json_t *under_load = tokens_of(loaded, "inf");
    char *alone_args =
        pl_strfmt("--request-rate inf --num-pages 12 --max-num-seqs 1 --max-concurrency 1 --kv-dtype %s", kv);
    char *alone_dir = serve(alone_args, "serve_gpu_alone");
    json_t *alone = tokens_of(alone_dir, "inf");
    ck_assert_int_eq((int)json_object_size(alone), 24);
    const char *id;
    json_t *t;
    json_object_foreach(alone, id, t)
    {
        ck_assert_msg(json_equal(t, json_object_get(under_load, id)),
                      "%s cache: request %s: tokens under load differ from alone", kv, id);
    }
    json_decref(alone);
    json_decref(under_load);
    json_decref(doc);
    free(alone_dir);
    free(alone_args);
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
