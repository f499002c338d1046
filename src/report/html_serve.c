/* The serve and scenario sections of report.html. Serve, from a `perflab serve` report.json (src/serve/serve_report.h
 * writes it): what ran, the per-rate table, the TTFT and TPOT CDFs and the throughput-latency curve. Scenario, from a
 * `perflab scenario` report.json: each phase's status and headline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "report/html_impl.h"

enum { CDF_POINTS = 512 }; /* a CDF is drawn through at most this many of its samples */

static const char *text(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static char *rate_label(json_t *r)
{
    json_t *v = json_object_get(r, "request_rate");
    return json_is_string(v) ? pl_strfmt("rate %s", json_string_value(v))
                             : pl_strfmt("rate %g/s", json_number_value(v));
}

static void settings(pl_buf *b, json_t *doc)
{
    json_t *cfg = json_object_get(doc, "config"), *m = json_object_get(cfg, "model"),
           *w = json_object_get(cfg, "workload"), *s = json_object_get(cfg, "scheduler"),
           *g = json_object_get(doc, "gate");
    const int floor = json_is_true(json_object_get(doc, "computed_ceiling"));
    if (floor)
        pl_html_elem(b, "p", "class=\"warn\"",
                     "executor floor: every figure of this section is a COMPUTED CEILING, not a measurement");
    pl_buf_append(b, "<dl class=\"prov\">\n");
    char *line = pl_strfmt("%s, %s weights, %lld layers", text(m, "name"), text(m, "dtype"),
                           (long long)json_integer_value(json_object_get(m, "layers")));
    pl_html_dl_item(b, "model", line);
    free(line);
    line = pl_strfmt("%lld prompts, input %lld, output %lld, range ratio %g, %s lengths, seed %lld",
                     (long long)json_integer_value(json_object_get(w, "num_prompts")),
                     (long long)json_integer_value(json_object_get(w, "random_input_len")),
                     (long long)json_integer_value(json_object_get(w, "random_output_len")),
                     pl_json_get_real(w, "random_range_ratio"), text(w, "length_dist"),
                     (long long)json_integer_value(json_object_get(w, "seed")));
    pl_html_dl_item(b, "workload", line);
    free(line);
    line = pl_strfmt("max-num-batched-tokens %lld, max-num-seqs %lld, KV pool %lld pages of %lld tokens",
                     (long long)json_integer_value(json_object_get(s, "max_num_batched_tokens")),
                     (long long)json_integer_value(json_object_get(s, "max_num_seqs")),
                     (long long)json_integer_value(json_object_get(s, "num_pages")),
                     (long long)json_integer_value(json_object_get(s, "page_size")));
    pl_html_dl_item(b, "scheduler", line);
    free(line);
    pl_html_dl_item(b, "executor", text(doc, "executor"));
    pl_html_dl_item(b, "timing", text(doc, "timing"));
    pl_html_dl_item(b, "ceilings", text(json_object_get(doc, "ceilings"), "from"));
    pl_html_dl_item(b, "gate", json_is_true(json_object_get(g, "met")) ? "met (or no SLO set)" : text(g, "miss"));
    pl_buf_append(b, "</dl>\n");
}

static void rate_table(pl_buf *b, json_t *rates)
{
    static const char *const spec[] = {"rate",         ">out tok/s",   ">% of ceiling", ">TTFT p50 ms", ">TTFT p99 ms",
                                       ">TPOT p50 ms", ">TPOT p99 ms", ">E2E p99 ms",   ">J/out tok"};
    pl_table *t = pl_table_new(sizeof spec / sizeof spec[0], spec);
    size_t i;
    json_t *r;
    json_array_foreach(rates, i, r)
    {
        json_t *m = json_object_get(r, "metrics"), *e = json_object_get(r, "energy");
        size_t row = pl_table_row(t), k = 0;
        char *label = rate_label(r);
        pl_table_set(t, row, k++, "%s", label);
        free(label);
        const double v[] = {
            pl_json_get_real(m, "output_throughput"), pl_json_get_real(r, "output_throughput_pct_of_ceiling"),
            pl_json_get_real(m, "p50_ttft_ms"),       pl_json_get_real(m, "p99_ttft_ms"),
            pl_json_get_real(m, "p50_tpot_ms"),       pl_json_get_real(m, "p99_tpot_ms"),
            pl_json_get_real(m, "p99_e2el_ms"),       pl_json_get_real(e, "joules_per_output_token")};
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++) {
            if (isfinite(v[j]))
                pl_table_set(t, row, k++, j == 7 ? "%.4f" : "%.3f", v[j]);
            else
                pl_table_set(t, row, k++, "n/a");
        }
    }
    pl_html_table(b, t);
    pl_table_free(t);
}

typedef struct cdf {
    double *x, *y;
    size_t n;
} cdf;

/* The sorted samples as a CDF, at most CDF_POINTS of them (evenly spaced ranks, the last included). */
static cdf cdf_of(json_t *samples)
{
    size_t n = json_array_size(samples), m = n < CDF_POINTS ? n : CDF_POINTS;
    cdf c = {pl_xcalloc(m + 1, sizeof(double)), pl_xcalloc(m + 1, sizeof(double)), m};
    for (size_t k = 0; k < m; k++) {
        size_t i = m == 1 ? n - 1 : k * (n - 1) / (m - 1);
        c.x[k] = json_number_value(json_array_get(samples, i));
        c.y[k] = (double)(i + 1) / (double)n;
    }
    return c;
}

static void cdf_chart(pl_buf *b, json_t *rates, const char *key, const char *title, const char *axis)
{
    size_t n = json_array_size(rates), i;
    pl_series *s = pl_xcalloc(n + 1, sizeof *s);
    cdf *c = pl_xcalloc(n + 1, sizeof *c);
    char **names = pl_xcalloc(n + 1, sizeof *names);
    json_t *r;
    json_array_foreach(rates, i, r)
    {
        c[i] = cdf_of(json_object_get(json_object_get(r, "samples"), key));
        names[i] = rate_label(r);
        s[i] = (pl_series){.name = names[i], .n = c[i].n, .x = c[i].x, .y = c[i].y, .lines = 1, .colour = (int)i};
    }
    pl_xy_chart ch = {.title = title,
                      .subtitle = "fraction of requests at or below each latency, one curve per request rate",
                      .x = {.label = axis, .scale = PL_AXIS_LOG10},
                      .y = {.label = "fraction of requests", .scale = PL_AXIS_LINEAR, .min = 0, .max = 1},
                      .series = s,
                      .n_series = n};
    if (n)
        pl_html_figure(b, pl_chart_xy(&ch, 0));
    for (size_t k = 0; k < n; k++) {
        free(c[k].x);
        free(c[k].y);
        free(names[k]);
    }
    free(c);
    free(names);
    free(s);
}

/* Output tokens/s against p50 and p99 TPOT, each point labelled with its rate. */
static void curve_chart(pl_buf *b, json_t *rates)
{
    size_t n = json_array_size(rates), i;
    double *x = pl_xcalloc(n + 1, sizeof *x), *p50 = pl_xcalloc(n + 1, sizeof *p50),
           *p99 = pl_xcalloc(n + 1, sizeof *p99);
    char **labels = pl_xcalloc(n + 1, sizeof *labels);
    json_t *r;
    json_array_foreach(rates, i, r)
    {
        json_t *m = json_object_get(r, "metrics");
        x[i] = pl_json_get_real(m, "output_throughput");
        p50[i] = pl_json_get_real(m, "p50_tpot_ms");
        p99[i] = pl_json_get_real(m, "p99_tpot_ms");
        labels[i] = rate_label(r);
    }
    const pl_series s[2] = {
        {.name = "p99 TPOT",
         .n = n,
         .x = x,
         .y = p99,
         .labels = (const char *const *)labels,
         .lines = 1,
         .markers = 1,
         .colour = 0},
        {.name = "p50 TPOT", .n = n, .x = x, .y = p50, .lines = 1, .markers = 1, .dashed = 1, .colour = 1},
    };
    pl_xy_chart ch = {.title = "throughput against latency",
                      .subtitle = "output tokens/s and time per output token at each request rate",
                      .x = {.label = "output tokens/s", .scale = PL_AXIS_LINEAR, .from_zero = 1},
                      .y = {.label = "TPOT (ms)", .scale = PL_AXIS_LINEAR, .from_zero = 1},
                      .series = s,
                      .n_series = 2};
    if (n)
        pl_html_figure(b, pl_chart_xy(&ch, 0));
    for (size_t k = 0; k < n; k++)
        free(labels[k]);
    free(labels);
    free(x);
    free(p50);
    free(p99);
}

void pl_html_serve_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc, *rates = json_object_get(doc, "rates");
    pl_html_heading(b, "serve-", "perflab serve", in);
    pl_html_provenance(b, doc);
    settings(b, doc);
    rate_table(b, rates);
    cdf_chart(b, rates, "ttft_ms", "TTFT: cumulative distribution", "time to first token (ms)");
    cdf_chart(b, rates, "tpot_ms", "TPOT: cumulative distribution", "time per output token (ms)");
    curve_chart(b, rates);
}

/* A `perflab scenario` page: the GPUs, the exit code's meaning, and each phase's status, seconds and headline. */
void pl_html_scenario_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc, *gpus = json_object_get(doc, "gpus"), *p;
    pl_html_heading(b, "scenario-", "perflab scenario", in);
    pl_buf_append(b, "<dl class=\"prov\">\n");
    char *line =
        json_integer_value(json_object_get(gpus, "count")) > 0
            ? pl_strfmt("%lld x %s", (long long)json_integer_value(json_object_get(gpus, "count")), text(gpus, "name"))
            : pl_strfmt("none usable (%s)", text(gpus, "why_none"));
    pl_html_dl_item(b, "GPUs", line);
    free(line);
    line = pl_strfmt("%lld: %s", (long long)json_integer_value(json_object_get(doc, "exit_code")),
                     text(doc, "exit_meaning"));
    pl_html_dl_item(b, "exit code", line);
    free(line);
    pl_buf_append(b, "</dl>\n");
    static const char *const spec[] = {"phase", "status", ">seconds", "headline, or why not", "command"};
    pl_table *t = pl_table_new(sizeof spec / sizeof spec[0], spec);
    size_t i;
    json_array_foreach(json_object_get(doc, "phases"), i, p)
    {
        size_t row = pl_table_row(t);
        const char *head = text(p, "headline_text"), *why = text(p, "reason");
        const double s = pl_json_get_real(p, "seconds");
        pl_table_set(t, row, 0, "%s", text(p, "name"));
        pl_table_set(t, row, 1, "%s", text(p, "status"));
        if (isfinite(s))
            pl_table_set(t, row, 2, "%.1f", s);
        else
            pl_table_set(t, row, 2, "-");
        pl_table_set(t, row, 3, "%s%s%s", head, *head && *why ? "; " : "", why);
        pl_table_set(t, row, 4, "%s", text(p, "command"));
    }
    pl_html_table(b, t);
    pl_table_free(t);
}
