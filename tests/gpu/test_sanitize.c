/* The `sanitize` label: compute-sanitizer over `perflab verify --exec-children --small`, so that every target (a new
 * one too, without being named here) runs its every variant once under each tool, at its small sizes, in a process
 * the tool follows. Before --exec-children each target ran in a plain fork of the runner, which compute-sanitizer
 * does not follow: the tools checked the runner alone (it runs no kernel) and reported "0 errors" whatever the
 * kernels did. So the test proves, for each run, that the tool looked:
 *  - planted: selftest:sanitizer_defects holds an out-of-bounds write, a shared-memory race and a bad __syncwarp;
 *    memcheck, racecheck and synccheck must each report theirs (a non-zero summary and a report naming the planted
 *    kernel), each run keeping its own defect alone (--defect);
 *  - followed: the tool's log (--log-file cs.%p.log --print-session-details: compute-sanitizer 2025.3 writes one
 *    log for the whole process tree, named after its first process, with a "Process ID:" block for each process it
 *    followed) must list one process per target's process plus the runner's, each target's process being a
 *    `perflab __run-target`;
 *  - the label: memcheck, racecheck, synccheck and initcheck over every target at --small, every summary clean and
 *    every variant verified; and the same over a few targets' other kernel instances (label_extras).
 * Exits 77 with the reason where there is no GPU or no compute-sanitizer.
 *
 * Environment: COMPUTE_SANITIZER (the tool's path), PERFLAB_SANITIZE_TOOLS (a comma list: some of memcheck,
 * racecheck, synccheck, initcheck; all by default), PERFLAB_SANITIZE_TARGETS (the label's selection, default all),
 * PERFLAB_SANITIZE_SERIAL=1 (the label's tools one after another, for a time of each alone; by default they run at
 * once, each in its own processes). One line per tool run, "sanitize <what>: <tool>: ...", gives the figures. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/ncu.h"
#include "core/results_json.h"
#include "core/util.h"
#include "labs.h"
#include "perflab/target_registry.h"
#include "selftest/sanitizer_defects.h"
#include "testutil.h"

/* A target's process under the slowest tool at --small, and the planted defects' (seconds: a hang becomes a timeout
 * status within the planted test's Check limit). The whole test stays within CTest's TIMEOUT of 3600 s
 * (tests/CMakeLists.txt): 240 s for each planted run, 2700 s for the label (its tools at once by default). */
#define TARGET_TIMEOUT_S  600
#define PLANTED_TIMEOUT_S 120

/* Targets initcheck does not apply to, each with the reason. Both check, on the GPU, outputs that perflab's wgmma
 * kernels write with TMA bulk-tensor stores (cp.async.bulk.tensor), and initcheck does not count those stores as
 * initialising: on an H200 (2026-11-28, compute-sanitizer 2025.3.1) it reported every read of such an output
 * (gemm:fp8: 1,528,800 reads by the check's sum_squares_kernel, in 200 s; fusion:gemm_bias_gelu: 29,400 by
 * bias_gelu_vec8_kernel) while every other target read 0. The outputs are written all the same: they are poisoned
 * with NaN before the checked run, and an unwritten element fails verification. */
static const struct {
    const char *target, *why;
} initcheck_skip[] = {
    {"gemm:fp8", "its check reads outputs written by TMA bulk-tensor stores, which initcheck does not track"},
    {"fusion:gemm_bias_gelu",
     "its epilogue pass reads a GEMM output written by TMA bulk-tensor stores, which initcheck "
     "does not track"},
    {NULL, NULL},
};

/* Runs of the label beyond each target's --small, where --small reaches one form of a kernel family and the others
 * are different machine code: attention:flash_fwd's --small is head_dim 256 (the newest instance), so its d128
 * causal and d64 ping-pong instances run here; gemm:fp8 at M = 100 reaches the per-tensor split-K kernel the pick
 * takes at decode sizes. Each runs under every chosen tool (initcheck's skips apply). */
static const struct {
    const char *target, *args;
} label_extras[] = {
    {"attention:flash_fwd", "--head-dim 128 --causal true"},
    {"attention:flash_fwd", "--head-dim 64 --wgmma-schedule pingpong"},
    {"gemm:fp8", "--m 100 --n 1000 --k 4112"},
    {NULL, NULL},
};

static char *sanitizer;

static char *sanitizer_path(void)
{
    const char *env = getenv("COMPUTE_SANITIZER");
    if (env && *env)
        return pl_strdup(env);
    char *found = pl_which("compute-sanitizer");
    if (found)
        return found;
    return access("/usr/local/cuda/bin/compute-sanitizer", X_OK) == 0
               ? pl_strdup("/usr/local/cuda/bin/compute-sanitizer")
               : NULL;
}

static int chosen(const char *tool)
{
    const char *only = getenv("PERFLAB_SANITIZE_TOOLS");
    return !only || !*only || strstr(only, tool) != NULL;
}

/* One compute-sanitizer run of `perflab verify` and what it left: the tool's logs and run.json. */
typedef struct tool_run {
    const char *tool;
    char *dir; /* cs.<pid>.log (one per process followed), perflab.out, art/<run>/ */
    pid_t pid;
    double t0, seconds;
    int exit_code;    /* perflab's, through compute-sanitizer */
    int logs;         /* log files the tool wrote */
    int summaries;    /* logs that end with the tool's summary */
    int processes;    /* processes the tool followed (a "Process ID:" block each in the session details) */
    int target_procs; /* of those, the targets' processes (`perflab __run-target`) */
    long findings;    /* errors and hazards, summed over the summaries */
    pl_buf text;      /* every log, each under its name */
    pl_buf dirty;     /* the logs whose summary is not clean, or that have none */
    pl_run run;
    int has_run;
    int children; /* targets whose process started (run.json names its log) */
} tool_run;

/* compute-sanitizer --tool TOOL over `perflab verify --exec-children --small --targets TARGETS EXTRA`, started in
 * the background. */
static void tool_start(tool_run *r, const char *tool, const char *tag, const char *targets, const char *extra,
                       int timeout_s)
{
    memset(r, 0, sizeof *r);
    r->tool = tool;
    r->dir = pl_test_tmpdir(tag);
    char *cmd = pl_strfmt(
        "exec '%s' --tool %s --target-processes all --print-session-details --log-file '%s/cs.%%p.log' '%s' verify "
        "--exec-children --targets '%s' %s --small --quiet --timeout-s %d --artifacts-dir '%s/art' "
        ">'%s/perflab.out' 2>&1",
        sanitizer, tool, r->dir, PERFLAB_BIN, targets, extra, timeout_s, r->dir, r->dir);
    fflush(stdout);
    r->t0 = pl_now_s();
    r->pid = fork();
    ck_assert_int_ge(r->pid, 0);
    if (r->pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    free(cmd);
}

/* Wait for every run, each timed to its own end. */
static void tools_wait(tool_run *runs, size_t n)
{
    for (size_t left = n; left > 0; left--) {
        int status;
        pid_t pid = wait(&status);
        ck_assert_int_gt(pid, 0);
        for (size_t i = 0; i < n; i++)
            if (runs[i].pid == pid) {
                runs[i].seconds = pl_now_s() - runs[i].t0;
                runs[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
    }
}

/* A finding's first line: memcheck's "Invalid ...", racecheck's "Error: Race reported ..." or "Warning: ...",
 * initcheck's "Uninitialized ...", synccheck's "Barrier error ...". */
static int is_finding(const char *line)
{
    static const char *const marks[] = {
        "Invalid ", "Error: ", "Warning: ", "Uninitialized ", "Barrier error", "Program hit "};
    if (strncmp(line, "========= ", 10) != 0)
        return 0;
    for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++)
        if (strncmp(line + 10, marks[k], strlen(marks[k])) == 0)
            return 1;
    return 0;
}

/* The findings of a log that is not clean, each distinct one once with its count, the target whose process made
 * it (the last "Target application:" line before it names the target in its job) and the two lines after it (the
 * kernel and the access): a log holds every process's session details, and one defect repeated over a grid can
 * be hundreds of thousands of lines, so the log's head alone says nothing. */
#define DIGEST_MAX 24
static void findings_digest(pl_buf *out, const char *name, const char *log)
{
    struct {
        char *key, *text;
        long count;
    } seen[DIGEST_MAX];
    int n = 0;
    long dropped = 0;
    char target[96] = "the runner";
    for (const char *p = log; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *app = strstr(p, "Target application:");
        if (app && app < p + len) {
            const char *t = strstr(p, "\"target\":\"");
            if (t && t < p + len) {
                t += 10;
                size_t k = strcspn(t, "\"\n");
                snprintf(target, sizeof target, "%.*s", (int)(k < 95 ? k : 95), t);
            } else {
                snprintf(target, sizeof target, "the runner");
            }
        } else if (is_finding(p)) {
            /* the key: the target and the line up to its first address or size, which vary across a grid */
            size_t klen = strcspn(p, "0123456789\n");
            char *key = pl_strfmt("%s|%.*s", target, (int)klen, p);
            int i = 0;
            while (i < n && strcmp(seen[i].key, key) != 0)
                i++;
            if (i < n) {
                seen[i].count++;
                free(key);
            } else if (n < DIGEST_MAX) {
                const char *end = p + len;
                for (int more = 0; more < 2 && *end; more++) {
                    const char *next = strchr(end + 1, '\n');
                    end = next ? next : end + strlen(end);
                }
                seen[n].key = key;
                seen[n].text = pl_strfmt("%s: %.*s", target, (int)(end - p), p);
                seen[n++].count = 1;
            } else {
                dropped++;
                free(key);
            }
        }
        p += len + (eol != NULL);
    }
    pl_buf_printf(out, "---- %s: not clean: %d distinct findings%s ----\n", name, n,
                  dropped ? " (and more not shown)" : "");
    for (int i = 0; i < n; i++) {
        pl_buf_printf(out, "[%ld x] %s\n", seen[i].count, seen[i].text);
        free(seen[i].key);
        free(seen[i].text);
    }
}

/* The summary of one process's log: memcheck, synccheck and initcheck print "ERROR SUMMARY: N errors", racecheck
 * "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)". Returns 0 when there is none. */
static int add_summary(tool_run *r, const char *name, const char *log)
{
    static const char *const keys[] = {"ERROR SUMMARY: ", "RACECHECK SUMMARY: "};
    int found = 0;
    long n = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *p = strstr(log, keys[k]);
        if (p) {
            found = 1;
            n += strtol(p + strlen(keys[k]), NULL, 10);
        }
    }
    r->findings += n;
    if (!found)
        pl_buf_printf(&r->dirty, "---- %s: no summary ----\n%s\n", name, log);
    else if (n > 0)
        findings_digest(&r->dirty, name, log);
    return found;
}

/* The processes a log's session details name: every "Process ID:" block, and those whose target application is
 * a target's exec'd process. */
static void count_processes(tool_run *r, const char *log)
{
    for (const char *p = strstr(log, "Process ID:"); p; p = strstr(p + 1, "Process ID:")) {
        r->processes++;
        const char *app = strstr(p, "Target application:");
        const char *next = strstr(p + 1, "Process ID:");
        if (app && (!next || app < next)) {
            const char *eol = strchr(app, '\n');
            const char *run = strstr(app, "__run-target");
            r->target_procs += run && (!eol || run < eol);
        }
    }
}

static void read_logs(tool_run *r)
{
    DIR *d = opendir(r->dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "cs.", 3) != 0 || len < 8 || strcmp(e->d_name + len - 4, ".log") != 0)
            continue;
        char *path = pl_path_join(r->dir, e->d_name);
        char err[256];
        char *log = pl_read_file(path, NULL, err, sizeof err);
        ck_assert_msg(log != NULL, "%s", err);
        r->logs++;
        r->summaries += add_summary(r, e->d_name, log);
        count_processes(r, log);
        pl_buf_printf(&r->text, "---- %s ----\n%s\n", e->d_name, log);
        free(log);
        free(path);
    }
    closedir(d);
}

static void read_run(tool_run *r)
{
    char *art = pl_path_join(r->dir, "art");
    char *file = pl_test_run_json_in(art);
    char err[512];
    r->has_run = file && pl_run_load(file, &r->run, err, sizeof err) == 0;
    for (size_t i = 0; r->has_run && i < r->run.n_targets; i++)
        r->children += r->run.targets[i].log_file != NULL;
    free(file);
    free(art);
}

/* Read what the run left, print its figures and, where something is wrong, perflab's output and the logs that say
 * so (an assertion carries one line only). */
static void tool_report(tool_run *r, const char *what)
{
    read_logs(r);
    read_run(r);
    printf("sanitize %s: %s: %zu targets (%d in a process of their own), %d processes followed, %ld errors, %.1f s "
           "(perflab exit %d)\n",
           what, r->tool, r->has_run ? r->run.n_targets : 0, r->children, r->processes, r->findings, r->seconds,
           r->exit_code);
    if (r->exit_code != 0 || r->dirty.len || !r->has_run) {
        char err[256];
        char *out_path = pl_path_join(r->dir, "perflab.out");
        char *out = pl_read_file(out_path, NULL, err, sizeof err);
        printf("perflab's output (%s):\n%s\n", r->dir, out ? out : err);
        if (r->dirty.len)
            printf("%.*s\n", (int)(r->dirty.len < 20000 ? r->dirty.len : 20000), r->dirty.data);
        free(out);
        free(out_path);
    }
    fflush(stdout);
}

static void tool_free(tool_run *r)
{
    if (r->has_run)
        pl_run_free(&r->run);
    pl_buf_free(&r->text);
    pl_buf_free(&r->dirty);
    free(r->dir);
}

/* The tool followed the runner and every target's process, and each printed its summary. */
static void expect_followed(const tool_run *r)
{
    ck_assert_msg(r->has_run, "%s: no run.json: the runner did not finish (see perflab's output above)", r->tool);
    ck_assert_msg(r->run.complete, "%s: the run is incomplete", r->tool);
    ck_assert_msg(r->children > 0, "%s: no target's process started", r->tool);
    ck_assert_msg(r->logs > 0, "%s wrote no log", r->tool);
    ck_assert_msg(r->processes == r->children + 1 && r->target_procs == r->children,
                  "%s followed %d processes, %d of them targets': the runner and %d targets' processes make %d "
                  "(are the targets' processes exec'd? --exec-children)",
                  r->tool, r->processes, r->target_procs, r->children, r->children + 1);
    ck_assert_msg(r->summaries == r->logs, "%s: %d of %d logs have no summary (above)", r->tool, r->logs - r->summaries,
                  r->logs);
}

/* ---- planted: each tool reports its defect ---- */

/* Each tool's run keeps its own defect alone (--defect VARIANT; the other variants run the clean kernel). */
static void planted(const char *tool, const char *variant, pl_defect d)
{
    if (!chosen(tool)) {
        printf("%s: not chosen by PERFLAB_SANITIZE_TOOLS\n", tool);
        return;
    }
    tool_run r;
    char *tag = pl_strfmt("sanitize-planted-%s", tool);
    char *extra = pl_strfmt("--target-extra-arg 'selftest:sanitizer_defects=--defect %s'", variant);
    tool_start(&r, tool, tag, "selftest:sanitizer_defects", extra, PLANTED_TIMEOUT_S);
    tools_wait(&r, 1);
    tool_report(&r, "planted");
    /* the defects may fail the target (a memcheck error ends its CUDA context), never the runner */
    ck_assert_msg(r.exit_code == 0 || r.exit_code == 1, "%s: perflab exited %d with selftest:sanitizer_defects", tool,
                  r.exit_code);
    expect_followed(&r);
    ck_assert_int_eq(r.children, 1);
    ck_assert_msg(r.findings > 0, "%s reported nothing for selftest:sanitizer_defects: it checked no kernel", tool);
    ck_assert_msg(strstr(r.text.data, pl_defect_kernel_name(d)) != NULL,
                  "%s's reports do not name %s, the kernel with its planted defect", tool, pl_defect_kernel_name(d));
    tool_free(&r);
    free(extra);
    free(tag);
}

START_TEST(memcheck_reports_the_out_of_bounds_write)
{
    planted("memcheck", "oob_write", PL_DEFECT_OOB_WRITE);
}
END_TEST

START_TEST(racecheck_reports_the_shared_memory_race)
{
    planted("racecheck", "shared_race", PL_DEFECT_SHARED_RACE);
}
END_TEST

START_TEST(synccheck_reports_the_bad_syncwarp)
{
    planted("synccheck", "syncwarp_mask", PL_DEFECT_SYNCWARP_MASK);
}
END_TEST

/* ---- the label: every target clean under every tool ---- */

static int initcheck_skips(const char *name)
{
    for (size_t i = 0; initcheck_skip[i].target; i++)
        if (strcmp(initcheck_skip[i].target, name) == 0)
            return 1;
    return 0;
}

/* The label's selection as a comma list of targets; for initcheck without those it does not apply to. */
static char *label_targets(const char *tool)
{
    const char *spec = getenv("PERFLAB_SANITIZE_TARGETS");
    const pl_target **sel;
    size_t n;
    char err[512];
    pl_labs_register_all();
    ck_assert_msg(pl_registry_select(spec && *spec ? spec : "all", &sel, &n, err, sizeof err) == 0,
                  "PERFLAB_SANITIZE_TARGETS: %s", err);
    pl_buf list = {0};
    pl_buf_append(&list, "");
    for (size_t i = 0; i < n; i++) {
        char name[256];
        pl_target_full_name(sel[i], name, sizeof name);
        if (strcmp(tool, "initcheck") == 0 && initcheck_skips(name))
            continue;
        pl_buf_printf(&list, "%s%s", list.len ? "," : "", name);
    }
    free(sel);
    return list.data;
}

START_TEST(every_target_is_clean_under_every_tool)
{
    static const char *const tools[] = {"memcheck", "racecheck", "synccheck", "initcheck"};
    enum { N_TOOLS = sizeof tools / sizeof tools[0] };
    const int serial = getenv("PERFLAB_SANITIZE_SERIAL") && strcmp(getenv("PERFLAB_SANITIZE_SERIAL"), "1") == 0;
    tool_run runs[N_TOOLS];
    size_t n = 0;
    for (size_t i = 0; i < N_TOOLS; i++) {
        if (!chosen(tools[i]))
            continue;
        char *targets = label_targets(tools[i]), *tag = pl_strfmt("sanitize-label-%s", tools[i]);
        tool_start(&runs[n], tools[i], tag, targets, "", TARGET_TIMEOUT_S);
        if (serial)
            tools_wait(&runs[n], 1);
        n++;
        free(tag);
        free(targets);
    }
    if (!serial)
        tools_wait(runs, n);
    for (size_t i = 0; i < n; i++)
        tool_report(&runs[i], "label");
    for (size_t i = 0; i < n; i++) {
        tool_run *r = &runs[i];
        expect_followed(r);
        ck_assert_msg(r->findings == 0, "%s reported %ld errors or hazards (the logs above)", r->tool, r->findings);
        ck_assert_msg(r->exit_code == 0, "perflab verify under %s exited %d", r->tool, r->exit_code);
        pl_test_expect_all_ok(&r->run, 0);
        tool_free(r);
    }
}
END_TEST

START_TEST(the_label_extras_are_clean)
{
    static const char *const tools[] = {"memcheck", "racecheck", "synccheck", "initcheck"};
    enum { N_TOOLS = sizeof tools / sizeof tools[0] };
    for (size_t e = 0; label_extras[e].target; e++) {
        tool_run runs[N_TOOLS];
        size_t n = 0;
        for (size_t i = 0; i < N_TOOLS; i++) {
            if (!chosen(tools[i]) || (strcmp(tools[i], "initcheck") == 0 && initcheck_skips(label_extras[e].target)))
                continue;
            char *tag = pl_strfmt("sanitize-extra-%zu-%s", e, tools[i]);
            char *extra = pl_strfmt("--target-extra-arg '%s=%s'", label_extras[e].target, label_extras[e].args);
            tool_start(&runs[n++], tools[i], tag, label_extras[e].target, extra, TARGET_TIMEOUT_S);
            free(extra);
            free(tag);
        }
        tools_wait(runs, n); /* the tools at once, one extra after another */
        char what[160];
        snprintf(what, sizeof what, "%s %s", label_extras[e].target, label_extras[e].args);
        for (size_t i = 0; i < n; i++)
            tool_report(&runs[i], what);
        for (size_t i = 0; i < n; i++) {
            tool_run *r = &runs[i];
            expect_followed(r);
            ck_assert_msg(r->findings == 0, "%s on %s reported %ld errors or hazards (the logs above)", r->tool, what,
                          r->findings);
            ck_assert_msg(r->exit_code == 0, "perflab verify under %s on %s exited %d", r->tool, what, r->exit_code);
            pl_test_expect_all_ok(&r->run, 0);
            tool_free(r);
        }
    }
}
END_TEST

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    sanitizer = sanitizer_path();
    if (!sanitizer) {
        printf("SKIP: no compute-sanitizer on the PATH or in /usr/local/cuda/bin (set COMPUTE_SANITIZER)\n");
        return 77;
    }
    Suite *s = suite_create("sanitize");
    TCase *planted_tc = tcase_create("planted");
    tcase_set_timeout(planted_tc, 240);
    tcase_add_test(planted_tc, memcheck_reports_the_out_of_bounds_write);
    tcase_add_test(planted_tc, racecheck_reports_the_shared_memory_race);
    tcase_add_test(planted_tc, synccheck_reports_the_bad_syncwarp);
    suite_add_tcase(s, planted_tc);
    TCase *label_tc = tcase_create("label");
    tcase_set_timeout(label_tc, 2700);
    tcase_add_test(label_tc, every_target_is_clean_under_every_tool);
    tcase_add_test(label_tc, the_label_extras_are_clean);
    suite_add_tcase(s, label_tc);
    int rc = pl_run_suite(s);
    free(sanitizer);
    return rc;
}
