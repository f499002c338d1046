/* --exec-children: each target's process executes perflab afresh (`perflab __run-target`) instead of being a plain
 * fork, so that compute-sanitizer follows it. The host self-tests give the same results either way: statuses and
 * reasons (a crash, a timeout, a wrong result, a missed gate), exact sample counts (the settings reach the
 * process), the targets' own parameters (the gate's detail is written by the target's process), verify's untimed
 * runs. (That the process really is exec'd, and dies with a killed runner, is in test_lifecycle.) */
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

static void expect_same_variant(const char *target, const pl_variant_result *f, const pl_variant_result *e)
{
    ck_assert_msg(e != NULL, "%s/%s missing under --exec-children", target, f->name);
    ck_assert_msg(f->status == e->status, "%s/%s: %s forked, %s exec'd", target, f->name, pl_status_name(f->status),
                  pl_status_name(e->status));
    ck_assert_msg(f->n_samples == e->n_samples, "%s/%s: %zu samples forked, %zu exec'd", target, f->name,
                  f->n_samples, e->n_samples);
    ck_assert_int_eq(f->verification.checked, e->verification.checked);
    ck_assert_int_eq(f->verification.passed, e->verification.passed);
    ck_assert_int_eq((int)f->verification.unwritten, (int)e->verification.unwritten);
    ck_assert_msg((f->reason == NULL) == (e->reason == NULL) && (!f->reason || strcmp(f->reason, e->reason) == 0),
                  "%s/%s: reason '%s' forked, '%s' exec'd", target, f->name, f->reason ? f->reason : "",
                  e->reason ? e->reason : "");
}

/* Every target and variant of the forked run, with the same outcome in the exec'd one. */
static void expect_same_run(const pl_run *forked, const pl_run *execd)
{
    ck_assert_int_eq((int)forked->n_targets, (int)execd->n_targets);
    ck_assert_int_eq(forked->exit_code, execd->exit_code);
    for (size_t i = 0; i < forked->n_targets; i++) {
        const pl_target_result *f = &forked->targets[i], *e = pl_run_find_target(execd, f->name);
        ck_assert_msg(e != NULL, "%s missing under --exec-children", f->name);
        ck_assert_msg(f->status == e->status, "%s: %s forked, %s exec'd (%s)", f->name, pl_status_name(f->status),
                      pl_status_name(e->status), e->reason ? e->reason : "");
        ck_assert_msg((f->reason == NULL) == (e->reason == NULL) && (!f->reason || strcmp(f->reason, e->reason) == 0),
                      "%s: reason '%s' forked, '%s' exec'd", f->name, f->reason ? f->reason : "",
                      e->reason ? e->reason : "");
        ck_assert_int_eq(f->has_gate, e->has_gate);
        ck_assert_int_eq(f->gate_met, e->gate_met);
        ck_assert_msg((f->gate_detail == NULL) == (e->gate_detail == NULL) &&
                          (!f->gate_detail || strcmp(f->gate_detail, e->gate_detail) == 0),
                      "%s: gate '%s' forked, '%s' exec'd", f->name, f->gate_detail ? f->gate_detail : "",
                      e->gate_detail ? e->gate_detail : "");
        ck_assert_int_eq((int)f->n_variants, (int)e->n_variants);
        for (size_t k = 0; k < f->n_variants; k++)
            expect_same_variant(f->name, &f->variants[k], pl_target_find_variant(e, f->variants[k].name));
    }
}

/* `perflab ARGS` forked and with --exec-children; returns the exec'd run's exit code after comparing. */
static int run_both(const char *tag, const char *args, pl_run *execd)
{
    pl_run forked;
    pl_cmd_result rf, re;
    char *tag_e = pl_strfmt("%s-exec", tag);
    char *args_e = pl_strfmt("%s --exec-children", args);
    int code_f = pl_test_run_and_load(tag, args, &forked, &rf);
    int code_e = pl_test_run_and_load(tag_e, args_e, execd, &re);
    ck_assert_msg(code_f == code_e, "exit %d forked, %d exec'd: %s", code_f, code_e, re.err);
    expect_same_run(&forked, execd);
    pl_run_free(&forked);
    pl_cmd_result_free(&rf);
    pl_cmd_result_free(&re);
    free(args_e);
    free(tag_e);
    return code_e;
}

START_TEST(crash_timeout_wrong_and_gate_read_the_same)
{
    pl_run run;
    int code = run_both("exec-statuses",
                        "run --targets selftest:crash,selftest:hang,selftest:wrong,selftest:gate,selftest:sleep "
                        "--timeout-s 3 --iterations 4 --target-extra-arg 'selftest:gate=--ms 1.5 --objective-ms 1' "
                        "--target-extra-arg 'selftest:sleep=--ms 0.5 --n 77'",
                        &run);
    ck_assert_int_eq(code, 1);
    /* and they are the statuses the forked path is known to give (test_isolation, test_lifecycle) */
    const pl_target_result *crash = pl_run_find_target(&run, "selftest:crash");
    ck_assert_int_eq(crash->status, PL_STATUS_CRASHED);
    ck_assert_ptr_nonnull(strstr(crash->reason, "signal 11"));
    ck_assert_int_eq(pl_target_find_variant(crash, "baseline")->status, PL_STATUS_OK);
    ck_assert_int_eq(pl_target_find_variant(crash, "after")->status, PL_STATUS_NOT_RUN);
    const pl_target_result *hang = pl_run_find_target(&run, "selftest:hang");
    ck_assert_int_eq(hang->status, PL_STATUS_TIMEOUT);
    ck_assert(hang->duration_s >= 2.9 && hang->duration_s < 10);
    ck_assert_int_eq(pl_run_find_target(&run, "selftest:wrong")->status, PL_STATUS_FAILED_VERIFICATION);
    const pl_target_result *gate = pl_run_find_target(&run, "selftest:gate");
    ck_assert_int_eq(gate->status, PL_STATUS_SLO_MISSED);
    ck_assert_ptr_nonnull(strstr(gate->gate_detail, "a sleep of 1.5 ms against an objective of 1 ms"));
    const pl_target_result *sleep = pl_run_find_target(&run, "selftest:sleep");
    ck_assert_int_eq(sleep->status, PL_STATUS_OK);
    ck_assert_int_eq((int)sleep->variants[0].n_samples, 4);
    ck_assert_msg(sleep->variants[0].stats.median >= 0.5 && sleep->variants[0].stats.median < 5,
                  "--ms 0.5 reached the exec'd process: median %g ms", sleep->variants[0].stats.median);
    pl_run_free(&run);
}
END_TEST

START_TEST(verify_and_rounds_read_the_same)
{
    pl_run run;
    ck_assert_int_eq(run_both("exec-verify", "verify --targets selftest:sleep,selftest:wrong", &run), 1);
    ck_assert(run.settings.verify_only);
    ck_assert_int_eq((int)pl_run_find_target(&run, "selftest:sleep")->variants[1].n_samples, 0);
    pl_run_free(&run);
    ck_assert_int_eq(run_both("exec-rounds", "run --targets selftest:sleep --rounds 3 --iterations 6", &run), 0);
    ck_assert_ptr_nonnull(strstr(pl_run_find_target(&run, "selftest:sleep")->variants[0].stop_reason,
                                 "3 interleaved rounds"));
    pl_run_free(&run);
}
END_TEST

/* The hidden sub-command refuses what perflab itself would never pass, in one line, and reports a bad job on the
 * pipe as the target's failure (here the pipe is stdout). */
START_TEST(run_target_refuses_bad_input)
{
    pl_cmd_result r = pl_run_perflab(NULL, "__run-target --job '{}'");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "needs --fd N (an open pipe) and --job JSON"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "__run-target --fd 1 --job '{\"target\": \"selftest:nope\", \"params\": \"\"}'");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "the job names no known target (selftest:nope)"));
    ck_assert_ptr_nonnull(strstr(r.out, "{\"t\":\"target\",\"status\":\"error\""));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "__run-target --fd 1 --job 'not json'");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "the job is not JSON"));
    pl_cmd_result_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("exec_children");
    TCase *tc = tcase_create("selftests");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, crash_timeout_wrong_and_gate_read_the_same);
    tcase_add_test(tc, verify_and_rounds_read_the_same);
    tcase_add_test(tc, run_target_refuses_bad_input);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
