/* Expectations: hardware keys, the file format (round trip and every error), the noise-aware verdicts on
 * constructed runs, and merging a run into a file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/provenance.h"
#include "core/expectations.h"
#include "core/util.h"
#include "testutil.h"

/* ---------------------------------------------------------------- building runs */

static pl_target_result *add_target(pl_run *run, const char *name, const char *params)
{
    run->targets = pl_xrealloc(run->targets, (run->n_targets + 1) * sizeof *run->targets);
    pl_target_result *t = &run->targets[run->n_targets++];
    memset(t, 0, sizeof *t);
    t->name = pl_strdup(name);
    t->status = PL_STATUS_OK;
    /* params: "k=v k=v" */
    char *copy = pl_strdup(params ? params : ""), *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        ck_assert_ptr_nonnull(eq);
        *eq = '\0';
        t->params = pl_xrealloc(t->params, (t->n_params + 1) * sizeof *t->params);
        t->params[t->n_params].name = pl_strdup(tok);
        t->params[t->n_params].value = pl_strdup(eq + 1);
        t->n_params++;
    }
    free(copy);
    return t;
}

/* A variant whose statistics are set directly: the verdict rule is about medians and noise, not sampling. */
static pl_variant_result *add_variant(pl_target_result *t, const char *name, pl_status status, double median_ms,
                                      double rel_noise)
{
    t->variants = pl_xrealloc(t->variants, (t->n_variants + 1) * sizeof *t->variants);
    pl_variant_result *v = &t->variants[t->n_variants++];
    memset(v, 0, sizeof *v);
    v->name = pl_strdup(name);
    v->status = status;
    if (median_ms > 0) {
        v->n_samples = 1;
        v->samples_ms = pl_xmalloc(sizeof *v->samples_ms);
        v->samples_ms[0] = median_ms;
        v->has_stats = 1;
        v->stats.n = 30;
        v->stats.median = v->stats.p50 = median_ms;
        v->stats.rel_noise = rel_noise;
    }
    return v;
}

static void set_provenance(pl_run *run)
{
    run->prov.perflab_version = pl_strdup("9.9.9");
    run->prov.git_commit = pl_strdup("abc1234");
    run->prov.started_at = pl_strdup("2030-01-02T03:04:05Z");
    run->prov.hardware_key = pl_strdup("h200");
    run->prov.n_gpus = 1;
    run->prov.gpus = pl_xcalloc(1, sizeof *run->prov.gpus);
    run->prov.gpus[0].name = pl_strdup("NVIDIA H200");
}

static pl_expect_entry *add_entry(pl_expectations *e, const char *target, const char *variant, double median_ms,
                                  double rel_noise, double tolerance, const char *params)
{
    e->entries = pl_xrealloc(e->entries, (e->n_entries + 1) * sizeof *e->entries);
    pl_expect_entry *x = &e->entries[e->n_entries++];
    memset(x, 0, sizeof *x);
    x->target = pl_strdup(target);
    x->variant = pl_strdup(variant);
    x->median_ms = median_ms;
    x->rel_noise = rel_noise;
    x->tolerance = tolerance;
    x->params = pl_strdup(params);
    return x;
}

static void init_expectations(pl_expectations *e, const char *key)
{
    memset(e, 0, sizeof *e);
    e->schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
    e->hardware_key = pl_strdup(key);
}

static const pl_expect_row *find_row(const pl_expect_report *r, const char *target, const char *variant)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (strcmp(r->rows[i].target, target) == 0 && strcmp(r->rows[i].variant, variant) == 0)
            return &r->rows[i];
    return NULL;
}

static pl_expect_verdict verdict_of(const pl_expect_report *r, const char *target, const char *variant)
{
    const pl_expect_row *row = find_row(r, target, variant);
    ck_assert_msg(row != NULL, "no row for %s/%s", target, variant);
    return row->verdict;
}

static char *write_temp_file(const char *tag, const char *name, const char *text)
{
    char *dir = pl_test_tmpdir(tag);
    char *path = pl_path_join(dir, name);
    char err[256];
    ck_assert_int_eq(pl_write_file_atomic(path, text, strlen(text), err, sizeof err), 0);
    free(dir);
    return path;
}

/* ---------------------------------------------------------------- hardware keys */

START_TEST(key_of_single_gpus)
{
    static const char *const cases[][2] = {
        {"NVIDIA H100 80GB HBM3", "h100_sxm"},
        {"NVIDIA H100 PCIe", "h100_pcie"},
        {"NVIDIA H100 NVL", "h100_nvl"},
        {"NVIDIA H200", "h200"},
        {"NVIDIA H200 NVL", "h200_nvl"},
        {"NVIDIA GH200 480GB", "gh200"}, /* not "h200": words are matched whole */
        {"NVIDIA B200", "b200"},
        {"NVIDIA GB200", "gb200"},
        {"NVIDIA B300 SXM6 AC", "b300"},
        {"NVIDIA GB300", "gb300"},
        {"NVIDIA GB10", "gb10"},
        {"NVIDIA A100-SXM4-80GB", "a100_sxm"},
        {"NVIDIA A100-PCIE-40GB", "a100_pcie"},
        {"NVIDIA A100 80GB PCIe", "a100_pcie"},
        {"NVIDIA L40S", "l40s"},
        {"NVIDIA L40", "l40"},
        {"NVIDIA RTX 6000 Ada Generation", "rtx_6000_ada_generation"},
        {"Tesla V100-SXM2-16GB", "tesla_v100_sxm2_16gb"},
        {"  Weird//GPU  (x) ", "weird_gpu_x"},
        {"", "unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = cases[i][0];
        char *key = pl_hardware_key_from_names(&name, 1);
        ck_assert_msg(strcmp(key, cases[i][1]) == 0, "'%s' -> '%s', expected '%s'", name, key, cases[i][1]);
        free(key);
    }
}
END_TEST

static void check_key(const char *const *names, size_t n, const char *expected)
{
    char *key = pl_hardware_key_from_names(names, n);
    ck_assert_str_eq(key, expected);
    free(key);
}

START_TEST(key_of_several_gpus)
{
    const char *two[] = {"NVIDIA H200", "NVIDIA H200"};
    check_key(two, 2, "2x_h200");
    const char *eight[] = {"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
                           "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3",
                           "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"};
    check_key(eight, 8, "8x_h100_sxm");
    /* mixed kinds, in any order: the same key */
    const char *mixed[] = {"NVIDIA H200", "NVIDIA L40S", "NVIDIA H200"};
    check_key(mixed, 3, "2x_h200+l40s");
    const char *mixed_other_order[] = {"NVIDIA L40S", "NVIDIA H200", "NVIDIA H200"};
    check_key(mixed_other_order, 3, "2x_h200+l40s");
    const char *pair[] = {"NVIDIA H200", "NVIDIA H100 PCIe"};
    check_key(pair, 2, "h100_pcie+h200");
    check_key(NULL, 0, "no_gpu");
}
END_TEST

START_TEST(key_override_from_environment)
{
    const char *names[] = {"NVIDIA H200"};
    setenv("PERFLAB_EXPECTATION_KEY", "ci_pool_7", 1);
    char *key = pl_hardware_key(names, 1);
    ck_assert_str_eq(key, "ci_pool_7");
    free(key);
    setenv("PERFLAB_EXPECTATION_KEY", "", 1); /* empty means unset */
    key = pl_hardware_key(names, 1);
    ck_assert_str_eq(key, "h200");
    free(key);
    unsetenv("PERFLAB_EXPECTATION_KEY");
    key = pl_hardware_key(names, 1);
    ck_assert_str_eq(key, "h200");
    free(key);
}
END_TEST

START_TEST(expectations_dir_precedence)
{
    setenv("PERFLAB_EXPECTATIONS_DIR", "/from/env", 1);
    char *dir = pl_expectations_dir("/explicit");
    ck_assert_str_eq(dir, "/explicit");
    free(dir);
    dir = pl_expectations_dir(NULL);
    ck_assert_str_eq(dir, "/from/env");
    free(dir);
    unsetenv("PERFLAB_EXPECTATIONS_DIR");
    dir = pl_expectations_dir(NULL);
    ck_assert_msg(strstr(dir, "expectations") != NULL, "fallback '%s'", dir);
    free(dir);
}
END_TEST

START_TEST(params_canonical_is_sorted)
{
    pl_run run = {0};
    pl_target_result *t = add_target(&run, "g:x", "n=4096 dtype=bf16 block=256");
    char *c = pl_params_canonical(t);
    ck_assert_str_eq(c, "block=256 dtype=bf16 n=4096");
    free(c);
    t = add_target(&run, "g:y", NULL);
    c = pl_params_canonical(t);
    ck_assert_str_eq(c, "");
    free(c);
    pl_run_free(&run);
}
END_TEST

/* ---------------------------------------------------------------- files */

START_TEST(save_and_load_round_trip)
{
    pl_rng rng;
    pl_rng_seed(&rng, 31);
    pl_expectations e;
    init_expectations(&e, "h200");
    e.gpu_name = pl_strdup("NVIDIA H200");
    e.perflab_version = pl_strdup("0.1.0");
    e.updated_at = pl_strdup("2030-01-01T00:00:00Z");
    /* deliberately out of order: the file must be sorted */
    static const char *const names[][2] = {{"memory:vector", "optimized"},
                                           {"gemm:bf16", "wgmma"},
                                           {"memory:coalescing", "optimized"},
                                           {"gemm:bf16", "baseline"},
                                           {"memory:coalescing", "baseline"}};
    for (size_t i = 0; i < 5; i++) {
        pl_expect_entry *x =
            add_entry(&e, names[i][0], names[i][1], 1e-3 + 10 * pl_rng_uniform(&rng), 0.05 * pl_rng_uniform(&rng),
                      0.3 * pl_rng_uniform(&rng), i == 2 ? NULL : "n=64m");
        x->git_commit = pl_strdup(i % 2 ? "deadbeef" : NULL);
        x->updated_at = pl_strdup("2030-01-01T00:00:00Z");
    }
    char *dir = pl_test_tmpdir("exp_round_trip");
    char *path = pl_strfmt("%s/new/sub/h200.json", dir); /* folders that do not exist yet */
    char err[512] = "";
    ck_assert_msg(pl_expectations_save(&e, path, err, sizeof err) == 0, "%s", err);

    pl_expectations back;
    ck_assert_msg(pl_expectations_load(path, "h200", &back, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(back.schema_version, 1);
    ck_assert_str_eq(back.hardware_key, "h200");
    ck_assert_str_eq(back.gpu_name, "NVIDIA H200");
    ck_assert_str_eq(back.perflab_version, "0.1.0");
    ck_assert_str_eq(back.updated_at, "2030-01-01T00:00:00Z");
    ck_assert_uint_eq(back.n_entries, 5);
    for (size_t i = 0; i < 5; i++) {
        const pl_expect_entry *x = &e.entries[i], *y = NULL;
        for (size_t k = 0; k < 5; k++)
            if (!strcmp(back.entries[k].target, x->target) && !strcmp(back.entries[k].variant, x->variant))
                y = &back.entries[k];
        ck_assert_ptr_nonnull(y);
        ck_assert_double_eq_tol(y->median_ms, x->median_ms, 1e-9 * x->median_ms);
        ck_assert_double_eq_tol(y->rel_noise, x->rel_noise, 1e-9);
        ck_assert_double_eq_tol(y->tolerance, x->tolerance, 1e-9);
        ck_assert_pstr_eq(y->params, x->params);
        ck_assert_pstr_eq(y->git_commit, x->git_commit);
        ck_assert_pstr_eq(y->updated_at, x->updated_at);
    }
    /* sorted by target, then variant */
    for (size_t k = 1; k < 5; k++) {
        int c = strcmp(back.entries[k - 1].target, back.entries[k].target);
        ck_assert(c < 0 || (c == 0 && strcmp(back.entries[k - 1].variant, back.entries[k].variant) < 0));
    }
    /* saving what was loaded gives the same bytes: updates make minimal diffs */
    char *text1 = pl_read_file(path, NULL, err, sizeof err);
    ck_assert_int_eq(pl_expectations_save(&back, path, err, sizeof err), 0);
    char *text2 = pl_read_file(path, NULL, err, sizeof err);
    ck_assert_str_eq(text1, text2);
    ck_assert_ptr_nonnull(strstr(text1, "\"schema_version\": 1"));
    free(text1);
    free(text2);
    pl_expectations_free(&back);
    pl_expectations_free(&e);
    free(path);
    free(dir);
}
END_TEST

START_TEST(optional_fields_take_defaults)
{
    char *path = write_temp_file("exp_defaults", "h200.json",
                                 "{\"schema_version\": 1, \"hardware_key\": \"h200\", \"entries\": [\n"
                                 "  {\"target\": \"memory:copy\", \"variant\": \"baseline\", \"median_ms\": 2}\n"
                                 "]}\n");
    pl_expectations e;
    char err[512] = "";
    ck_assert_msg(pl_expectations_load(path, "h200", &e, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(e.n_entries, 1);
    ck_assert_double_eq(e.entries[0].median_ms, 2.0);
    ck_assert_double_eq(e.entries[0].tolerance, PL_EXPECT_DEFAULT_TOLERANCE);
    ck_assert_double_eq(e.entries[0].rel_noise, 0.0);
    ck_assert_ptr_null(e.entries[0].params);
    ck_assert_ptr_null(e.gpu_name);
    pl_expectations_free(&e);
    /* no key asked for: any file's key is accepted */
    ck_assert_int_eq(pl_expectations_load(path, NULL, &e, err, sizeof err), 0);
    ck_assert_str_eq(e.hardware_key, "h200");
    pl_expectations_free(&e);
    free(path);
}
END_TEST

START_TEST(missing_file_returns_one)
{
    char *dir = pl_test_tmpdir("exp_missing");
    char *path = pl_path_join(dir, "nothing_here.json");
    pl_expectations e;
    char err[256] = "";
    ck_assert_int_eq(pl_expectations_load(path, "b200", &e, err, sizeof err), 1);
    ck_assert_str_eq(e.hardware_key, "b200");
    ck_assert_uint_eq(e.n_entries, 0);
    ck_assert_int_eq(e.schema_version, PL_EXPECTATIONS_SCHEMA_VERSION);
    pl_expectations_free(&e);
    free(path);
    free(dir);
}
END_TEST

START_TEST(syntax_error_has_line_and_column)
{
    /* line 4 holds the value that is not JSON */
    char *path = write_temp_file("exp_syntax", "h200.json",
                                 "{\n"
                                 "  \"schema_version\": 1,\n"
                                 "  \"hardware_key\": \"h200\",\n"
                                 "  \"entries\": [ {\"target\": oops} ]\n"
                                 "}\n");
    pl_expectations e;
    char err[512] = "";
    ck_assert_int_eq(pl_expectations_load(path, "h200", &e, err, sizeof err), -1);
    char *prefix = pl_strfmt("%s:4:", path);
    ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'", err, prefix);
    int column = 0;
    ck_assert_msg(sscanf(err + strlen(prefix), "%d:", &column) == 1 && column > 20 && column < 32,
                  "no plausible column in '%s'", err);
    ck_assert_ptr_null(e.entries);
    free(prefix);
    free(path);
}
END_TEST

/* One malformed file each: the message must name the file, the place and what was expected. */
typedef struct schema_case {
    const char *entries; /* the text of the entries array, or a whole document when it starts with '!' */
    const char *message; /* expected after "FILE: " */
} schema_case;

#define ENTRY(extra) "{\"target\": \"g:t\", \"variant\": \"v\", \"median_ms\": 1" extra "}"

static const schema_case schema_cases[] = {
    {"![1, 2]", "expected a JSON object at the top level, found an array"},
    {"!{\"hardware_key\": \"h200\", \"entries\": []}", "schema_version: expected the integer 1, found nothing"},
    {"!{\"schema_version\": \"1\", \"hardware_key\": \"h200\", \"entries\": []}",
     "schema_version: expected the integer 1, found a string"},
    {"!{\"schema_version\": 2, \"hardware_key\": \"h200\", \"entries\": []}",
     "schema_version: version 2 is not supported (this perflab reads 1)"},
    {"!{\"schema_version\": 1, \"entries\": []}", "hardware_key: missing; expected a non-empty string"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h100_sxm\", \"entries\": []}",
     "hardware_key: the file is for 'h100_sxm', not for 'h200'"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h200\"}", "entries: missing; expected an array"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h200\", \"entries\": {}}",
     "entries: expected an array, found an object"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h200\", \"entries\": [], \"entires\": []}",
     "top level: unknown key 'entires' (did you mean 'entries'?)"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h200\", \"provenance\": 3, \"entries\": []}",
     "provenance: expected an object, found a number"},
    {"!{\"schema_version\": 1, \"hardware_key\": \"h200\", \"provenance\": {\"gpu_name\": 1}, \"entries\": []}",
     "provenance.gpu_name: expected a string, found a number"},
    {"7", "entries[0]: expected an object, found a number"},
    {ENTRY("") ", {\"target\": \"g:t\", \"variant\": \"w\", \"median_ms\": -1}",
     "entries[1].median_ms: expected a positive number, found -1"},
    {"{\"target\": \"g:t\", \"variant\": \"v\", \"median_ms\": 0}",
     "entries[0].median_ms: expected a positive number, found 0"},
    {"{\"target\": \"g:t\", \"variant\": \"v\", \"median_ms\": \"fast\"}",
     "entries[0].median_ms: expected a positive number, found a string"},
    {"{\"target\": \"g:t\", \"variant\": \"v\"}", "entries[0].median_ms: missing; expected a positive number"},
    {ENTRY(", \"tolerance\": -0.1"), "entries[0].tolerance: expected a number >= 0, found -0.1"},
    {ENTRY(", \"tolerance\": null"), "entries[0].tolerance: expected a number >= 0, found null"},
    {ENTRY(", \"rel_noise\": -0.5"), "entries[0].rel_noise: expected a number >= 0, found -0.5"},
    {"{\"variant\": \"v\", \"median_ms\": 1}", "entries[0].target: missing; expected a non-empty string"},
    {"{\"target\": \"\", \"variant\": \"v\", \"median_ms\": 1}",
     "entries[0].target: expected a non-empty string, found \"\""},
    {"{\"target\": \"nocolon\", \"variant\": \"v\", \"median_ms\": 1}",
     "entries[0]: target 'nocolon' is not of the form group:name"},
    {"{\"target\": \"g:t\", \"variant\": 5, \"median_ms\": 1}",
     "entries[0].variant: expected a string, found a number"},
    {ENTRY(", \"params\": 64"), "entries[0].params: expected a string, found a number"},
    {ENTRY(", \"git_commit\": true"), "entries[0].git_commit: expected a string, found a boolean"},
    {ENTRY(", \"tolerence\": 0.2"), "entries[0]: unknown key 'tolerence' (did you mean 'tolerance'?)"},
    {ENTRY("") ", {\"target\": \"g:u\", \"variant\": \"v\", \"median_ms\": 1}, " ENTRY(""),
     "entries[2]: duplicate of entries[0] (g:t / v); keep one of them"},
};

START_TEST(schema_errors_name_file_place_and_fix)
{
    const schema_case *c = &schema_cases[_i];
    char *text =
        c->entries[0] == '!'
            ? pl_strdup(c->entries + 1)
            : pl_strfmt("{\"schema_version\": 1, \"hardware_key\": \"h200\", \"entries\": [%s]}\n", c->entries);
    char *path = write_temp_file("exp_schema", "h200.json", text);
    pl_expectations e;
    char err[1024] = "";
    ck_assert_msg(pl_expectations_load(path, "h200", &e, err, sizeof err) == -1, "case %d accepted: %s", _i, text);
    char *expected = pl_strfmt("%s: %s", path, c->message);
    ck_assert_msg(strncmp(err, expected, strlen(expected)) == 0, "case %d:\n got      '%s'\n expected '%s...'", _i, err,
                  expected);
    ck_assert_msg(strchr(err, '\n') == NULL, "not one line: '%s'", err);
    ck_assert_ptr_null(e.entries); /* nothing half-loaded is left behind */
    ck_assert_ptr_null(e.hardware_key);
    free(expected);
    free(path);
    free(text);
}
END_TEST

START_TEST(wrong_key_message_says_how_to_fix)
{
    char *path = write_temp_file("exp_key", "h200.json",
                                 "{\"schema_version\": 1, \"hardware_key\": \"h100_sxm\", \"entries\": []}");
    pl_expectations e;
    char err[1024] = "";
    ck_assert_int_eq(pl_expectations_load(path, "h200", &e, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "PERFLAB_EXPECTATION_KEY=h100_sxm"));
    free(path);
}
END_TEST

/* ---------------------------------------------------------------- verdicts */

typedef struct fixture {
    pl_run run;
    pl_expectations e;
    pl_expect_report report;
} fixture;

static void fixture_free(fixture *f)
{
    pl_run_free(&f->run);
    pl_expectations_free(&f->e);
    pl_expect_report_free(&f->report);
}

START_TEST(slowdown_beyond_tolerance_regresses)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 1.0, 0.001, 0.10, "n=1m");
    add_variant(add_target(&f.run, "mem:copy", "n=1m"), "baseline", PL_STATUS_OK, 1.15, 0.001);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    ck_assert_uint_eq(f.report.n_rows, 1);
    const pl_expect_row *r = &f.report.rows[0];
    ck_assert_int_eq(r->verdict, PL_EXPECT_REGRESSED);
    ck_assert_int_eq(f.report.regressions, 1);
    ck_assert_int_eq(f.report.present, 1);
    ck_assert_double_eq_tol(r->change, 0.15, 1e-12);
    ck_assert_double_eq_tol(r->threshold, 0.10, 1e-12); /* the tolerance, not the tiny noise */
    ck_assert_double_eq(r->expected_ms, 1.0);
    ck_assert_double_eq(r->measured_ms, 1.15);
    ck_assert_ptr_nonnull(r->note);
    ck_assert_ptr_nonnull(strstr(r->note, "15.0% slower"));
    fixture_free(&f);
}
END_TEST

/* The gate still catches a real slowdown where it judges: 11% (the smallest whole percentage beyond the default 10%
 * tolerance) on a GPU-bound variant regresses whatever host or CPU the run came from, and so does a host-timed
 * variant on the host that stored it. */
START_TEST(slowdown_regresses_where_it_is_gated)
{
    static const struct {
        int host_timed;
        const char *stored, *now, *cpu;
    } cases[] = {
        {0, "ci-a", "ci-b", "AMD EPYC 9654 96-Core Processor (192 logical CPUs)"},
        {0, NULL, NULL, "Intel(R) Xeon(R) Processor (16 logical CPUs)"},
        {1, "ci-a", "ci-a", "Intel(R) Xeon(R) Processor (16 logical CPUs)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f = {0};
        init_expectations(&f.e, "h200");
        add_entry(&f.e, "gemm:bf16", "wgmma", 1.0, 0.005, PL_EXPECT_DEFAULT_TOLERANCE, "n=1m")->host =
            pl_strdup(cases[i].stored);
        add_variant(add_target(&f.run, "gemm:bf16", "n=1m"), "wgmma", PL_STATUS_OK, 1.11, 0.005)->host_timed =
            cases[i].host_timed;
        f.run.prov.cpu = pl_strdup(cases[i].cpu);
        f.run.prov.host_key = pl_strdup(cases[i].now);
        pl_expectations_compare(&f.e, &f.run, &f.report);
        ck_assert_msg(f.report.rows[0].verdict == PL_EXPECT_REGRESSED, "case %zu: %s", i,
                      pl_expect_verdict_name(f.report.rows[0].verdict));
        ck_assert_int_eq(f.report.regressions, 1);
        fixture_free(&f);
    }
}
END_TEST

/* A host-timed variant is shown, not judged, against a figure stored on another host or an unnamed one. */
START_TEST(host_timed_variant_elsewhere_is_ungated)
{
    static const struct {
        const char *stored, *now, *says;
    } cases[] = {
        {NULL, NULL, "stored on an unnamed host, this run on Intel(R) Xeon(R) Processor"},
        {NULL, "ci-a", "stored on an unnamed host"},
        {"ci-a", NULL, "stored on host 'ci-a', this run on an unnamed host, Intel"},
        {"ci-a", "ci-b", "stored on host 'ci-a', this run on host 'ci-b', Intel"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f = {0};
        init_expectations(&f.e, "h200");
        pl_expect_entry *x = add_entry(&f.e, "launch:cuda_graphs", "baseline", 0.36, 0.05, 0.10, "kernels=128");
        x->host = pl_strdup(cases[i].stored);
        pl_variant_result *v =
            add_variant(add_target(&f.run, "launch:cuda_graphs", "kernels=128"), "baseline", PL_STATUS_OK, 0.589, 0.01);
        v->host_timed = 1;
        f.run.prov.cpu = pl_strdup("Intel(R) Xeon(R) Processor (16 logical CPUs)");
        f.run.prov.host_key = pl_strdup(cases[i].now);
        pl_expectations_compare(&f.e, &f.run, &f.report);
        const pl_expect_row *r = &f.report.rows[0];
        ck_assert_int_eq(r->verdict, PL_EXPECT_UNGATED);
        ck_assert_int_eq(f.report.regressions, 0);
        ck_assert_double_eq_tol(r->change, 0.589 / 0.36 - 1, 1e-12);
        ck_assert_ptr_nonnull(strstr(r->note, "host-bound: not gated (+63.6%"));
        ck_assert_msg(strstr(r->note, cases[i].says) != NULL, "case %zu: %s", i, r->note);
        fixture_free(&f);
    }
}
END_TEST

/* An update names the host of host-timed entries only, and the name survives a save and a load. */
START_TEST(update_records_the_host_of_host_timed_entries)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    set_provenance(&f.run);
    f.run.prov.host_key = pl_strdup("ci-a");
    pl_target_result *t = add_target(&f.run, "launch:cuda_graphs", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, 0.36, 0.01)->host_timed = 1;
    add_variant(t, "graph", PL_STATUS_OK, 0.12, 0.01);
    ck_assert_uint_eq(pl_expectations_update(&f.e, &f.run), 2);
    ck_assert_pstr_eq(pl_expectations_find(&f.e, "launch:cuda_graphs", "baseline")->host, "ci-a");
    ck_assert_ptr_null(pl_expectations_find(&f.e, "launch:cuda_graphs", "graph")->host);
    char *dir = pl_test_tmpdir("exp_host");
    char *path = pl_strfmt("%s/h200.json", dir);
    char err[512] = "";
    ck_assert_msg(pl_expectations_save(&f.e, path, err, sizeof err) == 0, "%s", err);
    pl_expectations back;
    ck_assert_msg(pl_expectations_load(path, "h200", &back, err, sizeof err) == 0, "%s", err);
    ck_assert_pstr_eq(pl_expectations_find(&back, "launch:cuda_graphs", "baseline")->host, "ci-a");
    ck_assert_ptr_null(pl_expectations_find(&back, "launch:cuda_graphs", "graph")->host);
    pl_expectations_free(&back);
    free(path);
    free(dir);
    fixture_free(&f);
}
END_TEST

START_TEST(same_slowdown_within_huge_noise_is_met)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 1.0, 0.001, 0.10, "n=1m");
    add_variant(add_target(&f.run, "mem:copy", "n=1m"), "baseline", PL_STATUS_OK, 1.15, 0.10);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    const pl_expect_row *r = &f.report.rows[0];
    ck_assert_int_eq(r->verdict, PL_EXPECT_MET);
    ck_assert_int_eq(f.report.regressions, 0);
    /* 3 sigma of sqrt(0.1^2 + 0.001^2) */
    ck_assert_double_eq_tol(r->threshold, PL_EXPECT_NOISE_SIGMAS * sqrt(0.01 + 1e-6), 1e-12);
    fixture_free(&f);
}
END_TEST

START_TEST(noise_stored_with_the_expectation_counts_too)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 1.0, 0.08, 0.10, "n=1m");
    add_variant(add_target(&f.run, "mem:copy", "n=1m"), "baseline", PL_STATUS_OK, 1.15, 0.0);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    ck_assert_int_eq(f.report.rows[0].verdict, PL_EXPECT_MET);
    ck_assert_double_eq_tol(f.report.rows[0].threshold, 0.24, 1e-12);
    fixture_free(&f);
}
END_TEST

START_TEST(faster_beyond_threshold_is_improved)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 2.0, 0.01, 0.10, "");
    add_entry(&f.e, "mem:copy", "vec4", 1.0, 0.01, 0.10, "");
    pl_target_result *t = add_target(&f.run, "mem:copy", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, 1.5, 0.01); /* -25% */
    add_variant(t, "vec4", PL_STATUS_OK, 0.95, 0.01);    /* -5%: within tolerance */
    pl_expectations_compare(&f.e, &f.run, &f.report);
    ck_assert_int_eq(verdict_of(&f.report, "mem:copy", "baseline"), PL_EXPECT_IMPROVED);
    ck_assert_int_eq(verdict_of(&f.report, "mem:copy", "vec4"), PL_EXPECT_MET);
    ck_assert_double_eq_tol(find_row(&f.report, "mem:copy", "baseline")->change, -0.25, 1e-12);
    ck_assert_int_eq(f.report.regressions, 0);
    fixture_free(&f);
}
END_TEST

START_TEST(changed_params_make_a_new_result)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 1.0, 0.001, 0.10, "n=1m");
    add_variant(add_target(&f.run, "mem:copy", "n=4m"), "baseline", PL_STATUS_OK, 4.0, 0.001);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    const pl_expect_row *r = &f.report.rows[0];
    ck_assert_int_eq(r->verdict, PL_EXPECT_NEW);
    ck_assert_int_eq(f.report.regressions, 0);
    ck_assert_ptr_nonnull(r->note);
    ck_assert_ptr_nonnull(strstr(r->note, "other parameters"));
    ck_assert_ptr_nonnull(strstr(r->note, "n=1m"));
    ck_assert_ptr_nonnull(strstr(r->note, "n=4m"));
    ck_assert(isnan(r->change) && isnan(r->expected_ms));
    ck_assert_double_eq(r->measured_ms, 4.0);
    fixture_free(&f);
}
END_TEST

START_TEST(entry_without_params_matches_any)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "mem:copy", "baseline", 1.0, 0.001, 0.10, NULL);
    add_variant(add_target(&f.run, "mem:copy", "n=4m"), "baseline", PL_STATUS_OK, 1.5, 0.001);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    ck_assert_int_eq(f.report.rows[0].verdict, PL_EXPECT_REGRESSED);
    fixture_free(&f);
}
END_TEST

START_TEST(unexpected_result_is_new)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_variant(add_target(&f.run, "mem:copy", NULL), "baseline", PL_STATUS_UNVERIFIED, 1.0, 0.01);
    pl_expectations_compare(&f.e, &f.run, &f.report);
    ck_assert_uint_eq(f.report.n_rows, 1);
    ck_assert_int_eq(f.report.rows[0].verdict, PL_EXPECT_NEW);
    ck_assert_ptr_nonnull(strstr(f.report.rows[0].note, "no expectation"));
    fixture_free(&f);
}
END_TEST

START_TEST(failed_skipped_and_untimed_are_missing)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "a:one", "baseline", 1.0, 0.01, 0.1, "");
    add_entry(&f.e, "a:one", "fast", 0.5, 0.01, 0.1, "");
    add_entry(&f.e, "a:one", "renamed", 0.5, 0.01, 0.1, "");
    add_entry(&f.e, "a:one", "verify_only", 0.5, 0.01, 0.1, "");
    add_entry(&f.e, "b:skipped", "baseline", 1.0, 0.01, 0.1, "");
    add_entry(&f.e, "b:skipped", "tma", 1.0, 0.01, 0.1, "");
    add_entry(&f.e, "c:not_in_run", "baseline", 1.0, 0.01, 0.1, "");
    add_entry(&f.e, "d:per_variant_skip", "baseline", 1.0, 0.01, 0.1, "");

    pl_target_result *t = add_target(&f.run, "a:one", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, 1.0, 0.01);
    pl_variant_result *v = add_variant(t, "fast", PL_STATUS_FAILED_VERIFICATION, 0, 0);
    v->reason = pl_strdup("rel L2 error 3e-2 > 1e-2");
    add_variant(t, "verify_only", PL_STATUS_OK, 0, 0);           /* ok but never timed */
    add_variant(t, "skipped_no_entry", PL_STATUS_SKIPPED, 0, 0); /* nothing to say: no row */
    t = add_target(&f.run, "b:skipped", NULL);
    t->status = PL_STATUS_SKIPPED;
    t->reason = pl_strdup("needs sm_100a");
    t = add_target(&f.run, "d:per_variant_skip", NULL); /* the reason only at the target level */
    t->status = PL_STATUS_SKIPPED;
    t->reason = pl_strdup("needs 2 GPUs");
    add_variant(t, "baseline", PL_STATUS_SKIPPED, 0, 0);
    pl_expectations_compare(&f.e, &f.run, &f.report);

    ck_assert_int_eq(verdict_of(&f.report, "a:one", "baseline"), PL_EXPECT_MET);
    const pl_expect_row *r = find_row(&f.report, "a:one", "fast");
    ck_assert_int_eq(r->verdict, PL_EXPECT_MISSING);
    ck_assert_ptr_nonnull(strstr(r->note, "failed_verification"));
    ck_assert_ptr_nonnull(strstr(r->note, "rel L2 error"));
    ck_assert(isnan(r->measured_ms));
    ck_assert_double_eq(r->expected_ms, 0.5);
    ck_assert_int_eq(verdict_of(&f.report, "a:one", "renamed"), PL_EXPECT_MISSING);
    ck_assert_int_eq(verdict_of(&f.report, "a:one", "verify_only"), PL_EXPECT_MISSING);
    r = find_row(&f.report, "b:skipped", "tma");
    ck_assert_int_eq(r->verdict, PL_EXPECT_MISSING);
    ck_assert_ptr_nonnull(strstr(r->note, "skipped"));
    ck_assert_ptr_nonnull(strstr(r->note, "needs sm_100a"));
    ck_assert_int_eq(verdict_of(&f.report, "b:skipped", "baseline"), PL_EXPECT_MISSING);
    ck_assert_ptr_null(find_row(&f.report, "a:one", "skipped_no_entry"));
    ck_assert_ptr_null(find_row(&f.report, "c:not_in_run", "baseline")); /* only targets in the run */
    r = find_row(&f.report, "d:per_variant_skip", "baseline");
    ck_assert_int_eq(r->verdict, PL_EXPECT_MISSING);
    ck_assert_ptr_nonnull(strstr(r->note, "needs 2 GPUs"));
    ck_assert_uint_eq(f.report.n_rows, 7);
    ck_assert_int_eq(f.report.regressions, 0);
    /* rows follow the run: a:one, then b:skipped, then d:per_variant_skip */
    ck_assert_str_eq(f.report.rows[0].target, "a:one");
    ck_assert_str_eq(f.report.rows[5].target, "b:skipped");
    ck_assert_str_eq(f.report.rows[6].target, "d:per_variant_skip");
    fixture_free(&f);
}
END_TEST

START_TEST(verdicts_follow_the_rule_on_random_inputs)
{
    /* the rule restated independently, checked on random expectations, changes, tolerances and noises */
    pl_rng rng;
    pl_rng_seed(&rng, 8080);
    int seen[PL_EXPECT_COUNT] = {0};
    for (int trial = 0; trial < 2000; trial++) {
        fixture f = {0};
        init_expectations(&f.e, "h200");
        double expected = 0.01 + 100 * pl_rng_uniform(&rng);
        double tolerance = 0.25 * pl_rng_uniform(&rng);
        double noise_stored = 0.05 * pl_rng_uniform(&rng) * (trial % 3 == 0);
        double noise_run = 0.05 * pl_rng_uniform(&rng) * (trial % 5 == 0);
        double change = 0.8 * pl_rng_uniform(&rng) - 0.4;
        add_entry(&f.e, "g:t", "v", expected, noise_stored, tolerance, "");
        add_variant(add_target(&f.run, "g:t", NULL), "v", PL_STATUS_OK, expected * (1 + change), noise_run);
        pl_expectations_compare(&f.e, &f.run, &f.report);

        double noise = 3.0 * sqrt(noise_stored * noise_stored + noise_run * noise_run);
        double threshold = fmax(tolerance, noise);
        pl_expect_verdict want = change > threshold    ? PL_EXPECT_REGRESSED
                                 : change < -threshold ? PL_EXPECT_IMPROVED
                                                       : PL_EXPECT_MET;
        const pl_expect_row *r = &f.report.rows[0];
        if (fabs(fabs(change) - threshold) > 1e-9) { /* rounding may decide exactly at the edge */
            ck_assert_msg(r->verdict == want, "change %.4f tol %.4f noise %.4f: %s, expected %s", change, tolerance,
                          noise, pl_expect_verdict_name(r->verdict), pl_expect_verdict_name(want));
            ck_assert_double_eq_tol(r->threshold, threshold, 1e-12);
            ck_assert_double_eq_tol(r->change, change, 1e-9);
            ck_assert_int_eq(f.report.regressions, want == PL_EXPECT_REGRESSED);
        }
        seen[r->verdict]++;
        fixture_free(&f);
    }
    ck_assert(seen[PL_EXPECT_MET] > 100 && seen[PL_EXPECT_IMPROVED] > 100 && seen[PL_EXPECT_REGRESSED] > 100);
}
END_TEST

/* ---------------------------------------------------------------- update */

START_TEST(update_merges_and_keeps_the_rest)
{
    fixture f = {0};
    init_expectations(&f.e, "h200");
    add_entry(&f.e, "a:one", "baseline", 1.0, 0.01, 0.25, "n=1")->git_commit = pl_strdup("old");
    add_entry(&f.e, "a:one", "fast", 0.5, 0.01, 0.1, "n=1");
    add_entry(&f.e, "z:other", "baseline", 3.0, 0.02, 0.05, "k=2");

    set_provenance(&f.run);
    pl_target_result *t = add_target(&f.run, "a:one", "n=2");
    add_variant(t, "baseline", PL_STATUS_OK, 0.8, 0.003);
    add_variant(t, "fast", PL_STATUS_UNVERIFIED, 0.1, 0.003); /* never stored: may be fast because wrong */
    add_variant(t, "broken", PL_STATUS_CRASHED, 0, 0);
    t = add_target(&f.run, "b:new", NULL);
    add_variant(t, "baseline", PL_STATUS_OK, 7.0, 0.004);

    ck_assert_uint_eq(pl_expectations_update(&f.e, &f.run), 2);
    ck_assert_uint_eq(f.e.n_entries, 4);
    ck_assert_str_eq(f.e.gpu_name, "NVIDIA H200");
    ck_assert_str_eq(f.e.perflab_version, "9.9.9");
    ck_assert_str_eq(f.e.updated_at, "2030-01-02T03:04:05Z");

    /* sorted: a:one/baseline, a:one/fast, b:new/baseline, z:other/baseline */
    const pl_expect_entry *x = &f.e.entries[0];
    ck_assert_str_eq(x->variant, "baseline");
    ck_assert_double_eq(x->median_ms, 0.8);
    ck_assert_double_eq(x->rel_noise, 0.003);
    ck_assert_double_eq(x->tolerance, 0.25); /* a reviewed tolerance survives the update */
    ck_assert_str_eq(x->params, "n=2");
    ck_assert_str_eq(x->git_commit, "abc1234");
    ck_assert_str_eq(x->updated_at, "2030-01-02T03:04:05Z");
    x = &f.e.entries[1];
    ck_assert_str_eq(x->variant, "fast");
    ck_assert_double_eq(x->median_ms, 0.5);
    x = &f.e.entries[2];
    ck_assert_str_eq(x->target, "b:new");
    ck_assert_double_eq(x->median_ms, 7.0);
    ck_assert_double_eq(x->tolerance, PL_EXPECT_DEFAULT_TOLERANCE);
    ck_assert_str_eq(x->params, "");
    x = &f.e.entries[3];
    ck_assert_str_eq(x->target, "z:other");
    ck_assert_double_eq(x->median_ms, 3.0);
    ck_assert_str_eq(x->params, "k=2");

    /* and what was written reads back as the same set; the run now meets it */
    char *dir = pl_test_tmpdir("exp_update");
    char *path = pl_path_join(dir, "h200.json");
    char err[512] = "";
    ck_assert_msg(pl_expectations_save(&f.e, path, err, sizeof err) == 0, "%s", err);
    pl_expectations back;
    ck_assert_msg(pl_expectations_load(path, "h200", &back, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(back.n_entries, 4);
    pl_expectations_compare(&back, &f.run, &f.report);
    ck_assert_int_eq(verdict_of(&f.report, "a:one", "baseline"), PL_EXPECT_MET);
    ck_assert_int_eq(verdict_of(&f.report, "b:new", "baseline"), PL_EXPECT_MET);
    ck_assert_int_eq(verdict_of(&f.report, "a:one", "fast"), PL_EXPECT_NEW); /* stored with n=1 */
    pl_expectations_free(&back);
    free(path);
    free(dir);
    fixture_free(&f);
}
END_TEST

START_TEST(update_into_an_empty_set)
{
    fixture f = {0};
    memset(&f.e, 0, sizeof f.e); /* what a missing file gives when no key was known */
    set_provenance(&f.run);
    add_variant(add_target(&f.run, "a:one", NULL), "baseline", PL_STATUS_OK, 1.0, 0.0);
    ck_assert_uint_eq(pl_expectations_update(&f.e, &f.run), 1);
    ck_assert_str_eq(f.e.hardware_key, "h200");
    ck_assert_int_eq(f.e.schema_version, PL_EXPECTATIONS_SCHEMA_VERSION);
    fixture_free(&f);
}
END_TEST

static Suite *expectations_suite(void)
{
    Suite *s = suite_create("expectations");
    TCase *keys = tcase_create("keys");
    tcase_add_test(keys, key_of_single_gpus);
    tcase_add_test(keys, key_of_several_gpus);
    tcase_add_test(keys, key_override_from_environment);
    tcase_add_test(keys, expectations_dir_precedence);
    tcase_add_test(keys, params_canonical_is_sorted);
    suite_add_tcase(s, keys);

    TCase *files = tcase_create("files");
    tcase_add_test(files, save_and_load_round_trip);
    tcase_add_test(files, optional_fields_take_defaults);
    tcase_add_test(files, missing_file_returns_one);
    tcase_add_test(files, syntax_error_has_line_and_column);
    tcase_add_loop_test(files, schema_errors_name_file_place_and_fix, 0,
                        (int)(sizeof schema_cases / sizeof schema_cases[0]));
    tcase_add_test(files, wrong_key_message_says_how_to_fix);
    suite_add_tcase(s, files);

    TCase *verdicts = tcase_create("verdicts");
    tcase_add_test(verdicts, slowdown_beyond_tolerance_regresses);
    tcase_add_test(verdicts, slowdown_regresses_where_it_is_gated);
    tcase_add_test(verdicts, host_timed_variant_elsewhere_is_ungated);
    tcase_add_test(verdicts, same_slowdown_within_huge_noise_is_met);
    tcase_add_test(verdicts, noise_stored_with_the_expectation_counts_too);
    tcase_add_test(verdicts, faster_beyond_threshold_is_improved);
    tcase_add_test(verdicts, changed_params_make_a_new_result);
    tcase_add_test(verdicts, entry_without_params_matches_any);
    tcase_add_test(verdicts, unexpected_result_is_new);
    tcase_add_test(verdicts, failed_skipped_and_untimed_are_missing);
    tcase_add_test(verdicts, verdicts_follow_the_rule_on_random_inputs);
    suite_add_tcase(s, verdicts);

    TCase *update = tcase_create("update");
    tcase_add_test(update, update_merges_and_keeps_the_rest);
    tcase_add_test(update, update_into_an_empty_set);
    tcase_add_test(update, update_records_the_host_of_host_timed_entries);
    suite_add_tcase(s, update);
    return s;
}

int main(void)
{
    return pl_run_suite(expectations_suite());
}
