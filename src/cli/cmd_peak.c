/* perflab peak: what this GPU really delivers — device memory, L2, shared memory, FP32/FP64, tensor cores,
 * host links, launch latency and (with 2+ GPUs) the links between GPUs — each against its datasheet figure.
 * Writes artifacts/<run_id>/peak.json and the ceilings file `perflab run --profile roofline` reads. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/gpu_select.h"
#include "cli/options.h"
#include "core/piped_child.h"
#include "core/devprobe.h"
#include "core/expectations.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/ceilings.h"
#include "hw/peak_report.h"

typedef struct peak_progress {
    json_t *doc;
    int show;
} peak_progress;

static void on_message(void *arg, json_t *msg)
{
    peak_progress *p = arg;
    if (p->show) {
        const char *id = json_string_value(json_object_get(msg, "id"));
        fprintf(stderr, "\rperflab peak: %-40s", id ? id : json_string_value(json_object_get(msg, "task")));
        fflush(stderr);
    }
    pl_peak_doc_add(p->doc, msg);
}

static void usage(const pl_option *opts)
{
    printf("usage: perflab peak [--quick] [--only GROUPS] [--device N] [options]\n\nMeasured ceilings of GPU N, each "
           "with how it was measured (and whether bytes are counted\nonce or read + written), the datasheet figure "
           "and its source, and the %% of it:\n"
           "  memory   device memory read, write and copy kernels (16-byte accesses), cudaMemcpy D2D,\n"
           "           load latency\n"
           "  cache    L2 and shared-memory bandwidth\n"
           "  compute  FP32 and FP64 FMA on the CUDA cores\n"
           "  tensor   mma.sync and wgmma microkernels; cuBLASLt BF16/FP16/TF32/FP8 and plain cuBLAS BF16\n"
           "  host     host <-> device copies, pinned and pageable, each way and both at once\n"
           "  launch   empty-kernel launch: back to back, in a CUDA graph, launch + synchronize\n"
           "  p2p      with 2+ GPUs: the bandwidth matrix (copy engine and SM stores, one way and both)\n"
           "           and load latency between every pair\n"
           "Every kernel's result is checked before it is timed. Writes <artifacts-dir>/<run_id>/peak.json\n"
           "and <artifacts-dir>/ceilings-<hardware_key>.json (or $PERFLAB_CEILINGS), which\n"
           "'perflab run --profile roofline' reads.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 ok; 1 a figure failed its check or its process died; 2 bad usage; 3 no usable GPU;\n"
           "130 interrupted.\n");
}

/* Store the ceilings this run measured, keeping those of groups it did not run. */
static int save_ceilings(json_t *doc, const char *artifacts_dir, const char *key, const char *gpu_name, char **path,
                         char *err, size_t errlen)
{
    *path = pl_ceilings_path(artifacts_dir, key);
    pl_ceilings c;
    char why[512];
    if (pl_ceilings_load(*path, &c, why, sizeof why) < 0)
        fprintf(stderr, "perflab peak: replacing %s\n", why);
    free(c.hardware_key);
    free(c.gpu_name);
    free(c.run_id);
    free(c.measured_at);
    c.hardware_key = pl_strdup(key);
    c.gpu_name = pl_strdup(gpu_name);
    c.run_id = pl_strdup(json_string_value(json_object_get(doc, "run_id")));
    c.measured_at = pl_utc_timestamp();
    pl_peak_fill_ceilings(doc, &c);
    int rc = pl_ceilings_save(&c, *path, err, errlen);
    pl_ceilings_free(&c);
    return rc;
}

int pl_cmd_peak(int argc, char **argv)
{
    int json = 0, help = 0, quick = 0, quiet = 0, device = 0, gemm_n = 8192;
    const char *only = NULL, *artifacts_dir = "artifacts";
    double timeout_s = 300;
    const pl_option opts[] = {
        {"quick", 0, PL_OPT_FLAG, &quick, NULL, "fewer samples, smaller buffers, fewer GEMM algorithms", 0, 0},
        {"only", 0, PL_OPT_STRING, &only, "GROUPS", "comma list: memory, cache, compute, tensor, host, launch, p2p", 0,
         0},
        {"device", 'd', PL_OPT_INT, &device, "N", "the GPU to measure (default 0)", 0, 1024},
        {"gemm-n", 0, PL_OPT_INT, &gemm_n, "N", "M = N = K of the library GEMMs (default 8192)", 256, 32768},
        {"timeout-s", 0, PL_OPT_DOUBLE, &timeout_s, "S", "kill a group's process after S seconds (default 300)", 1,
         86400},
        {"artifacts-dir", 0, PL_OPT_STRING, &artifacts_dir, "D",
         "where run folders and ceilings go (default ./artifacts)", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print peak.json to stdout instead of the table", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("peak", opts, argc, argv, &pos, err, sizeof err) != 0) {
        pl_strlist_free(&pos);
        return pl_usage_error("peak", err);
    }
    if (help) {
        usage(opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; to select groups use --only %s", PL_ESC(pos.items[0]),
                    PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error("peak", err);
    }
    pl_strlist_free(&pos);
    pl_peak_options o;
    pl_peak_options_default(&o, quick);
    o.device = device;
    o.gemm_n = gemm_n;
    if (only && pl_peak_parse_groups(only, &o.groups, err, sizeof err) != 0)
        return pl_usage_error("peak", err);
    if (!pl_dir_usable(artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        return pl_usage_error("peak", err);

    pl_gpu_inventory inv;
    int found = pl_cli_find_gpus("peak", device, &inv);
    if (found != PL_EXIT_OK)
        return found;
    const pl_device_info *dev = &inv.devices[device];
    pl_provenance prov;
    pl_provenance_collect(&prov, pl_cli_argc, pl_cli_argv, &inv);
    char *run_id = pl_new_run_id();
    json_t *doc = pl_peak_doc_new(run_id, &prov, &o, dev);
    double t0 = pl_now_s();
    peak_progress progress = {doc, !quiet && isatty(STDERR_FILENO)};
    pl_child_install_interrupt_handler();
    size_t n_tasks;
    const pl_hw_task *tasks = pl_peak_tasks(&n_tasks);
    int interrupted = pl_hw_run_tasks(tasks, n_tasks, &o, timeout_s, on_message, &progress) == -2;
    if (progress.show)
        fprintf(stderr, "\r%60s\r", "");
    json_object_set_new(doc, "duration_s", json_real(pl_now_s() - t0));
    pl_peak_doc_judge(doc, pl_datasheet_find(dev->name, (double)dev->global_mem_bytes / (1024.0 * 1024 * 1024)));

    int rc = interrupted ? PL_EXIT_INTERRUPTED : pl_peak_doc_failed(doc) ? PL_EXIT_FAILED : PL_EXIT_OK;
    char *run_dir = pl_path_join(artifacts_dir, run_id), *peak_path = pl_path_join(run_dir, "peak.json");
    char *ceil_path = NULL;
    const char *key = json_string_value(json_object_get(json_object_get(doc, "gpu"), "hardware_key"));
    if (pl_peak_report_write(run_dir, doc, err, sizeof err) != 0 ||
        (!interrupted && save_ceilings(doc, artifacts_dir, key, dev->name, &ceil_path, err, sizeof err) != 0)) {
        fprintf(stderr, "perflab peak: %s\n", err);
        if (rc == PL_EXIT_OK)
            rc = PL_EXIT_FAILED;
    }
    if (json) {
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
        puts(s);
        free(s);
    } else {
        pl_peak_print(doc, stdout);
        printf("peak: %s%s%s (%.0f s)\n", PL_ESC(peak_path), ceil_path ? "; ceilings: " : "",
               PL_ESC(ceil_path ? ceil_path : ""), pl_json_get_real(doc, "duration_s"));
    }
    free(ceil_path);
    free(peak_path);
    free(run_dir);
    free(run_id);
    json_decref(doc);
    pl_provenance_free(&prov);
    pl_gpu_inventory_free(&inv);
    return rc;
}
