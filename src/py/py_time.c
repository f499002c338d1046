/* Timing callables by perflab's rules (perflab/py.h): the caller's variants become one target whose runs call back
 * into the caller, run in this process on the caller's stream by the runner (pl_runner_run_here), so that they are
 * verified, warmed up, latched, flushed, sampled, interleaved and summarised by the same code as every target of
 * `perflab run`; the result is a run that the artifacts writer stores as it stores any other. */
#include "perflab/py.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/artifacts.h"
#include "core/ceilings.h"
#include "core/devprobe.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/run_report.h"
#include "core/runner.h"
#include "core/util.h"
#include "perflab_build_info.h"

#define PL_PY_MAX_VARIANTS 64

struct pl_py_result {
    pl_run run; /* one target */
};

/* What the target's runs and checks get as their state: the caller's variants. */
typedef struct py_job {
    const pl_py_variant *v;
    size_t n;
} py_job;

int pl_py_api_version(void)
{
    return PL_PY_API_VERSION;
}

const char *pl_py_version(void)
{
    return PERFLAB_VERSION " (" PERFLAB_GIT_COMMIT ")";
}

void pl_py_free(void *p)
{
    free(p);
}

void pl_py_options_init(pl_py_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->target = "python:callable";
    o->mode = "hot";
    o->profile = "minimal";
    o->warmup = PL_DEFAULT_WARMUP;
    o->min_samples = PL_DEFAULT_MIN_SAMPLES;
    o->min_time_s = PL_DEFAULT_MIN_TIME_S;
    o->max_time_s = PL_DEFAULT_MAX_TIME_S;
    o->max_noise = PL_DEFAULT_MAX_NOISE;
    o->throttle_threshold = -1;
    o->seed = PL_DEFAULT_SEED;
}

/* ---- the target's callbacks ---- */

static const pl_py_variant *variant_of(const py_job *j, const char *name)
{
    for (size_t i = 0; name && i < j->n; i++)
        if (strcmp(j->v[i].name, name) == 0)
            return &j->v[i];
    return NULL;
}

static int py_run(pl_ctx *ctx, void *state)
{
    const pl_py_variant *v = variant_of(state, ctx->variant);
    if (!v)
        return pl_fail(ctx, "no variant named '%s'", ctx->variant ? ctx->variant : "(none)");
    if (v->run(v->user, ctx->stream) != 0)
        return pl_fail(ctx, "the callable of '%s' failed (its own error is raised by the caller)", v->name);
    return 0;
}

static int py_check(pl_ctx *ctx, void *state, pl_verification *out)
{
    const pl_py_variant *v = variant_of(state, ctx->variant);
    if (!v || !v->check)
        return pl_fail(ctx, "'%s' has no check", ctx->variant ? ctx->variant : "(none)");
    pl_py_check c;
    memset(&c, 0, sizeof c);
    c.verdict = -1;
    c.rel_l2_error = NAN;
    if (v->check(v->user, &c) != 0)
        return pl_fail(ctx, "the check of '%s' failed (its own error is raised by the caller)", v->name);
    int dt = pl_dtype_from_name(v->dtype ? v->dtype : "bf16");
    memset(out, 0, sizeof *out);
    out->dtype = dt < 0 ? PL_DTYPE_BF16 : (pl_dtype)dt;
    out->tolerance = v->tolerance > 0 ? v->tolerance : pl_default_tolerance(out->dtype);
    out->rel_l2_error = c.rel_l2_error;
    out->max_abs_error = c.max_abs_error;
    out->elements = (size_t)c.elements;
    out->nonfinite = (size_t)c.nonfinite;
    if (c.verdict < 0) {
        pl_verify_judge(out);
    } else {
        out->checked = 1;
        out->passed = c.verdict > 0;
    }
    c.message[sizeof c.message - 1] = '\0';
    if (c.message[0])
        pl_snprintf(out->message, sizeof out->message, "%s", c.message);
    return 0;
}

/* ---- the options, checked before any work ---- */

static int options_valid(const pl_py_options *o, const pl_py_variant *v, size_t n, char *err, size_t errlen)
{
    if (!o || o->size != sizeof *o) {
        pl_snprintf(err, errlen,
                    "pl_py_options of %zu bytes, this library's are %zu: rebuild the caller against "
                    "this perflab/py.h (or reinstall the Python package beside this library)",
                    o ? o->size : 0, sizeof *o);
        return -1;
    }
    const char *colon = o->target ? strchr(o->target, ':') : NULL;
    if (!colon || colon == o->target || !colon[1] || strchr(colon + 1, ':')) {
        pl_snprintf(err, errlen, "target name '%s' is not group:name: name it like 'python:step'",
                    o->target ? o->target : "(null)");
        return -1;
    }
    if (n < 1 || n > PL_PY_MAX_VARIANTS) {
        pl_snprintf(err, errlen, "%zu variants: time 1 to %d at once", n, PL_PY_MAX_VARIANTS);
        return -1;
    }
    if (!o->mode || (strcmp(o->mode, "hot") != 0 && strcmp(o->mode, "cold") != 0)) {
        pl_snprintf(err, errlen, "mode '%s': use hot (back to back) or cold (L2 flushed before every sample)",
                    o->mode ? o->mode : "(null)");
        return -1;
    }
    if (!o->profile || (strcmp(o->profile, "none") != 0 && strcmp(o->profile, "minimal") != 0 &&
                        strcmp(o->profile, "roofline") != 0)) {
        pl_snprintf(err, errlen,
                    "profile '%s': use none, minimal (+ clocks, power, temperature) or roofline (+ %% of "
                    "the measured ceilings)",
                    o->profile ? o->profile : "(null)");
        return -1;
    }
    if (o->min_time_s > o->max_time_s || o->max_time_s <= 0 || o->max_noise <= 0 || o->iterations < 0 ||
        o->warmup < 0 || o->min_samples < 1 || o->rounds < 0 || o->device < 0) {
        pl_snprintf(err, errlen,
                    "timing options out of range (min_time_s %g <= max_time_s %g, max_noise %g > 0, "
                    "iterations %d >= 0, warmup %d >= 0, min_samples %d >= 1, rounds %d >= 0, device %d "
                    ">= 0): fix the one that is not",
                    o->min_time_s, o->max_time_s, o->max_noise, o->iterations, o->warmup, o->min_samples, o->rounds,
                    o->device);
        return -1;
    }
    size_t checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].size != sizeof v[i] || !v[i].name || !*v[i].name || !v[i].run) {
            pl_snprintf(err, errlen, "variant %zu: needs a name and a run function (and size = sizeof(pl_py_variant))",
                        i);
            return -1;
        }
        if (v[i].dtype && pl_dtype_from_name(v[i].dtype) < 0) {
            pl_snprintf(err, errlen, "variant '%s': dtype '%s' is not one of fp32, tf32, bf16, fp16, fp8", v[i].name,
                        v[i].dtype);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(v[i].name, v[j].name) == 0) {
                pl_snprintf(err, errlen, "two variants are named '%s': name each once", v[i].name);
                return -1;
            }
        checked += v[i].check != NULL;
    }
    if (checked != 0 && checked != n) {
        pl_snprintf(err, errlen, "%zu of %zu variants have a check: give every variant one, or none (unverified)",
                    checked, n);
        return -1;
    }
    return 0;
}

static void settings_of(const pl_py_options *o, int verified, pl_run_settings *s)
{
    memset(s, 0, sizeof *s);
    s->profile = pl_strdup(o->profile);
    s->mode = pl_strdup(o->mode);
    s->graph = o->graph;
    s->iterations = o->iterations;
    s->warmup = o->warmup;
    s->min_time_s = o->min_time_s;
    s->max_time_s = o->max_time_s;
    s->max_noise = o->max_noise;
    s->min_samples = o->min_samples;
    s->throttle_given = o->throttle_threshold >= 0;
    s->throttle_threshold = s->throttle_given ? o->throttle_threshold : PL_DEFAULT_THROTTLE;
    s->device = o->device;
    s->seed = o->seed;
    s->skip_verify = !verified;
    s->rounds = o->rounds;
}

/* ---- the run ---- */

/* The run's identity: this process, its GPUs (asked here: the caller holds a CUDA context anyway). */
static int start_run(pl_run *run, const pl_py_options *o, int verified, char *err, size_t errlen)
{
    pl_gpu_inventory inv;
    pl_gpu_inventory_query(&inv);
    if (!o->host && (!inv.usable || o->device >= inv.device_count)) {
        if (!inv.usable)
            pl_snprintf(err, errlen, "no usable GPU: %s", inv.error[0] ? inv.error : "unknown reason");
        else
            pl_snprintf(err, errlen, "device %d: this machine has %d GPU%s", o->device, inv.device_count,
                        inv.device_count == 1 ? "" : "s");
        pl_gpu_inventory_free(&inv);
        return -1;
    }
    run->schema_version = PL_SCHEMA_VERSION;
    run->run_id = pl_new_run_id();
    settings_of(o, verified, &run->settings);
    char *argv[] = {"python", NULL};
    pl_provenance_collect(&run->prov, 1, argv, inv.device_count > 0 ? &inv : NULL);
    pl_gpu_inventory_free(&inv);
    pl_run_load_ceilings(run, o->artifacts_dir ? o->artifacts_dir : "artifacts", "python");
    return 0;
}

/* The caller's variants as a target (strings borrowed from the options and the variants). */
static void build_target(const pl_py_options *o, const pl_py_variant *v, size_t n, int verified, pl_target *t,
                         pl_variant *tv, char *group, size_t glen)
{
    const char *colon = strchr(o->target, ':');
    pl_snprintf(group, glen, "%.*s", (int)(colon - o->target), o->target);
    memset(t, 0, sizeof *t);
    t->group = group;
    t->name = colon + 1;
    t->summary = o->summary ? o->summary : "callables timed from Python";
    t->req.needs_gpu = !o->host;
    t->flags = o->power_bound ? PL_TARGET_POWER_BOUND : 0;
    t->check = verified ? py_check : NULL;
    memset(tv, 0, (n + 1) * sizeof *tv);
    for (size_t i = 0; i < n; i++) {
        tv[i].name = v[i].name;
        tv[i].technique = v[i].technique ? v[i].technique : "";
        tv[i].run = py_run;
        tv[i].flags = v[i].host_bound ? PL_VARIANT_HOST_BOUND : 0;
    }
    t->variants = tv;
}

pl_py_result *pl_py_time(const pl_py_options *o, const pl_py_variant *variants, size_t n, cudaStream_t stream,
                         char *err, size_t errlen)
{
    if (options_valid(o, variants, n, err, errlen) != 0)
        return NULL;
    const int verified = variants[0].check != NULL;
    pl_py_result *r = pl_xcalloc(1, sizeof *r);
    if (start_run(&r->run, o, verified, err, errlen) != 0) {
        pl_run_free(&r->run);
        free(r);
        return NULL;
    }
    char group[128];
    pl_target t;
    pl_variant tv[PL_PY_MAX_VARIANTS + 1];
    build_target(o, variants, n, verified, &t, tv, group, sizeof group);
    pl_params params;
    if (pl_params_init(&params, NULL, o->target, "", 0, err, errlen) != 0) {
        pl_run_free(&r->run);
        free(r);
        return NULL;
    }
    const pl_counters counters = {.flops = o->flops, .bytes_read = o->bytes_read, .bytes_written = o->bytes_written};
    if (!stream && !o->host) /* torch's default stream is the legacy one: time there, not on a stream of its own */
        stream = cudaStreamLegacy;
    py_job job = {variants, n};
    r->run.targets = pl_xcalloc(1, sizeof *r->run.targets);
    r->run.n_targets = 1;
    double t0 = pl_now_s();
    pl_runner_run_here(&t, &params, &r->run.settings, NULL, stream, &job, &counters, &r->run.targets[0]);
    r->run.duration_s = pl_now_s() - t0;
    pl_params_free(&params);
    r->run.complete = 1;
    r->run.exit_code = pl_status_is_failure(r->run.targets[0].status) ? 1 : 0;
    return r;
}

char *pl_py_result_json(const pl_py_result *r)
{
    json_t *j = pl_target_result_to_json(&r->run.targets[0]);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

int pl_py_result_exit_code(const pl_py_result *r)
{
    return r->run.exit_code;
}

int pl_py_result_write(pl_py_result *r, const char *artifacts_dir, const char *command_line, char *dir_out,
                       size_t dir_len, char *err, size_t errlen)
{
    if (!artifacts_dir || !*artifacts_dir) {
        pl_snprintf(err, errlen, "no artifacts directory: pass one (e.g. 'artifacts')");
        return -1;
    }
    if (pl_artifacts_prepare(&r->run, artifacts_dir, err, errlen) != 0)
        return -1;
    free(r->run.prov.command_line);
    r->run.prov.command_line = pl_strdup(command_line ? command_line : "python");
    if (pl_artifacts_write(&r->run, err, errlen) != 0)
        return -1;
    pl_snprintf(dir_out, dir_len, "%s", r->run.run_dir);
    return 0;
}

char *pl_py_result_table(const pl_py_result *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    pl_run_print(&r->run, f);
    fclose(f);
    return text;
}

void pl_py_result_free(pl_py_result *r)
{
    if (!r)
        return;
    pl_run_free(&r->run);
    free(r);
}
