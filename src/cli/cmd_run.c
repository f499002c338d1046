/* perflab run / perflab verify: parse the options, hand the work to the core (pl_suite_run: selection, GPU,
 * provenance, expectations, the targets each in its own process, artifacts) and print the table or the JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/timing_options.h"
#include "core/results_json.h"
#include "core/suite.h"
#include "core/util.h"
#include "core/run_report.h"

typedef struct run_args {
    const char *targets, *profile, *artifacts_dir, *expectations_dir;
    int graph, skip_verify, update_expectations, accept_regressions, small, exec_children;
    int rounds;
    int json, quiet, help;
    double timeout_s;
    pl_timing_args timing;
    pl_strlist extra;
} run_args;

static void defaults(run_args *a)
{
    memset(a, 0, sizeof *a);
    a->profile = "none";
    a->artifacts_dir = "artifacts";
    a->timeout_s = 300;
    pl_timing_args_defaults(&a->timing);
}

static int one_of(const char *s, const char *const *allowed)
{
    for (; *allowed; allowed++)
        if (strcmp(s, *allowed) == 0)
            return 1;
    return 0;
}

static void fill_settings(const run_args *a, int verify_only, pl_run_settings *s)
{
    memset(s, 0, sizeof *s);
    pl_timing_args_apply(&a->timing, s);
    s->small = a->small;
    s->profile = pl_strdup(a->profile);
    s->graph = a->graph;
    s->rounds = a->rounds;
    s->timeout_s = a->timeout_s;
    s->skip_verify = a->skip_verify;
    s->verify_only = verify_only;
    s->exec_children = a->exec_children;
}

/* verify runs each variant once, untimed: the timing, profile and expectations options mean nothing to it, and
 * are refused (as unknown options) rather than ignored. Drops them from the table in place. */
static void keep_verify_options(pl_option *opts)
{
    static const char *const run_only[] = {
        "profile",    "graph",      "rounds",     "skip-verify", "expectations-dir", "update-expectations",
        "accept-regressions", "mode", "iterations", "warmup", "min-samples",        "min-time-s",
        "max-time-s", "max-noise",  "throttle-threshold", NULL};
    size_t k = 0;
    for (size_t i = 0; opts[i].name; i++)
        if (!one_of(opts[i].name, run_only))
            opts[k++] = opts[i];
    memset(&opts[k], 0, sizeof opts[k]);
}

static void usage(const char *verb, const pl_option *opts)
{
    if (strcmp(verb, "verify") == 0)
        printf("usage: perflab verify [--targets a,b|group|all] [options]\n\nRuns every variant of the selected "
               "targets once on random inputs and checks it against\nthe reference (a smoke test of the suite), "
               "without timing. Exit code 1 if any fails.\nTiming, profile and expectations options belong to "
               "'perflab run'.\n\noptions:\n");
    else
        printf("usage: perflab run [--targets a,b|group|all] [options]\n\nVerifies, then times every variant of "
               "the selected targets (default: the quick\nsuite), each target in a process of its own. Prints a "
               "table and writes\nartifacts/<run_id>/{run.json,summary.md,results.csv,logs/}.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 ok; 1 a target failed, failed verification or regressed; 2 bad usage or input;\n"
           "3 no usable GPU or driver; 130 interrupted.\n");
}

static int run_main(const char *verb, int verify_only, int argc, char **argv)
{
    run_args a;
    defaults(&a);
    const pl_option own[] = {
        {"targets", 't', PL_OPT_STRING, &a.targets, "LIST",
         "comma list of group:name, group, or all (default: quick suite)", 0, 0},
        {"profile", 0, PL_OPT_STRING, &a.profile, "P",
         "none | minimal (+clocks, power, temperature) | roofline (+FLOP/byte)", 0, 0},
        {"graph", 0, PL_OPT_FLAG, &a.graph, NULL, "replay each variant as a captured CUDA graph", 0, 0},
        {"rounds", 0, PL_OPT_INT, &a.rounds, "N",
         "time the variants in N interleaved rounds (1: one after another; default 1, power-bound targets 5)", 0,
         1000},
        {"timeout-s", 0, PL_OPT_DOUBLE, &a.timeout_s, "S", "kill a target's process after S seconds (default 300)", 0.1,
         86400},
        {"artifacts-dir", 0, PL_OPT_STRING, &a.artifacts_dir, "D", "where run folders go (default ./artifacts)", 0, 0},
        {"target-extra-arg", 0, PL_OPT_LIST, &a.extra, "'G:N=ARGS'",
         "set a target's parameters, e.g. 'memory:coalescing=--n 16m' (repeatable)", 0, 0},
        {"small", 0, PL_OPT_FLAG, &a.small, NULL,
         "every target at its small sizes (quick, edges included: what the sanitize tests run)", 0, 0},
        {"exec-children", 0, PL_OPT_FLAG, &a.exec_children, NULL,
         "start each target's process by executing perflab afresh, not by a plain fork: compute-sanitizer and nsys "
         "follow only such processes (what the sanitize tests run)",
         0, 0},
        {"skip-verify", 0, PL_OPT_FLAG, &a.skip_verify, NULL, "time without verifying (results are marked unverified)",
         0, 0},
        {"expectations-dir", 0, PL_OPT_STRING, &a.expectations_dir, "D",
         "where <hardware_key>.json files are (default ./expectations)", 0, 0},
        {"update-expectations", 0, PL_OPT_FLAG, &a.update_expectations, NULL,
         "store this run's medians as the new expectations", 0, 0},
        {"accept-regressions", 0, PL_OPT_FLAG, &a.accept_regressions, NULL, "report regressions but exit 0 for them", 0,
         0},
        {"json", 0, PL_OPT_FLAG, &a.json, NULL, "print run.json to stdout instead of the table", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &a.quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &a.help, NULL, "show this help", 0, 0},
    };
    pl_option opts[sizeof own / sizeof own[0] + PL_TIMING_OPTION_COUNT + 1];
    pl_timing_options_join(opts, own, sizeof own / sizeof own[0], 3, &a.timing);
    if (verify_only)
        keep_verify_options(opts);
    pl_strlist pos = {0};
    char err[1024];
    int rc = PL_EXIT_USAGE;
    static const char *const profiles[] = {"none", "minimal", "roofline", NULL};
    if (pl_options_parse(verb, opts, argc, argv, &pos, err, sizeof err) != 0) {
        rc = pl_usage_error(verb, err);
    } else if (a.help) {
        usage(verb, opts);
        rc = PL_EXIT_OK;
    } else if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; select targets with --targets %s", pos.items[0],
                    pos.items[0]);
        rc = pl_usage_error(verb, err);
    } else if (!one_of(a.profile, profiles)) {
        pl_snprintf(err, sizeof err, "--profile must be none, minimal or roofline, not '%s'", a.profile);
        rc = pl_usage_error(verb, err);
    } else if (pl_timing_args_check(&a.timing, err, sizeof err) != 0) {
        rc = pl_usage_error(verb, err);
    } else {
        rc = -1; /* parsed: run it */
    }
    pl_strlist_free(&pos);
    if (rc != -1) {
        pl_strlist_free(&a.extra);
        return rc;
    }

    pl_progress progress;
    pl_progress_init(&progress, !a.quiet && isatty(STDERR_FILENO));
    pl_suite_request req = {
        .verb = verb,
        .targets = a.targets,
        .extra_args = a.extra.items,
        .n_extra = a.extra.n,
        .artifacts_dir = a.artifacts_dir,
        .expectations_dir = a.expectations_dir,
        .update_expectations = a.update_expectations,
        .accept_regressions = a.accept_regressions,
        .argc = pl_cli_argc,
        .argv = pl_cli_argv,
        .hooks = {pl_progress_on_event, pl_progress_on_target_done, &progress},
    };
    fill_settings(&a, verify_only, &req.settings);
    pl_run run;
    err[0] = '\0';
    rc = pl_suite_run(&req, &run, err, sizeof err);
    pl_progress_finish(&progress);
    pl_run_settings_free(&req.settings);
    pl_strlist_free(&a.extra);
    if (!run.run_id) { /* refused before anything ran: one line, nothing written */
        fprintf(stderr, "perflab %s: %s\n", verb, err);
        return rc;
    }
    if (a.json) {
        json_t *j = pl_run_to_json(&run);
        char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        puts(text);
        free(text);
        json_decref(j);
    } else {
        pl_run_print(&run, stdout);
    }
    if (err[0])
        fprintf(stderr, "perflab %s: %s\n", verb, err);
    pl_run_free(&run);
    return rc;
}

int pl_cmd_run(int argc, char **argv)
{
    return run_main("run", 0, argc, argv);
}

int pl_cmd_verify(int argc, char **argv)
{
    return run_main("verify", 1, argc, argv);
}
