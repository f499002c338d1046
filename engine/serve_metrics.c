/* TTFT, TPOT, ITL and end-to-end latency distributions, throughputs, goodput and the SLO gate of a serving run. */
#include "engine/serve_metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pl_serve_percentile(const double *sorted, int n, double p)
{
    const double pos = p / 100.0 * (n - 1);
    const int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

/* Sorts x[0..n) (seconds) in place and fills d in ms; an empty set leaves d zero. */
static void dist_of(double *x, int n, pl_serve_dist *d)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n == 0)
        return;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    const double mean = sum / n;
    for (int i = 0; i < n; i++)
        sq += (x[i] - mean) * (x[i] - mean);
    d->mean = 1e3 * mean;
    d->std = 1e3 * sqrt(sq / n);
    d->median = d->p50 = 1e3 * pl_serve_percentile(x, n, 50.0);
    d->p90 = 1e3 * pl_serve_percentile(x, n, 90.0);
    d->p99 = 1e3 * pl_serve_percentile(x, n, 99.0);
}

static void gate(pl_serve_metrics *m)
{
    size_t used = 0;
    m->miss[0] = '\0';
    const struct {
        const char *name;
        double p99, slo;
    } checks[2] = {{"TTFT", m->ttft.p99, m->slo.ttft_ms}, {"TPOT", m->tpot.p99, m->slo.tpot_ms}};
    for (int i = 0; i < 2; i++)
        if (checks[i].slo > 0 && checks[i].p99 > checks[i].slo && used < sizeof m->miss)
            used += (size_t)snprintf(m->miss + used, sizeof m->miss - used, "%sp99 %s %.3f ms > SLO %.3f ms",
                                     used ? "; " : "", checks[i].name, checks[i].p99, checks[i].slo);
    m->gate_met = m->miss[0] == '\0';
}

/* Per request TTFT, TPOT and E2E; pooled ITL; totals and the good count. */
static void per_request(const pl_serve_run *run, pl_serve_metrics *m, double *ttft, double *tpot, double *e2el,
                        double *itl, int *ntpot, int *nitl)
{
    *ntpot = *nitl = 0;
    for (int i = 0; i < run->n; i++) {
        const pl_serve_record *r = &run->rec[i];
        const int out = r->output_len;
        ttft[i] = r->token_s[0] - r->send_s;
        e2el[i] = r->token_s[out - 1] - r->send_s;
        const double t = out > 1 ? (e2el[i] - ttft[i]) / (out - 1) : 0.0;
        if (out > 1)
            tpot[(*ntpot)++] = t;
        for (int k = 1; k < out; k++)
            itl[(*nitl)++] = r->token_s[k] - r->token_s[k - 1];
        m->total_input += r->input_len;
        m->total_output += out;
        const int ok = (m->slo.ttft_ms <= 0 || 1e3 * ttft[i] <= m->slo.ttft_ms) &&
                       (m->slo.tpot_ms <= 0 || 1e3 * t <= m->slo.tpot_ms);
        m->good += ok;
    }
}

int pl_serve_metrics_compute(const pl_serve_run *run, int num_pages, const pl_serve_slo *slo, pl_serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->slo = *slo;
    int64_t gaps = 0;
    for (int i = 0; i < run->n; i++)
        gaps += run->rec[i].output_len - 1;
    double *ttft = malloc((size_t)run->n * sizeof *ttft), *tpot = malloc((size_t)run->n * sizeof *tpot);
    double *e2el = malloc((size_t)run->n * sizeof *e2el), *itl = malloc((size_t)(gaps + 1) * sizeof *itl);
    int rc = -1;
    if (ttft && tpot && e2el && itl) {
        int ntpot, nitl;
        per_request(run, m, ttft, tpot, e2el, itl, &ntpot, &nitl);
        dist_of(ttft, run->n, &m->ttft);
        dist_of(tpot, ntpot, &m->tpot);
        dist_of(itl, nitl, &m->itl);
        dist_of(e2el, run->n, &m->e2el);
        m->completed = run->n;
        m->duration_s = run->end_s;
        const double per_s = run->end_s > 0 ? 1.0 / run->end_s : 0.0;
        m->request_throughput = run->n * per_s;
        m->output_throughput = (double)m->total_output * per_s;
        m->total_token_throughput = (double)(m->total_input + m->total_output) * per_s;
        m->goodput_fraction = run->n ? (double)m->good / run->n : 0.0;
        m->request_goodput = m->good * per_s;
        m->mean_batch = run->steps ? (double)run->seqs_in_steps / (double)run->steps : 0.0;
        m->peak_pages = run->peak_pages;
        m->num_pages = num_pages;
        m->preemptions = run->preemptions;
        m->sched_overhead = run->busy_s > 0 ? run->host_sched_s / run->busy_s : 0.0;
        gate(m);
        rc = 0;
    }
    free(ttft);
    free(tpot);
    free(e2el);
    free(itl);
    return rc;
}

/* vLLM's result-file keys of the four distributions, in the order of pl_serve_dist's fields. */
#define PL_DIST_KEYS(x)                                                                                                \
    {                                                                                                                  \
        "mean_" x "_ms", "median_" x "_ms", "std_" x "_ms", "p50_" x "_ms", "p90_" x "_ms", "p99_" x "_ms"             \
    }
static const char *const dist_keys[4][6] = {PL_DIST_KEYS("ttft"), PL_DIST_KEYS("tpot"), PL_DIST_KEYS("itl"),
                                            PL_DIST_KEYS("e2el")};

static int dist_fields(int which, const pl_serve_dist *d, pl_serve_field *out)
{
    const double v[6] = {d->mean, d->median, d->std, d->p50, d->p90, d->p99};
    for (int i = 0; i < 6; i++)
        out[i] = (pl_serve_field){dist_keys[which][i], v[i], "ms"};
    return 6;
}

int pl_serve_metrics_fields(const pl_serve_metrics *m, pl_serve_field *out)
{
    int n = 0;
    out[n++] = (pl_serve_field){"completed", m->completed, "requests"};
    out[n++] = (pl_serve_field){"total_input_tokens", (double)m->total_input, "tokens"};
    out[n++] = (pl_serve_field){"total_output_tokens", (double)m->total_output, "tokens"};
    out[n++] = (pl_serve_field){"duration", m->duration_s, "s"};
    out[n++] = (pl_serve_field){"request_throughput", m->request_throughput, "1/s"};
    out[n++] = (pl_serve_field){"output_throughput", m->output_throughput, "tokens/s"};
    out[n++] = (pl_serve_field){"total_token_throughput", m->total_token_throughput, "tokens/s"};
    n += dist_fields(0, &m->ttft, out + n);
    n += dist_fields(1, &m->tpot, out + n);
    n += dist_fields(2, &m->itl, out + n);
    n += dist_fields(3, &m->e2el, out + n);
    out[n++] = (pl_serve_field){"slo_ttft_ms", m->slo.ttft_ms, "ms"};
    out[n++] = (pl_serve_field){"slo_tpot_ms", m->slo.tpot_ms, "ms"};
    out[n++] = (pl_serve_field){"good_requests", m->good, "requests"};
    out[n++] = (pl_serve_field){"goodput_fraction", m->goodput_fraction, "fraction"};
    out[n++] = (pl_serve_field){"request_goodput", m->request_goodput, "1/s"};
    out[n++] = (pl_serve_field){"mean_batch_size", m->mean_batch, "sequences"};
    out[n++] = (pl_serve_field){"peak_kv_pages", m->peak_pages, "pages"};
    out[n++] = (pl_serve_field){"kv_pages", m->num_pages, "pages"};
    out[n++] = (pl_serve_field){"preemptions", m->preemptions, "preemptions"};
    out[n++] = (pl_serve_field){"scheduler_overhead", m->sched_overhead, "fraction"};
    out[n++] = (pl_serve_field){"gate_met", m->gate_met, "bool"};
    return n;
}
