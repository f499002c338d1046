/* perflab expectations check|show|compare|update on real files and runs (host self-tests: no GPU needed). */
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "core/expectations.h"
#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

/* A stored run of `target` under the hardware key `testkey` (and `env`'s other settings), in dir/art, judged against
 * the expectations in dir/none (none there). Returns the run folder. */
static char *stored_run_of(const char *dir, const char *env, const char *target)
{
    char *args = pl_strfmt("run --quiet --targets %s --max-time-s 0.5 --artifacts-dir '%s/art' "
                           "--expectations-dir '%s/none'",
                           target, dir, dir);
    char *all_env = pl_strfmt("PERFLAB_EXPECTATION_KEY=testkey %s", env);
    pl_cmd_result r = pl_run_perflab(all_env, args);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    pl_cmd_result_free(&r);
    free(all_env);
    free(args);
    char *cmd = pl_strfmt("ls -d '%s'/art/*", dir);
    FILE *f = popen(cmd, "r");
    char line[1024] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    pclose(f);
    free(cmd);
    line[strcspn(line, "\n")] = '\0';
    return pl_strdup(line);
}

static char *stored_run(const char *dir)
{
    return stored_run_of(dir, "", "selftest:sleep");
}

START_TEST(update_then_check_show_and_compare)
{
    char *dir = pl_test_tmpdir("exp-cli");
    char *run = stored_run(dir);
    char *args = pl_strfmt("expectations update '%s' --expectations-dir '%s'", run, dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "wrote 2 entries of testkey"));
    pl_cmd_result_free(&r);
    free(args);

    args = pl_strfmt("expectations check --expectations-dir '%s'", dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "ok "));
    ck_assert_ptr_nonnull(strstr(r.out, "2 entries for testkey"));
    pl_cmd_result_free(&r);
    free(args);

    args = pl_strfmt("expectations show testkey --expectations-dir '%s'", dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "selftest:sleep"));
    ck_assert_ptr_nonnull(strstr(r.out, "half"));
    pl_cmd_result_free(&r);
    free(args);

    /* the run judged against its own medians: met, exit 0 */
    args = pl_strfmt("expectations compare '%s' --expectations-dir '%s'", run, dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "%s%s", r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "2 met"));
    pl_cmd_result_free(&r);
    free(args);

    /* a stored median a third of the measured one: regressed, exit 1; accepted: exit 0 */
    char *cmd = pl_strfmt("sed -i 's/\"median_ms\": \\([0-9.]*\\)/\"median_ms\": 0.7/' '%s/testkey.json'", dir);
    ck_assert_int_eq(system(cmd), 0);
    free(cmd);
    args = pl_strfmt("expectations compare '%s' --expectations-dir '%s'", run, dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "2 regressed"));
    pl_cmd_result_free(&r);
    free(args);
    args = pl_strfmt("expectations compare '%s' --accept-regressions --expectations-dir '%s'", run, dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 0);
    pl_cmd_result_free(&r);
    free(args);
    free(run);
    free(dir);
}
END_TEST

START_TEST(malformed_files_are_named_with_position)
{
    char *dir = pl_test_tmpdir("exp-bad");
    char *path = pl_path_join(dir, "h200.json");
    char err[256];
    const char *text = "{\n  \"schema_version\": 1,\n  \"hardware_key\": \"h200\"\n  \"entries\": []\n}\n";
    ck_assert_int_eq(pl_write_file_atomic(path, text, strlen(text), err, sizeof err), 0);
    char *args = pl_strfmt("expectations check --expectations-dir '%s'", dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 2);
    char *want = pl_strfmt("%s:4:", path);
    ck_assert_msg(strstr(r.err, want) != NULL, "expected %s in %s", want, r.err);
    pl_cmd_result_free(&r);
    free(args);
    /* the same file named on the command line */
    args = pl_strfmt("expectations check '%s'", path);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 2);
    pl_cmd_result_free(&r);
    free(args);
    args = pl_strfmt("expectations show nokey --expectations-dir '%s'", dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "nokey.json does not exist"));
    pl_cmd_result_free(&r);
    free(args);
    free(want);
    free(path);
    free(dir);
}
END_TEST

/* The environment's key wins over the key the run was measured under, as the help says; --key over both. */
START_TEST(the_environment_key_is_honoured)
{
    char *dir = pl_test_tmpdir("exp-env");
    char *run = stored_run(dir); /* measured under testkey */
    char *args = pl_strfmt("expectations update '%s' --expectations-dir '%s'", run, dir);
    pl_cmd_result r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=otherkey", args);
    ck_assert_msg(r.exit_code == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "of otherkey"), "%s", r.out);
    pl_cmd_result_free(&r);
    char *other = pl_strfmt("%s/otherkey.json", dir), *test = pl_strfmt("%s/testkey.json", dir);
    ck_assert(pl_path_exists(other) && !pl_path_exists(test));
    free(args);
    args = pl_strfmt("expectations compare '%s' --expectations-dir '%s'", run, dir);
    r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=otherkey", args);
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, "expectations otherkey"), "%s%s", r.out, r.err);
    pl_cmd_result_free(&r);
    free(args);
    args = pl_strfmt("expectations update '%s' --key thirdkey --expectations-dir '%s'", run, dir);
    r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=otherkey", args);
    ck_assert_msg(r.exit_code == 0 && strstr(r.out, "of thirdkey"), "%s%s", r.out, r.err);
    pl_cmd_result_free(&r);
    free(args);
    free(other);
    free(test);
    free(run);
    free(dir);
}
END_TEST

/* An expectations "file" that is a directory is named as such; --update-expectations that cannot write exits 2 and
 * says so, before any target runs. */
START_TEST(unusable_expectations_are_refused_with_the_reason)
{
    char *dir = pl_test_tmpdir("exp-dir");
    char *as_dir = pl_strfmt("%s/testkey.json", dir);
    ck_assert_int_eq(pl_mkdir_p(as_dir, NULL, 0), 0);
    char *args = pl_strfmt("run --quiet --targets selftest:sleep --iterations 3 --artifacts-dir '%s/art' "
                           "--expectations-dir '%s'",
                           dir, dir);
    pl_cmd_result r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=testkey", args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "is a directory, not an expectations file"), "%s", r.err);
    pl_cmd_result_free(&r);
    free(args);
    /* a file where the expectations folder should be: --update-expectations is refused before the work */
    char *file = pl_strfmt("%s/not-a-dir", dir);
    FILE *f = fopen(file, "w");
    fputs("x", f);
    fclose(f);
    args = pl_strfmt("run --quiet --targets selftest:sleep --iterations 3 --artifacts-dir '%s/art2' "
                     "--expectations-dir '%s' --update-expectations",
                     dir, file);
    r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=testkey", args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "not-a-dir") && strstr(r.err, "--expectations-dir"), "%s", r.err);
    char *art2 = pl_strfmt("%s/art2", dir);
    ck_assert_msg(!pl_path_exists(art2), "a refused run wrote %s", art2); /* nothing half-written */
    pl_cmd_result_free(&r);
    free(art2);
    free(args);
    free(file);
    free(as_dir);
    free(dir);
}
END_TEST

/* Expectations for selftest:host_timed in dir/testkey.json: each variant's stored median is its measured one divided
 * by the factor given (2: measured 100% slower), the host-timed one stored under `host` (NULL: unnamed). */
static void write_host_timed_file(const char *dir, const pl_run *run, double baseline_factor, double host_factor,
                                  const char *host)
{
    const pl_target_result *t = pl_run_find_target(run, "selftest:host_timed");
    ck_assert_ptr_nonnull(t);
    pl_expectations e = {.schema_version = 1, .hardware_key = pl_strdup("testkey")};
    static const char *const names[] = {"baseline", "host"};
    e.entries = pl_xcalloc(2, sizeof *e.entries);
    for (size_t i = 0; i < 2; i++) {
        const pl_variant_result *v = pl_target_find_variant(t, names[i]);
        ck_assert(v && v->has_stats && v->host_timed == (int)i);
        pl_expect_entry *x = &e.entries[e.n_entries++];
        x->target = pl_strdup(t->name);
        x->variant = pl_strdup(names[i]);
        x->median_ms = v->stats.median / (i ? host_factor : baseline_factor);
        x->tolerance = PL_EXPECT_DEFAULT_TOLERANCE;
        x->host = i ? pl_strdup(host) : NULL;
    }
    char *path = pl_strfmt("%s/testkey.json", dir);
    char err[512] = "";
    ck_assert_msg(pl_expectations_save(&e, path, err, sizeof err) == 0, "%s", err);
    pl_expectations_free(&e);
    free(path);
}

/* The gate through the command line: a host-timed variant far slower than a figure of another host is reported
 * `ungated` and leaves the exit code 0; on the host that stored it, or for a slower GPU-bound variant, exit 1.
 * Through `perflab expectations compare` on a stored run, and through `perflab run` itself. */
START_TEST(host_timed_variants_are_gated_only_on_their_host)
{
    char *dir = pl_test_tmpdir("exp-host");
    char *run_dir = stored_run_of(dir, "PERFLAB_HOST_KEY=ci-a", "selftest:host_timed");
    char *json = pl_strfmt("%s/run.json", run_dir), err[512] = "";
    pl_run run;
    ck_assert_msg(pl_run_load(json, &run, err, sizeof err) == 0, "%s", err);
    ck_assert_pstr_eq(run.prov.host_key, "ci-a");

    static const struct {
        double baseline_factor, host_factor;
        const char *host;
        int exit_code;
        const char *says;
    } cases[] = {
        {1.0, 2.0, "ci-b", 0, "ungated selftest:host_timed / host"},  /* another host: shown, not judged */
        {1.0, 2.0, NULL, 0, "host-bound: not gated (+100.0%"},       /* stored on an unnamed host */
        {1.0, 2.0, "ci-a", 1, "regressed selftest:host_timed / host"}, /* its own host: judged */
        /* a GPU-bound slowdown: judged on any host (test_expectations proves 11% with a set noise; here 50%, as
         * a loaded machine's sleeps can be noisy enough to excuse 11%) */
        {1.5, 2.0, "ci-b", 1, "regressed selftest:host_timed / baseline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_host_timed_file(dir, &run, cases[i].baseline_factor, cases[i].host_factor, cases[i].host);
        char *args = pl_strfmt("expectations compare '%s' --expectations-dir '%s'", run_dir, dir);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == cases[i].exit_code, "case %zu: exit %d\n%s%s", i, r.exit_code, r.out, r.err);
        ck_assert_msg(strstr(r.out, cases[i].says) != NULL, "case %zu: no '%s' in\n%s", i, cases[i].says, r.out);
        pl_cmd_result_free(&r);
        free(args);
    }

    /* perflab run itself, a fresh measurement: the baseline stored 3x slower (improved, whatever the load), the
     * host-timed variant 3x faster than it runs */
    for (int own_host = 0; own_host < 2; own_host++) {
        write_host_timed_file(dir, &run, 1.0 / 3, 3.0, own_host ? "ci-a" : "ci-b");
        char *args = pl_strfmt("run --quiet --targets selftest:host_timed --max-time-s 0.5 "
                               "--artifacts-dir '%s/art%d' --expectations-dir '%s'",
                               dir, own_host, dir);
        pl_cmd_result r = pl_run_perflab("PERFLAB_EXPECTATION_KEY=testkey PERFLAB_HOST_KEY=ci-a", args);
        ck_assert_msg(r.exit_code == own_host, "own host %d: exit %d\n%s%s", own_host, r.exit_code, r.out, r.err);
        pl_cmd_result_free(&r);
        free(args);
    }
    pl_run_free(&run);
    free(json);
    free(run_dir);
    free(dir);
}
END_TEST

/* `perflab ARGS` exits `code` with one line on stderr holding `says`. */
static void expect_line(const char *env, const char *args, int code, const char *says)
{
    pl_cmd_result r = pl_run_perflab(env, args);
    const char *nl = strchr(r.err, '\n');
    ck_assert_msg(r.exit_code == code && strstr(r.err, says) && nl && !nl[1], "%s: exit %d, expected %d with '%s': %s",
                  args, r.exit_code, code, says, r.err);
    pl_cmd_result_free(&r);
}

static void device_minus_one(json_t *root)
{
    json_object_set_new(json_object_get(root, "settings"), "device", json_integer(-1));
}

static void device_int_min(json_t *root)
{
    json_object_set_new(json_object_get(root, "settings"), "device", json_integer(-2147483647 - 1));
}

/* settings.device -1 read before the GPU list (gpu_line checked the upper bound only). */
START_TEST(a_negative_device_is_not_an_index)
{
    char *dir = pl_test_tmpdir("exp-device");
    void (*edits[])(json_t *) = {device_minus_one, device_int_min};
    for (size_t i = 0; i < 2; i++) {
        char *run = pl_test_write_run(dir, i ? "min" : "minus1", edits[i]);
        char *args = pl_strfmt("expectations compare '%s' --expectations-dir '%s' --key k", run, dir);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == 0 && strstr(r.out, "GPU 0 NVIDIA H200"), "exit %d: %s%s", r.exit_code, r.out,
                      r.err);
        pl_cmd_result_free(&r);
        free(args);
        free(run);
    }
    free(dir);
}
END_TEST

static void traversal_key(json_t *root)
{
    json_object_set_new(json_object_get(root, "provenance"), "hardware_key", json_string("../../../tmp/pl_escape_x"));
}

/* A hardware key names a file: "../../../tmp/x" from a run's provenance or --key wrote outside the directory. */
START_TEST(hardware_keys_are_plain_names)
{
    char *dir = pl_test_tmpdir("exp-traversal");
    char *exp = pl_path_join(dir, "exp/inner");
    char *run = pl_test_write_run(dir, "run", traversal_key);
    char *outside = pl_path_join(exp, "../../../tmp/pl_escape_x.json"); /* where the key leads */
    unlink(outside);
    char *args = pl_strfmt("expectations update '%s' --expectations-dir '%s'", run, exp);
    expect_line(NULL, args, 2, "is not a hardware key");
    free(args);
    ck_assert_msg(!pl_path_exists(outside), "%s was written, outside the directory", outside);
    free(outside);
    static const char *const verbs[] = {"update", "compare"};
    for (size_t i = 0; i < 2; i++) {
        args = pl_strfmt("expectations %s '%s' --expectations-dir '%s' --key ../../x", verbs[i], run, exp);
        expect_line(NULL, args, 2, "--key '../../x' is not a hardware key");
        free(args);
    }
    args = pl_strfmt("expectations show --key ../x --expectations-dir '%s'", exp);
    expect_line(NULL, args, 2, "is not a hardware key");
    free(args);
    args = pl_strfmt("expectations show 'a/b' --expectations-dir '%s'", exp);
    expect_line(NULL, args, 2, "is not a hardware key");
    free(args);
    args = pl_strfmt("run --targets selftest:sleep --artifacts-dir '%s/art' --expectations-dir '%s'", dir, exp);
    expect_line("PERFLAB_EXPECTATION_KEY=../../y", args, 2, "is not a hardware key");
    free(args);
    ck_assert(!pl_is_dir(exp)); /* nothing created */
    char err[256];
    ck_assert_int_eq(pl_expectations_key_check("2x_h200+l40s", "k", err, sizeof err), 0);
    ck_assert_int_eq(pl_expectations_key_check("h100_sxm", "k", err, sizeof err), 0);
    static const char *const bad[] = {"", "H200", "a.b", "..", "a+", "+a", "a++b", "a b", "a\nb", "a/b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(pl_expectations_key_check(bad[i], "k", err, sizeof err) == -1, "'%s' accepted", bad[i]);
    free(run);
    free(exp);
    free(dir);
}
END_TEST

static void unloadable_names(json_t *root)
{
    json_t *t = json_array_get(json_object_get(root, "targets"), 0);
    json_object_set_new(t, "name", json_string("nocolon"));
}

/* update wrote entries (a target without ':', an empty variant) that check then refused: one validator now. */
START_TEST(update_writes_only_what_the_loader_reads)
{
    char *dir = pl_test_tmpdir("exp-validator");
    char *run = pl_test_write_run(dir, "run", unloadable_names);
    char *args = pl_strfmt("expectations update '%s' --expectations-dir '%s' --key k", run, dir);
    expect_line(NULL, args, 2, "target 'nocolon' is not of the form group:name");
    free(args);
    char *file = pl_path_join(dir, "k.json");
    ck_assert(!pl_path_exists(file));
    /* the writer refuses what the loader refuses, entry by entry */
    pl_expectations e = {.schema_version = 1, .hardware_key = pl_strdup("k")};
    pl_expect_entry *x = pl_push(&e.entries, &e.n_entries, NULL, sizeof *x);
    x->target = pl_strdup("memory:copy");
    x->variant = pl_strdup("");
    x->median_ms = 1;
    char err[512];
    ck_assert_int_eq(pl_expectations_save(&e, file, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "variant"), "%s", err);
    ck_assert(!pl_path_exists(file));
    free(x->variant);
    x->variant = pl_strdup("v");
    ck_assert_msg(pl_expectations_save(&e, file, err, sizeof err) == 0, "%s", err);
    pl_expectations back;
    ck_assert_msg(pl_expectations_load(file, "k", &back, err, sizeof err) == 0, "%s", err);
    pl_expectations_free(&back);
    pl_expectations_free(&e);
    free(file);
    free(run);
    free(dir);
}
END_TEST

/* Messages from expectation files: a JSON token holding a newline split the error in two; key names with control
 * characters reached the terminal raw; `expectations` alone printed its usage to stdout. */
START_TEST(expectation_messages_are_one_line)
{
    char *dir = pl_test_tmpdir("exp-lines");
    char *path = pl_path_join(dir, "h200.json"), err[256];
    const char *text = "{\"schema_version\": 1, \"hardware_key\": \"abcdef\\\n\"}";
    ck_assert_int_eq(pl_write_file_atomic(path, text, strlen(text), err, sizeof err), 0);
    char *args = pl_strfmt("expectations check '%s'", path);
    expect_line(NULL, args, 2, "invalid escape near '\"abcdef\\\\n'");
    free(args);
    text = "{\"schema_version\": 1, \"hardware_key\": \"h200\", \"entries\": [], \"\\u001b]0;x\\u0007\\nkey\": 1}";
    ck_assert_int_eq(pl_write_file_atomic(path, text, strlen(text), err, sizeof err), 0);
    args = pl_strfmt("expectations check --expectations-dir '%s'", dir);
    expect_line(NULL, args, 2, "unknown key '\\x1b]0;x\\x07\\nkey'");
    free(args);
    expect_line(NULL, "expectations", 2, "needs a subcommand");
    expect_line(NULL, "expectations show --key \"$(printf 'a\\nb')\"", 2, "'a\\nb'");
    free(path);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("expectations_cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, update_then_check_show_and_compare);
    tcase_add_test(tc, malformed_files_are_named_with_position);
    tcase_add_test(tc, the_environment_key_is_honoured);
    tcase_add_test(tc, unusable_expectations_are_refused_with_the_reason);
    tcase_add_test(tc, host_timed_variants_are_gated_only_on_their_host);
    tcase_add_test(tc, a_negative_device_is_not_an_index);
    tcase_add_test(tc, hardware_keys_are_plain_names);
    tcase_add_test(tc, update_writes_only_what_the_loader_reads);
    tcase_add_test(tc, expectation_messages_are_one_line);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
