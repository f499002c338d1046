/* The figures of a serving run, defined as vLLM's serving benchmark (benchmarks/serve.py, calculate_metrics)
 * defines them, from the per-request times the scheduler records (seconds on its clock; the metrics in ms):
 *   TTFT   first token − send (the request's send time: after --max-concurrency let it go).
 *   TPOT   per request with more than one output token: (E2E − TTFT) / (output_len − 1), the first token excluded;
 *          its distribution is over those requests.
 *   ITL    every gap between consecutive tokens of a request, pooled over all requests.
 *   E2E    last token − send.
 *   each:  mean, median, standard deviation (population), p50, p90, p99 (linear interpolation between the sorted
 *          values, as numpy.percentile's default).
 *   duration   the last token's time (the clock starts at 0 when the workload starts sending).
 *   throughputs  completed requests, output tokens, and input + output tokens per second of the duration.
 *   goodput    a request is good when its TTFT <= --slo-ttft-ms and its TPOT <= --slo-tpot-ms (an SLO of 0 is not
 *              set and always met; a one-token request's TPOT counts as 0, as vLLM's): their fraction and rate.
 *   mean batch size  sequences per step, averaged over steps; peak KV pages; preemptions (each one counted).
 *   scheduling overhead  the scheduler's host wall time over the steps' total duration (with a GPU executor, whose
 *              steps are synchronous, the fraction of step time the GPU sits idle between steps).
 *   gate       met when p99 TTFT <= --slo-ttft-ms and p99 TPOT <= --slo-tpot-ms (those set); a miss is named.
 * pl_serve_metrics_fields() lists every figure as (key, value, unit) under vLLM's result-file keys, for a writer
 * (the CLI's JSON) without a JSON library here. */
#ifndef PERFLAB_ENGINE_SERVE_METRICS_H
#define PERFLAB_ENGINE_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/serve_sched.h"

typedef struct pl_serve_dist {
    int n;
    double mean, median, std, p50, p90, p99; /* ms */
} pl_serve_dist;

typedef struct pl_serve_slo {
    double ttft_ms, tpot_ms; /* 0: not set */
} pl_serve_slo;

typedef struct pl_serve_metrics {
    int completed;
    int64_t total_input, total_output;
    double duration_s;
    double request_throughput, output_throughput, total_token_throughput; /* per second */
    pl_serve_dist ttft, tpot, itl, e2el;
    pl_serve_slo slo;
    int good;
    double goodput_fraction, request_goodput; /* good / completed; good per second */
    double mean_batch;
    int peak_pages, num_pages, preemptions;
    double sched_overhead; /* host_sched_s / busy_s: the scheduler's host time per second of steps */
    int gate_met;          /* 1: every SLO set is met at p99 (or none is set) */
    char miss[256];        /* empty when met; else "p99 TTFT 812.300 ms > SLO 500.000 ms" (each miss, '; ' between) */
} pl_serve_metrics;

/* The percentile p (0..100) of sorted[0..n) with linear interpolation (numpy's default). n >= 1. */
double pl_serve_percentile(const double *sorted, int n, double p);

/* 0, or -1 without host memory. num_pages: the pool's size (reported beside the peak). */
int pl_serve_metrics_compute(const pl_serve_run *run, int num_pages, const pl_serve_slo *slo, pl_serve_metrics *m);

typedef struct pl_serve_field {
    const char *key;
    double value;
    const char *unit; /* "ms", "1/s", "tokens", ... */
} pl_serve_field;

enum { PL_SERVE_FIELDS_MAX = 64 };
/* Fills out[0..PL_SERVE_FIELDS_MAX) and returns how many. */
int pl_serve_metrics_fields(const pl_serve_metrics *m, pl_serve_field *out);

#endif
