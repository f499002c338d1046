/* perflab scenario fullstack (scenario.h): the phases, each run as perflab's own child process. */
#include "serve/scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "perflab/target_registry.h"
#include "serve/perflab_child.h"
#include "serve/scenario_headline.h"

#define MAX_ARGS 24

typedef struct phase_args {
    const char *argv[MAX_ARGS];
    int n;
    char device[16];
    char *env; /* "NAME=value" for the child, or NULL (malloc'd) */
} phase_args;

static void arg(phase_args *a, const char *s)
{
    if (a->n < MAX_ARGS - 1)
        a->argv[a->n++] = s;
    a->argv[a->n] = NULL;
}

/* Each phase: its arguments (0), or skipped with the reason (1). `folder` is the phase's subfolder. */
typedef struct phase_def {
    const char *name;
    int needs_gpu;
    int (*args)(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a, char *reason,
                size_t len);
    void (*headline)(const pl_scenario *s, pl_scenario_phase *p, const char *folder);
} phase_def;

static int hw_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a, char *reason,
                   size_t len)
{
    arg(a, "hw");
    return 0;
}

static int peak_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a,
                     char *reason, size_t len)
{
    const char *v[] = {"peak", "--quick", "--quiet", "--device", a->device, "--artifacts-dir", folder};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        arg(a, v[i]);
    return 0;
}

static int suite_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a,
                      char *reason, size_t len)
{
    const char *v[] = {"run", "--quiet", "--device", a->device, "--artifacts-dir", folder};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        arg(a, v[i]);
    return 0;
}

static size_t e2e_targets(void)
{
    size_t n = 0;
    for (size_t i = 0; i < pl_registry_count(); i++)
        n += strcmp(pl_registry_at(i)->group, "e2e") == 0;
    return n;
}

static int e2e_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a, char *reason,
                    size_t len)
{
    if (e2e_targets() == 0) {
        pl_snprintf(reason, len, "no e2e targets in this build");
        return 1;
    }
    const char *v[] = {"run", "--targets", "e2e", "--quiet", "--device", a->device, "--artifacts-dir", folder};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        arg(a, v[i]);
    return 0;
}

static int moe_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a, char *reason,
                    size_t len)
{
    if (s->inv.device_count < 2) {
        pl_snprintf(reason, len, "moe-readiness needs 2 GPUs or more; this machine has %d", s->inv.device_count);
        return 1;
    }
    const char *v[] = {"moe-readiness", "--quiet", "--out-dir", folder};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        arg(a, v[i]);
    return 0;
}

static int serve_args(const pl_scenario_options *o, const pl_scenario *s, const char *folder, phase_args *a,
                      char *reason, size_t len)
{
    /* a short sweep: 64 requests of 512 in / 128 out at three rates, its ceilings those the peak phase measured */
    if (s->inv.usable && !getenv("PERFLAB_CEILINGS")) {
        const char *names[] = {s->inv.devices[s->device].name};
        char *key = pl_hardware_key(names, 1), *peak = pl_path_join(s->dir, "peak"),
             *file = pl_ceilings_path(peak, key);
        if (pl_path_exists(file))
            a->env = pl_strfmt("PERFLAB_CEILINGS=%s", file);
        free(key);
        free(peak);
        free(file);
    }
    const char *v[] = {"serve",
                       "--quiet",
                       "--model",
                       o->serve_model,
                       "--num-prompts",
                       "64",
                       "--random-input-len",
                       "512",
                       "--random-output-len",
                       "128",
                       "--request-rate",
                       "2,8,inf",
                       "--device",
                       a->device,
                       "--artifacts-dir",
                       folder};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        arg(a, v[i]);
    return 0;
}

static const phase_def phase_defs[PL_SCENARIO_PHASES] = {
    {"hw", 1, hw_args, pl_scenario_headline_hw},
    {"peak", 1, peak_args, pl_scenario_headline_peak},
    {"suite", 1, suite_args, pl_scenario_headline_run},
    {"e2e", 1, e2e_args, pl_scenario_headline_run},
    {"moe-readiness", 1, moe_args, pl_scenario_headline_moe},
    {"serve", 1, serve_args, pl_scenario_headline_serve},
};

const char *pl_phase_status_name(pl_phase_status st)
{
    static const char *const names[] = {"ok", "failed", "skipped", "no_gpu"};
    return names[st];
}

static char *command_text(const phase_args *a)
{
    pl_buf b = {0};
    pl_buf_append(&b, "perflab");
    for (int i = 0; i < a->n; i++)
        pl_buf_printf(&b, " %s", a->argv[i]);
    return b.data;
}

static void run_phase(const pl_scenario_options *o, pl_scenario *s, const phase_def *d, pl_scenario_phase *p)
{
    p->name = d->name;
    p->needs_gpu = d->needs_gpu;
    p->exit_code = -1;
    p->folder = pl_strdup(d->name);
    char *folder = pl_path_join(s->dir, d->name), *logs = pl_path_join(s->dir, "logs"),
         *log_name = pl_strfmt("%s.log", d->name), *log = pl_path_join(logs, log_name);
    phase_args a = {.n = 0};
    pl_snprintf(a.device, sizeof a.device, "%d", o->device);
    if (pl_interrupted) {
        p->status = PL_PHASE_SKIPPED;
        pl_snprintf(p->reason, sizeof p->reason, "not run: interrupted");
    } else if (d->args(o, s, folder, &a, p->reason, sizeof p->reason) != 0) {
        p->status = PL_PHASE_SKIPPED;
    } else if (d->needs_gpu && !s->inv.usable) {
        p->status = PL_PHASE_NO_GPU;
        pl_snprintf(p->reason, sizeof p->reason, "not run: no usable GPU");
    } else {
        p->command = command_text(&a);
        if (!o->quiet)
            fprintf(stderr, "perflab scenario: %s: %s\n", d->name, p->command);
        double t0 = pl_now_s();
        pl_child_end end;
        int started = pl_perflab_child_run(a.argv, a.env, log, o->phase_timeout_s, &end) == 0;
        p->seconds = pl_now_s() - t0;
        p->exit_code = started && end.exited ? end.exit_code : -1;
        p->status = p->exit_code == 0 ? PL_PHASE_OK : p->exit_code == 3 ? PL_PHASE_NO_GPU : PL_PHASE_FAILED;
        if (p->status != PL_PHASE_OK)
            pl_snprintf(p->reason, sizeof p->reason, "%s (log: logs/%s)", end.description, log_name);
        d->headline(s, p, folder);
    }
    if (!p->headline)
        p->headline = json_object();
    if (!o->quiet)
        fprintf(stderr, "perflab scenario: %s: %s%s%s\n", d->name, pl_phase_status_name(p->status),
                p->reason[0] ? ": " : "", p->reason);
    free(a.env);
    free(folder);
    free(logs);
    free(log_name);
    free(log);
}

static int scenario_exit_code(const pl_scenario *s)
{
    if (pl_interrupted)
        return 130;
    int failed = 0, on_gpu = 0;
    for (int i = 0; i < PL_SCENARIO_PHASES; i++) {
        const pl_scenario_phase *p = &s->phases[i];
        failed |= p->status == PL_PHASE_FAILED;
        on_gpu |= p->needs_gpu && (p->status == PL_PHASE_OK || p->status == PL_PHASE_FAILED);
    }
    return failed ? 1 : on_gpu ? 0 : 3;
}

static int write_page(pl_scenario *s, char *err, size_t errlen)
{
    char *md = pl_scenario_summary_md(s);
    json_t *doc = pl_scenario_report_json(s);
    char *md_path = pl_path_join(s->dir, "summary.md"), *json_path = pl_path_join(s->dir, "report.json");
    int rc = pl_write_file_atomic(md_path, md, strlen(md), err, errlen);
    if (rc == 0)
        rc = pl_json_save_file(doc, json_path, err, errlen);
    free(md);
    free(md_path);
    free(json_path);
    json_decref(doc);
    return rc;
}

int pl_scenario_fullstack(const pl_scenario_options *o, pl_scenario *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (pl_gpu_inventory_probe(&s->inv, 60) != 0 && !s->inv.error[0])
        pl_snprintf(s->inv.error, sizeof s->inv.error, "the GPU probe crashed or hung");
    if (s->inv.usable && o->device >= s->inv.device_count) {
        pl_snprintf(err, errlen, "--device %d: this machine has %d GPU%s", o->device, s->inv.device_count,
                    s->inv.device_count == 1 ? "" : "s");
        return -2;
    }
    s->device = o->device;
    s->run_id = pl_new_run_id();
    char *name = pl_strfmt("scenario-%s", s->run_id);
    s->dir = pl_path_join(o->artifacts_dir, name);
    free(name);
    char *logs = pl_path_join(s->dir, "logs");
    int rc = pl_mkdir_p(logs, err, errlen);
    free(logs);
    if (rc != 0)
        return -1;
    for (int i = 0; i < PL_SCENARIO_PHASES; i++)
        run_phase(o, s, &phase_defs[i], &s->phases[i]);
    s->exit_code = scenario_exit_code(s);
    return write_page(s, err, errlen);
}

void pl_scenario_free(pl_scenario *s)
{
    for (int i = 0; i < PL_SCENARIO_PHASES; i++) {
        free(s->phases[i].command);
        free(s->phases[i].folder);
        json_decref(s->phases[i].headline);
    }
    pl_gpu_inventory_free(&s->inv);
    free(s->run_id);
    free(s->dir);
    memset(s, 0, sizeof *s);
}
