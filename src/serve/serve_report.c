/* report.json and the per-request records of a `perflab serve` run (serve_report.h). */
#include "serve/serve_report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/files.h"
#include "core/results_json.h"

const char *pl_serve_timing_note(pl_serve_exec exec)
{
    if (exec == PL_SERVE_EXEC_FLOOR)
        return "computed ceiling, not a measurement: every step is timed at max(FLOPs / peak, bytes / bandwidth) of "
               "the given ceilings (engine/serve_floor), on the scheduler's simulated clock";
    return "each step's duration is the host wall clock (CLOCK_MONOTONIC) around its GPU work (the step's prefill "
           "chunks and decodes, synchronised); the run's clock advances by those durations and jumps idle gaps to "
           "the next arrival; the scheduler's host time between steps is measured apart (scheduler_overhead), not "
           "added to the latencies; no HTTP, tokenizer or detokenizer";
}

/* Every figure under vLLM's key: its value, or (units) its unit. */
static json_t *fields_json(const pl_serve_metrics *m, int units)
{
    pl_serve_field f[PL_SERVE_FIELDS_MAX];
    int n = pl_serve_metrics_fields(m, f);
    json_t *o = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(o, f[i].key, units ? json_string(f[i].unit) : pl_json_real(f[i].value));
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The sorted TTFT and TPOT samples in ms (the CDFs), as serve_metrics defines them. */
static json_t *samples_json(const pl_serve_run *run, int tpot)
{
    double *v = pl_xmalloc(((size_t)run->n + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < run->n; i++) {
        const pl_serve_record *r = &run->rec[i];
        double ttft = r->token_s[0] - r->send_s;
        if (!tpot)
            v[n++] = ttft * 1e3;
        else if (r->output_len > 1)
            v[n++] = (r->token_s[r->output_len - 1] - r->send_s - ttft) / (r->output_len - 1) * 1e3;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, pl_json_real(v[i]));
    free(v);
    return a;
}

static json_t *energy_json(const pl_serve_rate *r)
{
    if (!r->energy_ok)
        return json_pack("{s:b, s:s}", "available", 0, "reason", r->energy_note);
    return json_pack("{s:b, s:o, s:o, s:o, s:s}", "available", 1, "joules", pl_json_real(r->energy_j),
                     "joules_per_output_token", pl_json_real(r->j_per_output_token), "output_tokens_per_kwh",
                     pl_json_real(r->output_tokens_per_kwh), "counter",
                     "NVML total energy (nvmlDeviceGetTotalEnergyConsumption) before and after the rate's run");
}

void pl_serve_copy_figures_of(const pl_serve_run *run, pl_serve_copy_figures *f)
{
    memset(f, 0, sizeof *f);
    f->copies = run->transfers;
    f->bytes = run->transfer_bytes;
    f->seconds = run->transfer_s;
    f->gbps = run->transfer_s > 0 ? (double)run->transfer_bytes / run->transfer_s / 1e9 : NAN;
    f->over_prefill = run->prefill_busy_s > 0 ? run->transfer_s / run->prefill_busy_s : NAN;
    double *v = pl_xmalloc(((size_t)run->n + 1) * sizeof *v);
    int n = 0;
    for (int i = 0; i < run->n; i++)
        if (run->rec[i].transfers > 0)
            v[n++] = run->rec[i].transfer_s * 1e3;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    f->p50_ms = n ? pl_serve_percentile(v, n, 50) : NAN;
    f->p99_ms = n ? pl_serve_percentile(v, n, 99) : NAN;
    free(v);
}

/* A disaggregated rate's two lanes and KV copies. */
static json_t *disagg_json(const pl_serve_rate *r)
{
    const pl_serve_run *u = &r->run;
    pl_serve_copy_figures f;
    pl_serve_copy_figures_of(u, &f);
    return json_pack("{s:I, s:I, s:o, s:o, s:i, s:i, s:{s:I, s:I, s:o, s:o, s:o, s:o, s:o}}", "prefill_steps",
                     (json_int_t)u->prefill_steps, "decode_steps", (json_int_t)u->decode_steps, "prefill_busy_s",
                     pl_json_real(u->prefill_busy_s), "decode_busy_s", pl_json_real(u->decode_busy_s),
                     "peak_decode_pages", u->peak_decode_pages, "decode_pages", u->decode_pages, "kv_copies", "count",
                     (json_int_t)f.copies, "bytes", (json_int_t)f.bytes, "seconds", pl_json_real(f.seconds), "gb_per_s",
                     pl_json_real(f.gbps), "seconds_over_prefill_busy", pl_json_real(f.over_prefill),
                     "per_request_p50_ms", pl_json_real(f.p50_ms), "per_request_p99_ms", pl_json_real(f.p99_ms));
}

static char *requests_name(double rate)
{
    char name[32];
    return pl_strfmt("requests-rate-%s.jsonl", pl_serve_rate_name(rate, name, sizeof name));
}

static json_t *rate_json(const pl_serve_rate *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "request_rate", isfinite(r->rate) && r->rate > 0 ? json_real(r->rate) : json_string("inf"));
    json_object_set_new(o, "metrics", fields_json(&r->m, 0));
    json_object_set_new(o, "scheduler_host_s", pl_json_real(r->run.host_sched_s));
    json_object_set_new(o, "busy_s", pl_json_real(r->run.busy_s));
    json_object_set_new(o, "steps", json_integer(r->run.steps));
    json_object_set_new(o, "ceiling",
                        json_pack("{s:o, s:o, s:o, s:o}", "output_throughput",
                                  pl_json_real(r->ceiling.output_throughput), "total_token_throughput",
                                  pl_json_real(r->ceiling.total_token_throughput), "p99_tpot_ms",
                                  pl_json_real(r->ceiling.tpot.p99), "p99_ttft_ms", pl_json_real(r->ceiling.ttft.p99)));
    json_object_set_new(o, "output_throughput_pct_of_ceiling", pl_json_real(r->ceiling_pct));
    json_object_set_new(o, "energy", energy_json(r));
    if (r->run.disaggregated)
        json_object_set_new(o, "disaggregated", disagg_json(r));
    json_object_set_new(o, "gate", json_pack("{s:b, s:s}", "met", r->m.gate_met, "miss", r->m.miss));
    char *name = requests_name(r->rate);
    json_object_set_new(o, "requests_file", json_string(name));
    free(name);
    json_object_set_new(
        o, "samples",
        json_pack("{s:o, s:o}", "ttft_ms", samples_json(&r->run, 0), "tpot_ms", samples_json(&r->run, 1)));
    return o;
}

static json_t *config_json(const pl_serve_bench_config *c, const pl_serve_bench *b)
{
    const pl_serve_workload_spec *w = &c->workload;
    json_t *rates = json_array();
    for (int i = 0; i < c->n_rates; i++)
        json_array_append_new(rates,
                              isfinite(c->rates[i]) && c->rates[i] > 0 ? json_real(c->rates[i]) : json_string("inf"));
    json_t *workload = json_pack(
        "{s:i, s:i, s:i, s:o, s:s, s:o, s:o, s:I}", "num_prompts", w->num_prompts, "random_input_len", w->input_len,
        "random_output_len", w->output_len, "random_range_ratio", pl_json_real(w->range_ratio), "length_dist",
        w->dist == PL_SERVE_LEN_LOGNORMAL ? "lognormal" : "uniform", "lognormal_sigma",
        pl_json_real(w->dist == PL_SERVE_LEN_LOGNORMAL ? (w->lognormal_sigma > 0 ? w->lognormal_sigma : 1.0) : NAN),
        "request_rates", rates, "seed", (json_int_t)w->seed);
    json_t *sched = json_pack(
        "{s:i, s:i, s:i, s:i, s:i, s:s}", "max_num_batched_tokens", c->sched.max_num_batched_tokens, "max_num_seqs",
        c->sched.max_num_seqs > 0 ? c->sched.max_num_seqs : 256, "max_concurrency", c->sched.max_concurrency,
        "page_size", c->sched.page_size, "num_pages", b->num_pages, "num_pages_from", b->pages_source);
    return json_pack("{s:{s:s, s:s, s:s, s:i}, s:o, s:o, s:{s:o, s:o}}", "model", "name", c->model->name, "dtype",
                     pl_weight_dtype_name(c->dtype), "kv_dtype", pl_kv_dtype_name(c->kv_dtype), "layers",
                     c->layers > 0 ? c->layers : c->model->layers, "workload", workload, "scheduler", sched, "slo",
                     "ttft_ms", pl_json_real(c->slo.ttft_ms), "tpot_ms", pl_json_real(c->slo.tpot_ms));
}

json_t *pl_serve_report_json(const pl_serve_bench_config *c, const pl_serve_bench *b, const pl_serve_report_info *i)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string(PL_SERVE_SCHEMA));
    json_object_set_new(doc, "kind", json_string("serve"));
    json_object_set_new(doc, "run_id", json_string(i->run_id));
    json_object_set_new(doc, "provenance", i->provenance ? json_incref(i->provenance) : json_null());
    json_object_set_new(doc, "executor", json_string(c->exec == PL_SERVE_EXEC_FLOOR ? "floor" : "gpu"));
    json_object_set_new(doc, "computed_ceiling", json_boolean(c->exec == PL_SERVE_EXEC_FLOOR));
    json_object_set_new(doc, "disaggregated", json_boolean(c->disaggregate));
    if (c->disaggregate)
        json_object_set_new(doc, "disaggregation",
                            json_pack("{s:i, s:i, s:o, s:i, s:o, s:o, s:s}", "prefill_device", c->device,
                                      "decode_device", c->decode_device, "decode_gpu",
                                      i->decode_gpu_name ? json_string(i->decode_gpu_name) : json_null(),
                                      "decode_num_pages", b->decode_pages, "peer_access",
                                      c->exec == PL_SERVE_EXEC_GPU ? json_boolean(b->peer_access) : json_null(),
                                      "link_gbps", pl_json_real(c->link_gbps), "kv_copies", b->link_note));
    json_object_set_new(doc, "timing", json_string(pl_serve_timing_note(c->exec)));
    json_object_set_new(doc, "gpu",
                        i->gpu_name ? json_pack("{s:s, s:i}", "name", i->gpu_name, "device", c->device) : json_null());
    json_object_set_new(doc, "config", config_json(c, b));
    json_object_set_new(doc, "ceilings",
                        json_pack("{s:o, s:o, s:s, s:s}", "hbm_gbps", pl_json_real(c->hbm_gbps), "tensor_tflops",
                                  pl_json_real(c->tensor_tflops), "from", i->ceilings_from ? i->ceilings_from : "",
                                  "what",
                                  "the engine's ceiling: the floor executor (max(FLOPs / peak, bytes / "
                                  "bandwidth) a step) through the same scheduler and KV pool"));
    json_t *rates = json_array();
    for (int k = 0; k < b->n_rates; k++)
        json_array_append_new(rates, rate_json(&b->rates[k]));
    json_object_set_new(doc, "rates", rates);
    if (b->n_rates > 0)
        json_object_set_new(doc, "units", fields_json(&b->rates[0].m, 1));
    json_object_set_new(doc, "gate", json_pack("{s:b, s:s}", "met", b->gate_met, "miss", b->miss));
    return doc;
}

/* One line per request: its lengths, times and latencies (ms), and the tokens the GPU emitted. */
static char *requests_jsonl(const pl_serve_rate *r)
{
    pl_buf b = {0};
    for (int i = 0; i < r->run.n; i++) {
        const pl_serve_record *q = &r->run.rec[i];
        double ttft = q->token_s[0] - q->send_s, e2e = q->token_s[q->output_len - 1] - q->send_s;
        json_t *o = json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:i}", "id", q->id, "input_len",
                              q->input_len, "output_len", q->output_len, "arrival_s", pl_json_real(q->arrival_s),
                              "send_s", pl_json_real(q->send_s), "finish_s", pl_json_real(q->finish_s), "ttft_ms",
                              pl_json_real(ttft * 1e3), "tpot_ms",
                              q->output_len > 1 ? pl_json_real((e2e - ttft) / (q->output_len - 1) * 1e3) : json_null(),
                              "e2el_ms", pl_json_real(e2e * 1e3), "preemptions", q->preemptions);
        if (r->run.disaggregated) {
            json_object_set_new(o, "kv_copies", json_integer(q->transfers));
            json_object_set_new(o, "kv_copy_bytes", json_integer(q->transfer_bytes));
            json_object_set_new(o, "kv_copy_ms", pl_json_real(q->transfer_s * 1e3));
        }
        if (r->tokens) {
            json_t *t = json_array();
            for (int k = 0; k < q->output_len; k++)
                json_array_append_new(t, json_integer(r->tokens[i][k]));
            json_object_set_new(o, "tokens", t);
        }
        char *line = pl_json_dumps_line(o);
        pl_buf_printf(&b, "%s\n", line);
        free(line);
        json_decref(o);
    }
    return b.data ? b.data : pl_strdup("");
}

static void remove_folder(const char *dir, const pl_report_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *p = pl_path_join(dir, files[i].name);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

int pl_serve_report_write(const char *artifacts_dir, const pl_serve_bench_config *c, const pl_serve_bench *b,
                          json_t *report, char **dir_out, char *err, size_t errlen)
{
    const char *run_id = json_string_value(json_object_get(report, "run_id"));
    size_t n = 0, cap = (size_t)b->n_rates + 2;
    pl_report_file *files = pl_xcalloc(cap, sizeof *files);
    pl_buf md = {0};
    pl_serve_report_text(c, b, 1, &md);
    files[n++] = (pl_report_file){.name = "report.json", .json = report};
    files[n++] = (pl_report_file){.name = "summary.md", .text = md.data};
    char **names = pl_xcalloc((size_t)b->n_rates, sizeof *names);
    for (int k = 0; k < b->n_rates; k++) {
        names[k] = requests_name(b->rates[k].rate);
        files[n++] = (pl_report_file){.name = names[k], .text = requests_jsonl(&b->rates[k])};
    }
    char *final = pl_path_join(artifacts_dir, run_id), *tmp = pl_strfmt("%s.tmp", final);
    int rc = pl_report_write_files(tmp, files, n, err, errlen);
    if (rc == 0 && rename(tmp, final) != 0) {
        pl_snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        remove_folder(tmp, files, n);
    for (size_t k = 2; k < n; k++)
        free(files[k].text);
    for (int k = 0; k < b->n_rates; k++)
        free(names[k]);
    free(names);
    free(files);
    pl_buf_free(&md);
    free(tmp);
    *dir_out = rc == 0 ? final : NULL;
    if (rc != 0)
        free(final);
    return rc;
}
