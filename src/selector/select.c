/* perflab gemm's work below its CLI: find the GPU, give the run an id and provenance, fill the comparison from
 * records in files, run cutlass_profiler, time cuBLAS/cuBLASLt/perflab through the harness in child processes
 * (bench_run.c), and write the report (gemm_report.c). */
#include "selector/select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/exit.h"
#include "core/provenance.h"
#include "core/util.h"
#include "core/artifacts.h"
#include "gemm/tune.h"
#include "selector/gemm_report.h"
#include "selector/bench.h"
#include "selector/cutlass.h"

#define PROBE_TIMEOUT_S 60.0

/* The random:N[:SEED] draws, each with the item that repeats it: settings.random_shapes of comparison.json. */
static json_t *random_draws_json(const pl_gemm_random_draw *d, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        char *repeat = pl_strfmt("random:%u:%llu", d[i].count, d[i].seed);
        json_array_append_new(a, json_pack("{s:i, s:I, s:b, s:s}", "count", (int)d[i].count, "seed",
                                           (json_int_t)d[i].seed, "seed_given", d[i].seed_given, "spec", repeat));
        free(repeat);
    }
    return a;
}

#define CUTLASS_TIMEOUT_S 1800.0

/* What comparison.json says about where and how it was measured. */
static json_t *about_json(const pl_provenance *prov, const pl_run_settings *s, const pl_gemm_select_request *a)
{
    json_t *gpu = json_null();
    if (prov->n_gpus > (size_t)s->device) {
        const pl_gpu_record *g = &prov->gpus[s->device];
        gpu = json_pack("{s:s, s:i, s:i, s:i, s:f, s:f}", "name", g->name, "cc", g->cc_major * 10 + g->cc_minor,
                        "sm_count", g->sm_count, "sm_clock_max_mhz", g->sm_clock_max_mhz, "l2_mib", g->l2_mib,
                        "memory_gib", g->memory_gib);
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:o, s:{s:s, s:i, s:i, s:f, s:f, s:f, s:i, s:i, "
                     "s:I, s:i}}",
                     "perflab_version", prov->perflab_version, "git_commit", prov->git_commit, "command_line",
                     prov->command_line, "started_at", prov->started_at, "hostname", prov->hostname, "driver_version",
                     prov->driver_version ? prov->driver_version : "none", "cuda_driver_version",
                     prov->cuda_driver_version, "cuda_runtime_version", prov->cuda_runtime_version, "gpu", gpu,
                     "settings", "mode", s->mode, "warmup", s->warmup, "min_samples", s->min_samples, "min_time_s",
                     s->min_time_s, "max_time_s", s->max_time_s, "max_noise", s->max_noise, "max_algos", a->max_algos,
                     "device", s->device, "seed", (json_int_t)s->seed, "rounds", s->rounds > 1 ? s->rounds : 1);
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

/* --tune and --tune-file before any work: bf16 only; an existing file must be a tune file (read here, so that a bad
 * one is refused at once); a missing one is written, so --tune must be given. */
static int tune_file_check(const pl_gemm_select_request *req, char *err, size_t errlen)
{
    if ((req->tune || req->tune_file) && strcmp(req->dtype, "bf16") != 0) {
        pl_snprintf(err, errlen, "--tune and --tune-file are for --dtype bf16 (the FP8 pick is not tuned yet)");
        return -1;
    }
    if (!req->tune_file)
        return 0;
    if (access(req->tune_file, F_OK) != 0) {
        if (req->tune)
            return 0;
        pl_snprintf(err, errlen, "--tune-file %s does not exist: add --tune to write it", PL_ESC(req->tune_file));
        return -1;
    }
    char why[512];
    if (pl_gemm_tune_load(req->tune_file, NULL, why, sizeof why) < 0) {
        pl_snprintf(err, errlen, "%s", PL_ESC(why));
        return -1;
    }
    return 0;
}

int pl_gemm_select_run(const pl_gemm_select_request *req, pl_gemm_selection *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pl_gpu_inventory inv = {0};
    int gpu = 0, rc = PL_EXIT_OK;
    if (tune_file_check(req, err, errlen) != 0)
        return PL_EXIT_USAGE;
    for (size_t p = 0; p < req->n_providers; p++)
        gpu |= pl_gemm_provider_needs_gpu(&req->providers[p]);
    if (gpu) {
        if (pl_gpu_inventory_probe(&inv, PROBE_TIMEOUT_S) != 0 || !inv.usable) {
            pl_snprintf(err, errlen, "no usable GPU: %s", inv.error[0] ? inv.error : "unknown reason");
            pl_gpu_inventory_free(&inv);
            return PL_EXIT_NO_GPU;
        }
        if (req->settings->device >= inv.device_count) {
            pl_snprintf(err, errlen, "--device %d: this machine has %d GPU(s)", req->settings->device,
                        inv.device_count);
            pl_gpu_inventory_free(&inv);
            return PL_EXIT_USAGE;
        }
    }
    pl_run *run = &out->run;
    char *id = pl_new_run_id();
    run->run_id = pl_strfmt("gemm-%s", id);
    free(id);
    run->settings = *req->settings;
    run->settings.profile = pl_strdup(req->settings->profile);
    run->settings.mode = pl_strdup(req->settings->mode);
    pl_provenance_collect(&run->prov, req->argc, req->argv, inv.device_count ? &inv : NULL);
    if (pl_artifacts_prepare(run, req->artifacts_dir, err, errlen) != 0) {
        pl_gpu_inventory_free(&inv);
        return PL_EXIT_USAGE;
    }

    pl_gemm_comparison *cmp = &out->cmp;
    pl_gemm_comparison_init(cmp, req->shapes, req->n_shapes, req->providers, req->n_providers, req->dtype, req->layout);
    pl_gemm_comparison_fill_from_files(cmp);
    pl_child_install_interrupt_handler();
    int interrupted = 0;
    for (size_t p = 0; p < req->n_providers; p++)
        if (req->providers[p].kind == PL_PROV_CUTLASS)
            run_cutlass(cmp, p, run->run_dir, req->progress);
    if (gpu) {
        pl_gemm_bench_request bench = {
            .shapes = req->shapes,
            .n_shapes = req->n_shapes,
            .dtype = req->dtype,
            .layout = (pl_gemm_b_layout)pl_gemm_layout_from_name(req->layout),
            .max_algos = req->max_algos,
            .settings = &run->settings,
            .timeout_s = req->timeout_s,
            .budget_s = req->budget_s,
            .progress = req->progress,
            .tune = req->tune,
            .tune_file = req->tune_file,
        };
        for (size_t p = 0; p < req->n_providers; p++) {
            bench.cublas |= req->providers[p].kind == PL_PROV_CUBLAS;
            bench.cublaslt |= req->providers[p].kind == PL_PROV_CUBLASLT;
            bench.perflab |= req->providers[p].kind == PL_PROV_PERFLAB;
        }
        char *log = pl_strfmt("%s/logs/gpu.log", run->run_dir);
        interrupted = pl_gemm_bench_run(&bench, cmp, log) == -2;
        free(log);
    }
    pl_gpu_inventory_free(&inv);

    out->about = about_json(&run->prov, &run->settings, req);
    json_object_set_new(out->about, "run_id", json_string(run->run_id));
    json_object_set_new(json_object_get(out->about, "settings"), "budget_s", json_real(req->budget_s));
    json_object_set_new(json_object_get(out->about, "settings"), "tune", json_boolean(req->tune));
    if (req->tune_file)
        json_object_set_new(json_object_get(out->about, "settings"), "tune_file", json_string(req->tune_file));
    if (req->n_random)
        json_object_set_new(json_object_get(out->about, "settings"), "random_shapes",
                            random_draws_json(req->random, req->n_random));
    if (pl_gemm_report_write(cmp, run->run_dir, out->about, err, errlen) != 0)
        rc = PL_EXIT_FAILED;
    else
        rc = interrupted ? PL_EXIT_INTERRUPTED : pl_gemm_comparison_exit_code(cmp);
    return rc;
}

void pl_gemm_selection_free(pl_gemm_selection *s)
{
    pl_gemm_comparison_free(&s->cmp);
    json_decref(s->about);
    pl_run_free(&s->run);
    memset(s, 0, sizeof *s);
}

char *pl_gemm_timing_line(const pl_run_settings *s, double budget_s)
{
    const int rounds = s->rounds > 1 ? s->rounds : 1;
    if (rounds == 1)
        return pl_strfmt("timing: each configuration as soon as it is verified, %.2g-%.2g s (--min-time-s, "
                         "--max-time-s); no budget with --rounds 1",
                         s->min_time_s, s->max_time_s);
    if (s->iterations > 0)
        return pl_strfmt("timing: %d samples a configuration in %d interleaved rounds (--iterations); no budget",
                         s->iterations, rounds);
    if (!(budget_s > 0))
        return pl_strfmt("timing: %d interleaved rounds, %.2g-%.2g s a configuration (--min-time-s, --max-time-s); "
                         "no budget (--budget-s 0)",
                         rounds, s->min_time_s, s->max_time_s);
    return pl_strfmt("timing: a budget of %.3g s a shape (--budget-s), shared by its configurations over up to %d "
                     "interleaved rounds after one at load (fewer where a sample is longer than its share)",
                     budget_s, rounds);
}
