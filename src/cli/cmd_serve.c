/* perflab serve: a synthetic serving workload through the engine — continuous batching, TTFT/TPOT/ITL/E2E
 * percentiles, throughput, goodput, energy per token and the SLO gate, swept over request rates; flags named as
 * vLLM's `vllm bench serve` names them. Parses and prints; the work is src/serve/serve_bench. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/devprobe.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "serve/serve_bench.h"
#include "serve/serve_ceilings.h"
#include "serve/serve_report.h"

#define MAX_RATES 64

typedef struct serve_args {
    const char *model, *dtype, *kv_dtype, *rates, *executor, *length_dist, *artifacts_dir;
    int layers, num_prompts, input_len, output_len, max_concurrency, max_batched, max_seqs, page_size, num_pages;
    int device, warmup, json, quiet, help;
    int disaggregate, prefill_gpu, decode_gpu; /* the GPUs: -1 when not given */
    double range_ratio, sigma, seed, slo_ttft, slo_tpot, hbm_gbps, tensor_tflops, gpu_mem_gib, link_gbps;
} serve_args;

static void usage(const pl_option *opts)
{
    printf("usage: perflab serve [options]\n\n"
           "A serving benchmark on the engine: --num-prompts requests (lengths fixed, uniform in a range or\n"
           "long-tailed; Poisson arrivals at each --request-rate) served by continuous batching (chunked prefill\n"
           "under a token budget, paged KV with admission and preemption by recompute). Per rate: TTFT, TPOT, ITL\n"
           "and end-to-end latency (mean, p50, p90, p99), requests/s, output and total tokens/s, goodput under the\n"
           "SLOs, mean batch, peak KV pages, preemptions, scheduling overhead, energy per output token (NVML), and\n"
           "the engine's ceiling for the workload beside the measurement. Flags as vLLM's `vllm bench serve`.\n"
           "Executors: gpu (the engine's steps on the GPU, host wall clock; the default) and floor (each step at\n"
           "max(FLOPs / peak, bytes / bandwidth): a COMPUTED CEILING, not a measurement; runs without a GPU given\n"
           "--hbm-gbps and --tensor-tflops, else at the ceilings perflab peak measured).\n"
           "--disaggregate: prefill on --prefill-gpu, decode on --decode-gpu (default 0 and 1), each prompt's KV\n"
           "pages copied GPU to GPU when its prefill ends; the copies' bytes, GB/s and time beside the prefill's.\n"
           "Writes <artifacts-dir>/<run_id>/report.json, summary.md and requests-rate-<R>.jsonl;\n"
           "'perflab report' on that folder draws the latency CDFs and the throughput-latency curve.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexample:\n  perflab serve --model llama3-8b --random-input-len 2048 --random-output-len 2048 \\\n"
           "      --num-prompts 256 --request-rate 1,2,4,8,inf --slo-ttft-ms 500 --slo-tpot-ms 50\n"
           "\nexit codes: 0 ok; 1 an SLO was missed at some rate (named) or a step failed; 2 bad usage or a\n"
           "workload that cannot fit; 3 no usable GPU (or GPU executor) for --executor gpu, or fewer than 2 GPUs\n"
           "for --disaggregate.\n");
}

/* "1,2,4,8,inf": rates > 0 or inf, each once. */
static int parse_rates(const char *text, double *out, int *n, char *err, size_t errlen)
{
    *n = 0;
    char *copy = pl_strdup(text), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        errno = 0;
        double r = strcmp(tok, "inf") == 0 ? INFINITY : strtod(tok, &end);
        if (isfinite(r) && (errno || end == tok || *end || r <= 0)) {
            pl_snprintf(err, errlen, "--request-rate: '%s' is not a rate (requests/s > 0, or inf)", PL_ESC(tok));
            rc = -1;
        } else if (*n == MAX_RATES) {
            pl_snprintf(err, errlen, "--request-rate: at most %d rates", MAX_RATES);
            rc = -1;
        }
        for (int i = 0; i < *n && rc == 0; i++)
            if (out[i] == r) {
                pl_snprintf(err, errlen, "--request-rate: %s is given twice", PL_ESC(tok));
                rc = -1;
            }
        if (rc == 0)
            out[(*n)++] = r;
    }
    if (rc == 0 && *n == 0) {
        pl_snprintf(err, errlen, "--request-rate: no rate given (e.g. 1,2,4,8,inf)");
        rc = -1;
    }
    free(copy);
    return rc;
}

/* The GPU ordinals used as --disaggregate's: 390 GB/s, one way, is what perflab peak measured between two H200s of
 * NV18 NVLink (the default of the ceiling's copy rate only; the measured run times its copies). */
#define DEFAULT_LINK_GBPS 390.0

static int disagg_config(const serve_args *a, pl_serve_bench_config *c, char *err, size_t errlen)
{
    if (!a->disaggregate) {
        if (a->prefill_gpu >= 0 || a->decode_gpu >= 0 || a->link_gbps > 0) {
            pl_snprintf(err, errlen, "--prefill-gpu, --decode-gpu and --link-gbps go with --disaggregate");
            return -1;
        }
        return 0;
    }
    c->disaggregate = 1;
    c->device = a->prefill_gpu >= 0 ? a->prefill_gpu : a->device;
    c->decode_device = a->decode_gpu >= 0 ? a->decode_gpu : (c->device == 1 ? 0 : 1);
    c->link_gbps = a->link_gbps > 0 ? a->link_gbps : DEFAULT_LINK_GBPS;
    if (c->device == c->decode_device) {
        pl_snprintf(err, errlen, "--prefill-gpu and --decode-gpu are both %d: --disaggregate needs two different GPUs",
                    c->device);
        return -1;
    }
    if (c->exec == PL_SERVE_EXEC_GPU && c->dtype != PL_WEIGHTS_BF16) {
        pl_snprintf(err, errlen, "--disaggregate on the GPU serves bf16 weights so far: use --dtype bf16");
        return -1;
    }
    return 0;
}

static int build_config(const serve_args *a, double *rates, pl_serve_bench_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    char why[512];
    if (!(c->model = pl_model_find(a->model, why, sizeof why))) {
        pl_snprintf(err, errlen, "--model: %s", why);
        return -1;
    }
    if (pl_weight_dtype_parse(a->dtype, &c->dtype) != 0) {
        pl_snprintf(err, errlen, "--dtype must be bf16, fp8 or fp8-block, not '%s'", PL_ESC(a->dtype));
        return -1;
    }
    if (pl_kv_dtype_parse(a->kv_dtype, &c->kv_dtype) != 0) {
        pl_snprintf(err, errlen, "--kv-dtype must be bf16 or fp8 (e4m3 with a scale per token and kv head), not '%s'",
                    PL_ESC(a->kv_dtype));
        return -1;
    }
    if (a->layers > c->model->layers) {
        pl_snprintf(err, errlen, "--layers %d: %s has %d", a->layers, c->model->name, c->model->layers);
        return -1;
    }
    if (parse_rates(a->rates, rates, &c->n_rates, err, errlen) != 0)
        return -1;
    if (strcmp(a->length_dist, "uniform") != 0 && strcmp(a->length_dist, "lognormal") != 0) {
        pl_snprintf(err, errlen, "--length-dist must be uniform or lognormal, not '%s'", PL_ESC(a->length_dist));
        return -1;
    }
    if (a->executor && strcmp(a->executor, "gpu") != 0 && strcmp(a->executor, "floor") != 0) {
        pl_snprintf(err, errlen, "--executor must be gpu or floor, not '%s'", PL_ESC(a->executor));
        return -1;
    }
    if ((a->hbm_gbps > 0) != (a->tensor_tflops > 0)) {
        pl_snprintf(err, errlen, "--hbm-gbps and --tensor-tflops go together (the floor needs both ceilings)");
        return -1;
    }
    c->layers = a->layers;
    c->rates = rates;
    c->workload =
        (pl_serve_workload_spec){.num_prompts = a->num_prompts,
                                 .input_len = a->input_len,
                                 .output_len = a->output_len,
                                 .range_ratio = a->range_ratio,
                                 .dist = a->length_dist[0] == 'l' ? PL_SERVE_LEN_LOGNORMAL : PL_SERVE_LEN_UNIFORM,
                                 .lognormal_sigma = a->sigma,
                                 .seed = (uint64_t)a->seed};
    c->sched = (pl_serve_config){.max_num_batched_tokens = a->max_batched,
                                 .max_num_seqs = a->max_seqs,
                                 .max_concurrency = a->max_concurrency,
                                 .num_pages = a->num_pages,
                                 .page_size = a->page_size};
    c->slo = (pl_serve_slo){.ttft_ms = a->slo_ttft, .tpot_ms = a->slo_tpot};
    c->exec = a->executor && strcmp(a->executor, "floor") == 0 ? PL_SERVE_EXEC_FLOOR : PL_SERVE_EXEC_GPU;
    c->hbm_gbps = a->hbm_gbps;
    c->tensor_tflops = a->tensor_tflops;
    c->device = a->device;
    c->gpu_mem_bytes = (uint64_t)(a->gpu_mem_gib * 1073741824.0);
    c->warmup_requests = a->warmup;
    if (disagg_config(a, c, err, errlen) != 0)
        return -1;
    /* the workload is drawn once here, so that a bad one is refused before any GPU work */
    pl_serve_request *probe = pl_xcalloc((size_t)a->num_prompts, sizeof *probe);
    int rc = pl_serve_workload_make(&c->workload, probe, why, sizeof why);
    free(probe);
    if (rc != 0)
        pl_snprintf(err, errlen, "%s", why);
    return rc;
}

static void show_progress(void *arg, int index, int n, double rate)
{
    (void)arg;
    char name[32];
    fprintf(stderr, "\rperflab serve: rate %s (%d of %d)%10s", pl_serve_rate_name(rate, name, sizeof name), index + 1,
            n, "");
    fflush(stderr);
}

/* The GPU (when the executor or the ceilings need one) and the floor's ceilings. An exit code, or -1 to go on. */
static int find_gpu_and_ceilings(const serve_args *a, pl_serve_bench_config *c, pl_gpu_inventory *inv, int *have_inv,
                                 pl_serve_ceil *ceil)
{
    const int need_gpu = c->exec == PL_SERVE_EXEC_GPU || !(a->hbm_gbps > 0);
    memset(ceil, 0, sizeof *ceil);
    *have_inv = 0;
    if (need_gpu) {
        if (pl_gpu_inventory_probe(inv, 60) != 0 || !inv->usable) {
            fprintf(stderr,
                    "perflab serve: no usable GPU: %s (--executor floor --hbm-gbps G --tensor-tflops T computes the "
                    "engine's ceiling without one)\n",
                    inv->error[0] ? inv->error : "the GPU probe failed");
            pl_gpu_inventory_free(inv);
            return PL_EXIT_NO_GPU;
        }
        *have_inv = 1;
        if (c->disaggregate && c->exec == PL_SERVE_EXEC_GPU && inv->device_count < 2) {
            fprintf(stderr,
                    "perflab serve: --disaggregate needs 2 GPUs (prefill on one, decode on the other); this machine "
                    "has %d (--executor floor --disaggregate computes the ceiling without them)\n",
                    inv->device_count);
            return PL_EXIT_NO_GPU;
        }
        const int devs[2] = {c->device, c->disaggregate ? c->decode_device : c->device};
        for (int k = 0; k < 2; k++)
            if (devs[k] >= inv->device_count) {
                char err[200];
                pl_snprintf(err, sizeof err, "%s %d: this machine has %d GPU%s",
                            !c->disaggregate ? "--device"
                            : k              ? "--decode-gpu"
                                             : "--prefill-gpu",
                            devs[k], inv->device_count, inv->device_count == 1 ? "" : "s");
                return pl_usage_error("serve", err);
            }
        c->pci_bus_id = inv->devices[c->device].pci_bus_id;
        if (c->disaggregate)
            c->decode_pci_bus_id = inv->devices[c->decode_device].pci_bus_id;
        if (c->gpu_mem_bytes == 0)
            c->gpu_mem_bytes = inv->devices[c->device].global_mem_bytes;
    }
    if (a->hbm_gbps > 0) {
        pl_snprintf(ceil->source, sizeof ceil->source, "given: --hbm-gbps %g --tensor-tflops %g", a->hbm_gbps,
                    a->tensor_tflops);
        return -1;
    }
    char err[1024], *log = pl_path_join(a->artifacts_dir, "serve-peak.log");
    const char *gpu = inv->devices[c->device].name;
    if (!a->quiet && pl_serve_ceil_load(a->artifacts_dir, gpu, c->dtype != PL_WEIGHTS_BF16, ceil, err, sizeof err) == 1)
        fprintf(stderr, "perflab serve: %s: measuring them now with perflab peak --quick (log: %s)\n", err, log);
    int rc = pl_serve_ceil_measure(a->artifacts_dir, gpu, c->device, c->dtype != PL_WEIGHTS_BF16, log, ceil, err,
                                   sizeof err);
    free(log);
    if (rc != 0) {
        fprintf(stderr, "perflab serve: the ceilings: %s\n", err);
        return PL_EXIT_FAILED;
    }
    c->hbm_gbps = ceil->hbm_gbps;
    c->tensor_tflops = ceil->tensor_tflops;
    return -1;
}

static int run_and_report(const serve_args *a, pl_serve_bench_config *c, const pl_gpu_inventory *inv, int have_inv,
                          const pl_serve_ceil *ceil)
{
    char err[1024];
    pl_serve_bench b;
    const int show = !a->quiet && isatty(STDERR_FILENO);
    c->progress = show ? show_progress : NULL;
    int rc = pl_serve_bench_run(c, &b, err, sizeof err);
    if (show)
        fprintf(stderr, "\r%60s\r", "");
    if (rc != 0) {
        fprintf(stderr, "perflab serve: %s\n", err);
        return rc;
    }
    pl_provenance prov;
    pl_provenance_collect(&prov, pl_cli_argc, pl_cli_argv, have_inv ? inv : NULL);
    char *run_id = pl_new_run_id(), *dir = NULL;
    pl_serve_report_info info = {.run_id = run_id,
                                 .provenance = pl_provenance_to_json(&prov),
                                 .gpu_name = have_inv ? inv->devices[c->device].name : NULL,
                                 .decode_gpu_name =
                                     have_inv && c->disaggregate ? inv->devices[c->decode_device].name : NULL,
                                 .ceilings_from = ceil->source};
    json_t *report = pl_serve_report_json(c, &b, &info);
    int code = b.gate_met ? PL_EXIT_OK : PL_EXIT_FAILED;
    if (pl_serve_report_write(a->artifacts_dir, c, &b, report, &dir, err, sizeof err) != 0) {
        fprintf(stderr, "perflab serve: %s\n", err);
        code = PL_EXIT_FAILED;
    }
    if (a->json) {
        char *s = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
    } else {
        pl_buf text = {0};
        pl_serve_report_text(c, &b, 0, &text);
        fputs(text.data, stdout);
        pl_buf_free(&text);
        if (dir)
            printf("report: %s/report.json, summary: %s/summary.md (perflab report %s draws the curves)\n", PL_ESC(dir),
                   PL_ESC(dir), PL_ESC(dir));
    }
    if (!b.gate_met)
        fprintf(stderr, "perflab serve: SLO missed: %s\n", b.miss);
    free(dir);
    free(run_id);
    json_decref(report);
    json_decref(info.provenance);
    pl_provenance_free(&prov);
    pl_serve_bench_free(&b);
    return code;
}

int pl_cmd_serve(int argc, char **argv)
{
    serve_args a = {.model = "llama3-8b",
                    .dtype = "bf16",
                    .kv_dtype = "bf16",
                    .rates = "inf",
                    .length_dist = "uniform",
                    .artifacts_dir = "artifacts",
                    .num_prompts = 1000,
                    .input_len = 1024,
                    .output_len = 128,
                    .max_batched = 8192,
                    .max_seqs = 256,
                    .page_size = 16,
                    .warmup = 4,
                    .prefill_gpu = -1,
                    .decode_gpu = -1};
    const pl_option opts[] = {
        {"model", 'm', PL_OPT_STRING, &a.model, "NAME", "an engine model config (default llama3-8b)", 0, 0},
        {"dtype", 0, PL_OPT_STRING, &a.dtype, "T", "weights: bf16, fp8 or fp8-block (default bf16)", 0, 0},
        {"kv-dtype", 0, PL_OPT_STRING, &a.kv_dtype, "T",
         "the KV cache: bf16 or fp8 (e4m3, a scale per token and kv head: ~1.9x the pages) (default bf16)", 0, 0},
        {"layers", 0, PL_OPT_INT, &a.layers, "N", "decoder layers (default: the model's)", 1, 1000},
        {"num-prompts", 'n', PL_OPT_INT, &a.num_prompts, "N", "requests (default 1000)", 1, 1000000},
        {"random-input-len", 0, PL_OPT_INT, &a.input_len, "L", "input tokens (default 1024)", 1, 1 << 20},
        {"random-output-len", 0, PL_OPT_INT, &a.output_len, "L", "output tokens (default 128)", 1, 1 << 20},
        {"random-range-ratio", 0, PL_OPT_DOUBLE, &a.range_ratio, "R",
         "lengths uniform in [len(1-R), len(1+R)], R in [0, 1) (default 0: fixed)", 0, 0.999999},
        {"length-dist", 0, PL_OPT_STRING, &a.length_dist, "D",
         "uniform (vLLM's random dataset) or lognormal (a long tail, mean = the length) (default uniform)", 0, 0},
        {"lognormal-sigma", 0, PL_OPT_DOUBLE, &a.sigma, "S", "the long tail's sigma (default 1.0)", 0.01, 4},
        {"request-rate", 'r', PL_OPT_STRING, &a.rates, "LIST",
         "Poisson arrivals, requests/s; a list sweeps (e.g. 1,2,4,8,inf); inf: all at once (default inf)", 0, 0},
        {"max-concurrency", 0, PL_OPT_INT, &a.max_concurrency, "N", "requests in flight at most (default: no limit)", 1,
         1000000},
        {"max-num-batched-tokens", 0, PL_OPT_INT, &a.max_batched, "N", "the token budget of a step (default 8192)", 1,
         1 << 24},
        {"max-num-seqs", 0, PL_OPT_INT, &a.max_seqs, "N", "running requests at most (default 256)", 1, 65536},
        {"page-size", 0, PL_OPT_INT, &a.page_size, "N", "KV page, tokens (default 16)", 1, 4096},
        {"num-pages", 0, PL_OPT_INT, &a.num_pages, "N",
         "KV pages (default: as many as fit the GPU's memory after the weights)", 1, 1 << 30},
        {"seed", 0, PL_OPT_DOUBLE, &a.seed, "S", "the workload's seed: the same seed, the same requests (default 0)", 0,
         9e15},
        {"slo-ttft-ms", 0, PL_OPT_DOUBLE, &a.slo_ttft, "MS", "SLO on p99 TTFT, and goodput (default: not gated)", 0,
         1e9},
        {"slo-tpot-ms", 0, PL_OPT_DOUBLE, &a.slo_tpot, "MS", "SLO on p99 TPOT, and goodput (default: not gated)", 0,
         1e9},
        {"executor", 'e', PL_OPT_STRING, &a.executor, "E", "gpu (measured) or floor (a computed ceiling) (default gpu)",
         0, 0},
        {"hbm-gbps", 0, PL_OPT_DOUBLE, &a.hbm_gbps, "G", "the floor's device-memory ceiling, GB/s (default: peak's)", 1,
         1e6},
        {"tensor-tflops", 0, PL_OPT_DOUBLE, &a.tensor_tflops, "T",
         "the floor's tensor-core ceiling at --dtype, TFLOP/s (default: peak's)", 0.001, 1e6},
        {"gpu-mem-gib", 0, PL_OPT_DOUBLE, &a.gpu_mem_gib, "G",
         "floor: the GPU memory the KV pool is planned in (default: the GPU's)", 0.001, 1e6},
        {"device", 'd', PL_OPT_INT, &a.device, "N", "the GPU (default 0)", 0, 1024},
        {"disaggregate", 0, PL_OPT_FLAG, &a.disaggregate, NULL,
         "prefill on one GPU, decode on another, the KV pages copied between them (2 GPUs)", 0, 0},
        {"prefill-gpu", 0, PL_OPT_INT, &a.prefill_gpu, "N", "--disaggregate: the prefill GPU (default 0)", 0, 1024},
        {"decode-gpu", 0, PL_OPT_INT, &a.decode_gpu, "N", "--disaggregate: the decode GPU (default 1)", 0, 1024},
        {"link-gbps", 0, PL_OPT_DOUBLE, &a.link_gbps, "G",
         "--disaggregate: the ceiling's KV copy rate between the GPUs, GB/s one way (default 390)", 0.001, 1e6},
        {"warmup-requests", 0, PL_OPT_INT, &a.warmup, "N", "gpu: requests served untimed first (default 4)", 0, 1000},
        {"artifacts-dir", 0, PL_OPT_STRING, &a.artifacts_dir, "D", "where the run folder goes (default ./artifacts)", 0,
         0},
        {"json", 0, PL_OPT_FLAG, &a.json, NULL, "print report.json to stdout instead of the table", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &a.quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &a.help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("serve", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("serve", err);
    if (a.help) {
        usage(opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; see 'perflab serve --help'", PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error("serve", err);
    }
    double rates[MAX_RATES];
    pl_serve_bench_config c;
    if (build_config(&a, rates, &c, err, sizeof err) != 0 ||
        !pl_dir_usable(a.artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        return pl_usage_error("serve", err);
    pl_gpu_inventory inv;
    memset(&inv, 0, sizeof inv);
    int have_inv;
    pl_serve_ceil ceil;
    int code = find_gpu_and_ceilings(&a, &c, &inv, &have_inv, &ceil);
    if (code < 0)
        code = run_and_report(&a, &c, &inv, have_inv, &ceil);
    if (have_inv)
        pl_gpu_inventory_free(&inv);
    return code;
}
