/* perflab calc: the worked examples of docs/calc.md (kv-cache, cost-per-token, precision), the presets, the
 * rounding of every emulated format at its edges, and the errors named on bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calc/calc.h"
#include "calc/precision.h"
#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

#define NEAR_REL(a, b, rel)                                                                                            \
    ck_assert_msg(fabs((double)(a) - (double)(b)) <= (rel)*fabs((double)(b)), "%.17g != %.17g", (double)(a),           \
                  (double)(b))

static json_t *run_json(const char *args)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "perflab %s: exit %d: %s", args, r.exit_code, r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    ck_assert_msg(j, "not JSON: %s", r.out);
    pl_cmd_result_free(&r);
    return j;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_number(v), "no number '%s'", key);
    return json_number_value(v);
}

/* docs/calc.md, kv-cache: the command line, worked by hand. */
START_TEST(kv_cache_worked_example)
{
    json_t *j = run_json("calc kv-cache --layers 80 --hidden 8192 --tokens 4096 --batch 8 --dtype fp8 --gpu-mem-gb 192 "
                         "--kv-overhead-frac 0.10 --reserve-activations-gb 40 --json");
    ck_assert_str_eq(json_string_value(json_object_get(j, "layout")), "MHA");
    ck_assert_int_eq((int)num(j, "bytes_per_token"), 1310720); /* 80 x 2 x 8192 x 1 */
    ck_assert_int_eq((long long)num(j, "bytes_per_sequence"), 5368709120LL);
    ck_assert_int_eq((long long)num(j, "bytes_total"), 42949672960LL);
    NEAR_REL(num(j, "bytes_total_with_overhead"), 47244640256.0, 1e-12);
    json_t *fit = json_object_get(j, "fit");
    NEAR_REL(num(fit, "cache_budget_bytes"), 152e9, 1e-12);
    ck_assert(json_is_true(json_object_get(fit, "fits")));
    ck_assert_int_eq((int)num(fit, "max_batch_at_tokens"), 25);                 /* 152e9 / (5368709120 x 1.1) */
    ck_assert_int_eq((int)num(fit, "max_tokens_per_sequence_at_batch"), 13178); /* 152e9 / (1310720 x 1.1 x 8) */
    ck_assert_int_eq((int)num(fit, "max_tokens_total"), 105424);
    ck_assert_str_eq(json_string_value(json_object_get(fit, "memory_from")), "--gpu-mem-gb");
    json_decref(j);

    /* the same on the terminal */
    pl_cmd_result r =
        pl_run_perflab(NULL, "calc kv-cache --layers 80 --hidden 8192 --tokens 4096 --batch 8 --dtype fp8 "
                             "--gpu-mem-gb 192 --kv-overhead-frac 0.10 --reserve-activations-gb 40");
    ck_assert_msg(strstr(r.out, "bytes per token:     1310720") && strstr(r.out, "largest batch at 4096 tokens: 25"),
                  "%s", r.out);
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(kv_cache_layouts_and_presets)
{
    /* GQA: Llama-3.1-70B, 8 of 64 heads cached, bf16: 80 x 2 x 8 x 128 x 2 */
    json_t *j = run_json("calc kv-cache --model llama-3.1-70b --tokens 1000 --page-tokens 16 --batch 2 --gpu-mem-gb "
                         "141 --weights-gb 70.6 --json");
    ck_assert_str_eq(json_string_value(json_object_get(j, "layout")), "GQA");
    ck_assert_int_eq((int)num(j, "bytes_per_token"), 327680);
    ck_assert_int_eq((int)num(j, "tokens_padded"), 1008); /* 63 pages of 16 */
    ck_assert_int_eq((long long)num(j, "bytes_total"), 327680LL * 1008 * 2);
    ck_assert_int_eq((int)num(json_object_get(j, "fit"), "max_tokens_per_sequence_at_batch") % 16, 0);
    json_decref(j);
    /* MQA */
    j = run_json("calc kv-cache --layers 10 --heads 16 --kv-heads 1 --head-dim 64 --tokens 10 --json");
    ck_assert_str_eq(json_string_value(json_object_get(j, "layout")), "MQA");
    ck_assert_int_eq((int)num(j, "bytes_per_token"), 10 * 2 * 1 * 64 * 2);
    json_decref(j);
    /* MLA: DeepSeek-V3 caches one 576-wide latent per layer */
    j = run_json("calc kv-cache --model deepseek-v3 --tokens 100 --json --gpu-mem-gb 1000");
    ck_assert_str_eq(json_string_value(json_object_get(j, "layout")), "MLA");
    ck_assert_int_eq((int)num(j, "bytes_per_token"), 61 * 576 * 2);
    json_decref(j);
    /* every preset is a consistent shape */
    for (size_t i = 0; i < pl_kv_model_count; i++) {
        const pl_kv_model *m = &pl_kv_models[i];
        ck_assert(m->layers > 0 && m->heads % m->kv_heads == 0 && m->source && m->params_b > 0);
        ck_assert(m->kv_latent_dim > 0 || m->hidden == m->heads * m->head_dim);
    }
    pl_cmd_result r = pl_run_perflab(NULL, "calc kv-cache --list-models");
    ck_assert(strstr(r.out, "llama-3.1-70b") && strstr(r.out, "config.json"));
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(kv_cache_errors)
{
    static const struct {
        const char *args, *says;
    } cases[] = {
        {"calc kv-cache --hidden 8192 --tokens 10", "--layers is missing"},
        {"calc kv-cache --layers 2 --heads 8 --kv-heads 16 --head-dim 64 --tokens 10", "exceeds --heads"},
        {"calc kv-cache --layers 2 --heads 8 --kv-heads 3 --head-dim 64 --tokens 10", "not a multiple of --kv-heads"},
        {"calc kv-cache --layers 2 --hidden 1000 --heads 3 --tokens 10", "not a multiple of --heads"},
        {"calc kv-cache --layers 2 --hidden 1024 --tokens 10 --dtype fp6", "--dtype fp6"},
        {"calc kv-cache --model gpt-5 --tokens 10", "unknown --model"},
        {"calc kv-cache --layers 2 --hidden 1024", "--tokens and --batch must be positive"},
        {"calc nope", "unknown calculator"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_cmd_result r = pl_run_perflab(NULL, cases[i].args);
        ck_assert_msg(r.exit_code == 2 && strstr(r.err, cases[i].says), "%s: exit %d: %s", cases[i].args, r.exit_code,
                      r.err);
        pl_cmd_result_free(&r);
    }
}
END_TEST

/* docs/calc.md, cost-per-token: 800 W, 1500 tokens/s, $0.16/kWh, PUE 1.5, $2.50 per GPU-hour. */
START_TEST(cost_worked_example)
{
    json_t *j = run_json("calc cost-per-token --avg-power 800 --throughput 1500 --electricity-cost 0.16 --pue 1.5 "
                         "--gpu-hour-cost 2.5 --json");
    NEAR_REL(num(j, "joules_per_token"), 800.0 / 1500, 1e-12);
    NEAR_REL(num(j, "facility_joules_per_token"), 0.8, 1e-12);
    NEAR_REL(num(j, "kwh_per_million_tokens"), 0.8e6 / 3.6e6, 1e-12);                         /* 0.2222 */
    NEAR_REL(num(j, "energy_cost_per_million_tokens"), 0.16 * 0.8e6 / 3.6e6, 1e-12);          /* $0.03556 */
    NEAR_REL(num(j, "hardware_cost_per_million_tokens"), 2.5 / (1500 * 3600.0) * 1e6, 1e-12); /* $0.4630 */
    NEAR_REL(num(j, "total_cost_per_million_tokens"), 0.035555555555555556 + 0.46296296296296297, 1e-12);
    NEAR_REL(num(j, "tokens_per_kwh"), 4.5e6, 1e-12);
    json_decref(j);

    pl_cost_request q = {.avg_power_w = 800, .throughput_tps = 1500, .pue = 0.9};
    pl_cost_result r;
    char err[256];
    ck_assert_int_eq(pl_cost_compute(&q, &r, err, sizeof err), -1);
    ck_assert(strstr(err, "--pue"));
}
END_TEST

/* From a real H200 run with telemetry (docs/results): power from --profile minimal, time from the median. */
START_TEST(cost_from_a_run)
{
    const char *run = PERFLAB_SOURCE_DIR "/docs/results/h200-report/run-memory-roofline";
    char *args = pl_strfmt("calc cost-per-token --from-run %s --target memory:coalescing --variant coalesced "
                           "--tokens-per-iteration 1000 --electricity-cost 0.2 --json",
                           run);
    json_t *j = run_json(args);
    free(args);
    pl_run r;
    char err[512];
    ck_assert_msg(pl_run_load(run, &r, err, sizeof err) == 0, "%s", err);
    const pl_variant_result *v = pl_target_find_variant(pl_run_find_target(&r, "memory:coalescing"), "coalesced");
    NEAR_REL(num(j, "avg_power_w"), v->telemetry.power_w.mean, 1e-9);
    NEAR_REL(num(j, "throughput_tokens_per_s"), 1000 / (v->stats.median / 1e3), 1e-9);
    json_decref(j);
    /* a variant without a result, a target that is not there */
    double p, t, m;
    ck_assert_int_eq(pl_cost_from_run(&r, "memory:nope", "x", 1, &p, &t, &m, err, sizeof err), -1);
    ck_assert(strstr(err, "no target"));
    pl_run_free(&r);

    /* a run without power telemetry (the host self-tests here have no NVML) says how to get it */
    char *dir = pl_test_tmpdir("calc-run");
    args = pl_strfmt("run --targets selftest:sleep --quiet --artifacts-dir '%s' --expectations-dir '%s' --min-time-s "
                     "0.05 --max-time-s 0.1",
                     dir, dir);
    pl_cmd_result c = pl_run_perflab(NULL, args);
    free(args);
    char *p0 = strstr(c.out, "artifacts: ");
    ck_assert_ptr_nonnull(p0);
    char *rd = pl_strfmt("%.*s", (int)strcspn(p0 + 11, "\n"), p0 + 11);
    pl_cmd_result_free(&c);
    args = pl_strfmt("calc cost-per-token --from-run %s --target selftest:sleep --variant half "
                     "--tokens-per-iteration 10",
                     rd);
    c = pl_run_perflab(NULL, args);
    ck_assert_int_eq(c.exit_code, 2);
    ck_assert_msg(strstr(c.err, "--profile minimal"), "%s", c.err);
    pl_cmd_result_free(&c);
    free(args);
    free(rd);
    free(dir);
}
END_TEST

/* docs/calc.md, precision: how each format rounds, at its edges. */
START_TEST(rounding_worked_example)
{
    ck_assert(pl_fp_round(0.3, &pl_fp_e4m3) == 0.3125);     /* steps of 1/32 in [0.25, 0.5) */
    ck_assert(pl_fp_round(0.3, &pl_fp_e5m2) == 0.3125);     /* steps of 1/16 */
    ck_assert(pl_fp_round(1 + 0x1p-8, &pl_fp_bf16) == 1.0); /* a tie: to even */
    ck_assert(pl_fp_round(1 + 3 * 0x1p-9, &pl_fp_bf16) == 1 + 0x1p-7);
    ck_assert(pl_fp_round(1 + 0x1p-11, &pl_fp_tf32) == 1.0);
    ck_assert(pl_fp_round(1 + 0x1p-10, &pl_fp_tf32) == 1 + 0x1p-10);
    ck_assert(pl_fp_round(65519, &pl_fp_fp16) == 65504);
    ck_assert(isinf(pl_fp_round(65520, &pl_fp_fp16))); /* the tie above the largest value overflows */
    ck_assert(pl_fp_round(500, &pl_fp_e4m3) == 448);   /* e4m3 has no Inf: it saturates */
    ck_assert(isinf(pl_fp_round(70000, &pl_fp_e5m2)));
    ck_assert(pl_fp_round(0x1p-9, &pl_fp_e4m3) == 0x1p-9); /* the smallest subnormal */
    ck_assert(pl_fp_round(0x1p-10, &pl_fp_e4m3) == 0.0);   /* half of it: a tie, to even (zero) */
    ck_assert(pl_fp_round(-0.3, &pl_fp_e4m3) == -0.3125);
    ck_assert(pl_fp_round(1.0 / 3, &pl_fp_fp32) == (double)(1.0f / 3));
    ck_assert(isnan(pl_fp_round(NAN, &pl_fp_bf16)));
}
END_TEST

static const pl_prec_row *row(const pl_prec_row *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    ck_abort_msg("no row %s", name);
    return NULL;
}

START_TEST(precision_orders_and_verdicts)
{
    pl_prec_request q = {.op = PL_PREC_GEMM, .dims = {128, 96, 1024}, .block = 128, .seed = 7, .input_scale = 1};
    pl_prec_row *rows;
    size_t n;
    char err[256];
    ck_assert_int_eq(pl_precision_run(&q, &rows, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 8);
    const double fp32 = row(rows, n, "fp32")->rel_l2, tf32 = row(rows, n, "tf32")->rel_l2,
                 bf16 = row(rows, n, "bf16")->rel_l2, fp16 = row(rows, n, "fp16")->rel_l2,
                 e4 = row(rows, n, "fp8_e4m3/tensor")->rel_l2, e5 = row(rows, n, "fp8_e5m2/tensor")->rel_l2;
    /* each format's unit roundoff sets its error: 2^-24, 2^-11, 2^-9 (output-rounded), 2^-11, 2^-4, 2^-3 */
    ck_assert_msg(fp32 < 1e-6 && tf32 > 1e-4 && tf32 < 5e-4, "fp32 %g tf32 %g", fp32, tf32);
    ck_assert_msg(bf16 > 1e-3 && bf16 < 5e-3 && fp16 < bf16 && fp16 > tf32, "bf16 %g fp16 %g", bf16, fp16);
    ck_assert_msg(e4 > 1e-2 && e4 < 5e-2 && e5 > e4 * 1.5, "e4m3 %g e5m2 %g", e4, e5);
    ck_assert(row(rows, n, "fp32")->safe && row(rows, n, "tf32")->safe && row(rows, n, "bf16")->safe &&
              row(rows, n, "fp16")->safe && row(rows, n, "fp8_e4m3/block")->safe);
    ck_assert(!row(rows, n, "fp8_e5m2/tensor")->safe);
    ck_assert(row(rows, n, "bf16")->tolerance == 1e-2 && row(rows, n, "fp8_e4m3/tensor")->tolerance == 5e-2);
    free(rows);

    /* a range the format cannot hold: fp16's output overflows, bf16's does not */
    q.input_scale = 300;
    q.only = "fp16,bf16";
    ck_assert_int_eq(pl_precision_run(&q, &rows, &n, err, sizeof err), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert(row(rows, n, "fp16")->nonfinite > 0 && !row(rows, n, "fp16")->safe);
    ck_assert(row(rows, n, "bf16")->nonfinite == 0 && row(rows, n, "bf16")->safe);
    free(rows);

    /* the other operations: every dtype runs, the wide ones stay within their tolerance */
    q.input_scale = 1;
    for (pl_prec_op op = PL_PREC_NORM; op <= PL_PREC_ATTENTION; op++) {
        pl_prec_request o = {.op = op, .dims = {33, 300}, .block = 64, .seed = 3, .input_scale = 1};
        ck_assert_int_eq(pl_precision_run(&o, &rows, &n, err, sizeof err), 0);
        ck_assert_uint_eq(n, 8);
        ck_assert_msg(row(rows, n, "bf16")->rel_l2 < 1e-2 && row(rows, n, "fp32")->rel_l2 < 1e-5, "op %d", (int)op);
        free(rows);
    }
}
END_TEST

START_TEST(precision_cli)
{
    json_t *j = run_json("calc precision --op softmax --shape 16x1000 --json");
    ck_assert_str_eq(json_string_value(json_object_get(j, "op")), "softmax");
    ck_assert_uint_eq(json_array_size(json_object_get(j, "rows")), 8);
    json_decref(j);
    pl_cmd_result r = pl_run_perflab(NULL, "calc precision --op attention --shape 64x64");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert(strstr(r.out, "fp8_e4m3/block") && strstr(r.out, "safe"));
    pl_cmd_result_free(&r);
    static const struct {
        const char *args, *says;
    } cases[] = {
        {"calc precision --op gemm --shape 10x10", "MxNxK"},
        {"calc precision --op conv", "--op takes"},
        {"calc precision --dtypes fp12", "names no dtype"},
        {"calc precision --op norm --shape 0x5", "ROWSxCOLS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        r = pl_run_perflab(NULL, cases[i].args);
        ck_assert_msg(r.exit_code == 2 && strstr(r.err, cases[i].says), "%s: %s", cases[i].args, r.err);
        pl_cmd_result_free(&r);
    }
}
END_TEST

/* Each refused with exit 2 and one line on stderr: the message holds `says`. */
static void expect_refused(const char *args, const char *says)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    const char *nl = strchr(r.err, '\n');
    ck_assert_msg(r.exit_code == 2 && strstr(r.err, says) && nl && !nl[1], "%s: exit %d: %s", args, r.exit_code, r.err);
    pl_cmd_result_free(&r);
}

/* Shapes whose size products wrapped (a heap overflow), clamped silently above 2^63, ran out of memory or took
 * seconds: every dimension and the work are bounded before anything is allocated. */
START_TEST(precision_shapes_are_bounded_before_work)
{
    expect_refused("calc precision --op softmax --shape 4294967296x4294967296", "at most");
    expect_refused("calc precision --op gemm --shape 4294967296x4294967296x4294967296", "at most");
    expect_refused("calc precision --op attention --shape 4294967296x4294967296", "at most");
    expect_refused("calc precision --op gemm --shape 99999999999999999999x2x2", "at most");
    expect_refused("calc precision --op gemm --shape 1000000x1000000x1000000", "multiply-adds");
    expect_refused("calc precision --op gemm --shape 512x512x1024", "multiply-adds");
    expect_refused("calc precision --op attention --shape 16384x8", "elements");
    long long dims[3];
    char err[256];
    ck_assert_int_eq(pl_prec_parse_shape(PL_PREC_SOFTMAX, "9223372036854775808x2", dims, err, sizeof err), -1);
    /* the defaults stay within the bounds */
    const double t0 = pl_now_s();
    json_t *j = run_json("calc precision --json");
    ck_assert_msg(pl_now_s() - t0 < 30, "the default shape took %.1f s", pl_now_s() - t0);
    json_decref(j);
}
END_TEST

/* A result a double cannot hold was packed as JSON (json_pack failed, puts(NULL) crashed); a run whose samples are
 * 0 ms gave an infinite throughput. */
static void zero_samples(json_t *root)
{
    json_t *v = json_array_get(json_object_get(json_array_get(json_object_get(root, "targets"), 0), "variants"), 1);
    json_t *samples = json_object_get(v, "samples_ms");
    for (size_t i = 0; i < json_array_size(samples); i++)
        json_array_set_new(samples, i, json_real(0));
}

START_TEST(cost_results_that_overflow_are_refused)
{
    expect_refused("calc cost-per-token --avg-power 1e-300 --throughput 1e12 --json", "double");
    expect_refused("calc cost-per-token --avg-power 1e-300 --throughput 1e12", "double");
    char *dir = pl_test_tmpdir("calc-zero-run");
    char *run = pl_test_write_run(dir, "zero", zero_samples);
    char *args = pl_strfmt("calc cost-per-token --from-run '%s' --target memory:coalescing --variant coalesced "
                           "--tokens-per-iteration 1000 --json",
                           run);
    expect_refused(args, "median time of 0");
    free(args);
    free(run);
    free(dir);
}
END_TEST

/* --tokens 1.9 --batch 2.9 --page-tokens 0.5 ran as 1 token, batch 2 and no paging. */
START_TEST(kv_cache_counts_are_whole)
{
    expect_refused("calc kv-cache --layers 2 --hidden 1024 --tokens 1.9", "--tokens takes a whole number");
    expect_refused("calc kv-cache --layers 2 --hidden 1024 --tokens 16 --batch 2.9", "--batch takes a whole number");
    expect_refused("calc kv-cache --layers 2 --hidden 1024 --tokens 16 --page-tokens 0.5",
                   "--page-tokens takes a whole number");
    json_t *j = run_json("calc kv-cache --layers 2 --hidden 1024 --tokens 16 --batch 2 --page-tokens 8 "
                         "--gpu-mem-gb 1 --json");
    json_decref(j);
}
END_TEST

/* `perflab calc` alone printed the whole usage to stderr: one line and a pointer to --help. */
START_TEST(calc_without_a_calculator_says_so_in_one_line)
{
    expect_refused("calc", "perflab calc --help");
    expect_refused("calc \"$(printf '\\033]0;x\\007')\"", "\\x1b]0;x\\x07");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("calc");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, kv_cache_worked_example);
    tcase_add_test(t, kv_cache_layouts_and_presets);
    tcase_add_test(t, kv_cache_errors);
    tcase_add_test(t, cost_worked_example);
    tcase_add_test(t, cost_from_a_run);
    tcase_add_test(t, rounding_worked_example);
    tcase_add_test(t, precision_orders_and_verdicts);
    tcase_add_test(t, precision_cli);
    tcase_add_test(t, precision_shapes_are_bounded_before_work);
    tcase_add_test(t, cost_results_that_overflow_are_refused);
    tcase_add_test(t, kv_cache_counts_are_whole);
    tcase_add_test(t, calc_without_a_calculator_says_so_in_one_line);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
