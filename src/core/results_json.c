#include "core/results_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ---- JSON primitives ---- */

json_t *pl_json_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

double pl_json_get_real(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int get_int(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : json_is_boolean(v) ? json_is_true(v) : dflt;
}

static char *get_str(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? pl_strdup(json_string_value(v)) : NULL;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *pl_json_load_file(const char *path, char *err, size_t errlen)
{
    size_t len;
    char *text = pl_read_file(path, &len, err, errlen);
    if (!text)
        return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    free(text);
    if (!j)
        pl_snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    return j;
}

int pl_json_save_file(json_t *j, const char *path, char *err, size_t errlen)
{
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (!text) {
        pl_snprintf(err, errlen, "cannot encode JSON for '%s'", path);
        return -1;
    }
    size_t len = strlen(text);
    char *with_newline = pl_strfmt("%s\n", text);
    free(text);
    int rc = pl_write_file_atomic(path, with_newline, len + 1, err, errlen);
    free(with_newline);
    return rc;
}

char *pl_json_dumps_line(json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
}

/* ---- pieces ---- */

static json_t *stats_to_json(const pl_stats *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "n", json_integer((json_int_t)s->n));
    json_object_set_new(j, "median_ms", pl_json_real(s->median));
    json_object_set_new(j, "mean_ms", pl_json_real(s->mean));
    json_object_set_new(j, "stdev_ms", pl_json_real(s->stdev));
    json_object_set_new(j, "min_ms", pl_json_real(s->min));
    json_object_set_new(j, "max_ms", pl_json_real(s->max));
    json_object_set_new(j, "p10_ms", pl_json_real(s->p10));
    json_object_set_new(j, "p25_ms", pl_json_real(s->p25));
    json_object_set_new(j, "p50_ms", pl_json_real(s->p50));
    json_object_set_new(j, "p75_ms", pl_json_real(s->p75));
    json_object_set_new(j, "p90_ms", pl_json_real(s->p90));
    json_object_set_new(j, "p99_ms", pl_json_real(s->p99));
    json_object_set_new(j, "iqr_ms", pl_json_real(s->iqr));
    json_object_set_new(j, "rel_noise", pl_json_real(s->rel_noise));
    json_object_set_new(j, "cv", pl_json_real(s->cv));
    return j;
}

static json_t *verification_to_json(const pl_verification *v)
{
    json_t *j = json_object();
    json_object_set_new(j, "checked", json_boolean(v->checked));
    json_object_set_new(j, "passed", json_boolean(v->passed));
    json_object_set_new(j, "dtype", json_string(pl_dtype_name(v->dtype)));
    json_object_set_new(j, "rel_l2_error", pl_json_real(v->rel_l2_error));
    json_object_set_new(j, "tolerance", pl_json_real(v->tolerance));
    json_object_set_new(j, "max_abs_error", pl_json_real(v->max_abs_error));
    json_object_set_new(j, "max_error_index", json_integer((json_int_t)v->max_error_index));
    json_object_set_new(j, "elements", json_integer((json_int_t)v->elements));
    json_object_set_new(j, "nonfinite", json_integer((json_int_t)v->nonfinite));
    json_object_set_new(j, "unwritten", json_integer((json_int_t)v->unwritten));
    json_object_set_new(j, "message", json_string(v->message));
    return j;
}

static void verification_from_json(json_t *j, pl_verification *v)
{
    memset(v, 0, sizeof *v);
    if (!json_is_object(j))
        return;
    v->checked = get_int(j, "checked", 0);
    v->passed = get_int(j, "passed", 0);
    int d = pl_dtype_from_name(json_string_value(json_object_get(j, "dtype")));
    v->dtype = d < 0 ? PL_DTYPE_F32 : (pl_dtype)d;
    v->rel_l2_error = pl_json_get_real(j, "rel_l2_error");
    v->tolerance = pl_json_get_real(j, "tolerance");
    v->max_abs_error = pl_json_get_real(j, "max_abs_error");
    v->max_error_index = (size_t)json_integer_value(json_object_get(j, "max_error_index"));
    v->elements = (size_t)json_integer_value(json_object_get(j, "elements"));
    v->nonfinite = (size_t)json_integer_value(json_object_get(j, "nonfinite"));
    v->unwritten = (size_t)json_integer_value(json_object_get(j, "unwritten"));
    const char *m = json_string_value(json_object_get(j, "message"));
    pl_snprintf(v->message, sizeof v->message, "%s", m ? m : "");
}

static json_t *summary_to_json(const pl_summary *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "n", json_integer(s->n));
    json_object_set_new(j, "min", pl_json_real(s->min));
    json_object_set_new(j, "mean", pl_json_real(s->mean));
    json_object_set_new(j, "max", pl_json_real(s->max));
    return j;
}

static void summary_from_json(json_t *j, pl_summary *s)
{
    s->n = get_int(j, "n", 0);
    s->min = pl_json_get_real(j, "min");
    s->mean = pl_json_get_real(j, "mean");
    s->max = pl_json_get_real(j, "max");
}

static json_t *telemetry_to_json(const pl_telemetry *t)
{
    json_t *j = json_object();
    json_object_set_new(j, "sm_clock_mhz", summary_to_json(&t->sm_clock_mhz));
    json_object_set_new(j, "mem_clock_mhz", summary_to_json(&t->mem_clock_mhz));
    json_object_set_new(j, "power_w", summary_to_json(&t->power_w));
    json_object_set_new(j, "temperature_c", summary_to_json(&t->temperature_c));
    return j;
}

static void telemetry_from_json(json_t *j, pl_telemetry *t)
{
    summary_from_json(json_object_get(j, "sm_clock_mhz"), &t->sm_clock_mhz);
    summary_from_json(json_object_get(j, "mem_clock_mhz"), &t->mem_clock_mhz);
    summary_from_json(json_object_get(j, "power_w"), &t->power_w);
    summary_from_json(json_object_get(j, "temperature_c"), &t->temperature_c);
}

static json_t *interval_to_json(const pl_interval *i)
{
    json_t *j = json_object();
    json_object_set_new(j, "value", pl_json_real(i->value));
    json_object_set_new(j, "ci_low", pl_json_real(i->lo));
    json_object_set_new(j, "ci_high", pl_json_real(i->hi));
    json_object_set_new(j, "confidence", pl_json_real(i->confidence));
    json_object_set_new(j, "significant", json_boolean(i->significant));
    return j;
}

static void interval_from_json(json_t *j, pl_interval *i)
{
    i->value = pl_json_get_real(j, "value");
    i->lo = pl_json_get_real(j, "ci_low");
    i->hi = pl_json_get_real(j, "ci_high");
    i->confidence = pl_json_get_real(j, "confidence");
    i->significant = get_int(j, "significant", 0);
}

/* ---- variant ---- */

json_t *pl_variant_result_to_json(const pl_variant_result *v)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", str_or_null(v->name));
    json_object_set_new(j, "technique", str_or_null(v->technique));
    json_object_set_new(j, "status", json_string(pl_status_name(v->status)));
    json_object_set_new(j, "reason", str_or_null(v->reason));
    json_object_set_new(j, "reference", json_boolean(v->is_reference));
    json_object_set_new(j, "verification", verification_to_json(&v->verification));

    json_t *timing = json_object();
    json_object_set_new(timing, "graph", json_boolean(v->graph));
    json_object_set_new(timing, "latched", json_boolean(v->latched));
    json_object_set_new(timing, "reps_per_sample", json_integer(v->reps_per_sample));
    json_object_set_new(timing, "warmup_runs", json_integer(v->warmup_runs));
    json_object_set_new(timing, "throttled_discarded", json_integer(v->throttled_discarded));
    json_object_set_new(timing, "measure_s", pl_json_real(v->measure_s));
    json_object_set_new(timing, "stop_reason", str_or_null(v->stop_reason));
    json_object_set_new(j, "timing", timing);

    if (v->has_stats)
        json_object_set_new(j, "stats", stats_to_json(&v->stats));
    json_t *derived = json_object();
    json_object_set_new(derived, "tflops", pl_json_real(v->tflops));
    json_object_set_new(derived, "gbps", pl_json_real(v->gbps));
    json_object_set_new(derived, "arithmetic_intensity", pl_json_real(v->arithmetic_intensity));
    json_object_set_new(derived, "pct_of_reference", pl_json_real(v->pct_of_reference));
    json_object_set_new(j, "derived", derived);
    if (v->has_speedup)
        json_object_set_new(j, "speedup", interval_to_json(&v->speedup));
    if (v->has_telemetry)
        json_object_set_new(j, "telemetry", telemetry_to_json(&v->telemetry));

    json_t *samples = json_array();
    for (size_t i = 0; i < v->n_samples; i++)
        json_array_append_new(samples, json_real(v->samples_ms[i]));
    json_object_set_new(j, "samples_ms", samples);
    return j;
}

int pl_variant_result_from_json(json_t *j, pl_variant_result *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    if (!json_is_object(j)) {
        pl_snprintf(err, errlen, "a variant is not a JSON object");
        return -1;
    }
    v->name = get_str(j, "name");
    if (!v->name) {
        pl_snprintf(err, errlen, "a variant has no \"name\"");
        return -1;
    }
    v->technique = get_str(j, "technique");
    int st = pl_status_from_name(json_string_value(json_object_get(j, "status")));
    if (st < 0) {
        pl_snprintf(err, errlen, "variant '%s': unknown or missing \"status\"", v->name);
        return -1;
    }
    v->status = (pl_status)st;
    v->reason = get_str(j, "reason");
    v->is_reference = get_int(j, "reference", 0);
    verification_from_json(json_object_get(j, "verification"), &v->verification);

    json_t *timing = json_object_get(j, "timing");
    v->graph = get_int(timing, "graph", 0);
    v->latched = get_int(timing, "latched", 0);
    v->reps_per_sample = get_int(timing, "reps_per_sample", 1);
    v->warmup_runs = get_int(timing, "warmup_runs", 0);
    v->throttled_discarded = get_int(timing, "throttled_discarded", 0);
    v->measure_s = pl_json_get_real(timing, "measure_s");
    v->stop_reason = get_str(timing, "stop_reason");

    json_t *samples = json_object_get(j, "samples_ms");
    if (samples && !json_is_array(samples)) {
        pl_snprintf(err, errlen, "variant '%s': \"samples_ms\" is not an array", v->name);
        return -1;
    }
    v->n_samples = json_array_size(samples);
    v->samples_ms = pl_xcalloc(v->n_samples ? v->n_samples : 1, sizeof *v->samples_ms);
    for (size_t i = 0; i < v->n_samples; i++) {
        json_t *x = json_array_get(samples, i);
        if (!json_is_number(x)) {
            pl_snprintf(err, errlen, "variant '%s': samples_ms[%zu] is not a number", v->name, i);
            return -1;
        }
        v->samples_ms[i] = json_number_value(x);
    }

    json_t *derived = json_object_get(j, "derived");
    v->tflops = pl_json_get_real(derived, "tflops");
    v->gbps = pl_json_get_real(derived, "gbps");
    v->arithmetic_intensity = pl_json_get_real(derived, "arithmetic_intensity");
    v->pct_of_reference = pl_json_get_real(derived, "pct_of_reference");
    /* statistics are recomputed from the raw samples, so that every reader sees the same figures */
    v->has_stats = v->n_samples > 0 && json_object_get(j, "stats") &&
                   pl_stats_compute(v->samples_ms, v->n_samples, &v->stats) == 0;
    json_t *sp = json_object_get(j, "speedup");
    v->has_speedup = json_is_object(sp);
    if (v->has_speedup)
        interval_from_json(sp, &v->speedup);
    json_t *tel = json_object_get(j, "telemetry");
    v->has_telemetry = json_is_object(tel);
    if (v->has_telemetry)
        telemetry_from_json(tel, &v->telemetry);
    return 0;
}

/* ---- target ---- */

json_t *pl_target_result_to_json(const pl_target_result *t)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", str_or_null(t->name));
    json_object_set_new(j, "summary", str_or_null(t->summary));
    json_object_set_new(j, "status", json_string(pl_status_name(t->status)));
    json_object_set_new(j, "reason", str_or_null(t->reason));
    json_t *params = json_object();
    for (size_t i = 0; i < t->n_params; i++)
        json_object_set_new(params, t->params[i].name, json_string(t->params[i].value));
    json_object_set_new(j, "params", params);
    json_t *c = json_object();
    json_object_set_new(c, "flops", pl_json_real(t->counters.flops));
    json_object_set_new(c, "bytes_read", pl_json_real(t->counters.bytes_read));
    json_object_set_new(c, "bytes_written", pl_json_real(t->counters.bytes_written));
    json_object_set_new(c, "elements", pl_json_real(t->counters.elements));
    json_object_set_new(j, "counters", c);
    json_t *vs = json_array();
    for (size_t i = 0; i < t->n_variants; i++)
        json_array_append_new(vs, pl_variant_result_to_json(&t->variants[i]));
    json_object_set_new(j, "variants", vs);
    json_object_set_new(j, "duration_s", pl_json_real(t->duration_s));
    json_object_set_new(j, "log", str_or_null(t->log_file));
    return j;
}

static double counter(json_t *c, const char *key)
{
    double x = pl_json_get_real(c, key);
    return isnan(x) ? 0.0 : x;
}

int pl_target_result_from_json(json_t *j, pl_target_result *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (!json_is_object(j) || !(t->name = get_str(j, "name"))) {
        pl_snprintf(err, errlen, "a target is not an object with a \"name\"");
        return -1;
    }
    int st = pl_status_from_name(json_string_value(json_object_get(j, "status")));
    if (st < 0) {
        pl_snprintf(err, errlen, "target '%s': unknown or missing \"status\"", t->name);
        return -1;
    }
    t->status = (pl_status)st;
    t->summary = get_str(j, "summary");
    t->reason = get_str(j, "reason");
    json_t *params = json_object_get(j, "params");
    t->n_params = json_object_size(params);
    t->params = pl_xcalloc(t->n_params ? t->n_params : 1, sizeof *t->params);
    size_t k = 0;
    const char *key;
    json_t *val;
    json_object_foreach(params, key, val)
    {
        t->params[k].name = pl_strdup(key);
        t->params[k].value = pl_strdup(json_is_string(val) ? json_string_value(val) : "");
        k++;
    }
    json_t *c = json_object_get(j, "counters");
    t->counters.flops = counter(c, "flops");
    t->counters.bytes_read = counter(c, "bytes_read");
    t->counters.bytes_written = counter(c, "bytes_written");
    t->counters.elements = counter(c, "elements");
    json_t *vs = json_object_get(j, "variants");
    t->n_variants = json_array_size(vs);
    t->variants = pl_xcalloc(t->n_variants ? t->n_variants : 1, sizeof *t->variants);
    for (size_t i = 0; i < t->n_variants; i++) {
        char sub[256];
        if (pl_variant_result_from_json(json_array_get(vs, i), &t->variants[i], sub, sizeof sub) != 0) {
            pl_snprintf(err, errlen, "target '%s': %s", t->name, sub);
            return -1;
        }
    }
    t->duration_s = pl_json_get_real(j, "duration_s");
    t->log_file = get_str(j, "log");
    return 0;
}

/* ---- provenance, settings, expectations ---- */

json_t *pl_provenance_to_json(const pl_provenance *p)
{
    json_t *j = json_object();
    json_object_set_new(j, "perflab_version", str_or_null(p->perflab_version));
    json_object_set_new(j, "git_commit", str_or_null(p->git_commit));
    json_object_set_new(j, "command_line", str_or_null(p->command_line));
    json_object_set_new(j, "started_at", str_or_null(p->started_at));
    json_object_set_new(j, "hostname", str_or_null(p->hostname));
    json_object_set_new(j, "os", str_or_null(p->os));
    json_object_set_new(j, "cpu", str_or_null(p->cpu));
    json_object_set_new(j, "driver_version", str_or_null(p->driver_version));
    json_object_set_new(j, "cuda_driver_version", json_integer(p->cuda_driver_version));
    json_object_set_new(j, "cuda_runtime_version", json_integer(p->cuda_runtime_version));
    json_object_set_new(j, "hardware_key", str_or_null(p->hardware_key));
    json_t *gpus = json_array();
    for (size_t i = 0; i < p->n_gpus; i++) {
        const pl_gpu_record *g = &p->gpus[i];
        json_t *o = json_object();
        json_object_set_new(o, "ordinal", json_integer(g->ordinal));
        json_object_set_new(o, "name", str_or_null(g->name));
        json_object_set_new(o, "pci_bus_id", str_or_null(g->pci_bus_id));
        json_object_set_new(o, "compute_capability", json_sprintf("%d.%d", g->cc_major, g->cc_minor));
        json_object_set_new(o, "sm_count", json_integer(g->sm_count));
        json_object_set_new(o, "memory_gib", pl_json_real(g->memory_gib));
        json_object_set_new(o, "l2_mib", pl_json_real(g->l2_mib));
        json_object_set_new(o, "sm_clock_mhz", json_integer(g->sm_clock_mhz));
        json_object_set_new(o, "sm_clock_max_mhz", json_integer(g->sm_clock_max_mhz));
        json_object_set_new(o, "mem_clock_mhz", json_integer(g->mem_clock_mhz));
        json_object_set_new(o, "mem_clock_max_mhz", json_integer(g->mem_clock_max_mhz));
        json_object_set_new(o, "power_limit_w", pl_json_real(g->power_limit_w));
        json_object_set_new(o, "temperature_c", json_integer(g->temperature_c));
        json_array_append_new(gpus, o);
    }
    json_object_set_new(j, "gpus", gpus);
    return j;
}

static void provenance_from_json(json_t *j, pl_provenance *p)
{
    p->perflab_version = get_str(j, "perflab_version");
    p->git_commit = get_str(j, "git_commit");
    p->command_line = get_str(j, "command_line");
    p->started_at = get_str(j, "started_at");
    p->hostname = get_str(j, "hostname");
    p->os = get_str(j, "os");
    p->cpu = get_str(j, "cpu");
    p->driver_version = get_str(j, "driver_version");
    p->cuda_driver_version = get_int(j, "cuda_driver_version", 0);
    p->cuda_runtime_version = get_int(j, "cuda_runtime_version", 0);
    p->hardware_key = get_str(j, "hardware_key");
    json_t *gpus = json_object_get(j, "gpus");
    p->n_gpus = json_array_size(gpus);
    p->gpus = pl_xcalloc(p->n_gpus ? p->n_gpus : 1, sizeof *p->gpus);
    for (size_t i = 0; i < p->n_gpus; i++) {
        json_t *o = json_array_get(gpus, i);
        pl_gpu_record *g = &p->gpus[i];
        g->ordinal = get_int(o, "ordinal", (int)i);
        g->name = get_str(o, "name");
        g->pci_bus_id = get_str(o, "pci_bus_id");
        const char *cc = json_string_value(json_object_get(o, "compute_capability"));
        if (!cc || sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
            g->cc_major = g->cc_minor = 0;
        g->sm_count = get_int(o, "sm_count", 0);
        g->memory_gib = pl_json_get_real(o, "memory_gib");
        g->l2_mib = pl_json_get_real(o, "l2_mib");
        g->sm_clock_mhz = get_int(o, "sm_clock_mhz", 0);
        g->sm_clock_max_mhz = get_int(o, "sm_clock_max_mhz", 0);
        g->mem_clock_mhz = get_int(o, "mem_clock_mhz", 0);
        g->mem_clock_max_mhz = get_int(o, "mem_clock_max_mhz", 0);
        g->power_limit_w = pl_json_get_real(o, "power_limit_w");
        g->temperature_c = get_int(o, "temperature_c", 0);
    }
}

static json_t *settings_to_json(const pl_run_settings *s)
{
    json_t *j = json_object();
    json_object_set_new(j, "profile", str_or_null(s->profile));
    json_object_set_new(j, "mode", str_or_null(s->mode));
    json_object_set_new(j, "graph", json_boolean(s->graph));
    json_object_set_new(j, "iterations", json_integer(s->iterations));
    json_object_set_new(j, "warmup", json_integer(s->warmup));
    json_object_set_new(j, "min_samples", json_integer(s->min_samples));
    json_object_set_new(j, "min_time_s", pl_json_real(s->min_time_s));
    json_object_set_new(j, "max_time_s", pl_json_real(s->max_time_s));
    json_object_set_new(j, "max_noise", pl_json_real(s->max_noise));
    json_object_set_new(j, "timeout_s", pl_json_real(s->timeout_s));
    json_object_set_new(j, "throttle_threshold", pl_json_real(s->throttle_threshold));
    json_object_set_new(j, "device", json_integer(s->device));
    json_object_set_new(j, "seed", json_integer((json_int_t)s->seed));
    json_object_set_new(j, "skip_verify", json_boolean(s->skip_verify));
    json_object_set_new(j, "verify_only", json_boolean(s->verify_only));
    json_object_set_new(j, "rounds", json_integer(s->rounds));
    return j;
}

static void settings_from_json(json_t *j, pl_run_settings *s)
{
    s->profile = get_str(j, "profile");
    s->mode = get_str(j, "mode");
    s->graph = get_int(j, "graph", 0);
    s->iterations = get_int(j, "iterations", 0);
    s->warmup = get_int(j, "warmup", 0);
    s->min_samples = get_int(j, "min_samples", 0);
    s->min_time_s = pl_json_get_real(j, "min_time_s");
    s->max_time_s = pl_json_get_real(j, "max_time_s");
    s->max_noise = pl_json_get_real(j, "max_noise");
    s->timeout_s = pl_json_get_real(j, "timeout_s");
    s->throttle_threshold = pl_json_get_real(j, "throttle_threshold");
    s->device = get_int(j, "device", 0);
    json_t *seed = json_object_get(j, "seed");
    s->seed = json_is_integer(seed) ? (unsigned long long)json_integer_value(seed) : 0;
    s->skip_verify = get_int(j, "skip_verify", 0);
    s->verify_only = get_int(j, "verify_only", 0);
    s->rounds = get_int(j, "rounds", 0);
}

static json_t *expectations_to_json(const pl_expect_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "hardware_key", str_or_null(r->key));
    json_object_set_new(j, "file", str_or_null(r->file));
    json_object_set_new(j, "file_found", json_boolean(r->file_found));
    json_object_set_new(j, "regressions", json_integer(r->regressions));
    json_object_set_new(j, "accepted", json_boolean(r->accepted));
    json_object_set_new(j, "updated", json_boolean(r->updated));
    json_t *rows = json_array();
    for (size_t i = 0; i < r->n_rows; i++) {
        const pl_expect_row *w = &r->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "target", str_or_null(w->target));
        json_object_set_new(o, "variant", str_or_null(w->variant));
        json_object_set_new(o, "verdict", json_string(pl_expect_verdict_name(w->verdict)));
        json_object_set_new(o, "expected_ms", pl_json_real(w->expected_ms));
        json_object_set_new(o, "measured_ms", pl_json_real(w->measured_ms));
        json_object_set_new(o, "change", pl_json_real(w->change));
        json_object_set_new(o, "threshold", pl_json_real(w->threshold));
        json_object_set_new(o, "note", str_or_null(w->note));
        json_array_append_new(rows, o);
    }
    json_object_set_new(j, "rows", rows);
    return j;
}

static void expectations_from_json(json_t *j, pl_expect_report *r)
{
    r->present = json_is_object(j);
    if (!r->present)
        return;
    r->key = get_str(j, "hardware_key");
    r->file = get_str(j, "file");
    r->file_found = get_int(j, "file_found", 0);
    r->regressions = get_int(j, "regressions", 0);
    r->accepted = get_int(j, "accepted", 0);
    r->updated = get_int(j, "updated", 0);
    json_t *rows = json_object_get(j, "rows");
    r->n_rows = json_array_size(rows);
    r->rows = pl_xcalloc(r->n_rows ? r->n_rows : 1, sizeof *r->rows);
    for (size_t i = 0; i < r->n_rows; i++) {
        json_t *o = json_array_get(rows, i);
        pl_expect_row *w = &r->rows[i];
        w->target = get_str(o, "target");
        w->variant = get_str(o, "variant");
        int verdict = pl_expect_verdict_from_name(json_string_value(json_object_get(o, "verdict")));
        w->verdict = verdict < 0 ? PL_EXPECT_NEW : (pl_expect_verdict)verdict;
        w->expected_ms = pl_json_get_real(o, "expected_ms");
        w->measured_ms = pl_json_get_real(o, "measured_ms");
        w->change = pl_json_get_real(o, "change");
        w->threshold = pl_json_get_real(o, "threshold");
        w->note = get_str(o, "note");
    }
}

/* ---- run ---- */

json_t *pl_run_to_json(const pl_run *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema_version", json_integer(PL_SCHEMA_VERSION));
    json_object_set_new(j, "run_id", str_or_null(r->run_id));
    json_object_set_new(j, "exit_code", json_integer(r->exit_code));
    json_object_set_new(j, "duration_s", pl_json_real(r->duration_s));
    json_object_set_new(j, "provenance", pl_provenance_to_json(&r->prov));
    json_object_set_new(j, "settings", settings_to_json(&r->settings));
    if (r->expectations.present)
        json_object_set_new(j, "expectations", expectations_to_json(&r->expectations));
    json_t *ts = json_array();
    for (size_t i = 0; i < r->n_targets; i++)
        json_array_append_new(ts, pl_target_result_to_json(&r->targets[i]));
    json_object_set_new(j, "targets", ts);
    return j;
}

int pl_run_from_json(json_t *j, pl_run *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(j)) {
        pl_snprintf(err, errlen, "not a perflab run: the document is not a JSON object");
        return -1;
    }
    json_t *sv = json_object_get(j, "schema_version");
    if (!json_is_integer(sv)) {
        pl_snprintf(err, errlen, "not a perflab run: no \"schema_version\"");
        return -1;
    }
    r->schema_version = (int)json_integer_value(sv);
    if (r->schema_version > PL_SCHEMA_VERSION || r->schema_version < 1) {
        pl_snprintf(err, errlen,
                    "run schema_version %d is not supported (this perflab reads 1..%d): use a matching perflab",
                    r->schema_version, PL_SCHEMA_VERSION);
        return -1;
    }
    r->run_id = get_str(j, "run_id");
    r->exit_code = get_int(j, "exit_code", 0);
    r->duration_s = pl_json_get_real(j, "duration_s");
    provenance_from_json(json_object_get(j, "provenance"), &r->prov);
    settings_from_json(json_object_get(j, "settings"), &r->settings);
    expectations_from_json(json_object_get(j, "expectations"), &r->expectations);
    json_t *ts = json_object_get(j, "targets");
    if (!json_is_array(ts)) {
        pl_snprintf(err, errlen, "not a perflab run: \"targets\" is not an array");
        return -1;
    }
    r->n_targets = json_array_size(ts);
    r->targets = pl_xcalloc(r->n_targets ? r->n_targets : 1, sizeof *r->targets);
    for (size_t i = 0; i < r->n_targets; i++)
        if (pl_target_result_from_json(json_array_get(ts, i), &r->targets[i], err, errlen) != 0)
            return -1;
    return 0;
}

int pl_run_load(const char *path, pl_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *file = pl_is_dir(path) ? pl_path_join(path, "run.json") : pl_strdup(path);
    if (!pl_path_exists(file)) {
        pl_snprintf(err, errlen, "'%s' is not a run: no %s (give an artifacts/<run_id> folder or its run.json)", path,
                    file);
        free(file);
        return -1;
    }
    json_t *j = pl_json_load_file(file, err, errlen);
    if (!j) {
        free(file);
        return -1;
    }
    char sub[512];
    int rc = pl_run_from_json(j, out, sub, sizeof sub);
    json_decref(j);
    if (rc != 0) {
        pl_snprintf(err, errlen, "%s: %s", file, sub);
        pl_run_free(out);
    } else {
        out->run_dir = pl_is_dir(path) ? pl_strdup(path) : NULL;
    }
    free(file);
    return rc;
}

int pl_run_save(const pl_run *r, const char *path, char *err, size_t errlen)
{
    json_t *j = pl_run_to_json(r);
    int rc = pl_json_save_file(j, path, err, errlen);
    json_decref(j);
    return rc;
}
