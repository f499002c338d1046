/* The per-rate table of a `perflab serve` run, for the terminal and summary.md (serve_report.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/table.h"
#include "serve/serve_report.h"

static void header(const pl_serve_bench_config *c, const pl_serve_bench *b, int md, pl_buf *out)
{
    const pl_serve_workload_spec *w = &c->workload;
    if (md)
        pl_buf_printf(out, "# perflab serve: %s %s, %s KV cache\n\n", c->model->name, pl_weight_dtype_name(c->dtype),
                      pl_kv_dtype_name(c->kv_dtype));
    pl_buf_printf(out, "%s%s\n", md ? "**" : "",
                  c->exec == PL_SERVE_EXEC_FLOOR ? "executor floor: a COMPUTED CEILING, not a measurement"
                                                 : "executor gpu: measured on the GPU");
    if (md)
        pl_buf_append(out, "**\n");
    pl_buf_printf(out, "%stiming: %s\n", md ? "\n- " : "", pl_serve_timing_note(c->exec));
    pl_buf_printf(out,
                  "%smodel %s, %s weights, %s KV cache, %d layers; %d prompts, input %d, output %d, range ratio %g, "
                  "%s lengths, seed %llu\n",
                  md ? "- " : "", c->model->name, pl_weight_dtype_name(c->dtype), pl_kv_dtype_name(c->kv_dtype),
                  c->layers > 0 ? c->layers : c->model->layers, w->num_prompts, w->input_len, w->output_len,
                  w->range_ratio, w->dist == PL_SERVE_LEN_LOGNORMAL ? "lognormal" : "uniform",
                  (unsigned long long)w->seed);
    char conc[32];
    pl_snprintf(conc, sizeof conc, c->sched.max_concurrency > 0 ? "%d" : "none", c->sched.max_concurrency);
    pl_buf_printf(out,
                  "%sscheduler: --max-num-batched-tokens %d, --max-num-seqs %d, --max-concurrency %s, KV pool %d "
                  "pages of %d tokens (%s)\n",
                  md ? "- " : "", c->sched.max_num_batched_tokens,
                  c->sched.max_num_seqs > 0 ? c->sched.max_num_seqs : 256, conc, b->num_pages, c->sched.page_size,
                  b->pages_source);
    if (c->disaggregate)
        pl_buf_printf(out, "%sdisaggregated: prefill on GPU %d (pool above), decode on GPU %d (KV pool %d pages); %s\n",
                      md ? "- " : "", c->device, c->decode_device, b->decode_pages, b->link_note);
    pl_buf_printf(out, "%sceilings: device memory %.1f GB/s, tensor cores %.1f TFLOP/s\n%s", md ? "- " : "",
                  c->hbm_gbps, c->tensor_tflops, md ? "\n" : "");
}

static pl_table *rate_table(const pl_serve_bench_config *c, const pl_serve_bench *b)
{
    static const char *const cols[] = {"rate/s",       ">req/s",       ">out tok/s",   ">ceiling tok/s", ">% ceiling",
                                       ">TTFT p50 ms", ">TTFT p99 ms", ">TPOT p50 ms", ">TPOT p99 ms",   ">ITL p99 ms",
                                       ">E2E p99 ms",  ">batch",       ">peak pages",  ">preempt",       ">sched %",
                                       ">goodput %",   ">J/out tok"};
    pl_table *t = pl_table_new(sizeof cols / sizeof cols[0], cols);
    for (int i = 0; i < b->n_rates; i++) {
        const pl_serve_rate *r = &b->rates[i];
        const pl_serve_metrics *m = &r->m;
        size_t row = pl_table_row(t), k = 0;
        char name[32];
        pl_table_set(t, row, k++, "%s", pl_serve_rate_name(r->rate, name, sizeof name));
        pl_table_set(t, row, k++, "%.2f", m->request_throughput);
        pl_table_set(t, row, k++, "%.1f", m->output_throughput);
        pl_table_set(t, row, k++, "%.1f", r->ceiling.output_throughput);
        if (isfinite(r->ceiling_pct))
            pl_table_set(t, row, k++, "%.1f", r->ceiling_pct);
        else
            pl_table_set(t, row, k++, "-");
        const double v[] = {m->ttft.p50, m->ttft.p99, m->tpot.p50, m->tpot.p99, m->itl.p99, m->e2el.p99};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
            pl_table_set(t, row, k++, "%.3f", v[j]);
        pl_table_set(t, row, k++, "%.1f", m->mean_batch);
        pl_table_set(t, row, k++, "%d/%d", m->peak_pages, m->num_pages);
        pl_table_set(t, row, k++, "%d", m->preemptions);
        pl_table_set(t, row, k++, "%.2f", 100.0 * m->sched_overhead);
        pl_table_set(t, row, k++, "%.1f", 100.0 * m->goodput_fraction);
        if (r->energy_ok)
            pl_table_set(t, row, k++, "%.4f", r->j_per_output_token);
        else
            pl_table_set(t, row, k++, "n/a");
    }
    return t;
}

static void footer(const pl_serve_bench_config *c, const pl_serve_bench *b, int md, pl_buf *out)
{
    const char *li = md ? "- " : "";
    if (md)
        pl_buf_append(out, "\n");
    for (int i = 0; i < b->n_rates; i++) {
        const pl_serve_rate *r = &b->rates[i];
        char name[32];
        pl_serve_rate_name(r->rate, name, sizeof name);
        if (r->energy_ok)
            pl_buf_printf(out, "%senergy at rate %s: %.1f J, %.4f J per output token, %.0f output tokens per kWh\n", li,
                          name, r->energy_j, r->j_per_output_token, r->output_tokens_per_kwh);
        else
            pl_buf_printf(out, "%senergy at rate %s: not available (%s)\n", li, name, r->energy_note);
    }
    for (int i = 0; i < b->n_rates && c->disaggregate; i++) {
        const pl_serve_rate *r = &b->rates[i];
        pl_serve_copy_figures f;
        pl_serve_copy_figures_of(&r->run, &f);
        char name[32];
        pl_buf_printf(out,
                      "%sKV copies at rate %s: %lld, %.1f MiB, %.1f GB/s, %.3f s of copy against %.3f s of prefill "
                      "(%.1f%%) and %.3f s of decode; per request p50 %.3f ms, p99 %.3f ms\n",
                      li, pl_serve_rate_name(r->rate, name, sizeof name), (long long)f.copies,
                      (double)f.bytes / 1048576.0, f.gbps, f.seconds, r->run.prefill_busy_s, 100.0 * f.over_prefill,
                      r->run.decode_busy_s, f.p50_ms, f.p99_ms);
    }
    if (c->exec == PL_SERVE_EXEC_FLOOR)
        pl_buf_printf(out,
                      "%sthe figures above are the engine's computed ceiling at these ceilings, not a "
                      "measurement; the scheduling overhead is host time over simulated step time\n",
                      li);
    if (c->slo.ttft_ms > 0 || c->slo.tpot_ms > 0)
        pl_buf_printf(out, "%sgate (p99 TTFT <= %g ms, p99 TPOT <= %g ms; 0 = not set): %s%s%s\n", li, c->slo.ttft_ms,
                      c->slo.tpot_ms, b->gate_met ? "met" : "MISSED: ", b->gate_met ? "" : b->miss, "");
}

void pl_serve_report_text(const pl_serve_bench_config *c, const pl_serve_bench *b, int markdown, pl_buf *out)
{
    header(c, b, markdown, out);
    pl_table *t = rate_table(c, b);
    if (markdown) {
        pl_table_markdown(t, out);
    } else {
        pl_table_text(t, out);
    }
    pl_table_free(t);
    footer(c, b, markdown, out);
}
