/* On a GPU: `perflab gemm` end to end on a small shape set (every GPU provider verified and timed, the files and
 * the exit code), the fp16/fp8 paths and unsupported providers, --tune with its tune file, and the GEMM targets
 * verified on odd shapes.
 * Exits 77 without a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "core/results_json.h"
#include "core/util.h"
#include "gemm/gemm.h"
#include "testutil.h"

#define QUICK "--max-algos 2 --min-time-s 0.02 --max-time-s 0.1 --min-samples 5 -q --json"

static json_t *run_json(const char *env, const char *args, int expect_code, pl_cmd_result *r)
{
    *r = pl_run_perflab(env, args);
    ck_assert_msg(r->exit_code == expect_code, "perflab %s: exit %d (expected %d)\n%s", args, r->exit_code, expect_code,
                  r->err);
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    ck_assert_msg(j != NULL, "no JSON on stdout: %s\n%s", je.text, r->out);
    return j;
}

static json_t *cell(json_t *cmp, size_t shape, const char *provider)
{
    return json_object_get(json_object_get(json_array_get(json_object_get(cmp, "shapes"), shape), "results"), provider);
}

START_TEST(selector_small_shapes)
{
    char *dir = pl_test_tmpdir("gemm-verb");
    char *args = pl_strfmt("gemm --shapes 256x512x128,17x33x65,1000x3000x520 --providers cublas,cublaslt,perflab "
                           "--artifacts-dir %s " QUICK,
                           dir);
    pl_cmd_result r;
    json_t *j = run_json(NULL, args, 0, &r);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "shapes")), 3);
    const char *provs[] = {"cublas", "cublaslt", "perflab"};
    for (size_t s = 0; s < 3; s++)
        for (size_t p = 0; p < 3; p++) {
            json_t *c = cell(j, s, provs[p]);
            ck_assert_msg(strcmp(json_string_value(json_object_get(c, "status")), "ok") == 0, "shape %zu %s: %s", s,
                          provs[p], json_string_value(json_object_get(c, "reason")));
            json_t *rec = json_object_get(c, "record");
            ck_assert(json_is_true(json_object_get(rec, "verified")));
            ck_assert(json_real_value(json_object_get(rec, "tflops")) > 0);
            ck_assert(json_integer_value(json_object_get(rec, "samples")) >= 5);
        }
    /* K = 65 takes no TMA kernel: the native record is the mma_sync fallback */
    ck_assert_str_eq(json_string_value(json_object_get(cell(j, 1, "perflab"), "kernel")), "mma_sync_128x128x32_s4");
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "missing")), 0);
    json_decref(j);
    pl_cmd_result_free(&r);
    char *cmd = pl_strfmt("test -s %s/gemm-*/cublas.json && test -s %s/gemm-*/cublaslt.json && test -s "
                          "%s/gemm-*/perflab.json && test -s %s/gemm-*/comparison.json && test -s %s/gemm-*/summary.md",
                          dir, dir, dir, dir, dir);
    ck_assert_msg(system(cmd) == 0, "missing output files: %s", cmd);
    free(cmd);
    free(args);
    free(dir);
}
END_TEST

/* --rounds 3: every configuration of every provider verified first, then timed in interleaved rounds; the
 * heuristic's pick timed among them and judged against the best (split-K and decode kernels in the search).
 * --budget-s 0: each configuration and round by --min-time-s/--max-time-s, so that --min-samples holds in all (a
 * budget takes fewer kept rounds where the round at load shows they do not fit; the other tests run with one). */
START_TEST(selector_interleaved_rounds)
{
    char *dir = pl_test_tmpdir("gemm-verb-rounds");
    char *args = pl_strfmt("gemm --shapes 256x512x128,16x4104x1032,1000x3000x520 --providers cublas,cublaslt,perflab "
                           "--rounds 3 --budget-s 0 --artifacts-dir %s " QUICK,
                           dir);
    pl_cmd_result r;
    json_t *j = run_json(NULL, args, 0, &r);
    json_t *settings = json_object_get(j, "settings");
    ck_assert_int_eq((int)json_integer_value(json_object_get(settings, "rounds")), 3);
    const char *provs[] = {"cublas", "cublaslt", "perflab"};
    for (size_t s = 0; s < 3; s++) {
        for (size_t p = 0; p < 3; p++) {
            json_t *c = cell(j, s, provs[p]);
            ck_assert_msg(strcmp(json_string_value(json_object_get(c, "status")), "ok") == 0, "shape %zu %s: %s", s,
                          provs[p], json_string_value(json_object_get(c, "reason")));
            /* samples of the 3 kept rounds, at least --min-samples in all */
            ck_assert(json_integer_value(json_object_get(json_object_get(c, "record"), "samples")) >= 5);
        }
        json_t *h = json_object_get(json_array_get(json_object_get(j, "shapes"), s), "heuristic");
        ck_assert_msg(h != NULL, "shape %zu: no heuristic verdict", s);
        ck_assert_msg(json_is_true(json_object_get(h, "pick_timed")), "shape %zu: the pick %s was not timed", s,
                      json_string_value(json_object_get(h, "pick")));
        ck_assert(json_real_value(json_object_get(h, "pick_over_best")) >= 1.0);
    }
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_object_get(j, "heuristic"), "shapes")), 3);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "missing")), 0);
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);
    free(dir);
}
END_TEST

START_TEST(missing_records_exit_1)
{
    pl_cmd_result r;
    char *dir = pl_test_tmpdir("gemm-verb-missing");
    /* cutlass without its profiler, perflab with fp16: unsupported, listed, exit 1; cuBLAS still measured */
    char *args = pl_strfmt("gemm --shapes 512x512x512 --dtype fp16 --providers cublas,perflab,cutlass "
                           "--artifacts-dir %s " QUICK,
                           dir);
    json_t *j = run_json("CUTLASS_PROFILER_BIN=", args, 1, &r);
    ck_assert_str_eq(json_string_value(json_object_get(cell(j, 0, "cublas"), "status")), "ok");
    ck_assert_str_eq(json_string_value(json_object_get(cell(j, 0, "perflab"), "status")), "unsupported");
    ck_assert_msg(strstr(r.err, "m512_n512_k512  perflab  unsupported: perflab's kernels are bf16 and fp8 only"), "%s",
                  r.err);
    ck_assert_msg(strstr(r.err, "m512_n512_k512  cutlass  unsupported: CUTLASS_PROFILER_BIN is not set"), "%s", r.err);
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);
    /* fp8 through cuBLASLt and the native FP8 kernel, bf16 out, verified against the same values widened to bf16 */
    args = pl_strfmt("gemm --shapes 512x512x512,2048x2048x2048 --dtype fp8 --providers cublaslt,perflab "
                     "--artifacts-dir %s " QUICK,
                     dir);
    j = run_json(NULL, args, 0, &r);
    ck_assert_str_eq(json_string_value(json_object_get(cell(j, 1, "cublaslt"), "status")), "ok");
    ck_assert_str_eq(json_string_value(json_object_get(cell(j, 1, "perflab"), "status")),
                     "ok"); /* the native FP8 kernel */
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);
    free(dir);
}
END_TEST

/* The GEMM targets verified on shapes that are no multiple of any tile, both layouts. */
/* --tune: each shape's pick tuned on the device before it is timed (its log says so), the pick judged a timed native
 * kernel, the tune file written with one class a shape; read back by a second run that does not tune. */
START_TEST(selector_tune)
{
    char *dir = pl_test_tmpdir("gemm-verb-tune");
    char *tf = pl_path_join(dir, "h.tune");
    char *args = pl_strfmt("gemm --shapes 333x4100x1032,77x2056x4104 --providers perflab --tune --tune-file %s "
                           "--artifacts-dir %s/a " QUICK,
                           tf, dir);
    pl_cmd_result r;
    json_t *j = run_json(NULL, args, 0, &r);
    ck_assert_msg(json_is_true(json_object_get(json_object_get(j, "settings"), "tune")), "%s", r.out);
    for (size_t s = 0; s < 2; s++) {
        json_t *h = json_object_get(json_array_get(json_object_get(j, "shapes"), s), "heuristic");
        ck_assert_msg(json_is_true(json_object_get(h, "pick_timed")), "shape %zu: the pick was not timed", s);
    }
    json_decref(j);
    pl_cmd_result_free(&r);
    char *cmd = pl_strfmt("grep -c 'tuned over' %s/a/gemm-*/logs/gpu.log | grep -qx 2 && test $(grep -vc '^#' %s) = 2",
                          dir, tf);
    ck_assert_msg(system(cmd) == 0, "no tuning in the log or not 2 classes in the tune file: %s", cmd);
    free(cmd);
    free(args);
    args = pl_strfmt("gemm --shapes 333x4100x1032 --providers perflab --tune-file %s --artifacts-dir %s/b " QUICK, tf,
                     dir);
    j = run_json(NULL, args, 0, &r);
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args), free(tf), free(dir);
}
END_TEST

START_TEST(targets_verify_odd_shapes)
{
    const char *runs[] = {
        "verify --targets gemm:bf16 --target-extra-arg 'gemm:bf16=--m 1000 --n 3000 --k 520'",
        "verify --targets gemm:bf16 --target-extra-arg 'gemm:bf16=--m 1000 --n 3000 --k 520 --layout kn'",
        "verify --targets gemm:bf16 --target-extra-arg 'gemm:bf16=--m 17 --n 33 --k 65'",
        "verify --targets fullstack:cluster_gemm,fusion:gemm_bias_gelu --target-extra-arg "
        "'fullstack:cluster_gemm=--m 1000 --n 3000 --k 520' --target-extra-arg "
        "'fusion:gemm_bias_gelu=--m 1000 --n 3000 --k 520'",
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        pl_run run;
        pl_cmd_result r;
        int code = pl_test_run_and_load("gemm-verify", runs[i], &run, &r);
        ck_assert_msg(code == 0, "%s: exit %d\n%s%s", runs[i], code, r.out, r.err);
        pl_test_expect_all_ok(&run, 0);
        pl_run_free(&run);
        pl_cmd_result_free(&r);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_verb");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, selector_small_shapes);
    tcase_add_test(tc, selector_interleaved_rounds);
    tcase_add_test(tc, missing_records_exit_1);
    tcase_add_test(tc, selector_tune);
    tcase_add_test(tc, targets_verify_odd_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
