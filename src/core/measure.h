/* Timing one variant: warm-up, CUDA events (or the host clock for host-only targets), hot or cold L2, optional
 * CUDA-graph replay, adaptive stopping, and samples taken while the SM clock was throttled discarded. */
#ifndef PERFLAB_CORE_MEASURE_H
#define PERFLAB_CORE_MEASURE_H

#include "core/energy.h"
#include "core/latch.h"
#include "core/nvml.h"
#include "perflab/results.h"
#include "perflab/target.h"

#define PL_SAMPLE_TARGET_MS 0.1 /* hot mode batches runs until one sample lasts this long */
#define PL_MAX_REPS         1000
#define PL_MAX_SAMPLES      100000
#define PL_WARMUP_MIN_S     0.02

typedef struct pl_measure_env {
    pl_ctx *ctx;
    const pl_run_settings *settings;
    int host; /* host-only target: time with the host clock */
    int cold; /* flush L2 before every sample */
    void *flush_buf;
    size_t flush_bytes;
    double max_sm_clock_mhz; /* throttle reference; 0 disables the check */
    int have_nvml;
    pl_nvml_device nvml_dev;
    pl_latch latch;
    pl_energy_meter energy; /* read around each variant's timed samples when opened (pl_measure_env_meter_energy); a
                               test may put a counter of its own here */
} pl_measure_env;

/* Prepare the environment for a target: cold-mode buffer, throttle reference, latch. */
int pl_measure_env_init(pl_measure_env *env, pl_ctx *ctx, const pl_run_settings *s, int host);
void pl_measure_env_free(pl_measure_env *env);
/* Meter each variant's energy over its timed samples (core/energy.h): the GPU's NVML counter, or a record saying why
 * there is none. Without it (the GEMM selector, `perflab peak`) the results hold no energy record. */
void pl_measure_env_meter_energy(pl_measure_env *env);

/* Warm up and time v until the adaptive rule (or --iterations) stops it; fills samples_ms, reps_per_sample,
 * warmup_runs, throttled_discarded, graph, measure_s, stop_reason and energy (the timed samples' only) of out. Returns -1 (ctx->error says why)
 * when the variant fails while timed. */
int pl_measure_variant(pl_measure_env *env, const pl_variant *v, void *state, pl_variant_result *out);

/* The same in pieces, for variants timed in interleaved rounds: begin (warm-up, batch size, graph), any number
 * of rounds (each warms up again first: other variants ran since), end (the samples of every kept round go to out). NULL / -1 when the variant fails (ctx->error). */
typedef struct pl_timing pl_timing;

typedef struct pl_round_quota {
    int keep;           /* 0: a round at load whose samples are dropped */
    size_t samples;     /* exactly this many kept samples, when > 0 */
    double min_s;       /* else: at least this long ... */
    size_t min_samples; /* ... and this many kept samples */
    double max_s;       /* and never longer than this (once one sample is in) */
} pl_round_quota;

/* The interleaved schedule. The variant (or configuration) timed j-th (0 <= j < n) in round `round` (0: the round
 * at load, then 1..rounds): round r starts with r mod n and goes on in order, so each round times every one once and
 * any n consecutive rounds start with n different ones. */
size_t pl_round_slot(size_t n, int round, size_t j);
/* How long each runs in round `round` of `rounds`: the round at load (0) keeps nothing; a kept round takes
 * --iterations / rounds samples (the first rounds one more where it does not divide) or, adaptive, at least
 * --min-time-s and --min-samples / rounds samples; any round stops at --max-time-s / rounds once it has a sample. */
pl_round_quota pl_round_quota_for(const pl_run_settings *s, int rounds, int round);

pl_timing *pl_timing_begin(pl_measure_env *env, const pl_variant *v, void *state, pl_variant_result *out);
int pl_timing_round(pl_measure_env *env, pl_timing *t, pl_variant_result *out, const pl_round_quota *q);
/* Takes stop_reason (heap) into out, and the energy of its kept rounds; frees t. */
void pl_timing_end(pl_timing *t, pl_variant_result *out, char *stop_reason);
void pl_timing_free(pl_timing *t);

#endif
