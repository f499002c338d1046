/* pl_suite_run: a whole `perflab run` / `perflab verify`, step by step (see suite.h). */
#include "core/suite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/capabilities.h"
#include "core/ceilings.h"
#include "core/piped_child.h"
#include "core/exit.h"
#include "core/expectations.h"
#include "core/ncu.h"
#include "core/provenance.h"
#include "core/util.h"
#include "perflab/target_registry.h"
#include "core/artifacts.h"

#define PL_PROBE_TIMEOUT_S 60.0

/* What the suite holds while it runs: the selection and its parameters, and what is loaded once. */
typedef struct suite {
    const pl_suite_request *req;
    const pl_target **sel;
    size_t n;
    pl_params *params;
    pl_gpu_inventory inv;
    pl_capabilities caps;
    pl_expectations exp;
    char *exp_path;
    pl_run *run;
    int artifacts_failed; /* the last write failed: the run goes on; the final write decides the exit code */
    int artifacts_said;   /* a failed write was reported (once for the whole run) */
} suite;

/* ---- step 1: the selection, each target's arguments and parameters, the artifacts folder: no GPU needed ---- */

/* The arguments of 'T=--k v' or, as the seed lab writes it, 'T="--k v"': one pair of quotes around the whole value
 * is the shell's quoting kept by an outer pair, not part of the arguments (malloc'd). */
static char *extra_arg_value(const char *v)
{
    size_t n = strlen(v);
    if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0] && !memchr(v + 1, v[0], n - 2))
        return pl_strfmt("%.*s", (int)(n - 2), v + 1);
    return pl_strdup(v);
}

/* Split 'group:name=--k v' and append the arguments to that target's string. The name may be an alias of one target
 * (labs/seed_names.def: 'labs/fullstack_cluster:moe_readiness="--skews 1.0,1.5"'). */
static int apply_extra_args(suite *s, char **per_target, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->req->n_extra; i++) {
        const char *spec = s->req->extra_args[i];
        const char *eq = strchr(spec, '=');
        if (!eq || eq == spec || !strchr(spec, ':') || strchr(spec, ':') > eq) {
            pl_snprintf(err, errlen,
                        "malformed --target-extra-arg '%s': write it as 'group:name=--param value' "
                        "(e.g. 'memory:coalescing=--n 16m')",
                        PL_ESC(spec));
            return -1;
        }
        char *name = pl_strfmt("%.*s", (int)(eq - spec), spec);
        const pl_target *one = pl_registry_find_one(name);
        size_t k = 0;
        while (k < s->n && s->sel[k] != one)
            k++;
        if (k == s->n) {
            if (one)
                pl_snprintf(err, errlen,
                            "--target-extra-arg names '%s', which this run does not select: add it to --targets",
                            PL_ESC(name));
            else
                pl_snprintf(err, errlen, "--target-extra-arg names unknown target '%s'; 'perflab list' shows them",
                            PL_ESC(name));
            free(name);
            return -1;
        }
        free(name);
        char *value = extra_arg_value(eq + 1);
        char *joined = pl_strfmt("%s %s", per_target[k] ? per_target[k] : "", value);
        free(value);
        free(per_target[k]);
        per_target[k] = joined;
    }
    return 0;
}

/* Each target's own check of its parameters (pl_target.check_params): at parse time with gpu NULL, and again with
 * the GPU the run will use, before any target starts. */
static int check_params(const suite *s, const pl_gpu_record *gpu, char *err, size_t errlen)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!s->sel[i]->check_params)
            continue;
        char full[256], sub[768];
        if (s->sel[i]->check_params(&s->params[i], gpu, sub, sizeof sub) != 0) {
            pl_snprintf(err, errlen, "%s: %s", pl_target_full_name(s->sel[i], full, sizeof full), sub);
            return -1;
        }
    }
    return 0;
}

static int select_and_parse(suite *s, char *err, size_t errlen)
{
    const pl_suite_request *req = s->req;
    if (req->targets && !*req->targets) {
        pl_snprintf(err, errlen, "--targets is empty: name targets or groups (e.g. --targets memory), or leave the "
                                 "option out for the quick suite");
        return -1;
    }
    if (pl_registry_select(req->targets, &s->sel, &s->n, err, errlen) != 0)
        return -1;
    char **per_target = pl_xcalloc(s->n, sizeof *per_target);
    int rc = apply_extra_args(s, per_target, err, errlen);
    s->params = pl_xcalloc(s->n, sizeof *s->params);
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        char full[256];
        rc = pl_params_init(&s->params[i], s->sel[i]->params, pl_target_full_name(s->sel[i], full, sizeof full),
                            per_target[i], req->settings.small, err, errlen);
    }
    if (rc == 0)
        rc = check_params(s, NULL, err, errlen);
    for (size_t i = 0; i < s->n; i++)
        free(per_target[i]);
    free(per_target);
    if (rc != 0)
        return -1;
    return pl_dir_usable(req->artifacts_dir, "artifacts directory", "--artifacts-dir", err, errlen) ? 0 : -1;
}

/* ---- step 2: the GPU, when a selected target needs one ---- */

static int needs_gpu(const suite *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->sel[i]->req.needs_gpu)
            return 1;
    return 0;
}

static int find_gpu(suite *s, char *err, size_t errlen)
{
    if (!needs_gpu(s))
        return PL_EXIT_OK;
    if (pl_gpu_inventory_probe(&s->inv, PL_PROBE_TIMEOUT_S) != 0 || !s->inv.usable) {
        pl_snprintf(err, errlen, "no usable GPU: %s", s->inv.error[0] ? s->inv.error : "unknown reason");
        return PL_EXIT_NO_GPU;
    }
    int d = s->req->settings.device;
    if (d >= s->inv.device_count) {
        pl_snprintf(err, errlen, "--device %d: this machine has %d GPU%s (0..%d)", d, s->inv.device_count,
                    s->inv.device_count == 1 ? "" : "s", s->inv.device_count - 1);
        return PL_EXIT_USAGE;
    }
    return PL_EXIT_OK;
}

/* ---- step 3: the run's identity and what it is judged with, loaded once ---- */

static void copy_settings(pl_run_settings *dst, const pl_run_settings *src)
{
    *dst = *src;
    dst->profile = pl_strdup(src->profile ? src->profile : "none");
    dst->mode = pl_strdup(src->mode ? src->mode : "hot");
}

/* The expectations before any work, so that a malformed file stops the run before it starts, not after. */
static int load_expectations(suite *s, char *err, size_t errlen)
{
    char *dir = pl_expectations_dir(s->req->expectations_dir);
    s->exp_path =
        pl_expectations_path(dir, s->run->prov.hardware_key, "the hardware key (PERFLAB_EXPECTATION_KEY)", err, errlen);
    if (!s->exp_path) { /* a key names a file: only a plain name is one */
        free(dir);
        return -1;
    }
    if (s->req->update_expectations && !pl_dir_usable(dir, "expectations directory", "--expectations-dir", err, errlen)) {
        free(dir);
        return -1; /* refused before the work, not after it */
    }
    free(dir);
    return pl_expectations_load(s->exp_path, s->run->prov.hardware_key, &s->exp, err, errlen) < 0 ? -1 : 0;
}

/* ---- step 4: the targets, the artifacts rewritten after each ---- */

static void write_artifacts(suite *s)
{
    char err[1024];
    if (pl_artifacts_write(s->run, err, sizeof err) != 0) {
        if (!s->artifacts_said) /* a full disk fails every write the same way: said once */
            fprintf(stderr, "perflab %s: %s\n", s->req->verb, err);
        s->artifacts_said = s->artifacts_failed = 1;
    }
}

static void on_progress(void *user, size_t index, size_t count, const char *target, const char *variant,
                        const char *phase)
{
    suite *s = user;
    if (s->req->hooks.on_progress)
        s->req->hooks.on_progress(s->req->hooks.user, index, count, target, variant, phase);
}

static void on_target_done(void *user, size_t index, size_t count, const pl_target_result *r)
{
    suite *s = user;
    write_artifacts(s); /* run.json holds every finished target before the next one starts */
    if (s->req->hooks.on_target_done)
        s->req->hooks.on_target_done(s->req->hooks.user, index, count, r);
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

/* ---- step 5: the judgement against the expectations ---- */

static int judge(suite *s, int interrupted, char *err, size_t errlen)
{
    pl_run *run = s->run;
    if (run->settings.verify_only)
        return 0;
    run->expectations.present = 1;
    pl_expectations_compare(&s->exp, run, &run->expectations);
    run->expectations.key = pl_strdup(run->prov.hardware_key);
    run->expectations.file = pl_strdup(s->exp_path);
    run->expectations.file_found = s->exp.n_entries > 0 || pl_path_exists(s->exp_path);
    run->expectations.accepted = s->req->accept_regressions;
    if (!s->req->update_expectations || interrupted)
        return 0;
    pl_expectations_update(&s->exp, run);
    char sub[1024];
    if (pl_expectations_save(&s->exp, s->exp_path, sub, sizeof sub) != 0) {
        pl_snprintf(err, errlen, "the expectations were not updated: %s (pass a writable --expectations-dir)", sub);
        return -1;
    }
    run->expectations.updated = 1;
    return 0;
}

int pl_suite_run(const pl_suite_request *req, pl_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    suite s = {.req = req, .run = run};
    int rc = PL_EXIT_USAGE, started = 0;
    if (select_and_parse(&s, err, errlen) != 0)
        goto out;
    if ((rc = find_gpu(&s, err, errlen)) != PL_EXIT_OK)
        goto out;
    rc = PL_EXIT_USAGE;
    if (s.inv.device_count > 0 && check_params(&s, &s.inv.records[req->settings.device], err, errlen) != 0)
        goto out;
    run->schema_version = PL_SCHEMA_VERSION;
    run->run_id = pl_new_run_id();
    copy_settings(&run->settings, &req->settings);
    pl_provenance_collect(&run->prov, req->argc, req->argv, s.inv.device_count ? &s.inv : NULL);
    if (!req->settings.verify_only && load_expectations(&s, err, errlen) != 0)
        goto out;
    if (pl_artifacts_prepare(run, req->artifacts_dir, err, errlen) != 0)
        goto out;
    pl_capabilities_load_for_run(req->artifacts_dir, &s.caps);
    pl_run_load_ceilings(run, req->artifacts_dir, req->verb);
    write_artifacts(&s); /* an empty, incomplete run: it exists from the start */

    pl_runner_input in = {
        .targets = s.sel,
        .n_targets = s.n,
        .params = s.params,
        .settings = &run->settings,
        .inv = s.inv.device_count ? &s.inv : NULL,
        .caps = &s.caps,
        .run_dir = run->run_dir,
        .hooks = {on_progress, on_target_done, &s},
    };
    double t0 = pl_now_s();
    pl_child_install_interrupt_handler();
    int interrupted = pl_runner_run(&in, run) == -2;
    run->duration_s = pl_now_s() - t0;

    int judged = judge(&s, interrupted, err, errlen);
    run->exit_code = interrupted ? PL_EXIT_INTERRUPTED : judged != 0 ? PL_EXIT_USAGE : exit_code_of(run);
    run->complete = !interrupted;
    s.artifacts_failed = 0;
    write_artifacts(&s);
    if (s.artifacts_failed && run->exit_code == PL_EXIT_OK)
        run->exit_code = PL_EXIT_FAILED;
    rc = run->exit_code;
    started = 1;
out:
    if (!started) /* refused before any target ran: no half-made run for the caller to print */
        pl_run_free(run);
    for (size_t i = 0; s.params && i < s.n; i++)
        pl_params_free(&s.params[i]);
    free(s.params);
    free(s.sel);
    free(s.exp_path);
    pl_expectations_free(&s.exp);
    pl_capabilities_free(&s.caps);
    pl_gpu_inventory_free(&s.inv);
    return rc;
}
