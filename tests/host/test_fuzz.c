/* Fuzzing every parser of user input, in process (the fuzzer: tests/fuzz.h): option words, numbers with suffixes
 * and parameter values, the arguments of every registered target, target selections, --shapes strings and shapes
 * files, cutlass_profiler CSV, json: provider records, run.json as compare reads it, and expectations files.
 *
 * Each parser must accept its seeds, and on every input either accept it (then what it produced must hold: values
 * within their declared bounds, shapes within the limits, rows of the requested shape, labels that are no paths,
 * and the run or expectations must go through compare or judgement) or refuse it with a one-line message; messages
 * of the parsers outside run.json and expectations must also be printable (control characters and invalid UTF-8
 * escaped). A crash or signal fails the test (each test runs in a child process); in the sanitizer build any ASan,
 * LSan or UBSan report does too. PERFLAB_FUZZ_SEED=N repeats a run, PERFLAB_FUZZ_INPUTS=N sets its size. */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calc/precision.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "comm/job.h"
#include "core/run_compare.h"
#include "core/expectations.h"
#include "core/results_json.h"
#include "core/util.h"
#include "fuzz.h"
#include "labs.h"
#include "perflab/params.h"
#include "perflab/target_registry.h"
#include "report/html.h"
#include "selector/provider_comparison.h"
#include "selector/cutlass.h"
#include "selector/shapes.h"
#include "testutil.h"
#include "xmlcheck.h"

/* ---------------------------------------------------------------- numbers and option words */

static const pl_param_def number_defs[] = {
    {.name = "n", .type = PL_PARAM_INT, .default_value = "1", .min = 1, .max = 1 << 24},
    {.name = "any", .type = PL_PARAM_INT, .default_value = "0"},
    {.name = "lower", .type = PL_PARAM_INT, .default_value = "0", .min = -5},
    {.name = "ms", .type = PL_PARAM_FLOAT, .default_value = "1", .min = 0.01, .max = 1e4},
    {.name = "x", .type = PL_PARAM_FLOAT, .default_value = "1"},
    {.name = "on", .type = PL_PARAM_BOOL, .default_value = "true"},
    {.name = "dtype", .type = PL_PARAM_STRING, .default_value = "bf16", .choices = "bf16|fp16|fp32"},
    {.name = NULL},
};

static int within(const pl_param_def *d, double x)
{
    if (d->min == 0 && d->max == 0)
        return 1;
    return x >= d->min && (!(d->max > d->min) || x <= d->max);
}

static void parse_numbers(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    char err[1024] = "";
    long long v;
    int rc = pl_parse_size(in, &v);
    if (rc != 0)
        pl_snprintf(err, sizeof err, "not a size"); /* pl_parse_size says nothing itself */
    pl_fuzz_verdict(f, in, rc, err);
    for (const pl_param_def *d = number_defs; d->name; d++) {
        long long i = 0;
        double x = 0;
        err[0] = '\0';
        if (!pl_fuzz_verdict(f, in, pl_param_parse_value(d, in, &i, &x, err, sizeof err), err))
            continue;
        if ((d->type == PL_PARAM_INT || d->type == PL_PARAM_FLOAT) && (!isfinite(x) || !within(d, x)))
            pl_fuzz_fail(f, in, "--%s accepted %g outside its bounds", d->name, x);
        if (d->type == PL_PARAM_INT && (double)i != x)
            pl_fuzz_fail(f, in, "--%s: integer %lld and double %g disagree", d->name, i, x);
    }
    size_t *sizes, n;
    err[0] = '\0';
    if (pl_fuzz_verdict(f, in, pl_parse_size_list(in, "--message-sizes", &sizes, &n, err, sizeof err), err)) {
        for (size_t k = 0; k < n; k++)
            if (sizes[k] == 0 || sizes[k] > (size_t)LLONG_MAX)
                pl_fuzz_fail(f, in, "size list accepted %zu", sizes[k]);
        if (n >= 2) { /* a sweep between the first two: counted before it is built */
            size_t lo = sizes[0] < sizes[1] ? sizes[0] : sizes[1], hi = sizes[0] ^ sizes[1] ^ lo, *s;
            const size_t m =
                pl_comm_size_series(lo, hi, 1.0 + (double)(sizes[0] % 7), sizes[1] % 3 ? 0 : lo, PL_COMM_MAX_SIZES, &s);
            if (m > PL_COMM_MAX_SIZES ? s != NULL : (m == 0 || s[0] != lo || s[m - 1] > hi))
                pl_fuzz_fail(f, in, "size series %zu..%zu: %zu sizes", lo, hi, m);
            free(s);
        }
        free(sizes);
    }
    double *xs;
    err[0] = '\0';
    if (pl_fuzz_verdict(f, in, pl_parse_double_list(in, "--skews", 1.0, 4.0, &xs, &n, err, sizeof err), err)) {
        for (size_t k = 0; k < n; k++)
            if (!(xs[k] >= 1.0 && xs[k] <= 4.0))
                pl_fuzz_fail(f, in, "--skews accepted %g", xs[k]);
        free(xs);
    }
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_numbers_with_suffixes)
{
    pl_fuzz_corpus c = {0};
    static const char *const seeds[] = {"4096",         "64m",   "1g",  "48k",  "2M",   "64MiB",
                                        "12",           "3",     "0.5", "1.25", "true", "48k,192k,768k,2m",
                                        "1.0,1.25,1.5", "1,2,4", "bf16"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        pl_fuzz_add_str(&c, seeds[i]);
    pl_fuzz f;
    pl_fuzz_begin(&f, "numbers", 1);
    /* seeds need not all parse as every kind of number: count them as mutations */
    for (int i = 0, n = pl_fuzz_inputs(); i < n; i++) {
        size_t len;
        char *in = i < (int)c.n ? pl_strdup(c.items[i].data) : pl_fuzz_mutate(&f.rng, &c, &len, 0);
        parse_numbers(&f, in, strlen(in), NULL);
        free(in);
    }
    pl_fuzz_end(&f);
    pl_fuzz_corpus_free(&c);
}
END_TEST

/* An option table with every kind, fed words split from a mutated command line. */
static void parse_options(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    int flag = 0, num = 0, bounded = 0;
    double x = 0;
    const char *str = NULL;
    pl_strlist list = {0}, pos = {0};
    const pl_option opts[] = {
        {"flag", 'f', PL_OPT_FLAG, &flag, NULL, "", 0, 0},
        {"number", 'n', PL_OPT_INT, &num, "N", "", 0, 0},
        {"iterations", 0, PL_OPT_INT, &bounded, "N", "", 1, 1e7},
        {"max-noise", 0, PL_OPT_DOUBLE, &x, "PCT", "", 0.001, 100},
        {"targets", 't', PL_OPT_STRING, &str, "LIST", "", 0, 0},
        {"target-extra-arg", 0, PL_OPT_LIST, &list, "X", "", 0, 0},
        {0},
    };
    char *copy = pl_strdup(in), *argv[256], *save = NULL;
    int argc = 0;
    for (char *w = strtok_r(copy, " ", &save); w && argc < 256; w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    char err[1024] = "";
    if (pl_fuzz_verdict(f, in, pl_options_parse("fuzz", opts, argc, argv, &pos, err, sizeof err), err)) {
        if (bounded != 0 && (bounded < 1 || bounded > 10000000))
            pl_fuzz_fail(f, in, "--iterations accepted %d", bounded);
        if (x != 0 && !(x >= 0.001 && x <= 100))
            pl_fuzz_fail(f, in, "--max-noise accepted %g", x);
    } else if (pos.items || list.items) {
        pl_fuzz_fail(f, in, "a refused parse left values to free");
    }
    pl_strlist_free(&pos);
    pl_strlist_free(&list);
    free(copy);
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_option_words)
{
    static const char *const seeds[] = {"--targets memory,gemm:bf16 --iterations 20 --max-noise 2.5 -f",
                                        "a b --number=-7 --target-extra-arg 'memory:coalescing=--n 16m' -- --flag",
                                        "-t selftest:sleep -n 3 --target-extra-arg x=1 --target-extra-arg y=2", NULL};
    pl_fuzz_parser("options", 1, seeds, 0, parse_options, NULL);
}
END_TEST

/* ---------------------------------------------------------------- targets */

/* Every declared value within its declared bounds and choices. */
static void check_params(pl_fuzz *f, const char *in, const pl_params *p)
{
    for (size_t i = 0; i < p->count; i++) {
        const pl_param_value *v = &p->values[i];
        const pl_param_def *d = v->def;
        if ((d->type == PL_PARAM_INT || d->type == PL_PARAM_FLOAT) && (!isfinite(v->f) || !within(d, v->f)))
            pl_fuzz_fail(f, in, "--%s holds %g, outside its bounds", d->name, v->f);
        if (d->type == PL_PARAM_BOOL && v->i != 0 && v->i != 1)
            pl_fuzz_fail(f, in, "--%s holds %lld for a boolean", d->name, v->i);
        if (!v->text)
            pl_fuzz_fail(f, in, "--%s has no text", d->name);
    }
}

/* The arguments a user could give a target: every parameter at its default, in both spellings. */
static void target_seeds(const pl_target *t, pl_fuzz_corpus *c)
{
    pl_buf a = {0}, b = {0};
    pl_buf_appendn(&a, "", 0);
    pl_buf_appendn(&b, "", 0);
    for (const pl_param_def *d = t->params; d && d->name; d++) {
        const char *v = d->small_value ? d->small_value : d->default_value ? d->default_value : "";
        pl_buf_printf(&a, "%s--%s %s", a.len ? " " : "", d->name, *v ? v : "''");
        pl_buf_printf(&b, "%s--%s='%s'", b.len ? "  " : "", d->name, v);
    }
    pl_fuzz_add(c, a.data, a.len);
    pl_fuzz_add(c, b.data, b.len);
    pl_buf_free(&a);
    pl_buf_free(&b);
}

START_TEST(fuzz_target_arguments)
{
    pl_labs_register_all();
    const size_t nt = pl_registry_count();
    ck_assert(nt > 0);
    pl_fuzz_corpus *seeds = pl_xcalloc(nt, sizeof *seeds);
    for (size_t i = 0; i < nt; i++)
        target_seeds(pl_registry_at(i), &seeds[i]);
    pl_fuzz f;
    pl_fuzz_begin(&f, "target-arguments", 1);
    char name[256], err[1024];
    for (size_t i = 0; i < nt; i++) /* the seeds parse, small or not */
        for (size_t k = 0; k < seeds[i].n; k++)
            for (int small = 0; small < 2; small++) {
                const pl_target *t = pl_registry_at(i);
                pl_params p;
                ck_assert_msg(pl_params_init(&p, t->params, pl_target_full_name(t, name, sizeof name),
                                             seeds[i].items[k].data, small, err, sizeof err) == 0,
                              "%s '%s': %s", name, seeds[i].items[k].data, err);
                pl_params_free(&p);
            }
    for (int i = 0, n = pl_fuzz_inputs(); i < n; i++) {
        const size_t ti = pl_fuzz_below(&f.rng, nt);
        const pl_target *t = pl_registry_at(ti);
        size_t len;
        char *in = pl_fuzz_mutate(&f.rng, &seeds[ti], &len, 0);
        pl_params p;
        err[0] = '\0';
        if (pl_fuzz_verdict(&f, in,
                            pl_params_init(&p, t->params, pl_target_full_name(t, name, sizeof name), in,
                                           (int)pl_rng_below(&f.rng, 2), err, sizeof err),
                            err)) {
            check_params(&f, in, &p);
            pl_params_free(&p);
        }
        free(in);
    }
    pl_fuzz_end(&f);
    for (size_t i = 0; i < nt; i++)
        pl_fuzz_corpus_free(&seeds[i]);
    free(seeds);
}
END_TEST

static void parse_selection(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_target **sel;
    size_t n;
    char err[1024] = "";
    if (pl_fuzz_verdict(f, in, pl_registry_select(in, &sel, &n, err, sizeof err), err)) {
        if (n == 0 || n > pl_registry_count())
            pl_fuzz_fail(f, in, "%zu targets selected", n);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (sel[i] == sel[j])
                    pl_fuzz_fail(f, in, "a target selected twice");
        free(sel);
    }
    (void)len;
    (void)ctx;
}

START_TEST(fuzz_target_selections)
{
    pl_labs_register_all();
    static const char *const seeds[] = {"memory,gemm:bf16", "all", "selftest:sleep, selftest:noisy,selftest",
                                        "memory:coalescing,memory:vectorized_copy,launch:cuda_graphs", NULL};
    pl_fuzz_parser("target-selections", 1, seeds, 0, parse_selection, NULL);
}
END_TEST

/* ---------------------------------------------------------------- shapes */

static void check_shapes(pl_fuzz *f, const char *in, const pl_gemm_shape_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const pl_gemm_shape *s = &l->items[i];
        if (s->m < 1 || s->n < 1 || s->k < 1 || s->m > PL_GEMM_DIM_MAX || s->n > PL_GEMM_DIM_MAX ||
            s->k > PL_GEMM_DIM_MAX || (double)s->m * (double)s->n > 4294967295.0)
            pl_fuzz_fail(f, in, "shape %s is %lldx%lldx%lld", s->name, s->m, s->n, s->k);
        if (!memchr(s->name, '\0', sizeof s->name) || !*s->name)
            pl_fuzz_fail(f, in, "a shape without a name");
    }
}

static void parse_shapes(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    pl_gemm_shape_list l = {0};
    char err[1024] = "";
    int rc = ctx ? (pl_fuzz_write_input(f, in, len), pl_gemm_shapes_load_file(f->path, &l, err, sizeof err))
                 : pl_gemm_shapes_parse(in, &l, err, sizeof err);
    if (pl_fuzz_verdict(f, in, rc, err))
        check_shapes(f, in, &l);
    pl_gemm_shape_list_free(&l);
}

START_TEST(fuzz_shapes_strings)
{
    static const char *const seeds[] = {"4096x4096x4096,kv_proj_m4096_n4096_k4096", "default",
                                        "prefill, decode,16X28672X8192", "1x1x1,1048576x4095x1,77x1000x3", NULL};
    pl_fuzz_parser("shapes-strings", 1, seeds, 0, parse_shapes, NULL);
}
END_TEST

START_TEST(fuzz_shapes_files)
{
    static const char *const seeds[] = {"# projections\nmy_proj 4096 4096 4096\nup 8192x28672x4096\n\n4096x2048x1024\n"
                                        "decode_m16_n4096_k4096   # a built-in\n",
                                        "a.b-c_d 1 1 1\r\ntall 1048576 16 64\r\n", NULL};
    static int from_file = 1;
    pl_fuzz_parser("shapes-files", 1, seeds, 1, parse_shapes, &from_file);
}
END_TEST

/* ---------------------------------------------------------------- cutlass_profiler CSV */

static void parse_cutlass(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_gemm_shape *shape = ctx;
    pl_gemm_record_list l = {0};
    char err[1024] = "";
    if (pl_fuzz_verdict(f, in, pl_cutlass_csv_parse(in, "fuzz.csv", shape, "bf16", "nk", &l, err, sizeof err), err))
        for (size_t i = 0; i < l.n; i++) {
            const pl_gemm_record *r = &l.items[i];
            if (r->m != shape->m || r->n != shape->n || r->k != shape->k)
                pl_fuzz_fail(f, in, "a row for %lldx%lldx%lld accepted", r->m, r->n, r->k);
            if (r->status == PL_GEMM_OK && !(r->median_ms > 0 && isfinite(r->median_ms)))
                pl_fuzz_fail(f, in, "an ok row with Runtime %g", r->median_ms);
        }
    pl_gemm_record_list_free(&l);
    (void)len;
}

START_TEST(fuzz_cutlass_csv)
{
    static const char *const seeds[] = {
        "Problem,Provider,OperationKind,Operation,Disposition,Status,gemm_kind,m,n,k,A,B,C,D,alpha,beta,cta_m,cta_n,"
        "cta_k,cluster_m,cluster_n,cluster_k,stages,Bytes,Flops,Flops/Byte,Runtime,GB/s,GFLOPs\n"
        "1,CUTLASS,gemm,cutlass3x_sm90_tensorop_gemm_bf16_128x256x64_2x1x1_0_tnn_align8_warpspecialized,passed,success,"
        "universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,bf16:row,1,0,128,256,64,2,1,1,4,100663296,"
        "137438953472,1365,0.1802,558.8,762710\n"
        "1,CUTLASS,gemm,cutlass3x_sm90_slow,incorrect,success,universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,"
        "bf16:row,1,0,64,64,64,1,1,1,7,100663296,137438953472,1365,0.1,558.8,999999\n"
        "\n"
        "Problem,Provider,Disposition,Status,Operation,Runtime,GFLOPs,m,n,k\n"
        "1,CUTLASS,passed,success,\"cutlass3x_other,\"\"quoted\"\"\",0.1760,780917,4096,4096,4096\n",
        "Problem,Operation,Disposition,Status,m,n,k,Runtime\r\n1,k,passed,success,4096,4096,4096,0.2\r\n", NULL};
    const pl_gemm_shape shape = {"big", 4096, 4096, 4096};
    pl_fuzz_parser("cutlass-csv", 1, seeds, 0, parse_cutlass, (void *)&shape);
}
END_TEST

/* ---------------------------------------------------------------- json: provider records */

static void parse_records(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    pl_fuzz_write_input(f, in, len);
    pl_gemm_record_list l = {0};
    char err[1024] = "";
    pl_fuzz_verdict(f, in, pl_gemm_records_load(f->path, &l, err, sizeof err), err);
    pl_gemm_record_list_free(&l);
    /* the same file as a provider: its label names a column and a file */
    char *spec = pl_strfmt("json:%s", f->path);
    pl_gemm_provider *p;
    size_t n;
    err[0] = '\0';
    if (pl_fuzz_verdict(f, in, pl_gemm_providers_parse(spec, &p, &n, err, sizeof err), err)) {
        const char *label = p[0].label;
        if (!*label || strchr(label, '/') || label[0] == '.' || strlen(label) > 64 || strcmp(label, "comparison") == 0)
            pl_fuzz_fail(f, in, "provider label '%s'", PL_ESC(label));
        for (const char *c = label; *c; c++)
            if (!isalnum((unsigned char)*c) && !strchr("_-.+", *c))
                pl_fuzz_fail(f, in, "provider label '%s'", PL_ESC(label));
        pl_gemm_providers_free(p, n);
    }
    free(spec);
    (void)ctx;
}

START_TEST(fuzz_json_provider_records)
{
    static const char *const seeds[] = {
        "{\"schema\": \"perflab.gemm.records/1\", \"provider\": \"triton\", \"records\": [\n"
        "  {\"provider\": \"triton\", \"shape\": \"kv\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\", "
        "\"layout\": \"nk\", \"kernel\": \"matmul_128x128\", \"config\": {\"BLOCK_M\": 128, \"num_warps\": 8}, "
        "\"median_ms\": 0.21, \"tflops\": 650.5, \"noise\": 0.01, \"samples\": 50, \"verified\": true, "
        "\"rel_l2_error\": 0.002, \"status\": \"ok\", \"reason\": null},\n"
        "  {\"provider\": \"triton\", \"m\": 16, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\", \"verified\": false, "
        "\"status\": \"failed\", \"reason\": \"wrong result\"}\n]}\n",
        "[{\"provider\": \"cublaslt\", \"m\": 1, \"n\": 2, \"k\": 3, \"dtype\": \"fp8\", \"median_ms\": 1e-3, "
        "\"verified\": true}]",
        NULL};
    pl_fuzz_parser("json-records", 1, seeds, 1, parse_records, NULL);
}
END_TEST

/* ---------------------------------------------------------------- run.json and expectations */

/* The seeds of the file parsers, written by perflab's own writers so that they follow its formats: a full run (the
 * test helpers' pl_test_make_run), the same run without provenance or expectations, and the expectations file made
 * from the run. The run is also the other side of every compare and judgement. */
typedef struct seeds {
    char *dir;
    pl_run run;
    pl_fuzz_corpus runs, exps;
} seeds;

static void make_seeds(seeds *s)
{
    memset(s, 0, sizeof *s);
    s->dir = pl_test_tmpdir("fuzz-seeds");
    pl_run *r = &s->run;
    pl_test_make_run(r);
    char err[1024], *path = pl_strfmt("%s/run.json", s->dir);
    ck_assert_msg(pl_test_save_run(r, path, err, sizeof err) == 0, "%s", err);
    pl_fuzz_add_file(&s->runs, path);
    pl_run bare;
    ck_assert_msg(pl_run_load(path, &bare, err, sizeof err) == 0, "%s", err);
    pl_provenance_free(&bare.prov);
    pl_expect_report_free(&bare.expectations);
    ck_assert_msg(pl_test_save_run(&bare, path, err, sizeof err) == 0, "%s", err);
    pl_run_free(&bare);
    pl_fuzz_add_file(&s->runs, path);
    free(path);

    pl_expectations x;
    memset(&x, 0, sizeof x);
    x.schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
    x.hardware_key = pl_strdup("fuzz");
    ck_assert(pl_expectations_update(&x, r) > 0);
    path = pl_strfmt("%s/fuzz.json", s->dir);
    ck_assert_msg(pl_expectations_save(&x, path, err, sizeof err) == 0, "%s", err);
    pl_expectations_free(&x);
    pl_fuzz_add_file(&s->exps, path);
    free(path);
}

static void free_seeds(seeds *s)
{
    pl_run_free(&s->run);
    pl_fuzz_corpus_free(&s->runs);
    pl_fuzz_corpus_free(&s->exps);
    free(s->dir);
}

static void parse_run_json(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_run *other = ctx;
    pl_fuzz_write_input(f, in, len);
    pl_run run;
    char err[1024] = "";
    if (pl_fuzz_verdict(f, in, pl_run_load(f->path, &run, err, sizeof err), err)) {
        pl_compare_result c;
        pl_compare_runs(other, &run, 0.05, 1, &c);
        pl_compare_result_free(&c);
        pl_run_free(&run);
    }
}

START_TEST(fuzz_run_json_for_compare)
{
    seeds sd;
    make_seeds(&sd);
    pl_fuzz f;
    pl_fuzz_begin(&f, "run-json", 0);
    pl_fuzz_run(&f, &sd.runs, 1, parse_run_json, &sd.run);
    pl_fuzz_end(&f);
    free_seeds(&sd);
}
END_TEST

static void parse_expectations(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    const pl_run *run = ctx;
    pl_fuzz_write_input(f, in, len);
    pl_expectations e;
    char err[1024] = "";
    const int rc = pl_expectations_load(f->path, "fuzz", &e, err, sizeof err);
    if (rc == 1)
        pl_fuzz_fail(f, in, "a file that exists was reported missing");
    if (pl_fuzz_verdict(f, in, rc, err)) {
        pl_expect_report r;
        memset(&r, 0, sizeof r);
        pl_expectations_compare(&e, run, &r);
        pl_expect_report_free(&r);
    }
    if (rc != -1)
        pl_expectations_free(&e);
}

START_TEST(fuzz_expectations_files)
{
    seeds sd;
    make_seeds(&sd);
    pl_fuzz f;
    pl_fuzz_begin(&f, "expectations", 0);
    pl_fuzz_run(&f, &sd.exps, 1, parse_expectations, &sd.run);
    pl_fuzz_end(&f);
    free_seeds(&sd);
}
END_TEST

/* ---------------------------------------------------------------- expectations written, then read */

/* What `expectations update` writes from a run the loader reads back: the writer refuses what the loader would
 * (one validator), and a file it wrote always loads with the same entries. */
static void round_trip_expectations(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    (void)ctx;
    pl_fuzz_write_input(f, in, len);
    pl_run run;
    char err[1024] = "";
    if (pl_run_load(f->path, &run, err, sizeof err) != 0)
        return; /* run.json's own parser is fuzzed above */
    pl_expectations e;
    memset(&e, 0, sizeof e);
    e.schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
    e.hardware_key = pl_strdup("fuzz");
    pl_expectations_update(&e, &run);
    char *out = pl_strfmt("%s.expect.json", f->path);
    err[0] = '\0';
    if (pl_fuzz_verdict(f, in, pl_expectations_save(&e, out, err, sizeof err), err)) {
        pl_expectations back;
        char lerr[1024] = "";
        if (pl_expectations_load(out, "fuzz", &back, lerr, sizeof lerr) != 0)
            pl_fuzz_fail(f, in, "the writer wrote a file the loader refuses: %s", lerr);
        else {
            if (back.n_entries != e.n_entries)
                pl_fuzz_fail(f, in, "%zu entries written, %zu read back", e.n_entries, back.n_entries);
            pl_expectations_free(&back);
        }
    }
    unlink(out);
    free(out);
    pl_expectations_free(&e);
    pl_run_free(&run);
}

/* Seeds the writer accepts and refuses: the full run and the same run with a target name the loader refuses. */
START_TEST(fuzz_expectations_writer)
{
    seeds sd;
    make_seeds(&sd);
    pl_fuzz f;
    pl_fuzz_begin(&f, "expectations-writer", 1);
    /* the seeds: a run the writer stores, and one whose target name it must refuse */
    pl_fuzz_corpus c = {0};
    pl_fuzz_add(&c, sd.runs.items[0].data, sd.runs.items[0].len);
    char *bad = pl_strdup(sd.runs.items[0].data);
    for (char *name = strstr(bad, "memory:coalescing"); name; name = strstr(name, "memory:coalescing"))
        name[6] = '_'; /* "memory_coalescing": no group */
    pl_fuzz_add(&c, bad, strlen(bad));
    free(bad);
    for (int i = 0, n = pl_fuzz_inputs(); i < n; i++) {
        size_t len;
        char *in = i < (int)c.n ? pl_strdup(c.items[i].data) : pl_fuzz_mutate(&f.rng, &c, &len, 1);
        round_trip_expectations(&f, in, i < (int)c.n ? strlen(in) : len, NULL);
        free(in);
    }
    ck_assert_msg(f.accepted > 0 && f.refused > 0, "the writer never both wrote and refused");
    pl_fuzz_end(&f);
    pl_fuzz_corpus_free(&c);
    free_seeds(&sd);
}
END_TEST

/* ---------------------------------------------------------------- the report's readers */

typedef struct report_kind {
    const char *file; /* the name the document is written under */
} report_kind;

/* Read as perflab report reads a folder's document; when accepted, the page it draws must be well-formed XML
 * with no NaN or infinity in an attribute. */
static void parse_report_input(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    const report_kind *k = ctx;
    char *path = pl_path_join(f->path, k->file);
    FILE *out = fopen(path, "wb");
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(fwrite(in, 1, len, out), len);
    fclose(out);
    pl_report_input ri;
    char err[1024] = "";
    if (pl_fuzz_verdict(f, in, pl_report_input_load(path, &ri, err, sizeof err), err)) {
        char *html = pl_html_report(&ri, 1, "2026-11-28T00:00:00Z"), why[512];
        if (pl_xml_check(html, NULL, why, sizeof why) != 0)
            pl_fuzz_fail(f, in, "report.html: %s", why);
        free(html);
        pl_report_input_free(&ri);
    }
    free(path);
}

static void add_compact(pl_fuzz_corpus *c, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(strlen(text) < PL_FUZZ_MAX_INPUT, "a seed of %zu bytes", strlen(text));
    pl_fuzz_add_str(c, text);
    free(text);
    json_decref(doc);
}

static json_t *fixture(const char *rel)
{
    char err[512];
    char *path = pl_strfmt("%s/docs/results/%s", PERFLAB_SOURCE_DIR, rel);
    json_t *j = pl_json_load_file(path, err, sizeof err);
    ck_assert_msg(j, "%s", err);
    free(path);
    return j;
}

/* The MoE report of two H200s, cut to fit a fuzz input: its first sizes and skews and their points, without the
 * raw samples. */
static json_t *small_moe(void)
{
    json_t *doc = fixture("2x_h200/moe_slo_report.json"), *pts = json_object_get(doc, "points"), *keep = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(pts, i, p)
    {
        if (json_array_size(keep) >= 4)
            break;
        json_object_del(p, "samples_ms");
        json_object_del(p, "ranks_reported");
        json_array_append(keep, p);
    }
    json_object_set_new(doc, "points", keep);
    json_object_del(doc, "ranks");
    return doc;
}

static json_t *small_comm(void)
{
    json_t *pts = json_array();
    const char *colls[] = {"allreduce", "alltoall"};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 3; k++)
            json_array_append_new(pts, json_pack("{s:s, s:s, s:b, s:I, s:f, s:{s:f, s:f}, s:s}", "collective", colls[c],
                                                 "dtype", "bf16", "in_place", c, "size_bytes", (json_int_t)65536 << k,
                                                 "busbw_gbps", 100.0 + 40 * k, "latency_ms", "p50", 0.01 * (k + 1),
                                                 "p99", 0.012 * (k + 1), "status", "ok"));
    return json_pack("{s:i, s:s, s:{s:s, s:i}, s:o}", "schema_version", 1, "kind", "comm", "settings", "launch",
                     "threads", "ranks", 8, "points", pts);
}

static void fuzz_report_kind(const char *name, const char *file, json_t *doc, json_t *another)
{
    pl_fuzz_corpus c = {0};
    add_compact(&c, doc);
    if (another)
        add_compact(&c, another);
    report_kind k = {file};
    pl_fuzz f;
    pl_fuzz_begin(&f, name, 1);
    /* file-based: f.path is a folder here, the document goes in it under its own name */
    char *dir = pl_strfmt("%s.d", f.path);
    char err[256];
    ck_assert_int_eq(pl_mkdir_p(dir, err, sizeof err), 0);
    free(f.path);
    f.path = dir;
    pl_fuzz_run(&f, &c, 1, parse_report_input, &k);
    pl_fuzz_end(&f);
    pl_fuzz_corpus_free(&c);
}

START_TEST(fuzz_report_gemm_comparison)
{
    fuzz_report_kind("report-comparison", "comparison.json", fixture("h200-report/gemm-4096/comparison.json"), NULL);
}
END_TEST

START_TEST(fuzz_report_moe)
{
    fuzz_report_kind("report-moe", "report.json", small_moe(), NULL);
}
END_TEST

START_TEST(fuzz_report_comm)
{
    fuzz_report_kind("report-comm", "report.json", small_comm(), NULL);
}
END_TEST

START_TEST(fuzz_report_profile)
{
    fuzz_report_kind("report-profile", "profile.json", fixture("h200-report/profile-coalescing/profile.json"), NULL);
}
END_TEST

START_TEST(fuzz_report_run)
{
    pl_run r;
    pl_test_make_run(&r);
    json_t *j = pl_run_to_json(&r);
    pl_run_free(&r);
    /* and an H200 roofline run (ncu counters, the ceilings it recorded), its raw samples cut to five a variant */
    json_t *roof = fixture("h200-report/run-memory-roofline/run.json"), *t, *v;
    size_t i, k;
    json_array_foreach(json_object_get(roof, "targets"), i, t)
    {
        json_array_foreach(json_object_get(t, "variants"), k, v)
        {
            json_t *samples = json_object_get(v, "samples_ms");
            while (json_array_size(samples) > 5)
                json_array_remove(samples, json_array_size(samples) - 1);
        }
    }
    fuzz_report_kind("report-run", "run.json", j, roof);
}
END_TEST

/* ---------------------------------------------------------------- calc flags */

/* A calculator's command line run in this process, its stdout and stderr caught in files: exit 0 (with --json,
 * one JSON document on stdout) or 2 with one printable line on stderr. Precision runs are kept short
 * (pl_prec_limit_work): a larger one is refused like any other. */
typedef struct calc_io {
    int out, err, saved_out, saved_err;
} calc_io;

static char *drain(int fd)
{
    const off_t n = lseek(fd, 0, SEEK_END);
    char *text = pl_xcalloc((size_t)n + 1, 1);
    ck_assert_int_eq(pread(fd, text, (size_t)n, 0), n);
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    lseek(fd, 0, SEEK_SET);
    return text;
}

static void parse_calc(pl_fuzz *f, const char *in, size_t len, void *ctx)
{
    calc_io *io = ctx;
    char *copy = pl_strdup(in), *argv[64], *save = NULL;
    int argc = 0;
    /* JSON is due when --json is an argument of its own (a mutation may glue it to a value: "bf16--json") and
     * neither --help (-h) nor --list-models is */
    int json_due = 0, other_output = 0;
    for (char *w = strtok_r(copy, " ", &save); w && argc < 64; w = strtok_r(NULL, " ", &save)) {
        argv[argc++] = w;
        json_due |= strcmp(w, "--json") == 0;
        other_output |= strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0 || strcmp(w, "--list-models") == 0;
    }
    fflush(stdout);
    fflush(stderr);
    dup2(io->out, 1);
    dup2(io->err, 2);
    const int rc = pl_cmd_calc(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(io->saved_out, 1);
    dup2(io->saved_err, 2);
    char *out = drain(io->out), *err = drain(io->err);
    if (rc != 0 && rc != 2)
        pl_fuzz_fail(f, in, "exit %d", rc);
    /* the message without its "perflab calc ...: " prefix and final newline, as the verdict wants it */
    const size_t n = strlen(err);
    if (n && err[n - 1] == '\n')
        err[n - 1] = '\0';
    if (pl_fuzz_verdict(f, in, rc == 0 ? 0 : -1, err) && json_due && !other_output) {
        json_error_t je;
        json_t *j = json_loads(out, 0, &je);
        if (!j)
            pl_fuzz_fail(f, in, "--json printed no JSON: %s", je.text);
        json_decref(j);
    }
    free(out);
    free(err);
    free(copy);
    (void)len;
}

START_TEST(fuzz_calc_flags)
{
    static const char *const lines[] = {
        "precision --op softmax --shape 8x64 --json",
        "precision --op gemm --shape 16x16x64 --dtypes fp8_e4m3,bf16 --block 32 --input-scale 4 --seed 3",
        "precision --op attention --shape 32x16 --json",
        "precision --op norm --shape 4x128",
        "kv-cache --layers 80 --hidden 8192 --tokens 4096 --batch 8 --dtype fp8 --gpu-mem-gb 192 "
        "--kv-overhead-frac 0.10 --reserve-activations-gb 40 --json",
        "kv-cache --model llama-3.1-8b --tokens 8192 --page-tokens 16 --gpu-mem-gb 80",
        "cost-per-token --avg-power 800 --throughput 1500 --electricity-cost 0.16 --pue 1.5 --gpu-hour-cost 2.5 --json",
        "cost-per-token --avg-power 350 --throughput 20000",
        NULL};
    pl_prec_limit_work(1 << 16);
    char *dir = pl_test_tmpdir("fuzz-calc");
    char *po = pl_path_join(dir, "out"), *pe = pl_path_join(dir, "err");
    calc_io io = {open(po, O_RDWR | O_CREAT | O_TRUNC, 0644), open(pe, O_RDWR | O_CREAT | O_TRUNC, 0644), dup(1),
                  dup(2)};
    ck_assert(io.out >= 0 && io.err >= 0 && io.saved_out >= 0 && io.saved_err >= 0);
    pl_fuzz_parser("calc-flags", 1, lines, 0, parse_calc, &io);
    close(io.out);
    close(io.err);
    close(io.saved_out);
    close(io.saved_err);
    free(po);
    free(pe);
    free(dir);
    pl_prec_limit_work(0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("parsers");
    tcase_set_timeout(tc, 300); /* a few seconds each; a hang is a failure too */
    tcase_add_test(tc, fuzz_numbers_with_suffixes);
    tcase_add_test(tc, fuzz_option_words);
    tcase_add_test(tc, fuzz_target_arguments);
    tcase_add_test(tc, fuzz_target_selections);
    tcase_add_test(tc, fuzz_shapes_strings);
    tcase_add_test(tc, fuzz_shapes_files);
    tcase_add_test(tc, fuzz_cutlass_csv);
    tcase_add_test(tc, fuzz_json_provider_records);
    tcase_add_test(tc, fuzz_run_json_for_compare);
    tcase_add_test(tc, fuzz_expectations_files);
    tcase_add_test(tc, fuzz_expectations_writer);
    tcase_add_test(tc, fuzz_report_gemm_comparison);
    tcase_add_test(tc, fuzz_report_moe);
    tcase_add_test(tc, fuzz_report_comm);
    tcase_add_test(tc, fuzz_report_profile);
    tcase_add_test(tc, fuzz_report_run);
    tcase_add_test(tc, fuzz_calc_flags);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
