/* perflab calc kv-cache | cost-per-token | precision: the calculators (src/calc; formulas in docs/calc.md). They
 * need no GPU; kv-cache reads a GPU's free memory (NVML) when there is one and --gpu-mem-gb is not given. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calc/calc.h"
#include "calc/precision.h"
#include "cli/cli.h"
#include "cli/options.h"
#include "core/nvml.h"
#include "core/results_json.h"
#include "core/util.h"

/* The JSON on stdout; a document jansson cannot encode (NULL from json_pack, text that is not UTF-8) is refused
 * with one line instead of printing nothing. */
static int print_json(const char *verb, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    if (!s)
        return pl_usage_error(verb, "the result cannot be written as JSON (a value that is not finite, or text that "
                                    "is not UTF-8); run without --json");
    puts(s);
    free(s);
    return PL_EXIT_OK;
}

/* A count given as a number: whole, or refused (1.9 tokens is a typo, not 1 token). */
static int whole(const char *verb, const char *flag, double x, long long *out)
{
    if (x != floor(x)) {
        char msg[160];
        pl_snprintf(msg, sizeof msg, "%s takes a whole number, not %g", flag, x);
        return pl_usage_error(verb, msg);
    }
    *out = (long long)x;
    return 0;
}

/* Parse, or print the help; 1: go on, 0/2: return that code. */
static int parse(const char *verb, const pl_option *opts, int argc, char **argv, const int *help, const char *usage)
{
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse(verb, opts, argc, argv, &pos, err, sizeof err) != 0)
        return -pl_usage_error(verb, err);
    int extra = pos.n > 0;
    pl_strlist_free(&pos);
    if (*help) {
        printf("%s\noptions:\n", usage);
        pl_options_help(stdout, opts);
        return 0;
    }
    if (extra)
        return -pl_usage_error(verb, "takes options only (perflab calc --help lists the calculators)");
    return 1;
}

/* ---- kv-cache ---- */

/* NVML's free memory of a GPU, in GB; NaN (why says so) without one. */
static double gpu_free_gb(int device, char *why, size_t len)
{
    const pl_nvml *n = pl_nvml_get(why, len);
    typedef struct {
        unsigned long long total, free, used;
    } mem_info;
    int (*get)(pl_nvml_device, mem_info *) =
        (int (*)(pl_nvml_device, mem_info *))pl_nvml_symbol("nvmlDeviceGetMemoryInfo");
    pl_nvml_device d;
    mem_info m;
    if (!n || !get)
        return NAN;
    if (n->device_get_handle_by_index((unsigned)device, &d) != PL_NVML_SUCCESS || get(d, &m) != PL_NVML_SUCCESS) {
        pl_snprintf(why, len, "NVML has no GPU %d", device);
        return NAN;
    }
    return (double)m.free / PL_GB;
}

static int kv_cache(int argc, char **argv)
{
    pl_kv_request q = {.dtype = "bf16", .tokens = 0, .batch = 1, .kv_overhead_frac = 0};
    const char *model = NULL;
    double tokens = 0, batch = 1, page = 0, gpu_mem = 0, weights = -1;
    int help = 0, json = 0, device = 0, list = 0;
    const pl_option opts[] = {
        {"model", 0, PL_OPT_STRING, &model, "NAME", "a preset's shape (--list-models); other flags override it", 0, 0},
        {"list-models", 0, PL_OPT_FLAG, &list, NULL, "the presets and where their figures come from", 0, 0},
        {"layers", 0, PL_OPT_INT, &q.layers, "N", "transformer layers", 1, 100000},
        {"hidden", 0, PL_OPT_INT, &q.hidden, "N", "hidden size (head dim = hidden / heads)", 1, 1e9},
        {"heads", 0, PL_OPT_INT, &q.heads, "N", "query heads", 1, 1e6},
        {"kv-heads", 0, PL_OPT_INT, &q.kv_heads, "N", "K/V heads (GQA < heads, MQA 1; default: heads)", 1, 1e6},
        {"head-dim", 0, PL_OPT_INT, &q.head_dim, "N", "dimension of one head", 1, 1e6},
        {"kv-latent-dim", 0, PL_OPT_INT, &q.kv_latent_dim, "N",
         "MLA: the latent cached per token and layer (kv_lora_rank + rope dim)", 1, 1e6},
        {"tokens", 0, PL_OPT_DOUBLE, &tokens, "N", "tokens per sequence (prompt + generated)", 1, 1e12},
        {"batch", 0, PL_OPT_DOUBLE, &batch, "N", "sequences in the batch (default 1)", 1, 1e12},
        {"dtype", 0, PL_OPT_STRING, &q.dtype, "T", "fp32 | bf16 | fp16 | fp8 | int8 | fp4 (default bf16)", 0, 0},
        {"page-tokens", 0, PL_OPT_DOUBLE, &page, "N", "paged cache: tokens per page (sequences round up)", 0, 1e9},
        {"gpu-mem-gb", 0, PL_OPT_DOUBLE, &gpu_mem, "GB",
         "memory to fit in (default: the GPU's free memory, when there is a GPU)", 0, 1e9},
        {"device", 0, PL_OPT_INT, &device, "N", "the GPU whose free memory is read (default 0)", 0, 1024},
        {"kv-overhead-frac", 0, PL_OPT_DOUBLE, &q.kv_overhead_frac, "F",
         "the cache's own overhead as a fraction of its size (fragmentation, block tables)", 0, 100},
        {"reserve-activations-gb", 0, PL_OPT_DOUBLE, &q.reserve_activations_gb, "GB",
         "kept for activations and workspaces", 0, 1e9},
        {"weights-gb", 0, PL_OPT_DOUBLE, &weights, "GB",
         "the model's weights (default 0; with --model: its parameters at 2 bytes)", 0, 1e9},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    int rc = parse("calc kv-cache", opts, argc, argv, &help,
                   "usage: perflab calc kv-cache (--model NAME | --layers N (--hidden N | --head-dim N) [--heads N]\n"
                   "       [--kv-heads N] | --kv-latent-dim N) --tokens N [--batch N] [--dtype T] [--page-tokens N]\n"
                   "       [--gpu-mem-gb GB] [--kv-overhead-frac F] [--reserve-activations-gb GB] [--weights-gb GB]\n\n"
                   "bytes/token = layers x 2 (K and V) x kv_heads x head_dim x dtype bytes (MLA: layers x latent x\n"
                   "dtype bytes); per sequence x tokens rounded up to whole pages; x batch in all. What fits: the\n"
                   "memory less activations and weights, each cache byte costing 1 + overhead. GB = 10^9 bytes.\n");
    if (rc <= 0)
        return -rc;
    if (list) {
        printf("%-16s %7s %7s %6s %9s %9s %9s %8s  %s\n", "model", "layers", "hidden", "heads", "kv_heads", "head_dim",
               "latent", "params", "from");
        for (size_t i = 0; i < pl_kv_model_count; i++) {
            const pl_kv_model *m = &pl_kv_models[i];
            printf("%-16s %7d %7d %6d %9d %9d %9d %7.4gB  %s\n", m->name, m->layers, m->hidden, m->heads, m->kv_heads,
                   m->head_dim, m->kv_latent_dim, m->params_b, m->source);
        }
        return PL_EXIT_OK;
    }
    const pl_kv_model *m = NULL;
    if (model && !(m = pl_kv_model_find(model)))
        return pl_usage_error("calc kv-cache",
                              "unknown --model: perflab calc kv-cache --list-models shows the presets");
    if (m) { /* the preset's figures where no flag gave one */
        q.layers = q.layers ? q.layers : m->layers;
        q.hidden = q.hidden ? q.hidden : m->hidden;
        q.heads = q.heads ? q.heads : m->heads;
        q.kv_heads = q.kv_heads ? q.kv_heads : m->kv_heads;
        q.head_dim = q.head_dim ? q.head_dim : m->head_dim;
        q.kv_latent_dim = q.kv_latent_dim ? q.kv_latent_dim : m->kv_latent_dim;
    }
    if (whole("calc kv-cache", "--tokens", tokens, &q.tokens) || whole("calc kv-cache", "--batch", batch, &q.batch) ||
        whole("calc kv-cache", "--page-tokens", page, &q.page_tokens))
        return PL_EXIT_USAGE;
    q.weights_gb = weights >= 0 ? weights : m ? m->params_b * 2 : 0;
    char why[256] = "", from[160];
    if (gpu_mem > 0) {
        q.budget_gb = gpu_mem;
        q.budget_from = "--gpu-mem-gb";
    } else {
        double free_gb = gpu_free_gb(device, why, sizeof why);
        if (isfinite(free_gb)) {
            q.budget_gb = free_gb;
            pl_snprintf(from, sizeof from, "free memory of GPU %d now (NVML)", device);
            q.budget_from = from;
        }
    }
    pl_kv_result r;
    char err[512];
    if (pl_kv_compute(&q, &r, err, sizeof err) != 0)
        return pl_usage_error("calc kv-cache", err);
    if (json) {
        json_t *j = pl_kv_json(&q, &r);
        if (m)
            json_object_set_new(j, "model", json_pack("{s:s, s:s}", "name", m->name, "from", m->source));
        return print_json("calc kv-cache", j);
    }
    if (m)
        printf("model %s (%s)\n", m->name, m->source);
    if (q.kv_latent_dim > 0)
        printf("%s: %d layers x latent %d x %g B (%s)\n", r.layout, q.layers, q.kv_latent_dim, r.dtype_bytes, q.dtype);
    else
        printf("%s: %d layers x 2 (K, V) x %d kv heads x head dim %d x %g B (%s)\n", r.layout, q.layers, r.kv_heads,
               r.head_dim, r.dtype_bytes, q.dtype);
    printf("bytes per token:     %.0f (%.4g MiB)\n", r.bytes_per_token, r.bytes_per_token / 1048576.0);
    printf("bytes per sequence:  %.0f (%.4g GB) for %lld tokens%s\n", r.bytes_per_seq, r.bytes_per_seq / PL_GB,
           r.tokens_padded, q.page_tokens > 0 ? " (whole pages)" : "");
    printf("bytes in all:        %.0f (%.4g GB) for a batch of %lld; %.4g GB with %.0f%% overhead\n", r.bytes_total,
           r.bytes_total / PL_GB, q.batch, r.bytes_total_with_overhead / PL_GB, 100 * q.kv_overhead_frac);
    if (!isfinite(r.budget_bytes)) {
        printf("fit: no memory to fit in: no GPU here (%s); pass --gpu-mem-gb\n", why[0] ? why : "no NVML");
        return PL_EXIT_OK;
    }
    printf("memory:              %.4g GB (%s) - %.4g GB activations - %.4g GB weights = %.4g GB for the cache\n",
           q.budget_gb, q.budget_from, q.reserve_activations_gb, q.weights_gb, r.budget_bytes / PL_GB);
    if (r.budget_bytes > 0)
        printf("fits:                %s (%.1f%% of the cache's budget)\n", r.fits ? "yes" : "NO",
               100 * r.bytes_total_with_overhead / r.budget_bytes);
    else
        printf("fits:                NO: activations and weights leave nothing for the cache\n");
    printf("largest batch at %lld tokens: %lld; largest sequence at batch %lld: %lld tokens; tokens in all: %lld\n",
           q.tokens, r.max_batch, q.batch, r.max_tokens_seq, r.max_tokens);
    return PL_EXIT_OK;
}

/* ---- cost-per-token ---- */

static int cost(int argc, char **argv)
{
    pl_cost_request q = {.pue = 1.0};
    const char *from_run = NULL, *target = NULL, *variant = NULL;
    double tokens_per_iter = 0;
    int help = 0, json = 0;
    const pl_option opts[] = {
        {"avg-power", 0, PL_OPT_DOUBLE, &q.avg_power_w, "W", "average power of the GPU while serving", 0, 1e7},
        {"throughput", 0, PL_OPT_DOUBLE, &q.throughput_tps, "TOK/S", "tokens per second", 0, 1e12},
        {"electricity-cost", 0, PL_OPT_DOUBLE, &q.electricity_per_kwh, "$/KWH", "price of energy (default 0)", 0, 1e6},
        {"pue", 0, PL_OPT_DOUBLE, &q.pue, "X", "power usage effectiveness of the facility (default 1.0)", 0, 100},
        {"gpu-hour-cost", 0, PL_OPT_DOUBLE, &q.gpu_hour_cost, "$", "amortized hardware per GPU-hour (default 0)", 0,
         1e9},
        {"from-run", 0, PL_OPT_STRING, &from_run, "RUN_DIR", "take power and time from a run (--profile minimal)", 0,
         0},
        {"target", 0, PL_OPT_STRING, &target, "T", "with --from-run: the target", 0, 0},
        {"variant", 0, PL_OPT_STRING, &variant, "V", "with --from-run: the variant", 0, 0},
        {"tokens-per-iteration", 0, PL_OPT_DOUBLE, &tokens_per_iter, "N",
         "with --from-run: tokens one run of the variant produces", 0, 1e15},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    int rc = parse("calc cost-per-token", opts, argc, argv, &help,
                   "usage: perflab calc cost-per-token --avg-power W --throughput TOK/S [--electricity-cost $/KWH]\n"
                   "       [--pue X] [--gpu-hour-cost $]\n"
                   "   or: perflab calc cost-per-token --from-run RUN_DIR --target T --variant V\n"
                   "       --tokens-per-iteration N [--electricity-cost ...] [--pue ...] [--gpu-hour-cost ...]\n\n"
                   "J/token = W / (tokens/s); x PUE at the facility; $/Mtok = kWh/Mtok x $/kWh, plus the GPU-hour\n"
                   "cost / (tokens/s x 3600) x 10^6. From a run: the mean power --profile minimal measured while\n"
                   "the variant ran, and tokens-per-iteration / its median time.\n");
    if (rc <= 0)
        return -rc;
    char err[512];
    json_t *src = NULL;
    if (from_run) {
        if (!target || !variant || !(tokens_per_iter > 0))
            return pl_usage_error("calc cost-per-token",
                                  "--from-run needs --target, --variant and --tokens-per-iteration");
        pl_run run;
        if (pl_run_load(from_run, &run, err, sizeof err) != 0)
            return pl_usage_error("calc cost-per-token", err);
        double power, tps, median;
        rc = pl_cost_from_run(&run, target, variant, tokens_per_iter, &power, &tps, &median, err, sizeof err);
        if (rc == 0) {
            if (!(q.avg_power_w > 0))
                q.avg_power_w = power;
            q.throughput_tps = tps;
            src = json_pack("{s:s, s:s?, s:s, s:s, s:f, s:f, s:f}", "run", from_run, "run_id", run.run_id, "target",
                            target, "variant", variant, "measured_power_w", power, "median_ms", median,
                            "tokens_per_iteration", tokens_per_iter);
        }
        pl_run_free(&run);
        if (rc != 0)
            return pl_usage_error("calc cost-per-token", err);
    }
    pl_cost_result r;
    if (pl_cost_compute(&q, &r, err, sizeof err) != 0) {
        json_decref(src);
        return pl_usage_error("calc cost-per-token", err);
    }
    if (json) {
        json_t *j = pl_cost_json(&q, &r);
        if (src)
            json_object_set_new(j, "from_run", src);
        return print_json("calc cost-per-token", j);
    }
    if (src) {
        printf("from run %s: %s / %s, %.1f W measured, median %.4g ms -> %.6g tokens/s\n", PL_ESC(from_run),
               PL_ESC(target), PL_ESC(variant), json_real_value(json_object_get(src, "measured_power_w")),
               json_real_value(json_object_get(src, "median_ms")), q.throughput_tps);
        json_decref(src);
    }
    printf("energy per token:   %.4g J at the GPU, %.4g J at the facility (PUE %.2f)\n", r.joules_per_token,
           r.facility_joules_per_token, q.pue);
    printf("per million tokens: %.4g kWh, $%.4g energy + $%.4g hardware = $%.4g\n", r.kwh_per_mtok, r.energy_per_mtok,
           r.hardware_per_mtok, r.total_per_mtok);
    printf("tokens per kWh:     %.4g\n", r.tokens_per_kwh);
    return PL_EXIT_OK;
}

/* ---- precision ---- */

static int precision(int argc, char **argv)
{
    const char *op_name = "gemm", *shape = NULL, *only = NULL;
    double seed = 20261121, scale = 1.0;
    int block = 128, help = 0, json = 0;
    const pl_option opts[] = {
        {"op", 0, PL_OPT_STRING, &op_name, "OP", "gemm | norm (RMSNorm) | softmax | attention (default gemm)", 0, 0},
        {"shape", 0, PL_OPT_STRING, &shape, "DIMS",
         "gemm MxNxK (default 256x256x1024); norm, softmax ROWSxCOLS (64x4096); attention SEQxHEAD_DIM (512x128)", 0,
         0},
        {"dtypes", 0, PL_OPT_STRING, &only, "LIST", "only these: fp32,tf32,bf16,fp16,fp8_e4m3[/tensor|/block],...", 0,
         0},
        {"block", 0, PL_OPT_INT, &block, "N", "FP8 block scaling: elements per scale (default 128)", 1, 1 << 20},
        {"input-scale", 0, PL_OPT_DOUBLE, &scale, "X", "inputs uniform in [-X, X] (default 1)", 0, 1e30},
        {"seed", 0, PL_OPT_DOUBLE, &seed, "S", "seed of the random inputs", 0, 1e18},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    int rc = parse("calc precision", opts, argc, argv, &help,
                   "usage: perflab calc precision [--op gemm|norm|softmax|attention] [--shape DIMS] [--dtypes LIST]\n"
                   "       [--block N] [--input-scale X] [--seed S]\n\n"
                   "The error of each dtype against float64 on the same random inputs: inputs rounded to the dtype\n"
                   "(FP8 scaled per tensor or per block along the reduction), fp32 arithmetic, the output rounded\n"
                   "(BF16 for FP8). rel L2, max abs and max rel (where |ref| >= 1% of its RMS), and the tolerance\n"
                   "perflab's verification applies to that dtype: safe when rel L2 is within it.\n");
    if (rc <= 0)
        return -rc;
    pl_prec_request q = {.block = block, .seed = (uint64_t)seed, .input_scale = scale, .only = only};
    int op = pl_prec_op_from_name(op_name);
    char err[512];
    if (op < 0)
        return pl_usage_error("calc precision", "--op takes gemm, norm, softmax or attention");
    q.op = (pl_prec_op)op;
    static const char *const defaults[] = {"256x256x1024", "64x4096", "64x4096", "512x128"};
    if (pl_prec_parse_shape(q.op, shape ? shape : defaults[op], q.dims, err, sizeof err) != 0)
        return pl_usage_error("calc precision", err);
    pl_prec_row *rows;
    size_t n;
    if (pl_precision_run(&q, &rows, &n, err, sizeof err) != 0)
        return pl_usage_error("calc precision", err);
    if (json) {
        rc = print_json("calc precision", pl_precision_json(&q, rows, n));
    } else {
        rc = PL_EXIT_OK;
        printf("%s %s, inputs uniform in [-%g, %g], seed %llu; against float64\n", op_name,
               PL_ESC(shape ? shape : defaults[op]), scale, scale, (unsigned long long)q.seed);
        printf("%-16s %-9s %10s %10s %10s %10s  %s\n", "dtype", "output", "rel L2", "max abs", "max rel", "tolerance",
               "verdict");
        for (size_t i = 0; i < n; i++)
            printf("%-16s %-9s %10.3e %10.3e %10.3e %10.0e  %s%s\n", rows[i].name, rows[i].out, rows[i].rel_l2,
                   rows[i].max_abs, rows[i].max_rel, rows[i].tolerance, rows[i].safe ? "safe" : "NOT safe",
                   rows[i].nonfinite ? " (non-finite outputs)" : "");
    }
    free(rows);
    return rc;
}

int pl_cmd_calc(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
        const char *what;
    } subs[] = {
        {"kv-cache", kv_cache, "KV-cache bytes per token, per sequence, in all, and what fits (GQA, MQA, MLA, paged)"},
        {"cost-per-token", cost, "energy and $ per token from power and throughput, or from a run"},
        {"precision", precision, "each dtype's error against float64 for a GEMM, norm, softmax or attention"},
    };
    const size_t n = sizeof subs / sizeof subs[0];
    if (argc < 1)
        return pl_usage_error("calc", "needs a calculator: kv-cache, cost-per-token or precision "
                                      "(perflab calc --help describes them)");
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        FILE *out = stdout;
        fprintf(out, "usage: perflab calc <calculator> [options]   (perflab calc <calculator> --help)\n\n");
        for (size_t i = 0; i < n; i++)
            fprintf(out, "  %-16s %s\n", subs[i].name, subs[i].what);
        fprintf(out, "\nEvery calculator needs no GPU (kv-cache reads one's free memory when there is one) and takes "
                     "--json.\nFormulas and worked examples: docs/calc.md.\n");
        return PL_EXIT_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[0], subs[i].name) == 0)
            return subs[i].fn(argc - 1, argv + 1);
    char msg[256];
    pl_snprintf(msg, sizeof msg, "unknown calculator '%s': kv-cache, cost-per-token or precision", PL_ESC(argv[0]));
    return pl_usage_error("calc", msg);
}
