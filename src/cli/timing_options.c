#include "cli/timing_options.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

void pl_timing_args_defaults(pl_timing_args *t)
{
    memset(t, 0, sizeof *t);
    t->mode = "hot";
    t->warmup = PL_DEFAULT_WARMUP;
    t->min_samples = PL_DEFAULT_MIN_SAMPLES;
    t->min_time_s = PL_DEFAULT_MIN_TIME_S;
    t->max_time_s = PL_DEFAULT_MAX_TIME_S;
    t->max_noise_pct = 100 * PL_DEFAULT_MAX_NOISE;
    t->throttle_pct = -1; /* not given: 75, and 50 for power-bound targets (PL_POWER_BOUND_THROTTLE) */
    t->seed = PL_DEFAULT_SEED;
}

void pl_timing_options(pl_timing_args *t, pl_option *out)
{
    char(*h)[112] = t->help;
    pl_snprintf(h[0], sizeof h[0], "hot (back to back) | cold (L2 flushed before every sample); default %s", t->mode);
    pl_snprintf(h[1], sizeof h[1], "exactly N samples each (default: adaptive)");
    pl_snprintf(h[2], sizeof h[2], "warm-up runs before timing (default %d, and at least 20 ms)", t->warmup);
    pl_snprintf(h[3], sizeof h[3], "adaptive: at least N samples (default %d)", t->min_samples);
    pl_snprintf(h[4], sizeof h[4], "adaptive: time at least S seconds each (default %g)", t->min_time_s);
    pl_snprintf(h[5], sizeof h[5], "adaptive: stop after S seconds each, whatever the noise (default %g)",
                t->max_time_s);
    pl_snprintf(h[6], sizeof h[6], "adaptive: stop once the noise is below PCT %% (default %g)", t->max_noise_pct);
    if (t->throttle_pct < 0)
        pl_snprintf(h[7], sizeof h[7],
                    "discard samples with the SM clock below PCT %% of its max (default 75, power-bound targets 50; 0 = off)");
    else
        pl_snprintf(h[7], sizeof h[7], "discard samples with the SM clock below PCT %% of its max (default %g; 0 = off)",
                    t->throttle_pct);
    pl_snprintf(h[8], sizeof h[8], "the GPU to use (default %d)", t->device);
    pl_snprintf(h[9], sizeof h[9], "seed of the random inputs (default %.0f)", t->seed);
    const pl_option opts[PL_TIMING_OPTION_COUNT] = {
        {"mode", 0, PL_OPT_STRING, &t->mode, "M", h[0], 0, 0},
        {"iterations", 'n', PL_OPT_INT, &t->iterations, "N", h[1], 1, 1e7},
        {"warmup", 0, PL_OPT_INT, &t->warmup, "N", h[2], 0, 1e6},
        {"min-samples", 0, PL_OPT_INT, &t->min_samples, "N", h[3], 1, 1e7},
        {"min-time-s", 0, PL_OPT_DOUBLE, &t->min_time_s, "S", h[4], 0, 3600},
        {"max-time-s", 0, PL_OPT_DOUBLE, &t->max_time_s, "S", h[5], 0.001, 86400},
        {"max-noise", 0, PL_OPT_DOUBLE, &t->max_noise_pct, "PCT", h[6], 0.001, 100},
        {"throttle-threshold", 0, PL_OPT_DOUBLE, &t->throttle_pct, "PCT", h[7], 0, 100},
        {"device", 'd', PL_OPT_INT, &t->device, "N", h[8], 0, 1024},
        {"seed", 0, PL_OPT_DOUBLE, &t->seed, "N", h[9], 0, 9e15},
    };
    memcpy(out, opts, sizeof opts);
}

void pl_timing_options_join(pl_option *out, const pl_option *own, size_t n_own, size_t split, pl_timing_args *t)
{
    memcpy(out, own, split * sizeof *own);
    pl_timing_options(t, out + split);
    memcpy(out + split + PL_TIMING_OPTION_COUNT, own + split, (n_own - split) * sizeof *own);
    memset(out + n_own + PL_TIMING_OPTION_COUNT, 0, sizeof *out);
}

int pl_timing_args_check(const pl_timing_args *t, char *err, size_t errlen)
{
    if (strcmp(t->mode, "hot") != 0 && strcmp(t->mode, "cold") != 0) {
        pl_snprintf(err, errlen, "--mode must be hot or cold, not '%s'", PL_ESC(t->mode));
        return -1;
    }
    if (t->min_time_s > t->max_time_s) {
        pl_snprintf(err, errlen, "--min-time-s %g exceeds --max-time-s %g: raise --max-time-s", t->min_time_s,
                    t->max_time_s);
        return -1;
    }
    return 0;
}

void pl_timing_args_apply(const pl_timing_args *t, pl_run_settings *s)
{
    free(s->mode);
    s->mode = pl_strdup(t->mode);
    s->iterations = t->iterations;
    s->warmup = t->warmup;
    s->min_samples = t->min_samples;
    s->min_time_s = t->min_time_s;
    s->max_time_s = t->max_time_s;
    s->max_noise = t->max_noise_pct / 100.0;
    s->throttle_given = t->throttle_pct >= 0;
    s->throttle_threshold = s->throttle_given ? t->throttle_pct / 100.0 : PL_DEFAULT_THROTTLE;
    s->device = t->device;
    s->seed = (unsigned long long)t->seed;
}
