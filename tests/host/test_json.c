/* run.json: a round trip keeps every field; the schema is versioned; malformed input is named precisely. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

START_TEST(round_trip_keeps_every_field)
{
    pl_run a, b;
    pl_test_make_run(&a);
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
    ck_assert_int_eq((int)b.n_targets, 3);
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
    const pl_variant_result *w = &b.targets[2].variants[0];
    ck_assert_int_eq(w->status, PL_STATUS_FAILED_VERIFICATION);
    ck_assert(w->verification.checked && !w->verification.passed && w->verification.unwritten == 1);
    ck_assert_int_eq((int)w->verification.max_error_index, 512);
    ck_assert_int_eq((int)b.expectations.n_rows, 2);
    ck_assert_int_eq(b.expectations.rows[1].verdict, PL_EXPECT_REGRESSED);
    ck_assert_str_eq(b.expectations.rows[1].note, "slower beyond the tolerance and the noise");
    pl_run_free(&a);
    pl_run_free(&b);
}
END_TEST

START_TEST(derive_computes_rates_and_speedup)
{
    pl_run a;
    pl_test_make_run(&a);
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
    pl_test_make_run(&a);
    ck_assert_int_eq(pl_test_save_run(&a, path, err, sizeof err), 0);
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

/* run.json's "complete" was 0/1 where the README and docs say false/true; runs written before still read. */
START_TEST(complete_is_a_json_boolean)
{
    pl_run r;
    pl_test_make_run(&r);
    for (int complete = 0; complete < 2; complete++) {
        r.complete = complete;
        json_t *j = pl_run_to_json(&r);
        ck_assert_msg(json_is_boolean(json_object_get(j, "complete")), "\"complete\" is not true/false");
        ck_assert_int_eq(json_is_true(json_object_get(j, "complete")), complete);
        json_object_set_new(j, "complete", json_integer(complete)); /* an older file */
        pl_run back;
        char err[256];
        ck_assert_msg(pl_run_from_json(j, &back, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(back.complete, complete);
        pl_run_free(&back);
        json_object_del(j, "complete"); /* schema 1: no field, a complete run */
        ck_assert_msg(pl_run_from_json(j, &back, err, sizeof err) == 0, "%s", err);
        ck_assert_int_eq(back.complete, 1);
        pl_run_free(&back);
        json_decref(j);
    }
    pl_run_free(&r);
}
END_TEST

/* A "<file>.tmp.<pid>" of a process killed between its open and its rename stayed for good; /dev/zero, a FIFO and a
 * file past the size limit were read (or waited on) without end. */
START_TEST(files_are_regular_bounded_and_leave_no_temporaries)
{
    char *dir = pl_test_tmpdir("json-files");
    char *path = pl_path_join(dir, "run.json"), err[512];
    /* a dead process's temporary (pid 2^22 + 1: above the largest pid_max Linux allows) and a live one's (pid 1) */
    char *stale = pl_strfmt("%s.tmp.4194305", path), *live = pl_strfmt("%s.tmp.1", path);
    ck_assert_int_eq(pl_write_file_atomic(stale, "x", 1, err, sizeof err), 0);
    ck_assert_int_eq(pl_write_file_atomic(live, "x", 1, err, sizeof err), 0);
    ck_assert_int_eq(pl_write_file_atomic(path, "{}", 2, err, sizeof err), 0);
    ck_assert_msg(!pl_path_exists(stale), "the dead process's temporary file is still there");
    ck_assert_msg(pl_path_exists(live), "a live process's temporary file was removed"); /* pid 1 lives */
    size_t len;
    ck_assert_ptr_null(pl_read_file("/dev/zero", &len, err, sizeof err));
    ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
    char *fifo = pl_path_join(dir, "fifo");
    char *cmd = pl_strfmt("mkfifo '%s'", fifo);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_ptr_null(pl_read_file(fifo, &len, err, sizeof err)); /* returns at once: no writer is waited for */
    ck_assert_ptr_null(pl_read_file(dir, &len, err, sizeof err));
    char *text = pl_read_file_max(path, 1, &len, err, sizeof err);
    ck_assert_msg(!text && strstr(err, "larger than"), "%s", err);
    text = pl_read_file_max(path, 2, &len, err, sizeof err);
    ck_assert_ptr_nonnull(text);
    ck_assert_uint_eq(len, 2);
    free(text);
    free(cmd);
    free(fifo);
    free(stale);
    free(live);
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
    tcase_add_test(tc, complete_is_a_json_boolean);
    tcase_add_test(tc, files_are_regular_bounded_and_leave_no_temporaries);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
