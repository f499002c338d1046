/* perflab gemm: the kernel selector. For each shape, every provider's configurations are verified against a
 * reference and timed through the harness (in child processes: this process never initialises CUDA); the best
 * verified record per (shape, provider) goes into a table, per-provider files and comparison.json. Exit code 1
 * when any requested (shape, provider) has no record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/childproc.h"
#include "core/devprobe.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "report/artifacts.h"
#include "selector/bench.h"
#include "selector/comparison.h"
#include "selector/cutlass.h"
#include "cli/timing_options.h"

#define VERB              "gemm"
#define PROBE_TIMEOUT_S   60.0
#define CUTLASS_TIMEOUT_S 1800.0

typedef struct gemm_args {
    const char *shapes, *shapes_file, *providers, *dtype, *layout, *artifacts_dir;
    int max_algos, json, quiet, help, list_shapes;
    double timeout_s;
    pl_timing_args timing;
} gemm_args;

static void defaults(gemm_args *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = "bf16";
    a->layout = "nk";
    a->artifacts_dir = "artifacts";
    a->max_algos = 8;
    a->timeout_s = 900;
    pl_timing_args_defaults(&a->timing);
    a->timing.mode = "cold"; /* a GEMM in a model reads its weights from HBM, not from a warm L2 */
    a->timing.min_time_s = 0.1;
    a->timing.max_time_s = 1.0;
    a->timing.throttle_pct = 50; /* dense GEMMs run at the power limit, with the SM clock near 70% of its maximum */
}

static void usage(const pl_option *opts)
{
    printf("usage: perflab gemm [--shapes NAME|MxNxK,...] [--shapes-file FILE] [--providers LIST] [options]\n\n"
           "Picks the fastest GEMM per shape: every configuration of each provider is verified against a\n"
           "reference (cuBLAS with fp32 accumulation, or float64 on the host for small shapes) and timed through\n"
           "the harness (cold L2 by default; operands rotated over more than 3x the L2 for small shapes).\n"
           "D = A·B, A M×K row-major, B N×K (--layout nk, linear-layer weights) or K×N (kn).\n\n"
           "providers: cublas (default algorithm), cublaslt (every heuristic algorithm up to --max-algos),\n"
           "perflab (every native kernel configuration that takes the shape), cutlass (cutlass_profiler named by\n"
           "$CUTLASS_PROFILER_BIN), json:FILE (records made elsewhere, in perflab's schema).\n"
           "Writes artifacts/gemm-<run_id>/{<provider>.json,comparison.json,summary.md,logs/}.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 every (shape, provider) has a verified record; 1 some have none (listed as missing,\n"
           "failed or unsupported); 2 bad usage or input; 3 no usable GPU for a GPU provider; 130 interrupted.\n");
}

static int list_shapes(void)
{
    size_t n, ng;
    const pl_gemm_shape *s = pl_gemm_builtin_shapes(&n);
    const char *const *groups = pl_gemm_shape_groups(&ng);
    pl_table *t = pl_table_new(5, (const char *const[]){"shape", ">M", ">N", ">K", ">GFLOP"});
    for (size_t i = 0; i < n; i++) {
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", s[i].name);
        pl_table_set(t, row, 1, "%lld", s[i].m);
        pl_table_set(t, row, 2, "%lld", s[i].n);
        pl_table_set(t, row, 3, "%lld", s[i].k);
        pl_table_set(t, row, 4, "%.1f", pl_gemm_shape_flops(&s[i]) / 1e9);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("\ngroups:");
    for (size_t i = 0; i < ng; i++)
        printf(" %s", groups[i]);
    printf(" (default = all of the above)\n");
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
}

/* What comparison.json says about where and how it was measured. */
static json_t *about_json(const pl_provenance *prov, const pl_run_settings *s, const gemm_args *a)
{
    json_t *gpu = json_null();
    if (prov->n_gpus > (size_t)a->timing.device) {
        const pl_gpu_record *g = &prov->gpus[a->timing.device];
        gpu = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f}", "name", g->name, "cc", g->cc_major * 10 + g->cc_minor,
                        "sm_count", g->sm_count, "sm_clock_max_mhz", g->sm_clock_max_mhz, "l2_mib", g->l2_mib,
                        "memory_gib", g->memory_gib);
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:{s:s, s:i, s:i, s:f, s:f, s:f, s:i, s:i, "
                     "s:I}}",
                     "perflab_version", prov->perflab_version, "git_commit", prov->git_commit, "command_line",
                     prov->command_line, "started_at", prov->started_at, "hostname", prov->hostname, "driver_version",
                     prov->driver_version ? prov->driver_version : "none", "cuda_driver_version",
                     prov->cuda_driver_version, "cuda_runtime_version", prov->cuda_runtime_version, "gpu", gpu,
                     "settings", "mode", s->mode, "warmup", s->warmup, "min_samples", s->min_samples, "min_time_s",
                     s->min_time_s, "max_time_s", s->max_time_s, "max_noise", s->max_noise, "max_algos", a->max_algos,
                     "device", s->device, "seed", (json_int_t)s->seed);
}

static int write_json(const char *dir, const char *name, json_t *j, char *err, size_t errlen)
{
    char *path = pl_path_join(dir, name);
    int rc = pl_json_save_file(j, path, err, errlen);
    free(path);
    json_decref(j);
    return rc;
}

/* Per-provider files, comparison.json and summary.md, each written atomically. */
static int write_outputs(const pl_gemm_comparison *cmp, const char *dir, json_t *about, char *err, size_t errlen)
{
    for (size_t p = 0; p < cmp->n_providers; p++) {
        char *name = pl_strfmt("%s.json", cmp->providers[p].label);
        int rc = write_json(dir, name, pl_gemm_comparison_provider_json(cmp, p), err, errlen);
        free(name);
        if (rc != 0)
            return rc;
    }
    if (write_json(dir, "comparison.json", pl_gemm_comparison_to_json(cmp, about), err, errlen) != 0)
        return -1;
    pl_buf md = {0};
    pl_buf_printf(&md,
                  "# perflab gemm\n\nTFLOP/s of the best verified configuration per provider (%s, B %s); "
                  "ratios over the best of cuBLAS/cuBLASLt.\n\n",
                  cmp->dtype, strcmp(cmp->layout, "nk") == 0 ? "N×K" : "K×N");
    pl_table *t = pl_gemm_comparison_table(cmp);
    pl_table_markdown(t, &md);
    pl_table_free(t);
    pl_buf_printf(&md, "\n## Kernels kept\n\n");
    for (size_t s = 0; s < cmp->n_shapes; s++)
        for (size_t p = 0; p < cmp->n_providers; p++) {
            const pl_gemm_cell *c = &cmp->cells[s * cmp->n_providers + p];
            if (c->status != PL_GEMM_OK)
                continue;
            char noise[32] = "-";
            if (c->best.noise == c->best.noise) /* not NaN: records from files may not carry it */
                pl_snprintf(noise, sizeof noise, "%.1f%%", 100 * c->best.noise);
            pl_buf_printf(&md, "- %s, %s: %s (%.1f TFLOP/s, %.4f ms, noise %s)\n", cmp->shapes[s].name,
                          cmp->providers[p].label, c->best.kernel ? c->best.kernel : "?", c->best.tflops,
                          c->best.median_ms, noise);
        }
    if (pl_gemm_comparison_missing(cmp, NULL)) {
        pl_buf_printf(&md, "\n## Without a record\n\n");
        pl_gemm_comparison_missing(cmp, &md);
    }
    char *path = pl_path_join(dir, "summary.md");
    int rc = pl_write_file_atomic(path, md.data ? md.data : "", md.len, err, errlen);
    free(path);
    pl_buf_free(&md);
    return rc;
}

static void run_cutlass(pl_gemm_comparison *cmp, size_t col, const char *run_dir, int progress)
{
    const char *bin = getenv(PL_CUTLASS_ENV);
    for (size_t s = 0; s < cmp->n_shapes; s++) {
        pl_gemm_cell *cell = pl_gemm_cell_at(cmp, s, col);
        if (!bin || !*bin) {
            pl_gemm_cell_set(cell, PL_GEMM_UNSUPPORTED,
                             "CUTLASS_PROFILER_BIN is not set: point it at a cutlass_profiler binary to compare with "
                             "CUTLASS");
            continue;
        }
        char err[1024];
        char *work = pl_path_join(run_dir, "logs");
        char *log = pl_strfmt("%s/cutlass_%s.log", work, cmp->shapes[s].name);
        pl_gemm_record_list recs = {0};
        if (pl_cutlass_run(bin, &cmp->shapes[s], cmp->dtype, cmp->layout, work, log, CUTLASS_TIMEOUT_S, &recs, err,
                           sizeof err) == 0)
            pl_gemm_cell_settle(cell, &recs, PL_GEMM_FAILED, NULL);
        else
            pl_gemm_cell_set(cell, PL_GEMM_FAILED, err);
        if (progress)
            fprintf(stderr, "perflab gemm: [%zu/%zu] %s cutlass: %s\n", s + 1, cmp->n_shapes, cmp->shapes[s].name,
                    pl_gemm_status_name(cell->status));
        pl_gemm_record_list_free(&recs);
        free(log);
        free(work);
    }
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
         "built-in names, groups (default, prefill, decode) or MxNxK, comma-separated (default: default)", 0, 0},
        {"shapes-file", 0, PL_OPT_STRING, &a.shapes_file, "FILE",
         "more shapes, one a line: MxNxK, NAME MxNxK or NAME M N K ('#' comments)", 0, 0},
        {"list-shapes", 0, PL_OPT_FLAG, &a.list_shapes, NULL, "print the built-in shapes and groups, then exit", 0, 0},
        {"providers", 'p', PL_OPT_STRING, &a.providers, "LIST",
         "cublas,cublaslt,perflab,cutlass,json:FILE (default: cublas,cublaslt,perflab for bf16)", 0, 0},
        {"dtype", 0, PL_OPT_STRING, &a.dtype, "T", "bf16 | fp16 | fp8 (e4m3, cuBLASLt only for now); default bf16", 0,
         0},
        {"layout", 0, PL_OPT_STRING, &a.layout, "L", "nk: B given N×K (default) | kn: B given K×N", 0, 0},
        {"max-algos", 0, PL_OPT_INT, &a.max_algos, "N", "cuBLASLt heuristic algorithms to time per shape (default 8)",
         1, 64},
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
    if (a.help || a.list_shapes) {
        pl_strlist_free(&pos);
        if (a.help)
            usage(opts);
        return a.help ? PL_EXIT_OK : list_shapes();
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
    pl_gpu_inventory inv = {0};
    pl_run run = {0};
    pl_gemm_comparison cmp = {0};
    int rc = validate(&a, &shapes, &provs, &n_provs);
    if (rc != 0)
        goto out;

    int gpu = 0;
    for (size_t p = 0; p < n_provs; p++)
        gpu |= pl_gemm_provider_needs_gpu(&provs[p]);
    if (gpu) {
        if (pl_gpu_inventory_probe(&inv, PROBE_TIMEOUT_S) != 0 || !inv.usable) {
            fprintf(stderr, "perflab %s: no usable GPU: %s\n", VERB, inv.error[0] ? inv.error : "unknown reason");
            rc = PL_EXIT_NO_GPU;
            goto out;
        }
        if (a.timing.device >= inv.device_count) {
            pl_snprintf(err, sizeof err, "--device %d: this machine has %d GPU(s)", a.timing.device, inv.device_count);
            rc = pl_usage_error(VERB, err);
            goto out;
        }
    }
    char *id = pl_new_run_id();
    run.run_id = pl_strfmt("gemm-%s", id);
    free(id);
    fill_settings(&a, &run.settings);
    pl_provenance_collect(&run.prov, pl_cli_argc, pl_cli_argv, inv.device_count ? &inv : NULL);
    if (pl_artifacts_prepare(&run, a.artifacts_dir, err, sizeof err) != 0) {
        rc = pl_usage_error(VERB, err);
        goto out;
    }

    const int progress = !a.quiet && isatty(STDERR_FILENO);
    pl_gemm_comparison_init(&cmp, shapes.items, shapes.n, provs, n_provs, a.dtype, a.layout);
    pl_gemm_comparison_fill_from_files(&cmp);
    pl_child_install_interrupt_handler();
    int interrupted = 0;
    for (size_t p = 0; p < n_provs; p++)
        if (provs[p].kind == PL_PROV_CUTLASS)
            run_cutlass(&cmp, p, run.run_dir, progress);
    if (gpu) {
        pl_gemm_bench_request req = {
            .shapes = shapes.items,
            .n_shapes = shapes.n,
            .dtype = a.dtype,
            .layout = (pl_gemm_b_layout)pl_gemm_layout_from_name(a.layout),
            .max_algos = a.max_algos,
            .settings = &run.settings,
            .timeout_s = a.timeout_s,
            .progress = progress,
        };
        for (size_t p = 0; p < n_provs; p++) {
            req.cublas |= provs[p].kind == PL_PROV_CUBLAS;
            req.cublaslt |= provs[p].kind == PL_PROV_CUBLASLT;
            req.perflab |= provs[p].kind == PL_PROV_PERFLAB;
        }
        char *log = pl_strfmt("%s/logs/gpu.log", run.run_dir);
        interrupted = pl_gemm_bench_run(&req, &cmp, log) == -2;
        free(log);
    }

    json_t *about = about_json(&run.prov, &run.settings, &a);
    json_object_set_new(about, "run_id", json_string(run.run_id));
    if (write_outputs(&cmp, run.run_dir, about, err, sizeof err) != 0) {
        fprintf(stderr, "perflab %s: %s\n", VERB, err);
        rc = PL_EXIT_FAILED;
    } else {
        rc = interrupted ? PL_EXIT_INTERRUPTED : pl_gemm_comparison_exit_code(&cmp);
    }
    if (a.json) {
        json_t *j = pl_gemm_comparison_to_json(&cmp, about);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
        json_decref(j);
    } else {
        printf("perflab gemm: TFLOP/s of the best verified configuration (%s, B %s); x/cuBLAS = over the best of "
               "cuBLAS/cuBLASLt\n\n",
               a.dtype, strcmp(a.layout, "nk") == 0 ? "N×K" : "K×N");
        pl_table *t = pl_gemm_comparison_table(&cmp);
        pl_table_print(t, stdout);
        pl_table_free(t);
        printf("\nresults: %s/{comparison.json,summary.md}\n", run.run_dir);
    }
    json_decref(about);
    pl_buf missing = {0};
    if (pl_gemm_comparison_missing(&cmp, &missing) > 0)
        fprintf(stderr, "perflab %s: %zu (shape, provider) pair(s) without a verified record:\n%s", VERB,
                pl_gemm_comparison_missing(&cmp, NULL), missing.data);
    pl_buf_free(&missing);
out:
    pl_gemm_comparison_free(&cmp);
    pl_gemm_providers_free(provs, n_provs);
    pl_gemm_shape_list_free(&shapes);
    pl_gpu_inventory_free(&inv);
    pl_run_free(&run);
    return rc;
}
