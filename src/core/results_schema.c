/* run.json's shape, declared once: one field table per results struct (perflab/results.h). The tables drive
 * pl_*_to_json, pl_*_from_json and pl_*_free; a member added to a struct is added here, and only here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/jschema.h"
#include "core/results_json.h"
#include "core/util.h"

/* ---- statistics, verification, telemetry ---- */

static const pl_jfield stats_fields[] = {
    PL_JSIZE(pl_stats, n, "n"),
    PL_JREAL(pl_stats, median, "median_ms"),
    PL_JREAL(pl_stats, mean, "mean_ms"),
    PL_JREAL(pl_stats, stdev, "stdev_ms"),
    PL_JREAL(pl_stats, min, "min_ms"),
    PL_JREAL(pl_stats, max, "max_ms"),
    PL_JREAL(pl_stats, p10, "p10_ms"),
    PL_JREAL(pl_stats, p25, "p25_ms"),
    PL_JREAL(pl_stats, p50, "p50_ms"),
    PL_JREAL(pl_stats, p75, "p75_ms"),
    PL_JREAL(pl_stats, p90, "p90_ms"),
    PL_JREAL(pl_stats, p99, "p99_ms"),
    PL_JREAL(pl_stats, iqr, "iqr_ms"),
    PL_JREAL(pl_stats, rel_noise, "rel_noise"),
    PL_JREAL(pl_stats, cv, "cv"),
};
static const pl_jtable stats_table = PL_JTABLE(stats_fields, NULL);

static const pl_jfield verification_fields[] = {
    PL_JBOOL(pl_verification, checked, "checked"),
    PL_JBOOL(pl_verification, passed, "passed"),
    PL_JENUM(pl_verification, dtype, "dtype", pl_dtype_names, PL_DTYPE_COUNT, 0, PL_DTYPE_F32),
    PL_JREAL(pl_verification, rel_l2_error, "rel_l2_error"),
    PL_JREAL(pl_verification, tolerance, "tolerance"),
    PL_JREAL(pl_verification, max_abs_error, "max_abs_error"),
    PL_JSIZE(pl_verification, max_error_index, "max_error_index"),
    PL_JSIZE(pl_verification, elements, "elements"),
    PL_JSIZE(pl_verification, nonfinite, "nonfinite"),
    PL_JSIZE(pl_verification, unwritten, "unwritten"),
    PL_JCHARS(pl_verification, message, "message"),
};
static const pl_jtable verification_table = PL_JTABLE(verification_fields, NULL);

static const pl_jfield summary_fields[] = {
    PL_JINT(pl_summary, n, "n", 0),
    PL_JREAL(pl_summary, min, "min"),
    PL_JREAL(pl_summary, mean, "mean"),
    PL_JREAL(pl_summary, max, "max"),
};
static const pl_jtable summary_table = PL_JTABLE(summary_fields, NULL);

static const pl_jfield telemetry_fields[] = {
    PL_JOBJ(pl_telemetry, sm_clock_mhz, "sm_clock_mhz", &summary_table),
    PL_JOBJ(pl_telemetry, mem_clock_mhz, "mem_clock_mhz", &summary_table),
    PL_JOBJ(pl_telemetry, power_w, "power_w", &summary_table),
    PL_JOBJ(pl_telemetry, temperature_c, "temperature_c", &summary_table),
};
static const pl_jtable telemetry_table = PL_JTABLE(telemetry_fields, NULL);

static const pl_jfield interval_fields[] = {
    PL_JREAL(pl_interval, value, "value"),
    PL_JREAL(pl_interval, lo, "ci_low"),
    PL_JREAL(pl_interval, hi, "ci_high"),
    PL_JREAL(pl_interval, confidence, "confidence"),
    PL_JBOOL(pl_interval, significant, "significant"),
};
static const pl_jtable interval_table = PL_JTABLE(interval_fields, NULL);

static const pl_jfield ncu_fields[] = {
    PL_JINT(pl_ncu_metrics, kernels, "kernels", 0),
    PL_JREAL(pl_ncu_metrics, duration_ms, "duration_ms"),
    PL_JREAL(pl_ncu_metrics, dram_bytes_read, "dram_bytes_read"),
    PL_JREAL(pl_ncu_metrics, dram_bytes_write, "dram_bytes_write"),
    PL_JREAL(pl_ncu_metrics, l2_bytes, "l2_bytes"),
    PL_JREAL(pl_ncu_metrics, dram_pct, "dram_pct"),
    PL_JREAL(pl_ncu_metrics, l2_pct, "l2_pct"),
    PL_JREAL(pl_ncu_metrics, l1_pct, "l1_pct"),
    PL_JREAL(pl_ncu_metrics, shared_pct, "shared_pct"),
    PL_JREAL(pl_ncu_metrics, occupancy_pct, "achieved_occupancy_pct"),
    PL_JREAL(pl_ncu_metrics, sm_pct, "sm_pct"),
    PL_JREAL(pl_ncu_metrics, tensor_pct, "tensor_pct"),
    PL_JREAL(pl_ncu_metrics, shared_wavefronts, "shared_wavefronts"),
    PL_JREAL(pl_ncu_metrics, bank_conflicts, "bank_conflicts"),
    PL_JSTR(pl_ncu_metrics, report, "report"),
    PL_JSTR(pl_ncu_metrics, error, "error"),
};
static const pl_jtable ncu_table = PL_JTABLE(ncu_fields, NULL);

static const pl_jfield energy_fields[] = {
    PL_JREAL(pl_energy, energy_j, "energy_j"),
    PL_JREAL(pl_energy, joules_per_run, "joules_per_run"),
    PL_JREAL(pl_energy, joules_per_element, "joules_per_element"),
    PL_JREAL(pl_energy, timed_s, "energy_timed_s"),
    PL_JREAL(pl_energy, average_power_w, "average_power_w"),
    PL_JREAL(pl_energy, runs, "runs"),
    PL_JSTR(pl_energy, note, "note"),
};
static const pl_jtable energy_table = PL_JTABLE(energy_fields, NULL);

/* ---- variant ---- */

static const pl_jfield timing_fields[] = {
    PL_JBOOL(pl_variant_result, graph, "graph"),
    PL_JBOOL(pl_variant_result, latched, "latched"),
    PL_JBOOL(pl_variant_result, host_timed, "host_timed"),
    PL_JINT(pl_variant_result, reps_per_sample, "reps_per_sample", 1),
    PL_JINT(pl_variant_result, warmup_runs, "warmup_runs", 0),
    PL_JINT(pl_variant_result, throttled_discarded, "throttled_discarded", 0),
    PL_JREAL(pl_variant_result, measure_s, "measure_s"),
    PL_JSTR(pl_variant_result, stop_reason, "stop_reason"),
};
static const pl_jtable timing_table = PL_JTABLE(timing_fields, NULL);

static const pl_jfield derived_fields[] = {
    PL_JREAL(pl_variant_result, tflops, "tflops"),
    PL_JREAL(pl_variant_result, gbps, "gbps"),
    PL_JREAL(pl_variant_result, arithmetic_intensity, "arithmetic_intensity"),
    PL_JREAL(pl_variant_result, pct_of_reference, "pct_of_reference"),
};
static const pl_jtable derived_table = PL_JTABLE(derived_fields, NULL);

/* Statistics are recomputed from the raw samples, so that every reader sees the same figures. */
static int variant_after_read(void *obj, char *err, size_t errlen)
{
    pl_variant_result *v = obj;
    v->has_stats = v->has_stats && v->n_samples > 0 && pl_stats_compute(v->samples_ms, v->n_samples, &v->stats) == 0;
    return 0;
}

static const pl_jfield variant_fields[] = {
    {.key = "name", .kind = PL_J_STR, .offset = offsetof(pl_variant_result, name), .flags = PL_JF_REQUIRED},
    PL_JSTR(pl_variant_result, technique, "technique"),
    PL_JENUM(pl_variant_result, status, "status", pl_status_names, PL_STATUS_COUNT, PL_JF_REQUIRED, 0),
    PL_JSTR(pl_variant_result, reason, "reason"),
    PL_JBOOL(pl_variant_result, is_reference, "reference"),
    PL_JOBJ(pl_variant_result, verification, "verification", &verification_table),
    PL_JGROUP("timing", &timing_table),
    PL_JOPT(pl_variant_result, stats, "stats", &stats_table, has_stats),
    PL_JGROUP("derived", &derived_table),
    PL_JOPT(pl_variant_result, speedup, "speedup", &interval_table, has_speedup),
    PL_JOPT(pl_variant_result, telemetry, "telemetry", &telemetry_table, has_telemetry),
    PL_JOPT(pl_variant_result, ncu, "ncu", &ncu_table, has_ncu),
    PL_JOPT(pl_variant_result, energy, "energy", &energy_table, has_energy),
    PL_JREALS(pl_variant_result, samples_ms, n_samples, "samples_ms"),
};
static const pl_jtable variant_table = PL_JTABLE(variant_fields, variant_after_read);

/* ---- target ---- */

static const pl_jfield counters_fields[] = {
    {.key = "flops", .kind = PL_J_REAL, .offset = offsetof(pl_counters, flops), .flags = PL_JF_NAN_ZERO},
    {.key = "bytes_read", .kind = PL_J_REAL, .offset = offsetof(pl_counters, bytes_read), .flags = PL_JF_NAN_ZERO},
    {.key = "bytes_written",
     .kind = PL_J_REAL,
     .offset = offsetof(pl_counters, bytes_written),
     .flags = PL_JF_NAN_ZERO},
    {.key = "elements", .kind = PL_J_REAL, .offset = offsetof(pl_counters, elements), .flags = PL_JF_NAN_ZERO},
};
static const pl_jtable counters_table = PL_JTABLE(counters_fields, NULL);

/* Parameters are an object of name -> value text, in the target's declared order. */
static json_t *params_to_json(const void *obj)
{
    const pl_target_result *t = obj;
    json_t *j = json_object();
    for (size_t i = 0; i < t->n_params; i++)
        json_object_set_new(j, t->params[i].name, json_string(t->params[i].value ? t->params[i].value : ""));
    return j;
}

static int params_from_json(json_t *v, void *obj, char *err, size_t errlen)
{
    pl_target_result *t = obj;
    if (v && !json_is_object(v)) {
        pl_snprintf(err, errlen, "not an object");
        return -1;
    }
    t->params = pl_xcalloc(json_object_size(v) + 1, sizeof *t->params);
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        pl_param_kv *kv = &t->params[t->n_params++];
        kv->name = pl_strdup(key);
        kv->value = pl_strdup(json_is_string(val) ? json_string_value(val) : "");
    }
    return 0;
}

static void params_free(void *obj)
{
    pl_target_result *t = obj;
    for (size_t i = 0; i < t->n_params; i++) {
        free(t->params[i].name);
        free(t->params[i].value);
    }
    free(t->params);
}

static const pl_jfield gate_fields[] = {
    PL_JBOOL(pl_target_result, gate_met, "met"),
    PL_JSTR(pl_target_result, gate_detail, "detail"),
};
static const pl_jtable gate_table = PL_JTABLE(gate_fields, NULL);

static const pl_jfield target_fields[] = {
    {.key = "name", .kind = PL_J_STR, .offset = offsetof(pl_target_result, name), .flags = PL_JF_REQUIRED},
    PL_JSTR(pl_target_result, summary, "summary"),
    PL_JENUM(pl_target_result, status, "status", pl_status_names, PL_STATUS_COUNT, PL_JF_REQUIRED, 0),
    PL_JSTR(pl_target_result, reason, "reason"),
    PL_JCUSTOM("params", params_to_json, params_from_json, params_free),
    PL_JOBJ(pl_target_result, counters, "counters", &counters_table),
    PL_JARRAY(pl_target_result, variants, n_variants, "variants", pl_variant_result, &variant_table),
    PL_JREAL(pl_target_result, duration_s, "duration_s"),
    PL_JSTR(pl_target_result, log_file, "log"),
    {.key = "gate",
     .kind = PL_J_OBJECT,
     .offset = 0,
     .flags = PL_JF_PRESENCE,
     .sub = &gate_table,
     .present_offset = offsetof(pl_target_result, has_gate)},
};
static const pl_jtable target_table = PL_JTABLE(target_fields, NULL);

/* ---- provenance, settings, expectations ---- */

static json_t *cc_to_json(const void *obj)
{
    const pl_gpu_record *g = obj;
    return json_sprintf("%d.%d", g->cc_major, g->cc_minor);
}

static int cc_from_json(json_t *v, void *obj, char *err, size_t errlen)
{
    pl_gpu_record *g = obj;
    const char *cc = json_string_value(v);
    if (!cc || sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
        g->cc_major = g->cc_minor = 0;
    return 0;
}

static const pl_jfield gpu_fields[] = {
    PL_JINT(pl_gpu_record, ordinal, "ordinal", 0),
    PL_JSTR(pl_gpu_record, name, "name"),
    PL_JSTR(pl_gpu_record, pci_bus_id, "pci_bus_id"),
    PL_JCUSTOM("compute_capability", cc_to_json, cc_from_json, NULL),
    PL_JINT(pl_gpu_record, sm_count, "sm_count", 0),
    PL_JREAL(pl_gpu_record, memory_gib, "memory_gib"),
    PL_JREAL(pl_gpu_record, l2_mib, "l2_mib"),
    PL_JINT(pl_gpu_record, sm_clock_mhz, "sm_clock_mhz", 0),
    PL_JINT(pl_gpu_record, sm_clock_max_mhz, "sm_clock_max_mhz", 0),
    PL_JINT(pl_gpu_record, mem_clock_mhz, "mem_clock_mhz", 0),
    PL_JINT(pl_gpu_record, mem_clock_max_mhz, "mem_clock_max_mhz", 0),
    PL_JREAL(pl_gpu_record, power_limit_w, "power_limit_w"),
    PL_JINT(pl_gpu_record, temperature_c, "temperature_c", 0),
};
static const pl_jtable gpu_table = PL_JTABLE(gpu_fields, NULL);

static const pl_jfield provenance_fields[] = {
    PL_JSTR(pl_provenance, perflab_version, "perflab_version"),
    PL_JSTR(pl_provenance, git_commit, "git_commit"),
    PL_JSTR(pl_provenance, command_line, "command_line"),
    PL_JSTR(pl_provenance, started_at, "started_at"),
    PL_JSTR(pl_provenance, hostname, "hostname"),
    PL_JSTR(pl_provenance, os, "os"),
    PL_JSTR(pl_provenance, cpu, "cpu"),
    PL_JSTR(pl_provenance, driver_version, "driver_version"),
    PL_JINT(pl_provenance, cuda_driver_version, "cuda_driver_version", 0),
    PL_JINT(pl_provenance, cuda_runtime_version, "cuda_runtime_version", 0),
    PL_JSTR(pl_provenance, hardware_key, "hardware_key"),
    PL_JSTR(pl_provenance, host_key, "host_key"),
    PL_JARRAY(pl_provenance, gpus, n_gpus, "gpus", pl_gpu_record, &gpu_table),
};
static const pl_jtable provenance_table = PL_JTABLE(provenance_fields, NULL);

static const pl_jfield settings_fields[] = {
    PL_JSTR(pl_run_settings, profile, "profile"),
    PL_JSTR(pl_run_settings, mode, "mode"),
    PL_JBOOL(pl_run_settings, graph, "graph"),
    PL_JINT(pl_run_settings, iterations, "iterations", 0),
    PL_JINT(pl_run_settings, warmup, "warmup", 0),
    PL_JINT(pl_run_settings, min_samples, "min_samples", 0),
    PL_JREAL(pl_run_settings, min_time_s, "min_time_s"),
    PL_JREAL(pl_run_settings, max_time_s, "max_time_s"),
    PL_JREAL(pl_run_settings, max_noise, "max_noise"),
    PL_JREAL(pl_run_settings, timeout_s, "timeout_s"),
    PL_JREAL(pl_run_settings, throttle_threshold, "throttle_threshold"),
    PL_JINT(pl_run_settings, device, "device", 0),
    PL_JU64(pl_run_settings, seed, "seed"),
    PL_JBOOL(pl_run_settings, skip_verify, "skip_verify"),
    PL_JBOOL(pl_run_settings, verify_only, "verify_only"),
    PL_JINT(pl_run_settings, rounds, "rounds", 0),
    PL_JBOOL(pl_run_settings, small, "small"),
};
static const pl_jtable settings_table = PL_JTABLE(settings_fields, NULL);

static const pl_jfield expect_row_fields[] = {
    PL_JSTR(pl_expect_row, target, "target"),
    PL_JSTR(pl_expect_row, variant, "variant"),
    PL_JENUM(pl_expect_row, verdict, "verdict", pl_expect_verdict_names, PL_EXPECT_COUNT, 0, PL_EXPECT_NEW),
    PL_JREAL(pl_expect_row, expected_ms, "expected_ms"),
    PL_JREAL(pl_expect_row, measured_ms, "measured_ms"),
    PL_JREAL(pl_expect_row, change, "change"),
    PL_JREAL(pl_expect_row, threshold, "threshold"),
    PL_JSTR(pl_expect_row, note, "note"),
};
static const pl_jtable expect_row_table = PL_JTABLE(expect_row_fields, NULL);

static const pl_jfield expect_report_fields[] = {
    PL_JSTR(pl_expect_report, key, "hardware_key"),
    PL_JSTR(pl_expect_report, file, "file"),
    PL_JBOOL(pl_expect_report, file_found, "file_found"),
    PL_JINT(pl_expect_report, regressions, "regressions", 0),
    PL_JBOOL(pl_expect_report, accepted, "accepted"),
    PL_JBOOL(pl_expect_report, updated, "updated"),
    PL_JARRAY(pl_expect_report, rows, n_rows, "rows", pl_expect_row, &expect_row_table),
};
static const pl_jtable expect_report_table = PL_JTABLE(expect_report_fields, NULL);

/* ---- run ---- */

static json_t *schema_to_json(const void *obj)
{
    (void)obj;
    return json_integer(PL_SCHEMA_VERSION);
}

/* pl_run_from_json has checked the version before the table is read. */
static int schema_from_json(json_t *v, void *obj, char *err, size_t errlen)
{
    pl_run *r = obj;
    r->schema_version = (int)json_integer_value(v);
    return 0;
}

static json_t *ceilings_to_json(const void *obj)
{
    const pl_run *r = obj;
    return r->ceilings ? pl_ceilings_to_json(r->ceilings) : NULL;
}

static int ceilings_from_json(json_t *v, void *obj, char *err, size_t errlen)
{
    pl_run *r = obj;
    if (!v || json_is_null(v))
        return 0;
    r->ceilings = pl_xcalloc(1, sizeof *r->ceilings);
    return pl_ceilings_from_json(v, r->ceilings, err, errlen);
}

static void ceilings_free(void *obj)
{
    pl_run *r = obj;
    if (r->ceilings)
        pl_ceilings_free(r->ceilings);
    free(r->ceilings);
}

static const pl_jfield run_fields[] = {
    PL_JCUSTOM("schema_version", schema_to_json, schema_from_json, NULL),
    PL_JSTR(pl_run, run_id, "run_id"),
    PL_JBOOL_D(pl_run, complete, "complete", 1), /* true/false; runs written before 2026-11-28 hold 1/0 */
    PL_JINT(pl_run, exit_code, "exit_code", 0),
    PL_JREAL(pl_run, duration_s, "duration_s"),
    PL_JOBJ(pl_run, prov, "provenance", &provenance_table),
    PL_JOBJ(pl_run, settings, "settings", &settings_table),
    PL_JOPT(pl_run, expectations, "expectations", &expect_report_table, expectations.present),
    PL_JCUSTOM("ceilings", ceilings_to_json, ceilings_from_json, ceilings_free),
    PL_JSTR(pl_run, profiler, "profiler"),
    {.key = "targets",
     .kind = PL_J_ARRAY,
     .offset = offsetof(pl_run, targets),
     .count_offset = offsetof(pl_run, n_targets),
     .elem_size = sizeof(pl_target_result),
     .sub = &target_table,
     .flags = PL_JF_REQUIRED},
};
static const pl_jtable run_table = PL_JTABLE(run_fields, NULL);

/* ---- the entry points ---- */

#define PL_JSCHEMA_API(NAME, TYPE, TABLE)                                                                              \
    json_t *pl_##NAME##_to_json(const TYPE *x)                                                                        \
    {                                                                                                                  \
        return pl_jtable_to_json(&TABLE, x);                                                                          \
    }                                                                                                                  \
    int pl_##NAME##_from_json(json_t *j, TYPE *out, char *err, size_t errlen)                                        \
    {                                                                                                                  \
        memset(out, 0, sizeof *out);                                                                                   \
        return pl_jtable_from_json(&TABLE, j, out, err, errlen);                                                      \
    }                                                                                                                  \
    void pl_##NAME##_free(TYPE *x)                                                                                     \
    {                                                                                                                  \
        pl_jtable_free(&TABLE, x);                                                                                     \
        memset(x, 0, sizeof *x);                                                                                       \
    }

PL_JSCHEMA_API(variant_result, pl_variant_result, variant_table)
PL_JSCHEMA_API(ncu_metrics, pl_ncu_metrics, ncu_table)
PL_JSCHEMA_API(target_result, pl_target_result, target_table)
PL_JSCHEMA_API(provenance, pl_provenance, provenance_table)
PL_JSCHEMA_API(run_settings, pl_run_settings, settings_table)
PL_JSCHEMA_API(expect_report, pl_expect_report, expect_report_table)
PL_JSCHEMA_API(run_fields, pl_run, run_table)
