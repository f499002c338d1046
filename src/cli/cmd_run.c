/* perflab run / perflab verify: select targets, validate every input, check for a GPU, run each target in its
 * own process, compare with the expectations, write the artifacts and print the table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/timing_options.h"
#include "core/childproc.h"
#include "core/devprobe.h"
#include "core/expectations.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/runner.h"
#include "core/util.h"
#include "core/capabilities.h"
#include "perflab/registry.h"
#include "report/artifacts.h"
#include "report/run_report.h"

#define PL_PROBE_TIMEOUT_S 60.0

typedef struct run_args {
    const char *targets, *profile, *artifacts_dir, *expectations_dir;
    int graph, skip_verify, update_expectations, accept_regressions, small;
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

/* Split 'group:name=--k v' and append the arguments to that target's string. */
static int apply_extra_args(const run_args *a, const pl_target **sel, size_t n, char **per_target, char *err,
                            size_t errlen)
{
    for (size_t i = 0; i < a->extra.n; i++) {
        const char *spec = a->extra.items[i];
        const char *eq = strchr(spec, '=');
        if (!eq || eq == spec || !strchr(spec, ':') || strchr(spec, ':') > eq) {
            pl_snprintf(err, errlen,
                        "malformed --target-extra-arg '%s': write it as 'group:name=--param value' "
                        "(e.g. 'memory:coalescing=--n 16m')",
                        spec);
            return -1;
        }
        char *name = pl_strfmt("%.*s", (int)(eq - spec), spec);
        size_t k = 0;
        char full[256];
        while (k < n && strcmp(pl_target_full_name(sel[k], full, sizeof full), name) != 0)
            k++;
        if (k == n) {
            if (pl_registry_find(name))
                pl_snprintf(err, errlen,
                            "--target-extra-arg names '%s', which this run does not select: add it "
                            "to --targets",
                            name);
            else
                pl_snprintf(err, errlen, "--target-extra-arg names unknown target '%s'; 'perflab list' shows them",
                            name);
            free(name);
            return -1;
        }
        free(name);
        char *joined = pl_strfmt("%s %s", per_target[k] ? per_target[k] : "", eq + 1);
        free(per_target[k]);
        per_target[k] = joined;
    }
    return 0;
}

static void fill_settings(const run_args *a, int verify_only, pl_run_settings *s)
{
    memset(s, 0, sizeof *s);
    pl_timing_args_apply(&a->timing, s);
    s->profile = pl_strdup(a->profile);
    s->graph = a->graph;
    s->rounds = a->rounds;
    s->timeout_s = a->timeout_s;
    s->skip_verify = a->skip_verify;
    s->verify_only = verify_only;
}

static void usage(const char *verb, const pl_option *opts)
{
    if (strcmp(verb, "verify") == 0)
        printf("usage: perflab verify [--targets a,b|group|all] [options]\n\nRuns every variant of the selected "
               "targets once on random inputs and checks it against\nthe reference (a smoke test of the suite), "
               "without timing. Exit code 1 if any fails.\n\noptions:\n");
    else
        printf("usage: perflab run [--targets a,b|group|all] [options]\n\nVerifies, then times every variant of "
               "the selected targets (default: the quick\nsuite), each target in a process of its own. Prints a "
               "table and writes\nartifacts/<run_id>/{run.json,summary.md,results.csv,logs/}.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 ok; 1 a target failed, failed verification or regressed; 2 bad usage or input;\n"
           "3 no usable GPU or driver; 130 interrupted.\n");
}

/* Validate all that can be validated without a GPU. Fills the selection and the parameters. */
static int validate(const char *verb, run_args *a, const pl_target ***sel, size_t *n, pl_params **params)
{
    char err[1024];
    static const char *const profiles[] = {"none", "minimal", "roofline", NULL};
    if (!one_of(a->profile, profiles)) {
        pl_snprintf(err, sizeof err, "--profile must be none, minimal or roofline, not '%s'", a->profile);
        return pl_usage_error(verb, err);
    }
    if (pl_timing_args_check(&a->timing, err, sizeof err) != 0)
        return pl_usage_error(verb, err);
    if (pl_registry_select(a->targets, sel, n, err, sizeof err) != 0)
        return pl_usage_error(verb, err);
    char **per_target = pl_xcalloc(*n, sizeof *per_target);
    int rc = apply_extra_args(a, *sel, *n, per_target, err, sizeof err);
    *params = pl_xcalloc(*n, sizeof **params);
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        char full[256];
        rc = pl_params_init(&(*params)[i], (*sel)[i]->params, pl_target_full_name((*sel)[i], full, sizeof full),
                            per_target[i], a->small, err, sizeof err);
    }
    for (size_t i = 0; i < *n; i++)
        free(per_target[i]);
    free(per_target);
    if (rc != 0)
        return pl_usage_error(verb, err);
    if (!pl_dir_usable(a->artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        return pl_usage_error(verb, err);
    return 0;
}

static int needs_gpu(const pl_target **sel, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (sel[i]->req.needs_gpu)
            return 1;
    return 0;
}

/* Load the expectations before running, so that a malformed file stops us before the work, not after. */
static int load_expectations(const char *verb, const run_args *a, const pl_provenance *prov, pl_expectations *e,
                             char **path)
{
    char *dir = pl_expectations_dir(a->expectations_dir);
    char *file = pl_strfmt("%s.json", prov->hardware_key);
    *path = pl_path_join(dir, file);
    free(dir);
    free(file);
    char err[1024];
    if (pl_expectations_load(*path, prov->hardware_key, e, err, sizeof err) < 0)
        return pl_usage_error(verb, err);
    return 0;
}

static int exit_code_of(const pl_run *run)
{
    for (size_t i = 0; i < run->n_targets; i++)
        if (pl_status_is_failure(run->targets[i].status))
            return PL_EXIT_FAILED;
    if (run->expectations.regressions > 0 && !run->expectations.accepted)
        return PL_EXIT_FAILED;
    return PL_EXIT_OK;
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
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse(verb, opts, argc, argv, &pos, err, sizeof err) != 0) {
        pl_strlist_free(&a.extra);
        return pl_usage_error(verb, err);
    }
    if (a.help) {
        usage(verb, opts);
        pl_strlist_free(&a.extra);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; select targets with --targets %s", pos.items[0],
                    pos.items[0]);
        pl_strlist_free(&a.extra);
        pl_strlist_free(&pos);
        return pl_usage_error(verb, err);
    }
    pl_strlist_free(&pos);

    const pl_target **sel = NULL;
    size_t n = 0;
    pl_params *params = NULL;
    int rc = validate(verb, &a, &sel, &n, &params);
    pl_gpu_inventory inv = {0};
    pl_run run = {0};
    pl_expectations exp = {0};
    char *exp_path = NULL;
    if (rc != 0)
        goto out;

    if (needs_gpu(sel, n)) {
        if (pl_gpu_inventory_probe(&inv, PL_PROBE_TIMEOUT_S) != 0 || !inv.usable) {
            fprintf(stderr, "perflab %s: no usable GPU: %s\n", verb, inv.error[0] ? inv.error : "unknown reason");
            rc = PL_EXIT_NO_GPU;
            goto out;
        }
        if (a.timing.device >= inv.device_count) {
            pl_snprintf(err, sizeof err, "--device %d: this machine has %d GPU%s (0..%d)", a.timing.device,
                        inv.device_count, inv.device_count == 1 ? "" : "s", inv.device_count - 1);
            rc = pl_usage_error(verb, err);
            goto out;
        }
    }
    run.schema_version = PL_SCHEMA_VERSION;
    run.run_id = pl_new_run_id();
    fill_settings(&a, verify_only, &run.settings);
    pl_provenance_collect(&run.prov, pl_cli_argc, pl_cli_argv, inv.device_count ? &inv : NULL);
    if (!verify_only && (rc = load_expectations(verb, &a, &run.prov, &exp, &exp_path)) != 0)
        goto out;
    if (pl_artifacts_prepare(&run, a.artifacts_dir, err, sizeof err) != 0) {
        rc = pl_usage_error(verb, err);
        goto out;
    }

    pl_progress progress;
    pl_progress_init(&progress, !a.quiet && isatty(STDERR_FILENO));
    pl_capabilities_use_dir(a.artifacts_dir); /* targets' feature requirements: what `perflab probe` measured */
    pl_runner_input in = {
        .targets = sel,
        .n_targets = n,
        .params = params,
        .settings = &run.settings,
        .inv = inv.device_count ? &inv : NULL,
        .run_dir = run.run_dir,
        .hooks = {pl_progress_on_event, pl_progress_on_target_done, &progress},
    };
    double t0 = pl_now_s();
    pl_child_install_interrupt_handler();
    int interrupted = pl_runner_run(&in, &run) == -2;
    pl_progress_finish(&progress);
    run.duration_s = pl_now_s() - t0;

    if (!verify_only) {
        run.expectations.present = 1;
        pl_expectations_compare(&exp, &run, &run.expectations);
        run.expectations.key = pl_strdup(run.prov.hardware_key);
        run.expectations.file = pl_strdup(exp_path);
        run.expectations.file_found = exp.n_entries > 0 || pl_path_exists(exp_path);
        run.expectations.accepted = a.accept_regressions;
        if (a.update_expectations && !interrupted) {
            pl_expectations_update(&exp, &run);
            if (pl_expectations_save(&exp, exp_path, err, sizeof err) != 0)
                fprintf(stderr, "perflab %s: %s\n", verb, err);
            else
                run.expectations.updated = 1;
        }
    }
    run.exit_code = interrupted ? PL_EXIT_INTERRUPTED : exit_code_of(&run);
    if (pl_artifacts_write(&run, err, sizeof err) != 0) {
        fprintf(stderr, "perflab %s: %s\n", verb, err);
        if (run.exit_code == PL_EXIT_OK)
            run.exit_code = PL_EXIT_FAILED;
    }
    if (a.json) {
        json_t *j = pl_run_to_json(&run);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
        json_decref(j);
    } else {
        pl_run_print(&run, stdout);
    }
    rc = run.exit_code;
out:
    for (size_t i = 0; params && i < n; i++)
        pl_params_free(&params[i]);
    free(params);
    free(sel);
    free(exp_path);
    pl_expectations_free(&exp);
    pl_run_free(&run);
    pl_gpu_inventory_free(&inv);
    pl_strlist_free(&a.extra);
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
