/* Nothing lost, nothing left behind: a `perflab run` killed with SIGKILL leaves a valid, incomplete run.json that
 * holds every target that had finished, and no target process outlives it, forked or exec'd (--exec-children).
 * `compare` reads such a run and says so. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

/* The pids whose parent is `parent` (from /proc). */
static size_t children_of(pid_t parent, pid_t *out, size_t max)
{
    size_t n = 0;
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *close_paren = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
        char state;
        long ppid;
        if (close_paren && sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
            out[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

/* Gone, or a zombie nobody has reaped yet (it runs no more). */
static int process_gone(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *close_paren = strrchr(buf, ')');
    char state = 0;
    return close_paren && sscanf(close_paren + 1, " %c", &state) == 1 && (state == 'Z' || state == 'X');
}

static int run_has_target(const char *file, const char *name)
{
    pl_run r;
    char err[512];
    if (pl_run_load(file, &r, err, sizeof err) != 0)
        return 0;
    int has = pl_run_find_target(&r, name) != NULL;
    pl_run_free(&r);
    return has;
}

/* Whether the process runs `perflab __run-target` (a target's process under --exec-children), from its command
 * line; -1 when it is gone. */
static int runs_target_command(pid_t pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *second = memchr(buf, '\0', len) ? buf + strlen(buf) + 1 : NULL; /* NUL-separated arguments */
    return second && second < buf + len && strcmp(second, "__run-target") == 0;
}

/* `perflab run` of a finished target and a hanging one, killed with SIGKILL while the second runs; the target's
 * process forked (exec_children 0) or exec'd (--exec-children). */
static void kill_9_keeps_finished_targets_and_leaves_no_process(const char *tag, int exec_children)
{
    char *dir = pl_test_tmpdir(tag);
    char *art = pl_path_join(dir, "art"), *exp = pl_path_join(dir, "exp");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(PERFLAB_BIN, PERFLAB_BIN, "run", "--targets", "selftest:sleep,selftest:hang", "--artifacts-dir", art,
              "--expectations-dir", exp, "--iterations", "5", "--timeout-s", "600", "--quiet",
              exec_children ? "--exec-children" : (char *)NULL, (char *)NULL);
        _exit(127);
    }
    /* wait until the first target is on disk and the hanging one's process runs */
    char *file = NULL;
    pid_t kids[16];
    size_t n_kids = 0;
    for (int i = 0; i < 600 && (n_kids == 0 || !file || !run_has_target(file, "selftest:sleep")); i++) {
        usleep(50 * 1000);
        if (!file)
            file = pl_test_run_json_in(art);
        n_kids = children_of(pid, kids, 16);
    }
    ck_assert_msg(file && run_has_target(file, "selftest:sleep"), "no run.json with the first target after 30 s");
    ck_assert_msg(n_kids > 0, "the hanging target's process never started");
    /* past its baseline and into the variant that never returns (it writes nothing more to its pipe, so only the
     * parent's death can end it) */
    usleep(1500 * 1000);
    n_kids = children_of(pid, kids, 16); /* the hanging target's process, the finished one's long reaped */
    ck_assert_msg(n_kids > 0, "the hanging target's process is gone before the kill");
    for (size_t k = 0; k < n_kids; k++)
        ck_assert_msg(runs_target_command(kids[k]) == exec_children, "target process %d: %s", (int)kids[k],
                      exec_children ? "not exec'd as perflab __run-target" : "exec'd without --exec-children");

    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* the target's process dies with its parent */
    for (size_t k = 0; k < n_kids; k++) {
        int gone = 0;
        for (int i = 0; i < 100 && !(gone = process_gone(kids[k])); i++)
            usleep(20 * 1000);
        ck_assert_msg(gone, "target process %d outlived its killed parent", (int)kids[k]);
    }

    /* a valid run: incomplete, with the finished target whole */
    pl_run r;
    char err[512];
    ck_assert_msg(pl_run_load(file, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(r.complete, 0);
    ck_assert_int_eq((int)r.n_targets, 1);
    const pl_target_result *t = pl_run_find_target(&r, "selftest:sleep");
    ck_assert_int_eq(t->status, PL_STATUS_OK);
    ck_assert_int_eq((int)t->variants[1].n_samples, 5);
    ck_assert(t->variants[1].has_speedup);
    pl_run_free(&r);

    /* compare and the summary say so */
    char *cmd = pl_strfmt("compare '%s' '%s'", file, file);
    pl_cmd_result c = pl_run_perflab(NULL, cmd);
    ck_assert_int_eq(c.exit_code, 0);
    ck_assert_msg(strstr(c.out, "run A") && strstr(c.out, "is incomplete"), "%s", c.out);
    pl_cmd_result_free(&c);
    char *summary = pl_strfmt("%.*s/summary.md", (int)(strrchr(file, '/') - file), file);
    size_t len;
    char *text = pl_read_file(summary, &len, err, sizeof err);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "incomplete run: 1 target finished"));
    free(text);
    free(summary);
    free(cmd);
    free(file);
    free(art);
    free(exp);
    free(dir);
}

START_TEST(kill_9_of_forked_targets)
{
    kill_9_keeps_finished_targets_and_leaves_no_process("kill9", 0);
}
END_TEST

START_TEST(kill_9_of_execd_targets)
{
    kill_9_keeps_finished_targets_and_leaves_no_process("kill9-exec", 1);
}
END_TEST

START_TEST(a_finished_run_is_complete)
{
    pl_run run;
    pl_cmd_result r;
    ck_assert_int_eq(pl_test_run_and_load("complete", "run --targets selftest:sleep --iterations 3", &run, &r), 0);
    ck_assert_int_eq(run.complete, 1);
    ck_assert_ptr_null(strstr(r.out, "incomplete"));
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(a_missed_gate_is_a_failure_with_its_reason)
{
    pl_run run;
    pl_cmd_result r;
    ck_assert_int_eq(pl_test_run_and_load("gate-met", "run --targets selftest:gate --iterations 3", &run, &r), 0);
    const pl_target_result *t = pl_run_find_target(&run, "selftest:gate");
    ck_assert(t->has_gate && t->gate_met);
    ck_assert_int_eq(t->status, PL_STATUS_OK);
    pl_cmd_result_free(&r);
    pl_run_free(&run);

    ck_assert_int_eq(pl_test_run_and_load("gate-missed",
                                          "run --targets selftest:gate --iterations 3 "
                                          "--target-extra-arg 'selftest:gate=--ms 2 --objective-ms 1'",
                                          &run, &r),
                     1);
    t = pl_run_find_target(&run, "selftest:gate");
    ck_assert(t->has_gate && !t->gate_met);
    ck_assert_int_eq(t->status, PL_STATUS_SLO_MISSED);
    ck_assert_ptr_nonnull(strstr(t->reason, "objective of 1 ms"));
    ck_assert_msg(strstr(r.out, "selftest:gate: slo_missed: a sleep of 2 ms"), "%s", r.out);
    /* the variants themselves were verified and timed */
    ck_assert_int_eq(t->variants[0].status, PL_STATUS_OK);
    ck_assert_int_eq((int)t->variants[0].n_samples, 3);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

/* The helper every GPU test uses drives verify as well as run (verify refuses the options it cannot use). */
START_TEST(verify_through_the_test_helper)
{
    pl_run run;
    pl_cmd_result r;
    ck_assert_int_eq(pl_test_run_and_load("verify-helper", "verify --targets selftest:sleep", &run, &r), 0);
    ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), 1);
    ck_assert(run.settings.verify_only && run.complete);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("runs");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, kill_9_of_forked_targets);
    tcase_add_test(tc, kill_9_of_execd_targets);
    tcase_add_test(tc, a_finished_run_is_complete);
    tcase_add_test(tc, a_missed_gate_is_a_failure_with_its_reason);
    tcase_add_test(tc, verify_through_the_test_helper);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
