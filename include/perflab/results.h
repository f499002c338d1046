/* The results of a run, as stored in artifacts/<run_id>/run.json and read back by compare, report and the
 * expectations check. One struct per level: run -> targets -> variants. */
#ifndef PERFLAB_RESULTS_H
#define PERFLAB_RESULTS_H

#include <stddef.h>
#include "perflab/stats.h"
#include "perflab/target.h"
#include "perflab/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: "complete" (false while a run is under way or was killed), settings.small, the ceilings a roofline run used.
 * Runs of schema 1 read as complete. 3: each timed variant's "energy"; runs without it read as unmetered. */
#define PL_SCHEMA_VERSION 3

typedef enum pl_status {
    PL_STATUS_OK,                  /* verified and timed */
    PL_STATUS_UNVERIFIED,          /* timed with --skip-verify */
    PL_STATUS_SKIPPED,             /* requirements not met: never a failure */
    PL_STATUS_FAILED_VERIFICATION, /* wrong output: not timed */
    PL_STATUS_CRASHED,             /* the target's process died */
    PL_STATUS_TIMEOUT,             /* the target's process outlived --timeout-s and was killed */
    PL_STATUS_CUDA_ERROR,          /* a CUDA call failed */
    PL_STATUS_ERROR,               /* any other failure (setup, bad parameters, allocation) */
    PL_STATUS_NOT_RUN,             /* a variant after the one that crashed or hung */
    PL_STATUS_SLO_MISSED,          /* verified and timed, but it missed an objective it was given (pl_gate) */
    PL_STATUS_COUNT
} pl_status;

extern const char *const pl_status_names[PL_STATUS_COUNT];
const char *pl_status_name(pl_status s);
int pl_status_from_name(const char *name); /* -1 when unknown */
int pl_status_is_failure(pl_status s);     /* counts toward exit code 1 */

/* min/mean/max of a quantity sampled while a target ran (profile minimal and up). */
typedef struct pl_summary {
    int n;
    double min, mean, max;
} pl_summary;

typedef struct pl_telemetry {
    pl_summary sm_clock_mhz, mem_clock_mhz, power_w, temperature_c;
} pl_telemetry;

/* Hardware counters of one replay of a variant under Nsight Compute (`--profile roofline` with ncu on the PATH):
 * sums over the variant's kernels, utilisations weighted by each kernel's duration. NaN: not collected. */
typedef struct pl_ncu_metrics {
    int kernels;                           /* kernels profiled in the replay */
    double duration_ms;                    /* gpu__time_duration, summed */
    double dram_bytes_read, dram_bytes_write;
    double l2_bytes;                       /* lts__t_bytes */
    double dram_pct, l2_pct, l1_pct, shared_pct; /* % of peak sustained throughput */
    double occupancy_pct;                  /* achieved: sm__warps_active */
    double sm_pct, tensor_pct;             /* SM and tensor-pipe (mma.sync or wgmma, the busier) throughput */
    double shared_wavefronts, bank_conflicts; /* shared-memory wavefronts and the bank conflicts among them */
    char *report;                          /* the .ncu-rep, relative to the run directory; NULL when none */
    char *error;                           /* why nothing was measured; NULL when measured */
} pl_ncu_metrics;

/* The GPU's energy over a variant's timed samples (core/energy.h): NVML's total-energy counter read before and after
 * each timed region (every kept round, summed). It is the whole GPU's draw while the samples ran, idle power in the
 * host's gaps between samples included; warm-up, verification and other variants' rounds are outside it. NaN, with
 * note saying why, where there is no counter. */
typedef struct pl_energy {
    double energy_j;           /* the counter's deltas, summed */
    double joules_per_run;     /* energy_j / runs */
    double joules_per_element; /* joules_per_run / the target's elements per run (tokens for e2e:); NaN without */
    double timed_s;            /* the wall seconds the counter covered */
    double average_power_w;    /* energy_j / timed_s */
    double runs;               /* runs of the variant the counter covered, dropped samples' included */
    char *note;                /* why there is no figure; NULL when measured */
} pl_energy;

typedef struct pl_variant_result {
    char *name;
    char *technique;
    pl_status status;
    char *reason; /* why it failed or was skipped; NULL when OK */
    int is_reference;
    pl_verification verification;
    /* how it was timed */
    int graph;           /* replayed as a CUDA graph */
    int latched;         /* the stream was held until each sample was enqueued (launch latency excluded) */
    int host_timed;      /* PL_VARIANT_HOST_TIMED: its time is mostly the host's work */
    int reps_per_sample; /* runs back to back between the two events of one sample */
    int warmup_runs;
    int throttled_discarded; /* samples dropped because the SM clock was below the threshold */
    double measure_s;        /* wall time spent measuring */
    char *stop_reason;       /* which stopping rule ended the measurement */
    double *samples_ms;      /* per run: each sample's time divided by reps_per_sample */
    size_t n_samples;
    /* computed by the parent */
    int has_stats;
    pl_stats stats;
    double tflops, gbps, arithmetic_intensity; /* NaN when the counters say nothing */
    double pct_of_reference;                   /* throughput vs the REFERENCE variant; NaN when none */
    int has_speedup;
    pl_interval speedup; /* median(baseline) / median(this) */
    int has_telemetry;
    pl_telemetry telemetry;
    int has_ncu; /* a roofline run replayed it under ncu (ncu.error says when that failed) */
    pl_ncu_metrics ncu;
    int has_energy; /* it was timed since energy was recorded (energy.note says when there is no figure) */
    pl_energy energy;
} pl_variant_result;

typedef struct pl_param_kv {
    char *name;
    char *value;
} pl_param_kv;

typedef struct pl_target_result {
    char *name; /* group:name */
    char *summary;
    pl_status status;
    char *reason;
    pl_param_kv *params;
    size_t n_params;
    pl_counters counters;
    pl_variant_result *variants;
    size_t n_variants;
    double duration_s;
    char *log_file; /* relative to the run directory */
    int has_gate;   /* the target judged itself against an objective (pl_gate) */
    int gate_met;
    char *gate_detail;
} pl_target_result;

typedef struct pl_gpu_record {
    int ordinal;
    char *name;
    char *pci_bus_id;
    int cc_major, cc_minor;
    int sm_count;
    double memory_gib;
    double l2_mib;
    int sm_clock_mhz, sm_clock_max_mhz;
    int mem_clock_mhz, mem_clock_max_mhz;
    double power_limit_w;
    int temperature_c;
} pl_gpu_record;

typedef struct pl_provenance {
    char *perflab_version;
    char *git_commit;
    char *command_line;
    char *started_at; /* ISO 8601, UTC */
    char *hostname;
    char *os;
    char *cpu;
    char *driver_version;    /* NVML's string, or derived from the CUDA driver version */
    int cuda_driver_version; /* e.g. 13000 */
    int cuda_runtime_version;
    char *hardware_key; /* the expectations file this run is compared with */
    char *host_key;     /* $PERFLAB_HOST_KEY: a name the user gives a host they keep the same; NULL when unset */
    pl_gpu_record *gpus;
    size_t n_gpus;
} pl_provenance;

/* perflab run's timing defaults: its options (src/cli/timing_options.c) and the Python API (src/py) start from them. */
#define PL_DEFAULT_WARMUP      3
#define PL_DEFAULT_MIN_SAMPLES 10
#define PL_DEFAULT_MIN_TIME_S  0.25
#define PL_DEFAULT_MAX_TIME_S  3.0
#define PL_DEFAULT_MAX_NOISE   0.02 /* a fraction */
#define PL_DEFAULT_THROTTLE    0.75 /* of the maximum SM clock (power-bound targets: PL_POWER_BOUND_THROTTLE) */
#define PL_DEFAULT_SEED        20261121

typedef struct pl_run_settings {
    char *profile; /* none | minimal | roofline */
    char *mode;    /* hot | cold */
    int graph;
    int iterations; /* 0 = adaptive */
    int warmup;
    double min_time_s, max_time_s, max_noise;
    int min_samples;
    double timeout_s;
    double throttle_threshold; /* fraction of the max SM clock */
    int throttle_given;        /* --throttle-threshold was given: power-bound targets use it too (not stored) */
    int device;
    unsigned long long seed;
    int skip_verify;
    int verify_only; /* perflab verify */
    int rounds;      /* 0: the target's way (interleaved for power-bound targets); 1: one variant after another;
                        N: N interleaved rounds */
    int small;       /* every target at its parameters' small values (verify --small) */
    /* --exec-children: each target's process executes perflab afresh (`perflab __run-target`) instead of being a
     * plain fork of the runner, so that tools which follow only processes that exec (compute-sanitizer, nsys) see
     * the targets. Isolation, timeout and kill are the same either way (not stored). */
    int exec_children;
} pl_run_settings;

typedef enum pl_expect_verdict {
    PL_EXPECT_MET,
    PL_EXPECT_IMPROVED,
    PL_EXPECT_REGRESSED,
    PL_EXPECT_NEW,
    PL_EXPECT_MISSING,
    PL_EXPECT_UNGATED, /* a host-timed variant measured on another host than the stored figure: shown, not judged */
    PL_EXPECT_COUNT
} pl_expect_verdict;

extern const char *const pl_expect_verdict_names[PL_EXPECT_COUNT];
const char *pl_expect_verdict_name(pl_expect_verdict v);

typedef struct pl_expect_row {
    char *target;
    char *variant;
    pl_expect_verdict verdict;
    double expected_ms, measured_ms; /* NaN where absent */
    double change;                   /* measured / expected - 1 */
    double threshold;                /* the change a regression must exceed: max(tolerance, noise) */
    char *note;
} pl_expect_row;

typedef struct pl_expect_report {
    int present; /* 0: no comparison was made */
    char *key;
    char *file;
    int file_found;
    pl_expect_row *rows;
    size_t n_rows;
    int regressions;
    int accepted; /* --accept-regressions */
    int updated;  /* --update-expectations wrote the file */
} pl_expect_report;

struct pl_ceilings;

typedef struct pl_run {
    int schema_version;
    char *run_id;
    char *run_dir;
    /* 0 while the run is under way (run.json is rewritten after every target) or when it was killed: the targets
     * listed are those that finished. */
    int complete;
    pl_provenance prov;
    pl_run_settings settings;
    pl_target_result *targets;
    size_t n_targets;
    pl_expect_report expectations;
    /* The ceilings `perflab peak` stored for this GPU, loaded once at the start of a roofline run (NULL: none):
     * the report reads them from here, never from disk. */
    struct pl_ceilings *ceilings;
    /* Roofline runs: the counter tool ("ncu 2025.2.1 at /usr/local/cuda/bin/ncu") or one line saying why there
     * are no measured counters; NULL otherwise. */
    char *profiler;
    double duration_s;
    int exit_code;
} pl_run;

/* Derived figures (statistics, throughput, speedups, % of reference) from raw samples and counters. */
void pl_target_result_derive(pl_target_result *t, uint64_t seed);
/* Worst status of the variants -> the target's status when nothing failed at the target level. */
pl_status pl_target_result_rollup(const pl_target_result *t);

void pl_variant_result_free(pl_variant_result *v);
void pl_target_result_free(pl_target_result *t);
void pl_provenance_free(pl_provenance *p);
void pl_run_settings_free(pl_run_settings *s);
void pl_expect_report_free(pl_expect_report *r);
void pl_run_free(pl_run *r);

const pl_target_result *pl_run_find_target(const pl_run *r, const char *name);
/* The GPU the run measured (settings.device, or the first when that index is not in provenance, as a crafted or
 * old run.json may say); NULL when the run lists no GPU. */
const pl_gpu_record *pl_run_gpu(const pl_run *r);
const pl_variant_result *pl_target_find_variant(const pl_target_result *t, const char *name);

#ifdef __cplusplus
}
#endif
#endif
