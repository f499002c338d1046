/* perflab gemm: the kernel selector's command line. It parses and checks the options, hands the work to
 * pl_gemm_select_run (src/selector/select.c) and prints the table or comparison.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/results_json.h"
#include "core/util.h"
#include "selector/gemm_report.h"
#include "selector/provider_comparison.h"
#include "selector/kernel_list.h"
#include "selector/select.h"
#include "cli/timing_options.h"

#define VERB "gemm"

typedef struct gemm_args {
    const char *shapes, *shapes_file, *providers, *dtype, *layout, *artifacts_dir;
    const char *tune_file;
    int max_algos, json, quiet, help, list_shapes, list_kernels, rounds, tune;
    double timeout_s, budget_s;
    pl_timing_args timing;
} gemm_args;

static void defaults(gemm_args *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = "bf16";
    a->layout = "nk";
    a->artifacts_dir = "artifacts";
    a->max_algos = 8;
    a->rounds = 0; /* not given: 5 interleaved rounds (fewer where --iterations is smaller) */
    a->timeout_s = 900;
    /* A shape's configurations (cuBLASLt's algorithms and perflab's kernels, ~30) share 2 s of timing: 9 shapes
     * timed by --min-time-s/--max-time-s took 3 minutes, the `wide` group with --rounds 3 over 400 s. */
    a->budget_s = 2.0;
    pl_timing_args_defaults(&a->timing);
    a->timing.mode = "cold"; /* a GEMM in a model reads its weights from HBM, not from a warm L2 */
    a->timing.min_time_s = 0.1;
    a->timing.max_time_s = 1.0;
    a->timing.throttle_pct = 50; /* dense GEMMs run at the power limit, with the SM clock near 70% of its maximum */
}

static void usage(const pl_option *opts)
{
    printf("usage: perflab gemm [--shapes NAME|MxNxK|random:N[:SEED],...] [--shapes-file FILE] [--providers LIST] "
           "[options]\n\n"
           "Picks the fastest GEMM per shape: every configuration of each provider is verified against a\n"
           "reference (cuBLAS with fp32 accumulation, or float64 on the host for small shapes) and timed through\n"
           "the harness (cold L2 by default; operands rotated over more than 3x the L2 for small shapes).\n"
           "D = A·B, A M×K row-major, B N×K (--layout nk, linear-layer weights) or K×N (kn).\n\n"
           "random:N[:SEED] draws N shapes (1-%d) no table was tuned to, the same for a seed on every machine\n"
           "(splitmix64; integer arithmetic): M = floor(2^x), x uniform in [0, 14] in steps of 2^-16 (1-16384);\n"
           "N and K = floor(2^x), x uniform in [8, 16] (256-65536), each with probability 1/4 a multiple of 8\n"
           "that is none of 64, else a multiple of 64. Without SEED a fresh one comes from /dev/urandom; the seed\n"
           "is printed on stderr and stated in comparison.json (settings.random_shapes) and summary.md. The\n"
           "layout is --layout's: run the same seed with --layout nk and kn for both (docs/gemm.md).\n\n"
           "providers: cublas (default algorithm), cublaslt (every heuristic algorithm up to --max-algos),\n"
           "perflab (every native kernel configuration that takes the shape), cutlass (cutlass_profiler named by\n"
           "$CUTLASS_PROFILER_BIN), json:FILE (records made elsewhere, in perflab's schema).\n"
           "Writes artifacts/gemm-<run_id>/{<provider>.json,comparison.json,summary.md,logs/}.\n\noptions:\n",
           PL_GEMM_MAX_SHAPES);
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 every (shape, provider) has a verified record; 1 some have none (listed as missing,\n"
           "failed or unsupported); 2 bad usage or input; 3 no usable GPU for a GPU provider; 130 interrupted.\n");
}

/* The native kernels, from the registry (selector/kernel_list.c): a table, or the JSON array. */
static int list_kernels(int fp8, int as_json)
{
    json_t *list = pl_gemm_kernel_list(fp8);
    if (as_json) {
        char *s = json_dumps(list, JSON_INDENT(2));
        printf("%s\n", s ? s : "[]");
        free(s);
        json_decref(list);
        return PL_EXIT_OK;
    }
    pl_table *t = pl_table_new(
        8, (const char *const[]){"kernel", "rung", "tile", ">stages", ">cluster", ">threads", "flags", "what it adds"});
    size_t i;
    json_t *k;
    json_array_foreach(list, i, k)
    {
        json_t *tile = json_object_get(k, "tile"), *flags = json_object_get(k, "flags");
        char fl[160] = "";
        size_t j;
        json_t *f;
        json_array_foreach(flags, j, f)
        {
            const size_t len = strlen(fl);
            pl_snprintf(fl + len, sizeof fl - len, "%s%s", len ? "," : "", json_string_value(f));
        }
        const long long cluster = json_integer_value(json_object_get(k, "cluster"));
        const size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", json_string_value(json_object_get(k, "name")));
        pl_table_set(t, row, 1, "%s", json_string_value(json_object_get(k, "rung")));
        pl_table_set(t, row, 2, "%lldx%lldx%lld", json_integer_value(json_array_get(tile, 0)),
                     json_integer_value(json_array_get(tile, 1)), json_integer_value(json_array_get(tile, 2)));
        pl_table_set(t, row, 3, "%lld", json_integer_value(json_object_get(k, "stages")));
        pl_table_set(t, row, 4, "%s", cluster ? "" : "split");
        if (cluster)
            pl_table_set(t, row, 4, "%lld", cluster);
        pl_table_set(t, row, 5, "%lld", json_integer_value(json_object_get(k, "threads")));
        pl_table_set(t, row, 6, "%s", fl[0] ? fl : "-");
        pl_table_set(t, row, 7, "%s", json_string_value(json_object_get(k, "technique")));
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("%zu %s kernels; teaching and less_accurate kernels are left out of the search; a split-K kernel's "
           "cluster is its K split, chosen at launch\n",
           json_array_size(list), fp8 ? "fp8" : "bf16");
    json_decref(list);
    return PL_EXIT_OK;
}

static int list_shapes(void)
{
    size_t n, ng;
    const pl_gemm_builtin *b = pl_gemm_builtins(&n);
    const char *const *groups = pl_gemm_shape_groups(&ng);
    pl_table *t = pl_table_new(7, (const char *const[]){"shape", "group", ">M", ">N", ">K", ">GFLOP", "origin"});
    for (size_t i = 0; i < n; i++) {
        const pl_gemm_shape *s = &b[i].shape;
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", s->name);
        pl_table_set(t, row, 1, "%s", b[i].group);
        pl_table_set(t, row, 2, "%lld", s->m);
        pl_table_set(t, row, 3, "%lld", s->n);
        pl_table_set(t, row, 4, "%lld", s->k);
        pl_table_set(t, row, 5, "%.1f", pl_gemm_shape_flops(s) / 1e9);
        pl_table_set(t, row, 6, "%s", b[i].origin);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("\ngroups:");
    for (size_t i = 0; i < ng; i++) {
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            count += (size_t)pl_gemm_group_has(groups[i], &b[j]);
        printf(" %s (%zu)", groups[i], count);
    }
    printf("; default = prefill + decode, what a plain `perflab gemm` runs\n");
    return PL_EXIT_OK;
}

static int one_of(const char *s, const char *a, const char *b, const char *c)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0 || (c && strcmp(s, c) == 0);
}

static void fill_settings(const gemm_args *a, pl_run_settings *s)
{
    memset(s, 0, sizeof *s);
    pl_timing_args_apply(&a->timing, s);
    s->profile = pl_strdup("none");
    s->timeout_s = a->timeout_s;
    s->rounds = a->rounds;
}

/* Everything that can be checked before any work: bad input exits 2 with nothing written. */
static int validate(gemm_args *a, pl_gemm_shape_list *shapes, pl_gemm_provider **provs, size_t *n_provs)
{
    char err[1024];
    if (!one_of(a->dtype, "bf16", "fp16", "fp8"))
        return pl_usage_error(VERB, "--dtype must be bf16, fp16 or fp8");
    if (!one_of(a->layout, "nk", "kn", NULL))
        return pl_usage_error(VERB, "--layout must be nk (B given N×K) or kn (B given K×N)");
    if (pl_timing_args_check(&a->timing, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    if (a->rounds == 0) /* the default: 5 rounds, or one per iteration where fewer are asked for */
        a->rounds = a->timing.iterations > 0 && a->timing.iterations < 5 ? a->timing.iterations : 5;
    else if (a->timing.iterations > 0 && a->rounds > a->timing.iterations) {
        pl_snprintf(err, sizeof err, "--rounds %d needs at least as many --iterations (got %d): each round keeps one",
                    a->rounds, a->timing.iterations);
        return pl_usage_error(VERB, err);
    }
    if (a->shapes && pl_gemm_shapes_parse(a->shapes, shapes, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    if (a->shapes_file && pl_gemm_shapes_load_file(a->shapes_file, shapes, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    if (!a->shapes && !a->shapes_file && pl_gemm_shapes_parse("default", shapes, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    const char *spec = a->providers ? a->providers : pl_gemm_default_providers(a->dtype);
    if (pl_gemm_providers_parse(spec, provs, n_provs, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    if (!pl_dir_usable(a->artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        return pl_usage_error(VERB, err);
    return 0;
}

int pl_cmd_gemm(int argc, char **argv)
{
    gemm_args a;
    defaults(&a);
    const pl_option own[] = {
        {"shapes", 's', PL_OPT_STRING, &a.shapes, "LIST",
         "built-in names, groups (default, prefill, decode, wide), MxNxK or random:N[:SEED], comma-separated "
         "(default: default)",
         0, 0},
        {"shapes-file", 0, PL_OPT_STRING, &a.shapes_file, "FILE",
         "more shapes, one a line: MxNxK, NAME MxNxK or NAME M N K ('#' comments)", 0, 0},
        {"list-shapes", 0, PL_OPT_FLAG, &a.list_shapes, NULL, "print the built-in shapes and groups, then exit", 0, 0},
        {"list-kernels", 0, PL_OPT_FLAG, &a.list_kernels, NULL,
         "print perflab's native kernels for --dtype (tile, stages, cluster, what each adds), then exit; --json: as "
         "JSON",
         0, 0},
        {"providers", 'p', PL_OPT_STRING, &a.providers, "LIST",
         "cublas,cublaslt,perflab,cutlass,json:FILE (default: cublas,cublaslt,perflab for bf16)", 0, 0},
        {"dtype", 0, PL_OPT_STRING, &a.dtype, "T",
         "bf16 | fp16 | fp8 (e4m3: cuBLASLt and perflab's FP8 kernels); default bf16", 0, 0},
        {"layout", 0, PL_OPT_STRING, &a.layout, "L", "nk: B given N×K (default) | kn: B given K×N", 0, 0},
        {"max-algos", 0, PL_OPT_INT, &a.max_algos, "N", "cuBLASLt heuristic algorithms to time per shape (default 8)",
         1, 64},
        {"rounds", 0, PL_OPT_INT, &a.rounds, "N",
         "verify every configuration of a shape first, then time them all in N interleaved rounds after one at load "
         "(default 5; 1: one after another, each as soon as it is verified)",
         1, 100},
        {"budget-s", 0, PL_OPT_DOUBLE, &a.budget_s, "S",
         "time a shape's configurations within about S seconds, the interleaved rounds inside it (default 2; 0: "
         "--min-time-s/--max-time-s per configuration and round)",
         0, 3600},
        {"tune", 0, PL_OPT_FLAG, &a.tune, NULL,
         "bf16: before timing a shape, tune the pick on the GPU (the model's fastest 6 timed on the shape; "
         "docs/gemm.md); the pick judged is the tuned one",
         0, 0},
        {"tune-file", 0, PL_OPT_STRING, &a.tune_file, "FILE",
         "bf16: tuned picks read from FILE (a per-GPU cache) and, with --tune, written back to it", 0, 0},
        {"timeout-s", 0, PL_OPT_DOUBLE, &a.timeout_s, "S", "give up on a shape after S seconds (default 900)", 1,
         86400},
        {"artifacts-dir", 0, PL_OPT_STRING, &a.artifacts_dir, "D",
         "where the gemm-<run_id> folder goes (default "
         "./artifacts)",
         0, 0},
        {"json", 0, PL_OPT_FLAG, &a.json, NULL, "print comparison.json to stdout instead of the table", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &a.quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &a.help, NULL, "show this help", 0, 0},
    };
    pl_option opts[sizeof own / sizeof own[0] + PL_TIMING_OPTION_COUNT + 1];
    pl_timing_options_join(opts, own, sizeof own / sizeof own[0], 7, &a.timing);
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse(VERB, opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error(VERB, err);
    if (a.help || a.list_shapes || a.list_kernels) {
        pl_strlist_free(&pos);
        if (a.help)
            usage(opts);
        if (a.help)
            return PL_EXIT_OK;
        if (a.list_shapes)
            return list_shapes();
        if (!one_of(a.dtype, "bf16", "fp8", NULL))
            return pl_usage_error(VERB, "--list-kernels takes --dtype bf16 or fp8: perflab's kernels are bf16 and fp8 "
                                        "only");
        return list_kernels(strcmp(a.dtype, "fp8") == 0, a.json);
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; name shapes with --shapes %s", PL_ESC(pos.items[0]),
                    PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error(VERB, err);
    }

    pl_gemm_shape_list shapes = {0};
    pl_gemm_provider *provs = NULL;
    size_t n_provs = 0;
    pl_gemm_selection sel = {0};
    int rc = validate(&a, &shapes, &provs, &n_provs);
    if (rc != 0)
        goto out;
    for (size_t i = 0; i < shapes.n_random; i++) /* before any work, so that a run cut short can be repeated */
        fprintf(stderr, "perflab %s: random shapes: %u drawn with seed %llu%s (repeat: --shapes random:%u:%llu)\n",
                VERB, shapes.random[i].count, shapes.random[i].seed, shapes.random[i].seed_given ? "" : " (fresh)",
                shapes.random[i].count, shapes.random[i].seed);
    pl_run_settings settings;
    fill_settings(&a, &settings);
    pl_gemm_select_request req = {
        .shapes = shapes.items,
        .n_shapes = shapes.n,
        .random = shapes.random,
        .n_random = shapes.n_random,
        .providers = provs,
        .n_providers = n_provs,
        .dtype = a.dtype,
        .layout = a.layout,
        .max_algos = a.max_algos,
        .settings = &settings,
        .timeout_s = a.timeout_s,
        .budget_s = a.budget_s,
        .tune = a.tune,
        .tune_file = a.tune_file,
        .artifacts_dir = a.artifacts_dir,
        .progress = !a.quiet && isatty(STDERR_FILENO),
        .argc = pl_cli_argc,
        .argv = pl_cli_argv,
    };
    err[0] = '\0';
    rc = pl_gemm_select_run(&req, &sel, err, sizeof err);
    pl_run_settings_free(&settings);
    if (!sel.about) { /* refused before any work */
        fprintf(stderr, "perflab %s: %s\n", VERB, err);
        goto out;
    }
    if (err[0])
        fprintf(stderr, "perflab %s: %s\n", VERB, err);
    if (a.json) {
        json_t *j = pl_gemm_comparison_to_json(&sel.cmp, sel.about);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
        json_decref(j);
    } else {
        printf("perflab gemm: TFLOP/s of the best verified configuration (%s, B %s); x/cuBLAS = over the best of "
               "cuBLAS/cuBLASLt\n\n",
               a.dtype, strcmp(a.layout, "nk") == 0 ? "N×K" : "K×N");
        pl_table *t = pl_gemm_comparison_table(&sel.cmp);
        pl_table_print(t, stdout);
        pl_table_free(t);
        char *timing = pl_gemm_timing_line(&sel.run.settings, a.budget_s);
        printf("\n%s\nresults: %s/{comparison.json,summary.md}\n", timing, PL_ESC(sel.run.run_dir));
        free(timing);
    }
    pl_buf missing = {0};
    if (pl_gemm_comparison_missing(&sel.cmp, &missing) > 0)
        fprintf(stderr, "perflab %s: %zu (shape, provider) pair(s) without a verified record:\n%s", VERB,
                pl_gemm_comparison_missing(&sel.cmp, NULL), missing.data);
    pl_buf_free(&missing);
out:
    pl_gemm_selection_free(&sel);
    pl_gemm_providers_free(provs, n_provs);
    pl_gemm_shape_list_free(&shapes);
    return rc;
}
