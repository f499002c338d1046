/* The perflab command: every verb's --help, exit codes, and each bad-input message (one line, exit 2, nothing
 * written). Runs the real binary. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "core/util.h"
#include "testutil.h"

static void expect(const char *args, int code, const char *stderr_fragment)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == code, "perflab %s: exit %d, expected %d; stderr: %s", args, r.exit_code, code, r.err);
    if (stderr_fragment) {
        ck_assert_msg(strstr(r.err, stderr_fragment) != NULL, "perflab %s: expected '%s' in stderr: %s", args,
                      stderr_fragment, r.err);
        /* one line */
        char *nl = strchr(r.err, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "perflab %s: more than one line on stderr: %s", args, r.err);
    }
    pl_cmd_result_free(&r);
}

START_TEST(help_for_every_verb)
{
    const char *verbs[] = {"list", "run", "verify", "compare", "expectations"};
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        char *args = pl_strfmt("%s --help", verbs[i]);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == 0, "%s", args);
        ck_assert_msg(strstr(r.out, "usage: perflab") != NULL, "%s: %s", args, r.out);
        pl_cmd_result_free(&r);
        free(args);
    }
    pl_cmd_result r = pl_run_perflab(NULL, "--help");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "exit codes:"));
    ck_assert_ptr_nonnull(strstr(r.out, "3    no usable GPU"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "--version");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "perflab 0."));
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(usage_errors_exit_2_with_one_line)
{
    expect("", 2, NULL);
    expect("lst", 2, "unknown verb 'lst' (did you mean 'list'?)");
    expect("run --targets memory:coalesing", 2,
           "unknown target 'memory:coalesing' (did you mean 'memory:coalescing'?)");
    expect("run --targets memroy", 2, "(did you mean 'memory'?)");
    expect("run --iteratons 5", 2, "unknown option '--iteratons' (did you mean --iterations?)");
    expect("run --iterations 0", 2, "--iterations must be between 1 and");
    expect("run --iterations x", 2, "--iterations expects an integer, not 'x'");
    expect("run --max-noise", 2, "--max-noise needs a value (PCT)");
    expect("run --profile max", 2, "--profile must be none, minimal or roofline, not 'max'");
    expect("run --mode warm", 2, "--mode must be hot or cold, not 'warm'");
    expect("run --min-time-s 5 --max-time-s 1", 2, "--min-time-s 5 exceeds --max-time-s 1");
    expect("run --targets selftest:sleep --target-extra-arg 'selftest:sleep=--mss 3'", 2,
           "selftest:sleep has no parameter '--mss' (did you mean '--ms'?)");
    expect("run --targets selftest:sleep --target-extra-arg 'selftest:sleep=--ms abc'", 2,
           "'--ms' expects a number (e.g. 0.5), not 'abc'");
    expect("run --targets selftest:sleep --target-extra-arg 'selftest:sleep --ms 3'", 2,
           "malformed --target-extra-arg 'selftest:sleep --ms 3': write it as 'group:name=--param value'");
    expect("run --targets selftest:sleep --target-extra-arg 'memory:coalescing=--n 3'", 2,
           "names 'memory:coalescing', which this run does not select");
    expect("run --targets selftest:sleep --target-extra-arg 'nope:nope=--n 3'", 2, "names unknown target 'nope:nope'");
    expect("run stray", 2, "unexpected argument 'stray'");
    expect("verify --json=1", 2, "--json takes no value");
    expect("list --group nope", 2, "no target in group 'nope'");
    expect("compare onlyone", 2, "needs two runs");
    expect("compare /nonexistent/a /nonexistent/b", 2, "'/nonexistent/a' is not a run");
    expect("expectations", 2, NULL);
    expect("expectations frob", 2, "unknown subcommand 'frob'");
}
END_TEST

START_TEST(bad_artifacts_dir_writes_nothing)
{
    char *dir = pl_test_tmpdir("cli-artifacts");
    char *file = pl_path_join(dir, "a_file");
    char err[256];
    ck_assert_int_eq(pl_write_file_atomic(file, "x", 1, err, sizeof err), 0);
    char *args = pl_strfmt("run --targets selftest:sleep --artifacts-dir '%s'", file);
    expect(args, 2, "is a file: pass a directory with --artifacts-dir");
    free(args);
    args = pl_strfmt("run --targets selftest:sleep --artifacts-dir '%s/sub/dir'", file);
    expect(args, 2, "pass a writable --artifacts-dir");
    free(args);
    free(file);
    free(dir);
}
END_TEST

START_TEST(malformed_expectations_file_stops_before_running)
{
    char *dir = pl_test_tmpdir("cli-exp");
    char *path = pl_path_join(dir, "mykey.json");
    char err[256];
    const char *text = "{\n  \"schema_version\": 1,\n  \"hardware_key\": \"mykey\",\n  \"entries\": [,]\n}\n";
    ck_assert_int_eq(pl_write_file_atomic(path, text, strlen(text), err, sizeof err), 0);
    char *args = pl_strfmt("run --targets selftest:sleep --expectations-dir '%s' --artifacts-dir '%s/art'", dir, dir);
    char *want = pl_strfmt("%s:4:", path);
    pl_cmd_result r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=mykey", args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, want) != NULL, "expected %s in: %s", want, r.err);
    pl_cmd_result_free(&r);
    char *art = pl_path_join(dir, "art");
    ck_assert_msg(!pl_path_exists(art), "a run directory was created despite the bad input");
    free(art);
    free(want);
    free(args);
    free(path);
    free(dir);
}
END_TEST

START_TEST(list_json_is_complete)
{
    pl_cmd_result r = pl_run_perflab(NULL, "list --json");
    ck_assert_int_eq(r.exit_code, 0);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "list --json is not JSON: %s", je.text);
    ck_assert(json_array_size(j) >= 9);
    json_t *t = json_array_get(j, 0);
    ck_assert_ptr_nonnull(json_object_get(t, "summary"));
    ck_assert_ptr_nonnull(json_object_get(t, "requires"));
    ck_assert(json_array_size(json_object_get(t, "variants")) >= 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(t, "variants"), 0), "name")),
                     "baseline");
    ck_assert_ptr_nonnull(json_object_get(json_array_get(json_object_get(t, "parameters"), 0), "default"));
    json_decref(j);
    pl_cmd_result_free(&r);
}
END_TEST

/* Without a GPU, a GPU verb says so in one line and exits 3, writing nothing. */
START_TEST(no_gpu_exits_3)
{
    if (pl_test_have_gpu())
        return; /* this machine has one: the GPU tests cover the run */
    char *dir = pl_test_tmpdir("cli-nogpu");
    char *args = pl_strfmt("run --artifacts-dir '%s/art'", dir);
    expect(args, 3, "perflab run: no usable GPU: ");
    free(args);
    args = pl_strfmt("verify --targets memory --artifacts-dir '%s/art'", dir);
    expect(args, 3, "perflab verify: no usable GPU: ");
    free(args);
    char *art = pl_path_join(dir, "art");
    ck_assert(!pl_path_exists(art));
    free(art);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, help_for_every_verb);
    tcase_add_test(tc, usage_errors_exit_2_with_one_line);
    tcase_add_test(tc, bad_artifacts_dir_writes_nothing);
    tcase_add_test(tc, malformed_expectations_file_stops_before_running);
    tcase_add_test(tc, list_json_is_complete);
    tcase_add_test(tc, no_gpu_exits_3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
