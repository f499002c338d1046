/* `perflab serve`'s work: a workload swept over request rates, each rate served through the engine's scheduler
 * (engine/serve_sched.h) by one step executor — the GPU's (engine/serve_gpu.h: the engine's prefill and decode
 * steps, timed on the host wall clock around the GPU work of each step) or the floor (engine/serve_floor.h: each
 * step at max(FLOPs / peak, bytes / bandwidth) of this GPU's ceilings, a computed ceiling and not a measurement) —
 * then the metrics (engine/serve_metrics.h), the engine's ceiling for the same workload (the floor executor through
 * the same scheduler and pool), and the GPU's energy from NVML's counter around each rate's run. */
#ifndef PERFLAB_SERVE_SERVE_BENCH_H
#define PERFLAB_SERVE_SERVE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "engine/memory_plan.h"
#include "engine/model_config.h"
#include "engine/serve_metrics.h"
#include "engine/serve_sched.h"
#include "engine/serve_workload.h"

typedef enum pl_serve_exec { PL_SERVE_EXEC_FLOOR, PL_SERVE_EXEC_GPU } pl_serve_exec;

typedef struct pl_serve_bench_config {
    const pl_model_config *model;
    pl_weight_dtype dtype;
    pl_kv_dtype kv_dtype; /* the KV cache's: the pool's pages planned in it, the floor's bytes counted in it */
    int layers;           /* 0: the config's */
    pl_serve_workload_spec workload; /* its request_rate is each of rates[] in turn */
    const double *rates;             /* requests/s; INFINITY: every request at t = 0 */
    int n_rates;
    pl_serve_config sched; /* num_pages 0: the GPU executor's (as many as fit), or the floor's plan (below) */
    pl_serve_slo slo;
    pl_serve_exec exec;
    double hbm_gbps, tensor_tflops; /* the ceilings of the floor (the executor, or the ceiling beside the GPU's) */
    int device;                     /* the GPU executor's */
    const char *pci_bus_id;         /* the GPU whose energy counter is read; NULL: none */
    uint64_t gpu_mem_bytes;         /* floor with num_pages 0: pages planned against it (engine/memory_plan.h);
                                       0: a pool that holds every request at once */
    int warmup_requests;            /* GPU executor: requests served once, untimed, before the first rate */
    /* disaggregated (engine/serve_disagg.h): prefill on one GPU, decode on another, the KV moved between them */
    int disaggregate;
    int decode_device;             /* the decode GPU (device is the prefill GPU) */
    const char *decode_pci_bus_id; /* its energy counter, summed with the prefill GPU's; NULL: none */
    double link_gbps;              /* the floor's KV copy rate between the two GPUs, GB/s one way */
    /* called before each rate's run (NULL: not called): its index among n and the rate */
    void (*progress)(void *arg, int index, int n, double rate);
    void *progress_arg;
} pl_serve_bench_config;

typedef struct pl_serve_rate {
    double rate;
    int n;
    pl_serve_request *reqs;
    pl_serve_run run;         /* the executor's run */
    pl_serve_metrics m;       /* its metrics */
    pl_serve_metrics ceiling; /* the floor through the same scheduler and pool (the same as m for the floor) */
    double ceiling_pct;       /* output throughput over the ceiling's, in %; NAN for the floor executor */
    int energy_ok;            /* 1: the three below are set */
    double energy_j, j_per_output_token, output_tokens_per_kwh;
    char energy_note[224]; /* when !energy_ok: why not */
    int **tokens;          /* [n][output_len] token ids the GPU executor emitted (greedy), NULL otherwise */
} pl_serve_rate;

typedef struct pl_serve_bench {
    int num_pages;          /* the KV pool every rate ran with (disaggregated: the prefill GPU's) */
    int decode_pages;       /* disaggregated: the decode GPU's pool; 0 otherwise */
    int peer_access;        /* disaggregated on GPUs: 1 the copies go GPU to GPU, 0 through the host */
    char link_note[256];    /* disaggregated: how the KV moves (peer access or why not; the floor's link rate) */
    char pages_source[160]; /* how it was sized */
    int n_rates;
    pl_serve_rate *rates;
    int gate_met;
    char miss[1024]; /* each rate that missed: "rate 4/s: p99 TTFT ... > SLO ..." ('; ' between) */
} pl_serve_bench;

/* Runs the sweep. Returns an exit code (core/exit.h): 0 done (the gate is in out->gate_met); 2 a bad workload or
 * configuration (a request that cannot fit the pool, a model the plan refuses); 3 the GPU executor cannot start
 * (no GPU, not built, out of memory); 1 a step failed. err holds one line when nonzero; out is then empty. */
int pl_serve_bench_run(const pl_serve_bench_config *c, pl_serve_bench *out, char *err, size_t errlen);
void pl_serve_bench_free(pl_serve_bench *b);

/* "inf" or "4" or "0.5": a rate as the outputs name it. */
const char *pl_serve_rate_name(double rate, char *buf, size_t len);

#endif
