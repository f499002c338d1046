/* The timing options that every verb which times GPU work shares (run, verify, gemm): one declaration, one set
 * of bounds and help lines, one translation into pl_run_settings. A verb sets its own defaults first. */
#ifndef PERFLAB_CLI_TIMING_OPTIONS_H
#define PERFLAB_CLI_TIMING_OPTIONS_H

#include "cli/options.h"
#include "perflab/results.h"

#define PL_TIMING_OPTION_COUNT 10

typedef struct pl_timing_args {
    const char *mode; /* hot | cold */
    int iterations;   /* 0 = adaptive */
    int warmup, min_samples, device;
    double min_time_s, max_time_s, max_noise_pct, throttle_pct, seed;
    char help[PL_TIMING_OPTION_COUNT][112]; /* help lines naming this verb's defaults */
} pl_timing_args;

/* perflab run's defaults: hot, 3 warm-up runs, 10 samples over 0.25 s at least, 3 s at most, 2% noise, discard
 * samples below 75% of the maximum SM clock, GPU 0, seed 20261121. */
void pl_timing_args_defaults(pl_timing_args *t);
/* Write the PL_TIMING_OPTION_COUNT option entries (pointing into t; help from its current defaults). */
void pl_timing_options(pl_timing_args *t, pl_option *out);
/* The verb's table: own[0..split), then the timing options, then own[split..n_own), then the terminator. `out`
 * holds n_own + PL_TIMING_OPTION_COUNT + 1 entries. */
void pl_timing_options_join(pl_option *out, const pl_option *own, size_t n_own, size_t split, pl_timing_args *t);
/* One line naming the problem (mode, min > max); 0 when the values are usable. */
int pl_timing_args_check(const pl_timing_args *t, char *err, size_t errlen);
/* The timing fields of the settings (mode is strdup'd). */
void pl_timing_args_apply(const pl_timing_args *t, pl_run_settings *s);

#endif
