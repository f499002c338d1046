/* run.json: a round trip keeps every field; the schema is versioned; malformed input is named precisely. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

static void make_variant(pl_variant_result *v, const char *name, double base_ms, size_t n, int seed)
{
    memset(v, 0, sizeof *v);
    v->name = pl_strdup(name);
    v->technique = pl_strdup("does things \"quoted\"\nacross lines");
    v->status = PL_STATUS_OK;
    v->reps_per_sample = 3;
    v->warmup_runs = 5;
    v->throttled_discarded = 2;
    v->graph = 1;
    v->latched = 1;
    v->measure_s = 0.75;
    v->stop_reason = pl_strdup("converged");
    v->n_samples = n;
    v->samples_ms = pl_xcalloc(n, sizeof *v->samples_ms);
    pl_rng r;
    pl_rng_seed(&r, (uint64_t)seed);
    for (size_t i = 0; i < n; i++)
        v->samples_ms[i] = base_ms * (1 + 0.01 * pl_rng_uniform(&r));
    pl_verify_set(&v->verification, 1, "relative L2 error 1e-7");
    v->verification.rel_l2_error = 1.25e-7;
    v->verification.tolerance = 1e-5;
    v->verification.elements = 4096;
    v->has_telemetry = 1;
    v->telemetry.sm_clock_mhz = (pl_summary){3, 1700, 1750.5, 1800};
    v->telemetry.power_w = (pl_summary){3, 500, 600, 700};
}

static void make_run(pl_run *r)
{
    memset(r, 0, sizeof *r);
    r->schema_version = PL_SCHEMA_VERSION;
    r->run_id = pl_strdup("20261121-000000-abcd");
    r->exit_code = 1;
    r->duration_s = 12.5;
    r->prov.perflab_version = pl_strdup("0.1.0");
    r->prov.git_commit = pl_strdup("abcdef");
    r->prov.command_line = pl_strdup("perflab run --targets 'x y'");
    r->prov.hardware_key = pl_strdup("h200");
    r->prov.cuda_runtime_version = 13000;
    r->prov.n_gpus = 1;
    r->prov.gpus = pl_xcalloc(1, sizeof *r->prov.gpus);
    r->prov.gpus[0].name = pl_strdup("NVIDIA H200");
    r->prov.gpus[0].cc_major = 9;
    r->prov.gpus[0].sm_count = 132;
    r->prov.gpus[0].power_limit_w = 700;
    r->settings.profile = pl_strdup("minimal");
    r->settings.mode = pl_strdup("cold");
    r->settings.seed = 1234567890123ull;
    r->settings.max_noise = 0.02;
    r->n_targets = 2;
    r->targets = pl_xcalloc(2, sizeof *r->targets);
    pl_target_result *t = &r->targets[0];
    t->name = pl_strdup("memory:coalescing");
    t->status = PL_STATUS_OK;
    t->counters = (pl_counters){.flops = 2e6, .bytes_read = 4e6, .bytes_written = 4e6, .elements = 1e6};
    t->n_params = 1;
    t->params = pl_xcalloc(1, sizeof *t->params);
    t->params[0].name = pl_strdup("n");
    t->params[0].value = pl_strdup("1m");
    t->n_variants = 2;
    t->variants = pl_xcalloc(2, sizeof *t->variants);
    make_variant(&t->variants[0], "baseline", 2.0, 50, 1);
    make_variant(&t->variants[1], "coalesced", 0.5, 70, 2);
    pl_target_result_derive(t, 7);
    pl_target_result *u = &r->targets[1];
    u->name = pl_strdup("selftest:crash");
    u->status = PL_STATUS_CRASHED;
    u->reason = pl_strdup("killed by signal 11");
    u->n_variants = 1;
    u->variants = pl_xcalloc(1, sizeof *u->variants);
    u->variants[0].name = pl_strdup("baseline");
    u->variants[0].status = PL_STATUS_CRASHED;
    u->variants[0].reps_per_sample = 1;
    pl_target_result_derive(u, 7);
}

START_TEST(round_trip_keeps_every_field)
{
    pl_run a, b;
    make_run(&a);
    json_t *j = pl_run_to_json(&a);
    char *text = json_dumps(j, 0);
    json_decref(j);
    json_error_t je;
    json_t *back = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(back);
    char err[256];
    ck_assert_int_eq(pl_run_from_json(back, &b, err, sizeof err), 0);
    json_decref(back);
    free(text);

    ck_assert_str_eq(b.run_id, a.run_id);
    ck_assert_int_eq(b.exit_code, 1);
    ck_assert_str_eq(b.prov.command_line, a.prov.command_line);
    ck_assert_str_eq(b.prov.gpus[0].name, "NVIDIA H200");
    ck_assert_int_eq(b.prov.gpus[0].sm_count, 132);
    ck_assert_str_eq(b.settings.mode, "cold");
    ck_assert(b.settings.seed == 1234567890123ull);
    ck_assert_int_eq((int)b.n_targets, 2);
    const pl_target_result *t = &b.targets[0];
    ck_assert_str_eq(t->params[0].value, "1m");
    ck_assert_double_eq(t->counters.bytes_read, 4e6);
    for (size_t i = 0; i < 2; i++) {
        const pl_variant_result *x = &a.targets[0].variants[i], *y = &t->variants[i];
        ck_assert_str_eq(y->technique, x->technique);
        ck_assert_int_eq((int)y->n_samples, (int)x->n_samples);
        for (size_t k = 0; k < x->n_samples; k++)
            ck_assert_double_eq(y->samples_ms[k], x->samples_ms[k]); /* 17 significant digits: exact */
        ck_assert_double_eq_tol(y->stats.median, x->stats.median, 1e-15);
        ck_assert_int_eq(y->reps_per_sample, 3);
        ck_assert_int_eq(y->latched, 1);
        ck_assert_int_eq(y->throttled_discarded, 2);
        ck_assert_int_eq(y->verification.passed, 1);
        ck_assert_double_eq_tol(y->verification.rel_l2_error, 1.25e-7, 1e-20);
        ck_assert_double_eq_tol(y->telemetry.sm_clock_mhz.mean, 1750.5, 1e-9);
        ck_assert(isnan(y->tflops) == isnan(x->tflops));
        ck_assert_double_eq_tol(y->gbps, x->gbps, 1e-6 * x->gbps);
    }
    ck_assert_int_eq(t->variants[1].has_speedup, 1);
    ck_assert_double_eq_tol(t->variants[1].speedup.value, a.targets[0].variants[1].speedup.value, 1e-9);
    ck_assert_int_eq(t->variants[1].speedup.significant, 1);
    ck_assert_int_eq(b.targets[1].status, PL_STATUS_CRASHED);
    ck_assert_str_eq(b.targets[1].reason, "killed by signal 11");
    pl_run_free(&a);
    pl_run_free(&b);
}
END_TEST

START_TEST(derive_computes_rates_and_speedup)
{
    pl_run a;
    make_run(&a);
    const pl_variant_result *v = &a.targets[0].variants[1];
    /* 8e6 bytes in ~0.5025 ms -> ~15.9 GB/s; 2e6 FLOP -> ~0.004 TFLOP/s */
    ck_assert_double_eq_tol(v->gbps, 8e6 / (v->stats.median * 1e-3) / 1e9, 1e-9);
    ck_assert_double_eq_tol(v->arithmetic_intensity, 0.25, 1e-12);
    ck_assert_double_eq_tol(v->speedup.value, a.targets[0].variants[0].stats.median / v->stats.median, 1e-12);
    ck_assert(v->speedup.lo <= v->speedup.value && v->speedup.value <= v->speedup.hi);
    ck_assert(isnan(v->pct_of_reference));
    pl_run_free(&a);
}
END_TEST

static int from_text(const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(j);
    pl_run r;
    int rc = pl_run_from_json(j, &r, err, errlen);
    json_decref(j);
    pl_run_free(&r);
    return rc;
}

START_TEST(schema_errors_are_named)
{
    char err[512];
    ck_assert_int_eq(from_text("[]", err, sizeof err), -1);
    ck_assert_str_eq(err, "not a perflab run: the document is not a JSON object");
    ck_assert_int_eq(from_text("{\"targets\": []}", err, sizeof err), -1);
    ck_assert_str_eq(err, "not a perflab run: no \"schema_version\"");
    ck_assert_int_eq(from_text("{\"schema_version\": 99, \"targets\": []}", err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "schema_version 99 is not supported"));
    ck_assert_int_eq(from_text("{\"schema_version\": 1, \"targets\": {}}", err, sizeof err), -1);
    ck_assert_str_eq(err, "not a perflab run: \"targets\" is not an array");
    ck_assert_int_eq(
        from_text("{\"schema_version\": 1, \"targets\": [{\"name\": \"a:b\", \"status\": \"meh\"}]}", err, sizeof err),
        -1);
    ck_assert_str_eq(err, "targets[0].status: unknown value");
    ck_assert_int_eq(from_text("{\"schema_version\": 1, \"targets\": [{\"name\": \"a:b\", \"status\": \"ok\", "
                               "\"variants\": [{\"name\": \"v\", \"status\": \"ok\", \"samples_ms\": [1, \"x\"]}]}]}",
                               err, sizeof err),
                     -1);
    ck_assert_str_eq(err, "targets[0].variants[0].samples_ms: element 1 is not a number");
}
END_TEST

START_TEST(files_load_with_positions_and_save_atomically)
{
    char *dir = pl_test_tmpdir("json");
    char *path = pl_path_join(dir, "bad.json");
    char err[512];
    ck_assert_int_eq(pl_write_file_atomic(path, "{\n  \"a\": 1,\n  \"b\": ]\n}\n", 24, err, sizeof err), 0);
    ck_assert_ptr_null(pl_json_load_file(path, err, sizeof err));
    char want[600];
    snprintf(want, sizeof want, "%s:3:", path);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got %s", err);

    pl_run a, b;
    make_run(&a);
    ck_assert_int_eq(pl_run_save(&a, path, err, sizeof err), 0);
    ck_assert_int_eq(pl_run_load(path, &b, err, sizeof err), 0);
    ck_assert_str_eq(b.run_id, a.run_id);
    pl_run_free(&b);
    ck_assert_int_eq(pl_run_load(dir, &b, err, sizeof err), -1); /* a folder without run.json */
    ck_assert_ptr_nonnull(strstr(err, "is not a run"));
    /* no temporary file is left behind */
    char *cmd = pl_strfmt("ls '%s' | grep -c tmp", dir);
    FILE *f = popen(cmd, "r");
    int count = -1;
    ck_assert_int_eq(fscanf(f, "%d", &count), 1);
    pclose(f);
    ck_assert_int_eq(count, 0);
    free(cmd);
    pl_run_free(&a);
    free(path);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, round_trip_keeps_every_field);
    tcase_add_test(tc, derive_computes_rates_and_speedup);
    tcase_add_test(tc, schema_errors_are_named);
    tcase_add_test(tc, files_load_with_positions_and_save_atomically);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
