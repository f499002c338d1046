/* What `perflab serve` writes: <artifacts-dir>/<run_id>/report.json (schema perflab.serve/1: the configuration, the
 * seed, the GPU, what the timing includes, and per rate the metrics under vLLM's result-file keys, the ceiling, the
 * energy, the gate, and the sorted TTFT and TPOT samples `perflab report` draws as CDFs), summary.md, and one
 * requests-rate-<R>.jsonl per rate (one request a line). The folder is written as <run_id>.tmp and renamed when
 * every file is in it, so an error leaves nothing half-written. */
#ifndef PERFLAB_SERVE_SERVE_REPORT_H
#define PERFLAB_SERVE_SERVE_REPORT_H

#include <jansson.h>
#include <stddef.h>

#include "core/util.h"
#include "serve/serve_bench.h"

#define PL_SERVE_SCHEMA "perflab.serve/1"

typedef struct pl_serve_report_info {
    const char *run_id;
    json_t *provenance;          /* borrowed: perflab's version and commit, the command, the host, the GPUs */
    const char *gpu_name;        /* NULL: no GPU (disaggregated: the prefill GPU) */
    const char *decode_gpu_name; /* disaggregated: the decode GPU; NULL otherwise or without one */
    const char *ceilings_from;   /* where the floor's ceilings came from */
} pl_serve_report_info;

/* The document (a new reference). */
json_t *pl_serve_report_json(const pl_serve_bench_config *c, const pl_serve_bench *b, const pl_serve_report_info *i);
/* What every output says the timing is: a computed ceiling (floor) or the host wall clock around the GPU work. */
const char *pl_serve_timing_note(pl_serve_exec exec);
/* A disaggregated rate's KV copy figures (from its run): copies, bytes, their GB/s (bytes over the summed copy
 * seconds), the copy seconds over the prefill GPU's busy seconds, and per request the copy time's p50 and p99 (ms;
 * the sum of a request's copies). */
typedef struct pl_serve_copy_figures {
    int64_t copies, bytes;
    double seconds, gbps, over_prefill, p50_ms, p99_ms;
} pl_serve_copy_figures;
void pl_serve_copy_figures_of(const pl_serve_run *run, pl_serve_copy_figures *f);
/* The per-rate table (terminal or markdown) and the lines under it. */
void pl_serve_report_text(const pl_serve_bench_config *c, const pl_serve_bench *b, int markdown, pl_buf *out);
/* Writes the folder <artifacts_dir>/<run_id>/ (see above); its path in *dir_out (malloc'd). -1 with err. */
int pl_serve_report_write(const char *artifacts_dir, const pl_serve_bench_config *c, const pl_serve_bench *b,
                          json_t *report, char **dir_out, char *err, size_t errlen);

#endif
