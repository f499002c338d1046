/* A whole `perflab run` / `perflab verify` as one call that a test can drive without the CLI: select the targets
 * and parse their parameters, check for a GPU, collect provenance, load the expectations, the measured
 * capabilities and (for roofline) the ceilings once, run every target in its own process, rewrite the artifacts
 * after each target (so that a kill leaves every finished target on disk), judge against the expectations, and
 * write the final artifacts. The caller prints. */
#ifndef PERFLAB_CORE_SUITE_H
#define PERFLAB_CORE_SUITE_H

#include <stddef.h>

#include "core/runner.h"
#include "perflab/results.h"

typedef struct pl_suite_request {
    const char *verb;                  /* "run" or "verify": names the command in messages */
    const char *targets;               /* NULL: the quick suite; "" is refused */
    const char *const *extra_args;     /* 'group:name=--param value' each */
    size_t n_extra;
    pl_run_settings settings;          /* timing, profile, seed, verify_only, small, ...; strings are copied */
    const char *artifacts_dir;         /* where run folders go */
    const char *expectations_dir;      /* NULL: the default lookup (pl_expectations_dir) */
    int update_expectations, accept_regressions;
    int argc;                          /* the command line, for provenance */
    char **argv;
    pl_runner_hooks hooks;             /* progress for the caller (may be empty) */
} pl_suite_request;

/* Runs the suite into *run (zeroed first; free it with pl_run_free). Returns the exit code: 0, 1 (a target
 * failed or regressed), 2 (bad input: nothing run, nothing written; err says what and how to fix it), 3 (no
 * usable GPU: err says why) or 130 (interrupted; the artifacts hold what finished). */
int pl_suite_run(const pl_suite_request *req, pl_run *run, char *err, size_t errlen);

#endif
