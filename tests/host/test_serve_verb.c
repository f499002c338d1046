/* perflab serve and perflab scenario on a machine without a GPU: flag refusals (exit 2, one line, nothing written); a
 * floor run on a tiny model whose report.json figures equal the engine's scheduler and metrics called directly; the
 * FP8 KV cache (--kv-dtype fp8: the report states it, the floor counts its bytes, the plan's pool ~1.88x the bf16
 * one at head_dim 64); the SLO gate (exit 1 naming each rate that missed); the same seed giving the same report (less
 * the run's id, its provenance and the host's own times); the serve folder drawn by perflab report (well-formed SVG
 * charts); and the scenario with the GPU hidden (every GPU phase no_gpu or skipped with its reason, exit 3). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/results_json.h"
#include "core/util.h"
#include "engine/model_config.h"
#include "engine/serve_floor.h"
#include "engine/serve_metrics.h"
#include "engine/serve_sched.h"
#include "engine/serve_workload.h"
#include "testutil.h"
#include "xmlcheck.h"

/* A workload small enough for a test: tiny-dense, 40 requests of ~64 in / ~24 out, a pool that forces preemption. */
#define FLOOR_ARGS                                                                                                     \
    "serve --executor floor --hbm-gbps 3000 --tensor-tflops 700 --model tiny-dense --num-prompts 40 "                  \
    "--random-input-len 64 --random-output-len 24 --random-range-ratio 0.5 --num-pages 30 --page-size 16 "             \
    "--max-num-batched-tokens 256 --seed 7"

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The one run folder under dir (malloc'd). */
static char *run_folder(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    char *found = NULL;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strstr(e->d_name, "serve-peak") == NULL) {
            ck_assert_msg(!found, "more than one folder in %s", dir);
            found = pl_path_join(dir, e->d_name);
        }
    closedir(d);
    ck_assert_ptr_nonnull(found);
    return found;
}

static json_t *load_report(const char *folder)
{
    char *path = pl_path_join(folder, "report.json"), err[512];
    json_t *doc = pl_json_load_file(path, err, sizeof err);
    ck_assert_msg(doc != NULL, "%s", err);
    free(path);
    return doc;
}

/* Runs `perflab ARGS --artifacts-dir <a fresh folder named after tag>` under env, expects exit `want`, and returns
 * the one folder it wrote (malloc'd); r keeps what it printed (free it). */
static char *run_in(const char *env, const char *args, const char *tag, int want, pl_cmd_result *r)
{
    char *dir = pl_test_tmpdir(tag), *cmd = pl_strfmt("%s --artifacts-dir %s", args, dir);
    *r = pl_run_perflab(env, cmd);
    ck_assert_msg(r->exit_code == want, "perflab %s: exit %d, want %d: %s", cmd, r->exit_code, want, r->err);
    char *folder = run_folder(dir);
    free(cmd);
    free(dir);
    return folder;
}

static void expect_refused(const char *args, const char *says)
{
    char *dir = pl_test_tmpdir("serve_refusal"), *cmd = pl_strfmt("%s --artifacts-dir %s", args, dir);
    pl_cmd_result r = pl_run_perflab(NULL, cmd);
    ck_assert_msg(r.exit_code == 2, "%s: exit %d, stderr %s", args, r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, says) != NULL, "%s: stderr '%s' lacks '%s'", args, r.err, says);
    const char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "%s: more than one line: %s", args, r.err);
    ck_assert_msg(entries(dir) == 0, "%s: something was written in %s", args, dir);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
}

START_TEST(refusals)
{
    expect_refused(FLOOR_ARGS " --executor cpu", "--executor must be gpu or floor");
    expect_refused(FLOOR_ARGS " --request-rate 0", "--request-rate: '0' is not a rate");
    expect_refused(FLOOR_ARGS " --request-rate 1,2,1", "--request-rate: 1 is given twice");
    expect_refused(FLOOR_ARGS " --request-rate abc", "--request-rate: 'abc' is not a rate");
    expect_refused(FLOOR_ARGS " --random-range-ratio 1.5", "--random-range-ratio");
    expect_refused(FLOOR_ARGS " --model llama9", "--model");
    expect_refused(FLOOR_ARGS " --dtype fp4", "--dtype must be bf16, fp8 or fp8-block");
    expect_refused(FLOOR_ARGS " --kv-dtype fp16", "--kv-dtype must be bf16 or fp8");
    expect_refused(FLOOR_ARGS " --kv-dtype fp8-block", "--kv-dtype must be bf16 or fp8");
    expect_refused(FLOOR_ARGS " --length-dist pareto", "--length-dist must be uniform or lognormal");
    expect_refused("serve --executor floor --hbm-gbps 3000 --model tiny-dense",
                   "--hbm-gbps and --tensor-tflops go together");
    expect_refused(FLOOR_ARGS " --layers 99", "--layers 99: tiny-dense has 3");
    expect_refused(FLOOR_ARGS " extra", "unexpected argument 'extra'");
    expect_refused(FLOOR_ARGS " --random-input-len 2000", "KV pages of 16 tokens, the pool has 30");
    expect_refused(FLOOR_ARGS " --decode-gpu 1", "--prefill-gpu, --decode-gpu and --link-gbps go with --disaggregate");
    expect_refused(FLOOR_ARGS " --link-gbps 100", "go with --disaggregate");
    expect_refused(FLOOR_ARGS " --disaggregate --prefill-gpu 1 --decode-gpu 1", "needs two different GPUs");
    expect_refused(FLOOR_ARGS " --disaggregate --decode-gpu 0", "are both 0");
    expect_refused("serve --model tiny-dense --disaggregate --dtype fp8", "--disaggregate on the GPU serves bf16");
}
END_TEST

/* --disaggregate through the floor: both lanes at the ceilings, the copies at --link-gbps; the report's lanes and
 * copies, each request's copy (its prompt's pages at least, at the link's rate), the same workload's requests all
 * served. Without a GPU the measured form exits 3 before any work. */
START_TEST(disaggregated_floor_run)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, FLOOR_ARGS " --num-pages 60 --request-rate 4,inf --disaggregate --link-gbps 100",
                          "serve_disagg", 0, &r);
    ck_assert_msg(strstr(r.out, "disaggregated: prefill on GPU 0") && strstr(r.out, "KV copies at rate inf"), "%s",
                  r.out);
    json_t *doc = load_report(folder);
    ck_assert(json_is_true(json_object_get(doc, "disaggregated")));
    json_t *d = json_object_get(doc, "disaggregation");
    ck_assert_int_eq((int)pl_json_get_real(d, "decode_device"), 1);
    ck_assert_int_eq((int)pl_json_get_real(d, "decode_num_pages"), 60);
    size_t i;
    json_t *rate;
    /* tiny-dense: 3 layers, 2 kv heads of 64 → a 16-token page is 3 · 2 · 16 · 2 · 64 · 2 = 24576 bytes */
    const double page = 24576;
    json_array_foreach(json_object_get(doc, "rates"), i, rate)
    {
        json_t *g = json_object_get(rate, "disaggregated"), *k = json_object_get(g, "kv_copies");
        ck_assert_int_eq((int)pl_json_get_real(json_object_get(rate, "metrics"), "completed"), 40);
        ck_assert_msg(pl_json_get_real(k, "count") >= 40, "fewer copies than requests");
        ck_assert_msg(fabs(pl_json_get_real(k, "gb_per_s") - 100.0) < 1e-6, "copies not at the link's rate");
        ck_assert_msg(fmod(pl_json_get_real(k, "bytes"), page) == 0, "copies of other than whole pages");
        ck_assert_msg(pl_json_get_real(g, "prefill_busy_s") > 0 && pl_json_get_real(g, "decode_busy_s") > 0,
                      "a lane never ran");
    }
    char *path = pl_path_join(folder, "requests-rate-inf.jsonl"), *text = pl_read_file(path, NULL, NULL, 0);
    ck_assert_ptr_nonnull(text);
    int lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        ck_assert_msg(o != NULL, "%s", e.text);
        const double in = pl_json_get_real(o, "input_len"), bytes = pl_json_get_real(o, "kv_copy_bytes");
        ck_assert_msg(bytes >= ceil(in / 16) * page, "request moved fewer than its prompt's pages");
        ck_assert_msg(fabs(pl_json_get_real(o, "kv_copy_ms") - bytes / 100e9 * 1e3) < 1e-9, "copy time off the link");
        json_decref(o);
    }
    ck_assert_int_eq(lines, 40);
    free(text);
    free(path);
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
    char *dir = pl_test_tmpdir("serve_disagg_nogpu"),
         *cmd = pl_strfmt("serve --model tiny-dense --disaggregate --artifacts-dir %s", dir);
    r = pl_run_perflab("CUDA_VISIBLE_DEVICES=-1", cmd);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    ck_assert_int_eq(entries(dir), 0);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
}
END_TEST

/* The same run through the engine's functions, as the verb runs it at rate `rate`. */
static void direct_metrics_kv(double rate, pl_kv_dtype kv_dtype, pl_serve_metrics *m)
{
    char err[512];
    const pl_model_config *model = pl_model_find("tiny-dense", err, sizeof err);
    ck_assert_ptr_nonnull(model);
    pl_serve_workload_spec w = {
        .num_prompts = 40, .input_len = 64, .output_len = 24, .range_ratio = 0.5, .request_rate = rate, .seed = 7};
    pl_serve_request reqs[40];
    ck_assert(pl_serve_workload_make(&w, reqs, err, sizeof err) == 0);
    pl_serve_floor f = {.model = model, .dtype = PL_WEIGHTS_BF16, .kv_dtype = kv_dtype, .ceilings = {700e12, 3000e9}};
    pl_serve_executor ex = {&f, pl_serve_floor_step};
    pl_serve_config cfg = {.max_num_batched_tokens = 256, .max_num_seqs = 256, .num_pages = 30, .page_size = 16};
    pl_serve_run run;
    ck_assert_msg(pl_serve_simulate(reqs, 40, &cfg, &ex, &run, err, sizeof err) == 0, "%s", err);
    pl_serve_slo slo = {0};
    ck_assert(pl_serve_metrics_compute(&run, 30, &slo, m) == 0);
    pl_serve_run_free(&run);
    pl_serve_floor_free(&f);
}

static void direct_metrics(double rate, pl_serve_metrics *m)
{
    direct_metrics_kv(rate, PL_KV_BF16, m);
}

static void expect_close(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want) + 1e-12, "%s: report %.17g, direct %.17g", what, got, want);
}

START_TEST(floor_run_matches_engine)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, FLOOR_ARGS " --request-rate 5,inf", "serve_floor", 0, &r);
    ck_assert_msg(strstr(r.out, "COMPUTED CEILING, not a measurement") != NULL, "%s", r.out);
    json_t *doc = load_report(folder);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "schema")), "perflab.serve/1");
    ck_assert(json_is_true(json_object_get(doc, "computed_ceiling")));
    json_t *rates = json_object_get(doc, "rates");
    ck_assert_int_eq((int)json_array_size(rates), 2);
    const double rate[2] = {5, INFINITY};
    int preempted = 0;
    for (int i = 0; i < 2; i++) {
        pl_serve_metrics m;
        direct_metrics(rate[i], &m);
        json_t *got = json_object_get(json_array_get(rates, (size_t)i), "metrics");
        expect_close(pl_json_get_real(got, "output_throughput"), m.output_throughput, "output_throughput");
        expect_close(pl_json_get_real(got, "request_throughput"), m.request_throughput, "request_throughput");
        expect_close(pl_json_get_real(got, "p99_ttft_ms"), m.ttft.p99, "p99_ttft_ms");
        expect_close(pl_json_get_real(got, "mean_tpot_ms"), m.tpot.mean, "mean_tpot_ms");
        expect_close(pl_json_get_real(got, "p90_itl_ms"), m.itl.p90, "p90_itl_ms");
        expect_close(pl_json_get_real(got, "p50_e2el_ms"), m.e2el.p50, "p50_e2el_ms");
        expect_close(pl_json_get_real(got, "mean_batch_size"), m.mean_batch, "mean_batch_size");
        ck_assert_int_eq((int)pl_json_get_real(got, "preemptions"), m.preemptions);
        ck_assert_int_eq((int)pl_json_get_real(got, "peak_kv_pages"), m.peak_pages);
        preempted += m.preemptions;
        json_t *samples = json_object_get(json_object_get(json_array_get(rates, (size_t)i), "samples"), "ttft_ms");
        ck_assert_int_eq((int)json_array_size(samples), 40);
        for (size_t k = 1; k < 40; k++)
            ck_assert(json_number_value(json_array_get(samples, k - 1)) <=
                      json_number_value(json_array_get(samples, k)));
        expect_close(json_number_value(json_array_get(samples, 20)) * 0.5 +
                         json_number_value(json_array_get(samples, 19)) * 0.5,
                     m.ttft.p50, "the samples' median");
    }
    ck_assert_msg(preempted > 0, "the 30-page pool should force preemptions at rate inf");
    char *md = pl_path_join(folder, "summary.md"), *jl = pl_path_join(folder, "requests-rate-inf.jsonl");
    char *text = pl_read_file(md, NULL, NULL, 0), *lines = pl_read_file(jl, NULL, NULL, 0);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(lines);
    ck_assert(strstr(text, "COMPUTED CEILING") != NULL);
    int n = 0;
    for (const char *p = lines; *p; p++)
        n += *p == '\n';
    ck_assert_int_eq(n, 40);
    free(text);
    free(lines);
    free(md);
    free(jl);
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
}
END_TEST

static const char *report_kv_dtype(json_t *doc)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(doc, "config"), "model"), "kv_dtype"));
}

static int report_pages(json_t *doc)
{
    return (int)pl_json_get_real(json_object_get(json_object_get(doc, "config"), "scheduler"), "num_pages");
}

/* --kv-dtype fp8: stated in the report and the summary; the floor's steps count the FP8 cache's bytes (the run equals
 * the engine's floor executor over an FP8 cache, and beats the bf16 one's throughput on the same pool); the pool
 * planned in the GPU's memory holds (2·64)/(64 + 4) = 1.88x the bf16 pages. */
START_TEST(fp8_kv_cache_floor_run)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, FLOOR_ARGS " --request-rate inf --kv-dtype fp8", "serve_floor_fp8", 0, &r);
    ck_assert_msg(strstr(r.out, "fp8 KV cache") != NULL, "%s", r.out);
    json_t *doc = load_report(folder);
    ck_assert_str_eq(report_kv_dtype(doc), "fp8");
    pl_serve_metrics m8, m16;
    direct_metrics_kv(INFINITY, PL_KV_FP8_E4M3, &m8);
    direct_metrics_kv(INFINITY, PL_KV_BF16, &m16);
    json_t *got = json_object_get(json_array_get(json_object_get(doc, "rates"), 0), "metrics");
    expect_close(pl_json_get_real(got, "output_throughput"), m8.output_throughput, "fp8 output_throughput");
    ck_assert_msg(m8.output_throughput > m16.output_throughput, "the FP8 cache's floor %.6g tok/s, bf16's %.6g",
                  m8.output_throughput, m16.output_throughput);
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
    /* the pool from the memory plan: 1 GiB of GPU memory, the rest after weights, activations and the reserve */
    const char *planned = "serve --executor floor --hbm-gbps 3000 --tensor-tflops 700 --model tiny-dense "
                          "--num-prompts 8 --random-input-len 64 --random-output-len 8 --gpu-mem-gib 1 --seed 7";
    char *args16 = pl_strfmt("%s --kv-dtype bf16", planned), *args8 = pl_strfmt("%s --kv-dtype fp8", planned);
    char *f16 = run_in(NULL, args16, "serve_plan_bf16", 0, &r);
    pl_cmd_result_free(&r);
    char *f8 = run_in(NULL, args8, "serve_plan_fp8", 0, &r);
    pl_cmd_result_free(&r);
    json_t *d16 = load_report(f16), *d8 = load_report(f8);
    ck_assert_str_eq(report_kv_dtype(d16), "bf16");
    const double ratio = (double)report_pages(d8) / report_pages(d16);
    ck_assert_msg(ratio > 1.87 && ratio < 1.89, "FP8 pool %d pages, bf16 %d: %.4fx", report_pages(d8),
                  report_pages(d16), ratio);
    json_decref(d16);
    json_decref(d8);
    free(f16), free(f8), free(args16), free(args8);
}
END_TEST

/* An MoE config serves as a dense one does: the floor executor's steps cost what uniform routing touches. */
START_TEST(moe_model_floor_run)
{
    pl_cmd_result r;
    char *folder =
        run_in(NULL,
               "serve --executor floor --hbm-gbps 3000 --tensor-tflops 700 --model tiny-moe --num-prompts 12 "
               "--random-input-len 48 --random-output-len 16 --seed 3",
               "serve_floor_moe", 0, &r);
    json_t *doc = load_report(folder);
    const char *model =
        json_string_value(json_object_get(json_object_get(json_object_get(doc, "config"), "model"), "name"));
    ck_assert_msg(model && strcmp(model, "tiny-moe") == 0, "the report's model: %s", model ? model : "(none)");
    json_t *m = json_object_get(json_array_get(json_object_get(doc, "rates"), 0), "metrics");
    const double tok = pl_json_get_real(m, "output_throughput");
    ck_assert_msg(isfinite(tok) && tok > 0, "output throughput %g", tok);
    ck_assert_int_eq((int)pl_json_get_real(m, "completed"), 12);
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(slo_gate_names_the_misses)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, FLOOR_ARGS " --request-rate 2,inf --slo-tpot-ms 0.000001", "serve_gate", 1, &r);
    ck_assert_msg(strstr(r.err, "SLO missed: rate 2/s: p99 TPOT") != NULL, "%s", r.err);
    ck_assert_msg(strstr(r.err, "rate inf/s: p99 TPOT") != NULL, "%s", r.err);
    json_t *doc = load_report(folder);
    ck_assert(json_is_false(json_object_get(json_object_get(doc, "gate"), "met")));
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
    /* a generous SLO is met */
    free(run_in(NULL, FLOOR_ARGS " --slo-tpot-ms 1000 --slo-ttft-ms 1000", "serve_gate_met", 0, &r));
    pl_cmd_result_free(&r);
}
END_TEST

/* The report less what differs between two runs of the same workload: the run id, the provenance, host times. */
static json_t *comparable(const char *args, const char *tag)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, args, tag, 0, &r);
    json_t *doc = load_report(folder), *rate;
    json_object_del(doc, "run_id");
    json_object_del(doc, "provenance");
    size_t i;
    json_array_foreach(json_object_get(doc, "rates"), i, rate)
    {
        json_object_del(rate, "scheduler_host_s");
        json_object_del(json_object_get(rate, "metrics"), "scheduler_overhead");
    }
    free(folder);
    pl_cmd_result_free(&r);
    return doc;
}

START_TEST(same_seed_same_report)
{
    json_t *a = comparable(FLOOR_ARGS " --request-rate 3,inf", "serve_seed_a"),
           *b = comparable(FLOOR_ARGS " --request-rate 3,inf", "serve_seed_b"),
           *c = comparable(FLOOR_ARGS " --request-rate 3,inf --seed 8", "serve_seed_c");
    ck_assert_msg(json_equal(a, b), "two runs of the same seed differ");
    ck_assert_msg(!json_equal(a, c), "another seed gave the same report");
    json_decref(a);
    json_decref(b);
    json_decref(c);
}
END_TEST

START_TEST(report_draws_the_curves)
{
    pl_cmd_result r;
    char *folder = run_in(NULL, FLOOR_ARGS " --request-rate 1,4,inf", "serve_report", 0, &r);
    pl_cmd_result_free(&r);
    char *out = pl_test_tmpdir("serve_report_html"), *rep = pl_strfmt("report %s --out %s", folder, out);
    r = pl_run_perflab(NULL, rep);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    char *path = pl_path_join(out, "report.html"), *html = pl_read_file(path, NULL, NULL, 0), why[512];
    ck_assert_ptr_nonnull(html);
    pl_xml_stats st = {0};
    ck_assert_msg(pl_xml_check(html, &st, why, sizeof why) == 0, "%s", why);
    ck_assert_int_ge(st.svgs, 3);
    ck_assert(strstr(html, "TTFT: cumulative distribution") != NULL);
    ck_assert(strstr(html, "TPOT: cumulative distribution") != NULL);
    ck_assert(strstr(html, "throughput against latency") != NULL);
    ck_assert(strstr(html, "COMPUTED CEILING") != NULL);
    free(html);
    free(path);
    free(rep);
    free(out);
    free(folder);
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(scenario_without_gpu)
{
    pl_cmd_result r;
    char *folder = run_in("CUDA_VISIBLE_DEVICES=-1", "scenario fullstack --quiet", "scenario", 3, &r);
    json_t *doc = load_report(folder), *p;
    ck_assert_str_eq(json_string_value(json_object_get(doc, "schema")), "perflab.scenario/1");
    size_t i, n = 0;
    json_array_foreach(json_object_get(doc, "phases"), i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name")),
                   *st = json_string_value(json_object_get(p, "status")),
                   *why = json_string_value(json_object_get(p, "reason"));
        ck_assert_msg(strcmp(st, "no_gpu") == 0 || strcmp(st, "skipped") == 0, "%s: %s", name, st);
        ck_assert_msg(why && *why, "%s has no reason", name);
        if (strcmp(name, "moe-readiness") == 0)
            ck_assert_msg(strstr(why, "needs 2 GPUs") != NULL, "%s", why);
        n++;
    }
    ck_assert_int_eq((int)n, 6);
    char *md = pl_path_join(folder, "summary.md"), *text = pl_read_file(md, NULL, NULL, 0);
    ck_assert_ptr_nonnull(text);
    ck_assert(strstr(text, "| serve | no_gpu |") != NULL);
    ck_assert(strstr(text, "exit code 3") != NULL);
    /* perflab report draws the page */
    char *out = pl_test_tmpdir("scenario_html"), *rep = pl_strfmt("report %s --out %s", folder, out),
         *path = pl_path_join(out, "report.html"), why[512];
    pl_cmd_result h = pl_run_perflab(NULL, rep);
    ck_assert_msg(h.exit_code == 0, "exit %d: %s", h.exit_code, h.err);
    char *html = pl_read_file(path, NULL, NULL, 0);
    ck_assert_ptr_nonnull(html);
    pl_xml_stats st = {0};
    ck_assert_msg(pl_xml_check(html, &st, why, sizeof why) == 0, "%s", why);
    ck_assert(strstr(html, "perflab scenario") != NULL && strstr(html, "no_gpu") != NULL);
    free(html);
    pl_cmd_result_free(&h);
    free(path);
    free(rep);
    free(out);
    free(text);
    free(md);
    json_decref(doc);
    free(folder);
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(serve_gpu_without_gpu)
{
    char *dir = pl_test_tmpdir("serve_nogpu"), *cmd = pl_strfmt("serve --model tiny-dense --artifacts-dir %s", dir);
    pl_cmd_result r = pl_run_perflab("CUDA_VISIBLE_DEVICES=-1", cmd);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "no usable GPU") && strstr(r.err, "--executor floor"), "%s", r.err);
    ck_assert_int_eq(entries(dir), 0);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serve_verb");
    TCase *tc = tcase_create("serve");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, floor_run_matches_engine);
    tcase_add_test(tc, moe_model_floor_run);
    tcase_add_test(tc, fp8_kv_cache_floor_run);
    tcase_add_test(tc, slo_gate_names_the_misses);
    tcase_add_test(tc, same_seed_same_report);
    tcase_add_test(tc, report_draws_the_curves);
    tcase_add_test(tc, scenario_without_gpu);
    tcase_add_test(tc, serve_gpu_without_gpu);
    tcase_add_test(tc, disaggregated_floor_run);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
