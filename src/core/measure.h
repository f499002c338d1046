/* Timing one variant: warm-up, CUDA events (or the host clock for host-only targets), hot or cold L2, optional
 * CUDA-graph replay, adaptive stopping, and samples taken while the SM clock was throttled discarded. */
#ifndef PERFLAB_CORE_MEASURE_H
#define PERFLAB_CORE_MEASURE_H

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
} pl_measure_env;

/* Prepare the environment for a target: cold-mode buffer, throttle reference, latch. */
int pl_measure_env_init(pl_measure_env *env, pl_ctx *ctx, const pl_run_settings *s, int host);
void pl_measure_env_free(pl_measure_env *env);

/* Warm up and time v; fills samples_ms, reps_per_sample, warmup_runs, throttled_discarded, graph, measure_s and
 * stop_reason of out. Returns -1 (ctx->error says why) when the variant fails while timed. */
int pl_measure_variant(pl_measure_env *env, const pl_variant *v, void *state, pl_variant_result *out);

#endif
