/* Shared by the tests: run the perflab binary and capture what it printed, temporary folders, and a runner
 * for Check suites that exits 0/1 (or 77 to skip). */
#ifndef PERFLAB_TESTUTIL_H
#define PERFLAB_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/* Check's ck_assert_msg (and every ck_assert* built on it) records the file and line of each assertion that passes
 * (_mark_point: in fork mode a message down a pipe to the runner), so that a later crash can be placed. The GPU
 * tests check outputs element by element, millions of assertions a case: that bookkeeping took minutes (the
 * all-reduce test's check of 2 Mi elements never finished in 2 minutes). Here a passing assertion costs its
 * comparison only; a failure is reported as before. A crash is placed at the test's start or its last explicit
 * mark_point(). */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                                                                                       \
    ((expr) ? (void)0 : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", ##__VA_ARGS__))

typedef struct pl_cmd_result {
    int exit_code; /* 128+signal when killed */
    char *out;     /* stdout */
    char *err;     /* stderr */
} pl_cmd_result;

/* Run PERFLAB_BIN with the arguments in `args` (a shell command line fragment, e.g. "run --targets x").
 * `env` (may be NULL) is prepended as "VAR=value ..." assignments. */
pl_cmd_result pl_run_perflab(const char *env, const char *args);
void pl_cmd_result_free(pl_cmd_result *r);

/* Run `perflab VERB_AND_ARGS --quiet` with fresh artifacts and expectations directories (named after `tag`),
 * then load the run it wrote into *out (failing the test if there is none). Returns the exit code. */
struct pl_run;
int pl_test_run_and_load(const char *tag, const char *verb_and_args, struct pl_run *out, pl_cmd_result *r);

/* The run.json of the one run folder under an artifacts directory (malloc'd), NULL while there is none. */
char *pl_test_run_json_in(const char *artifacts_dir);

/* Every target and variant of the run is ok and verified; timed (samples, a sane median) or, for `perflab
 * verify` runs (timed = 0), not. Targets skipped for unmet requirements pass if they say why. Returns the
 * number of targets that ran. */
int pl_test_expect_all_ok(const struct pl_run *run, int timed);

/* A run with every part filled, as perflab would write it: provenance with a GPU, settings, memory:coalescing with
 * two timed variants (raw samples, verification, telemetry, energy at 600 W, derived statistics and speedup), a crashed
 * selftest:crash, a selftest:wrong that failed verification, and an expectations report (one met, one regressed).
 * Free with pl_run_free. */
void pl_test_make_run(struct pl_run *r);
/* r as run.json at path (written atomically, as perflab writes it); -1 with the reason in err. */
int pl_test_save_run(const struct pl_run *r, const char *path, char *err, size_t errlen);

/* `perflab VERB --targets TARGET --target-extra-arg 'TARGET=ARGS'` is refused as bad input: exit 2, one line on
 * stderr naming the target and holding `says`, and no artifacts folder written. */
void pl_test_expect_refusal(const char *verb, const char *target, const char *args, const char *says);

/* pl_test_make_run's run, its JSON document changed by `edit` (NULL: as is), written as <dir>/<name>/run.json as
 * a crafted file would be. Returns the folder (malloc'd). */
struct json_t;
char *pl_test_write_run(const char *dir, const char *name, void (*edit)(struct json_t *root));

/* A fresh empty directory under PERFLAB_TEST_TMP, named after `tag`. malloc'd. */
char *pl_test_tmpdir(const char *tag);

/* Run every test of the suite; exit code 0 when all passed. Forks each test (Check's default). */
int pl_run_suite(Suite *s);

/* Whether a usable GPU is present (the core's GPU probe, in a child process: CUDA is never initialised here). If not,
 * prints the reason and returns 0. */
int pl_test_have_gpu(void);
/* Device 0's compute capability (major*10+minor) as pl_test_have_gpu's probe saw it, without initialising CUDA
 * here: a test that asks the runtime before Check forks its cases leaves them a context that does not survive the fork
 * ("initialization error"). 0 before a successful pl_test_have_gpu. */
int pl_test_gpu_cc(void);

#endif
