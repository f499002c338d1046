/* Energy per variant (core/energy.h): the tally's arithmetic, the timing code's regions driven by a counter of the
 * test's own (warm-up, the round at load and other variants' rounds stay outside), the figures in run.json, the table,
 * compare and report, and runs written before energy was recorded read as they did. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "core/measure.h"
#include "core/results_json.h"
#include "core/run_compare.h"
#include "core/run_report.h"
#include "core/util.h"
#include "testutil.h"

/* ---- a fake GPU: each run of a variant adds its joules to the counter ---- */

static double fake_counter_j;
static int fake_reads_left = -1; /* reads before the counter fails; -1: never */

static int fake_read(pl_energy_meter *m, double *joules)
{
    if (fake_reads_left == 0) {
        pl_snprintf(m->why, sizeof m->why, "fake counter: Unknown Error");
        return -1;
    }
    if (fake_reads_left > 0)
        fake_reads_left--;
    *joules = fake_counter_j;
    return 0;
}

static void fake_meter(pl_energy_meter *m)
{
    memset(m, 0, sizeof *m);
    m->ok = 1;
    m->read = fake_read;
    fake_counter_j = 1000; /* since the driver loaded */
    fake_reads_left = -1;
}

static int burn_half(pl_ctx *ctx, void *state)
{
    (void)ctx, (void)state;
    fake_counter_j += 0.5;
    return 0;
}

static int burn_two(pl_ctx *ctx, void *state)
{
    (void)ctx, (void)state;
    fake_counter_j += 2.0;
    return 0;
}

static int burn_nothing(pl_ctx *ctx, void *state)
{
    (void)ctx, (void)state;
    return 0;
}

static const pl_variant half = {.name = "half", .run = burn_half};
static const pl_variant two = {.name = "two", .run = burn_two};
static const pl_variant nothing = {.name = "nothing", .run = burn_nothing};

static pl_run_settings settings(int iterations)
{
    return (pl_run_settings){.mode = "hot", .iterations = iterations, .warmup = 4, .min_samples = 3,
                             .min_time_s = 0, .max_time_s = 5, .max_noise = 1};
}

/* ---- the tally ---- */

START_TEST(tally_sums_regions)
{
    pl_energy_meter m;
    fake_meter(&m);
    pl_energy_tally t = {0};
    pl_energy_region_begin(&m, &t);
    fake_counter_j += 3;
    pl_energy_region_end(&m, &t, 6);
    fake_counter_j += 100; /* another variant's round: not this one's */
    pl_energy_region_begin(&m, &t);
    fake_counter_j += 1.5;
    pl_energy_region_end(&m, &t, 3);
    pl_energy e = {0};
    pl_energy_tally_result(&m, &t, &e);
    ck_assert_double_eq(e.energy_j, 4.5);
    ck_assert_double_eq(e.runs, 9);
    ck_assert_double_eq(e.joules_per_run, 0.5);
    ck_assert(e.timed_s > 0 && e.timed_s == t.seconds);
    ck_assert_double_eq_tol(e.average_power_w, 4.5 / e.timed_s, 1e-9);
    ck_assert_ptr_null(e.note);
    ck_assert(isnan(e.joules_per_element));
    pl_energy_derive(&e, 250);
    ck_assert_double_eq(e.joules_per_element, 0.002);
    pl_energy_derive(&e, 0);
    ck_assert(isnan(e.joules_per_element));
    free(e.note);
}
END_TEST

/* No counter, a failed reading, a counter that did not move or went backwards: NaN and the reason, never a figure. */
START_TEST(tally_without_a_figure_says_why)
{
    pl_energy_meter m;
    pl_energy_tally t = {0};
    pl_energy e = {0};
    pl_energy_meter_none(&m, "no GPU: nothing to meter");
    pl_energy_region_begin(&m, &t);
    pl_energy_region_end(&m, &t, 5);
    pl_energy_tally_result(&m, &t, &e);
    ck_assert(isnan(e.energy_j) && isnan(e.joules_per_run) && isnan(e.average_power_w));
    ck_assert_str_eq(e.note, "no GPU: nothing to meter");

    fake_meter(&m);
    memset(&t, 0, sizeof t);
    fake_reads_left = 1; /* the reading after the region fails */
    pl_energy_region_begin(&m, &t);
    fake_counter_j += 2;
    pl_energy_region_end(&m, &t, 5);
    pl_energy_tally_result(&m, &t, &e);
    ck_assert(isnan(e.energy_j) && isnan(e.joules_per_run));
    ck_assert_str_eq(e.note, "fake counter: Unknown Error");

    fake_meter(&m);
    memset(&t, 0, sizeof t);
    pl_energy_region_begin(&m, &t);
    pl_energy_region_end(&m, &t, 5);
    pl_energy_tally_result(&m, &t, &e);
    ck_assert(isnan(e.energy_j) && isnan(e.joules_per_run));
    ck_assert_ptr_nonnull(strstr(e.note, "did not advance"));

    memset(&t, 0, sizeof t);
    pl_energy_region_begin(&m, &t);
    fake_counter_j -= 10;
    pl_energy_region_end(&m, &t, 5);
    pl_energy_tally_result(&m, &t, &e);
    ck_assert(isnan(e.energy_j));
    ck_assert_ptr_nonnull(strstr(e.note, "backwards"));
    free(e.note);
}
END_TEST

START_TEST(joules_formatted_compactly)
{
    char b[32];
    ck_assert_str_eq(pl_format_joules(1.234, b, sizeof b), "1.23 J");
    ck_assert_str_eq(pl_format_joules(456e-3, b, sizeof b), "456 mJ");
    ck_assert_str_eq(pl_format_joules(12.34e-6, b, sizeof b), "12.3 \u00b5J");
    ck_assert_str_eq(pl_format_joules(4.5e-9, b, sizeof b), "4.50 nJ");
    ck_assert_str_eq(pl_format_joules(1234, b, sizeof b), "1234 J");
    ck_assert_str_eq(pl_format_joules(NAN, b, sizeof b), "-");
}
END_TEST

/* ---- the timing code's regions ---- */

static void env_with_fake(pl_measure_env *env, pl_ctx *ctx, const pl_run_settings *s)
{
    memset(ctx, 0, sizeof *ctx);
    ck_assert_int_eq(pl_measure_env_init(env, ctx, s, 1), 0);
    ck_assert_int_eq(env->energy.ok, 0); /* a host-only target has no GPU to meter */
    fake_meter(&env->energy);
}

/* v timed with --iterations n against the fake counter, as the target's process times it; r holds an energy record. */
static void measure_with_fake(const pl_variant *v, int n, pl_variant_result *r)
{
    pl_run_settings s = settings(n);
    pl_ctx ctx;
    pl_measure_env env;
    env_with_fake(&env, &ctx, &s);
    *r = (pl_variant_result){.reps_per_sample = 1};
    ck_assert_int_eq(pl_measure_variant(&env, v, NULL, r), 0);
    ck_assert_int_eq(r->has_energy, 1);
    pl_measure_env_free(&env);
}

/* The variant's energy is its timed runs' only: the warm-up's and the batch-sizing run's joules stay outside. */
START_TEST(measured_variant_gets_its_timed_runs_energy)
{
    pl_variant_result r;
    measure_with_fake(&half, 7, &r);
    ck_assert_uint_eq(r.n_samples, 7);
    const double runs = 7.0 * r.reps_per_sample;
    ck_assert_double_eq(r.energy.runs, runs);
    ck_assert_double_eq(r.energy.energy_j, 0.5 * runs);
    ck_assert_double_eq(r.energy.joules_per_run, 0.5);
    ck_assert(r.warmup_runs >= 4 && fake_counter_j - 1000 > r.energy.energy_j); /* the warm-up burnt too */
    ck_assert(r.energy.timed_s > 0 && r.energy.timed_s <= r.measure_s + 0.1);
    ck_assert_ptr_null(r.energy.note);
    pl_variant_result_free(&r);
}
END_TEST

/* Interleaved rounds: each variant's kept rounds only, not the round at load, not the other's rounds. */
START_TEST(interleaved_rounds_count_each_variants_own)
{
    pl_run_settings s = settings(0);
    pl_ctx ctx;
    pl_measure_env env;
    env_with_fake(&env, &ctx, &s);
    const pl_variant *v[2] = {&half, &two};
    pl_variant_result r[2] = {{.reps_per_sample = 1}, {.reps_per_sample = 1}};
    pl_timing *tm[2];
    for (int i = 0; i < 2; i++)
        ck_assert_ptr_nonnull(tm[i] = pl_timing_begin(&env, v[i], NULL, &r[i]));
    for (int round = 0; round <= 2; round++) {
        pl_round_quota q = {.keep = round > 0, .samples = 3, .max_s = 5};
        for (size_t j = 0; j < 2; j++) {
            const size_t i = pl_round_slot(2, round, j);
            ck_assert_int_eq(pl_timing_round(&env, tm[i], &r[i], &q), 0);
        }
    }
    const double per_run[2] = {0.5, 2.0};
    for (int i = 0; i < 2; i++) {
        pl_timing_end(tm[i], &r[i], pl_strdup("2 rounds"));
        ck_assert_uint_eq(r[i].n_samples, 6);
        ck_assert_double_eq(r[i].energy.runs, 6.0 * r[i].reps_per_sample);
        ck_assert_double_eq(r[i].energy.energy_j, per_run[i] * r[i].energy.runs);
        ck_assert_double_eq(r[i].energy.joules_per_run, per_run[i]);
        pl_variant_result_free(&r[i]);
    }
    pl_measure_env_free(&env);
}
END_TEST

START_TEST(idle_variant_has_no_figure)
{
    pl_variant_result r;
    measure_with_fake(&nothing, 3, &r);
    ck_assert(isnan(r.energy.energy_j) && isnan(r.energy.joules_per_run));
    ck_assert_ptr_nonnull(strstr(r.energy.note, "did not advance"));
    pl_variant_result_free(&r);
}
END_TEST

/* ---- run.json, the table, compare ---- */

static int table_has_header(const pl_table *t, const char *h)
{
    for (size_t c = 0; c < t->ncols; c++)
        if (strcmp(t->headers[c], h) == 0)
            return 1;
    return 0;
}

static void drop_energy(pl_run *r)
{
    for (size_t i = 0; i < r->n_targets; i++)
        for (size_t j = 0; j < r->targets[i].n_variants; j++) {
            pl_variant_result *v = &r->targets[i].variants[j];
            free(v->energy.note);
            memset(&v->energy, 0, sizeof v->energy);
            v->has_energy = 0;
        }
}

START_TEST(energy_round_trips_and_derives_per_element)
{
    pl_run r;
    pl_test_make_run(&r);
    const pl_variant_result *v = &r.targets[0].variants[1];
    ck_assert_double_eq_tol(v->energy.joules_per_element, v->energy.joules_per_run / 1e6, 1e-18);
    json_t *j = pl_run_to_json(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "schema_version")), PL_SCHEMA_VERSION);
    json_t *e = json_object_get(json_array_get(json_object_get(json_array_get(json_object_get(j, "targets"), 0),
                                                               "variants"),
                                               1),
                                "energy");
    ck_assert(json_is_object(e));
    ck_assert_double_eq_tol(json_number_value(json_object_get(e, "energy_j")), v->energy.energy_j, 1e-9);
    ck_assert(json_is_number(json_object_get(e, "joules_per_run")));
    ck_assert(json_is_number(json_object_get(e, "energy_timed_s")));
    ck_assert(json_is_number(json_object_get(e, "average_power_w")));
    pl_run back;
    char err[256];
    ck_assert_msg(pl_run_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    const pl_variant_result *w = &back.targets[0].variants[1];
    ck_assert_int_eq(w->has_energy, 1);
    ck_assert_double_eq_tol(w->energy.joules_per_run, v->energy.joules_per_run, 1e-12);
    ck_assert_double_eq_tol(w->energy.joules_per_element, v->energy.joules_per_element, 1e-18);
    ck_assert_int_eq(back.targets[1].variants[0].has_energy, 0); /* a crashed variant: never timed */
    json_decref(j);
    pl_run_free(&back);
    pl_run_free(&r);
}
END_TEST

START_TEST(table_shows_joules_only_when_measured)
{
    pl_run r;
    pl_test_make_run(&r);
    pl_table *t = pl_run_table(&r);
    ck_assert(table_has_header(t, "J/run"));
    ck_assert(table_has_header(t, "J/element"));
    pl_buf text = {0};
    pl_table_text(t, &text);
    char b[32];
    ck_assert_ptr_nonnull(strstr(text.data, pl_format_joules(r.targets[0].variants[1].energy.joules_per_run, b,
                                                             sizeof b)));
    pl_buf_free(&text);
    pl_table_free(t);
    /* --profile none, the default: J/run only, the table kept narrow */
    free(r.settings.profile);
    r.settings.profile = pl_strdup("none");
    t = pl_run_table(&r);
    ck_assert(table_has_header(t, "J/run"));
    ck_assert(!table_has_header(t, "J/element"));
    pl_table_free(t);
    drop_energy(&r);
    t = pl_run_table(&r);
    ck_assert(!table_has_header(t, "J/run"));
    ck_assert(!table_has_header(t, "J/element"));
    pl_table_free(t);
    /* a target without elements: J/run, and no J/element */
    pl_run_free(&r);
    pl_test_make_run(&r);
    r.targets[0].counters.elements = 0;
    pl_target_result_derive(&r.targets[0], 7);
    t = pl_run_table(&r);
    ck_assert(table_has_header(t, "J/run"));
    ck_assert(!table_has_header(t, "J/element"));
    pl_table_free(t);
    pl_run_free(&r);
}
END_TEST

START_TEST(compare_gives_the_energy_ratio_when_both_have_it)
{
    pl_run a, b;
    pl_test_make_run(&a);
    pl_test_make_run(&b);
    b.targets[0].variants[1].energy.joules_per_run *= 0.5;
    pl_compare_result c;
    pl_compare_runs(&a, &b, 0.05, 1, &c);
    ck_assert_double_eq_tol(c.rows[1].energy_ratio, 0.5, 1e-12);
    ck_assert_double_eq_tol(c.rows[0].energy_ratio, 1.0, 1e-12);
    pl_compare_result_free(&c);
    drop_energy(&a);
    pl_compare_runs(&a, &b, 0.05, 1, &c);
    ck_assert(isnan(c.rows[0].energy_ratio) && isnan(c.rows[1].energy_ratio));
    pl_compare_result_free(&c);
    pl_run_free(&a);
    pl_run_free(&b);
}
END_TEST

/* run.json as perflab wrote it before energy: schema 2, no "energy" in any variant. */
static void as_schema_2(json_t *root)
{
    json_object_set_new(root, "schema_version", json_integer(2));
    size_t i, k;
    json_t *t, *v;
    json_array_foreach(json_object_get(root, "targets"), i, t)
    {
        json_array_foreach(json_object_get(t, "variants"), k, v) json_object_del(v, "energy");
    }
}

/* `perflab report A B` into dir/name: report.html's text (malloc'd). */
static char *report_html(const char *dir, const char *name, const char *a, const char *b)
{
    char *out = pl_path_join(dir, name), err[512];
    char *args = pl_strfmt("report '%s' '%s' --out '%s'", a, b, out);
    pl_cmd_result c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s", c.err);
    pl_cmd_result_free(&c);
    free(args);
    char *page = pl_path_join(out, "report.html");
    size_t len;
    char *html = pl_read_file(page, &len, err, sizeof err);
    ck_assert_msg(html != NULL, "%s", err);
    free(page);
    free(out);
    return html;
}

START_TEST(old_runs_read_by_compare_report_and_expectations)
{
    char *dir = pl_test_tmpdir("energy_old_runs");
    char *old = pl_test_write_run(dir, "old", as_schema_2);
    char *now = pl_test_write_run(dir, "now", NULL);
    pl_run r;
    char err[512];
    ck_assert_msg(pl_run_load(old, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(r.targets[0].variants[0].has_energy, 0);
    pl_run_free(&r);

    char *args = pl_strfmt("compare '%s' '%s'", old, now);
    pl_cmd_result c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s", c.err);
    ck_assert_ptr_null(strstr(c.out, "J/run B/A")); /* one side has no energy */
    pl_cmd_result_free(&c);
    free(args);
    args = pl_strfmt("compare '%s' '%s' --json", old, old);
    c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s", c.err);
    ck_assert_ptr_nonnull(strstr(c.out, "\"energy_ratio\": null"));
    pl_cmd_result_free(&c);
    free(args);
    args = pl_strfmt("compare '%s' '%s'", now, now);
    c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s", c.err);
    ck_assert_ptr_nonnull(strstr(c.out, "J/run B/A"));
    ck_assert_ptr_nonnull(strstr(c.out, "1.000"));
    pl_cmd_result_free(&c);
    free(args);

    char *html = report_html(dir, "html-old-now", old, now);
    ck_assert_ptr_nonnull(strstr(html, "total-energy counter")); /* the energy of the run that has it */
    ck_assert_ptr_nonnull(strstr(html, "J/run"));
    ck_assert_ptr_null(strstr(html, "J/run after/before")); /* the old run has no energy to compare */
    free(html);
    html = report_html(dir, "html-now-now", now, now);
    ck_assert_ptr_nonnull(strstr(html, "J/run after/before"));
    free(html);

    /* the expectations of the old run's key, then the old run judged against them */
    char *exp = pl_path_join(dir, "expectations");
    args = pl_strfmt("expectations update '%s' --expectations-dir '%s'", old, exp);
    c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s\n%s", c.out, c.err);
    pl_cmd_result_free(&c);
    free(args);
    args = pl_strfmt("expectations compare '%s' --expectations-dir '%s'", old, exp);
    c = pl_run_perflab(NULL, args);
    ck_assert_msg(c.exit_code == 0, "%s\n%s", c.out, c.err);
    pl_cmd_result_free(&c);
    free(args);
    free(exp);
    free(old);
    free(now);
    free(dir);
}
END_TEST

static Suite *energy_suite(void)
{
    Suite *s = suite_create("energy");
    TCase *tc = tcase_create("energy");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tally_sums_regions);
    tcase_add_test(tc, tally_without_a_figure_says_why);
    tcase_add_test(tc, joules_formatted_compactly);
    tcase_add_test(tc, measured_variant_gets_its_timed_runs_energy);
    tcase_add_test(tc, interleaved_rounds_count_each_variants_own);
    tcase_add_test(tc, idle_variant_has_no_figure);
    tcase_add_test(tc, energy_round_trips_and_derives_per_element);
    tcase_add_test(tc, table_shows_joules_only_when_measured);
    tcase_add_test(tc, compare_gives_the_energy_ratio_when_both_have_it);
    tcase_add_test(tc, old_runs_read_by_compare_report_and_expectations);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(energy_suite());
}
