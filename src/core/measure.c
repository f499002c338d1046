#include "core/measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "perflab/device.h"
#include "perflab/stats.h"

/* A timer over one sample: CUDA events on the target's stream, or the host clock. */
typedef struct sample_timer {
    int host;
    cudaEvent_t start, stop;
    double host_start;
} sample_timer;

static int timer_init(pl_ctx *ctx, sample_timer *t, int host)
{
    memset(t, 0, sizeof *t);
    t->host = host;
    if (!host) {
        PL_CUDA(ctx, cudaEventCreate(&t->start));
        PL_CUDA(ctx, cudaEventCreate(&t->stop));
    }
    return 0;
}

static void timer_free(sample_timer *t)
{
    if (!t->host) {
        if (t->start)
            cudaEventDestroy(t->start);
        if (t->stop)
            cudaEventDestroy(t->stop);
    }
}

static int timer_begin(pl_ctx *ctx, sample_timer *t)
{
    if (t->host)
        t->host_start = pl_now_s();
    else
        PL_CUDA(ctx, cudaEventRecord(t->start, ctx->stream));
    return 0;
}

/* Record the stop event, let a held stream go, and read the sample. */
static int timer_end(pl_ctx *ctx, sample_timer *t, pl_latch *held, double *ms)
{
    if (t->host) {
        *ms = (pl_now_s() - t->host_start) * 1e3;
        return 0;
    }
    float f = 0;
    PL_CUDA(ctx, cudaEventRecord(t->stop, ctx->stream));
    if (held)
        pl_latch_release(held);
    PL_CUDA(ctx, cudaEventSynchronize(t->stop));
    PL_CUDA(ctx, cudaEventElapsedTime(&f, t->start, t->stop));
    *ms = f;
    return 0;
}

static int sync_target(pl_measure_env *env)
{
    if (!env->host)
        PL_CUDA(env->ctx, cudaStreamSynchronize(env->ctx->stream));
    return 0;
}

/* The SM clock now, or 0 when it cannot be read. */
static double sm_clock_now(pl_measure_env *env)
{
    if (env->host)
        return 0;
    if (env->have_nvml) {
        char why[8];
        const pl_nvml *n = pl_nvml_get(why, sizeof why);
        unsigned int mhz;
        if (n && n->device_get_clock_info && n->device_get_clock_info(env->nvml_dev, PL_NVML_CLOCK_SM, &mhz) == 0)
            return mhz;
        return 0;
    }
    double mhz = 0;
    if (pl_measure_sm_clock_mhz(env->ctx, 10000, &mhz) != 0)
        return 0;
    return mhz;
}

int pl_measure_env_init(pl_measure_env *env, pl_ctx *ctx, const pl_run_settings *s, int host)
{
    memset(env, 0, sizeof *env);
    env->ctx = ctx;
    env->settings = s;
    env->host = host;
    env->cold = !host && s->mode && strcmp(s->mode, "cold") == 0;
    if (host)
        return 0;
    if (env->cold) {
        /* at least twice the L2, so that a write pass leaves nothing of the inputs in it */
        env->flush_bytes = 2 * (ctx->device->l2_bytes ? ctx->device->l2_bytes : (64u << 20));
        env->flush_buf = pl_device_alloc(ctx, env->flush_bytes);
        if (!env->flush_buf)
            return -1;
    }
    PL_TRY(pl_latch_init(ctx, &env->latch));
    env->have_nvml = pl_nvml_device_for_bus_id(ctx->device->pci_bus_id, &env->nvml_dev) == 0;
    if (s->throttle_threshold > 0) {
        env->max_sm_clock_mhz = ctx->device->sm_clock_max_mhz;
        if (env->max_sm_clock_mhz <= 0) {
            /* no NVML: the fastest clock seen over a few probes stands in for the maximum */
            for (int i = 0; i < 5; i++) {
                double mhz = 0;
                PL_TRY(pl_measure_sm_clock_mhz(ctx, 200000, &mhz));
                if (mhz > env->max_sm_clock_mhz)
                    env->max_sm_clock_mhz = mhz;
            }
        }
    }
    return 0;
}

void pl_measure_env_meter_energy(pl_measure_env *env)
{
    if (env->host)
        pl_energy_meter_none(&env->energy, "a host-only target: no GPU work to meter");
    else
        pl_energy_meter_open_nvml(&env->energy, env->ctx->device->pci_bus_id); /* without a counter, it says why */
}

void pl_measure_env_free(pl_measure_env *env)
{
    pl_latch_free(&env->latch);
}

static int warm_up(pl_measure_env *env, const pl_variant *v, void *state, int *runs)
{
    double t0 = pl_now_s();
    int min_runs = env->settings->warmup > 0 ? env->settings->warmup : 0;
    *runs = 0;
    /* each warm-up run is synchronised, so the elapsed host time is real work, not queueing */
    while (*runs < min_runs || (pl_now_s() - t0 < PL_WARMUP_MIN_S && *runs < PL_MAX_REPS)) {
        PL_TRY(v->run(env->ctx, state));
        PL_TRY(sync_target(env));
        ++*runs;
    }
    return 0;
}

/* One sample: reps runs (or one graph launch) between two events. With `latched`, the stream is held until the
 * whole sample is enqueued; *gave_way reports a latch that timed out (the sample then includes launch latency). */
static int time_one_sample(pl_measure_env *env, const pl_variant *v, void *state, cudaGraphExec_t exec, int reps,
                           sample_timer *timer, int latched, double *ms, int *gave_way)
{
    pl_ctx *ctx = env->ctx;
    *gave_way = 0;
    if (env->cold) {
        PL_TRY(pl_flush_l2(ctx, env->flush_buf, env->flush_bytes));
        /* wait for the flush: otherwise the host queues the sample's launches while it runs, and a variant
         * bound by launch overhead would look faster than it is */
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    }
    if (latched)
        PL_TRY(pl_latch_hold(ctx, &env->latch));
    PL_TRY(timer_begin(ctx, timer));
    int rc = 0;
    if (exec) {
        cudaError_t e = cudaGraphLaunch(exec, ctx->stream);
        if (e != cudaSuccess)
            rc = pl_fail_cuda(ctx, e, "cudaGraphLaunch", __FILE__, __LINE__);
    } else {
        for (int r = 0; r < reps && rc == 0; r++)
            rc = v->run(ctx, state);
    }
    if (rc != 0) {
        if (latched)
            pl_latch_release(&env->latch); /* never leave the stream held */
        return -1;
    }
    PL_TRY(timer_end(ctx, timer, latched ? &env->latch : NULL, ms));
    *gave_way = latched && pl_latch_gave_way(&env->latch);
    *ms /= reps;
    return 0;
}

/* Capture `reps` runs of the variant into one graph: a sample is then a single cudaGraphLaunch. */
static int capture_graph(pl_measure_env *env, const pl_variant *v, void *state, int reps, cudaGraphExec_t *exec)
{
    pl_ctx *ctx = env->ctx;
    cudaGraph_t graph = NULL;
    PL_CUDA(ctx, cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
    int rc = 0;
    for (int r = 0; r < reps && rc == 0; r++)
        rc = v->run(ctx, state);
    cudaError_t e = cudaStreamEndCapture(ctx->stream, &graph);
    if (rc != 0)
        return -1;
    if (e != cudaSuccess)
        return pl_fail(ctx, "capturing '%s' into a CUDA graph failed: %s (mark the variant PL_VARIANT_NO_GRAPH)",
                       v->name, cudaGetErrorString(e));
    e = cudaGraphInstantiate(exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess)
        return pl_fail(ctx, "instantiating the CUDA graph of '%s' failed: %s", v->name, cudaGetErrorString(e));
    PL_CUDA(ctx, cudaGraphLaunch(*exec, ctx->stream)); /* warm the graph itself */
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

typedef struct sample_set {
    double *x;
    size_t n, cap;
} sample_set;

static void push(sample_set *s, double x)
{
    pl_reserve(&s->x, &s->cap, s->n + 1, sizeof *s->x);
    s->x[s->n++] = x;
}

static double noise_of(const sample_set *s)
{
    pl_stats st;
    return pl_stats_compute(s->x, s->n, &st) == 0 ? st.rel_noise : INFINITY;
}

/* Returns 1 and names the rule when sampling should stop. */
static int should_stop(const pl_run_settings *s, const sample_set *set, double elapsed, size_t *next_check,
                       char **reason)
{
    if (s->iterations > 0) {
        if (set->n >= (size_t)s->iterations) {
            *reason = pl_strfmt("%d iterations", s->iterations);
            return 1;
        }
        return 0;
    }
    size_t min_samples = s->min_samples > 0 ? (size_t)s->min_samples : 1;
    if (set->n >= min_samples && elapsed >= s->min_time_s && set->n >= *next_check) {
        double noise = noise_of(set);
        *next_check = set->n + (set->n / 10 > 0 ? set->n / 10 : 1);
        if (noise <= s->max_noise) {
            *reason = pl_strfmt("converged: noise %.2f%% <= %.2f%%", 100 * noise, 100 * s->max_noise);
            return 1;
        }
    }
    if (set->n >= PL_MAX_SAMPLES) {
        *reason = pl_strfmt("sample cap %d", PL_MAX_SAMPLES);
        return 1;
    }
    if (elapsed >= s->max_time_s && set->n >= min_samples) {
        *reason = pl_strfmt("time limit %.1f s: noise %.2f%% > %.2f%%", s->max_time_s, 100 * noise_of(set),
                            100 * s->max_noise);
        return 1;
    }
    return 0;
}

/* A variant being timed: its timer, batch size, graph and samples so far, kept between rounds. */
struct pl_timing {
    const pl_variant *v;
    void *state;
    sample_timer timer;
    cudaGraphExec_t exec;
    int reps, latched, latch_failures;
    double measure_s; /* time spent sampling, over all rounds */
    pl_energy_meter *meter; /* the environment's */
    pl_energy_tally energy; /* the counter over the same time */
    sample_set set;
    size_t next_check;
};

void pl_timing_free(pl_timing *t)
{
    if (!t)
        return;
    free(t->set.x);
    if (t->exec)
        cudaGraphExecDestroy(t->exec);
    timer_free(&t->timer);
    free(t);
}

pl_timing *pl_timing_begin(pl_measure_env *env, const pl_variant *v, void *state, pl_variant_result *out)
{
    pl_ctx *ctx = env->ctx;
    pl_timing *t = calloc(1, sizeof *t);
    if (!t) {
        pl_fail(ctx, "out of host memory");
        return NULL;
    }
    t->v = v;
    t->state = state;
    t->meter = &env->energy;
    if (timer_init(ctx, &t->timer, env->host) != 0 || warm_up(env, v, state, &out->warmup_runs) != 0)
        goto fail;
    /* one run on its own, to size the batch of a hot sample */
    t->latched = !env->host && !(v->flags & PL_VARIANT_HOST_BOUND);
    int gave_way;
    double single_ms;
    if (time_one_sample(env, v, state, NULL, 1, &t->timer, t->latched, &single_ms, &gave_way) != 0)
        goto fail;
    t->reps = 1;
    if (!env->cold && single_ms < PL_SAMPLE_TARGET_MS)
        t->reps = single_ms > 0 ? (int)ceil(PL_SAMPLE_TARGET_MS / single_ms) : PL_MAX_REPS;
    if (t->reps > PL_MAX_REPS)
        t->reps = PL_MAX_REPS;
    out->reps_per_sample = t->reps;
    if (env->settings->graph && !env->host && !(v->flags & PL_VARIANT_NO_GRAPH)) {
        if (capture_graph(env, v, state, t->reps, &t->exec) != 0)
            goto fail;
        out->graph = 1;
    }
    return t;
fail:
    pl_timing_free(t);
    return NULL;
}

/* One sample into t (or dropped: a latch that gave way, a throttled clock). -1 when the variant failed. */
static int take_sample(pl_measure_env *env, pl_timing *t, pl_variant_result *out, int keep)
{
    const pl_run_settings *s = env->settings;
    double ms;
    int gave_way;
    if (time_one_sample(env, t->v, t->state, t->exec, t->reps, &t->timer, t->latched, &ms, &gave_way) != 0)
        return -1;
    if (gave_way) {
        /* the launch queue filled while the stream was held: drop the sample; give up the latch if it keeps
         * happening (the samples then include launch latency, and the result says so) */
        if (++t->latch_failures >= 3)
            t->latched = 0;
        return 0;
    }
    if (!keep)
        return 0;
    double mhz = env->max_sm_clock_mhz > 0 ? sm_clock_now(env) : 0;
    if (mhz > 0 && mhz < s->throttle_threshold * env->max_sm_clock_mhz) {
        out->throttled_discarded++;
        if (out->throttled_discarded > 1000 && t->set.n == 0)
            return pl_fail(env->ctx,
                           "every sample ran throttled (SM clock %.0f MHz < %.0f%% of %.0f MHz): check the GPU's "
                           "cooling and power, or lower --throttle-threshold",
                           mhz, 100 * s->throttle_threshold, env->max_sm_clock_mhz);
        return 0;
    }
    push(&t->set, ms);
    return 0;
}

int pl_timing_round(pl_measure_env *env, pl_timing *t, pl_variant_result *out, const pl_round_quota *q)
{
    int runs = 0;
    PL_TRY(warm_up(env, t->v, t->state, &runs));
    out->warmup_runs += runs;
    if (q->keep)
        pl_energy_region_begin(&env->energy, &t->energy);
    const double t0 = pl_now_s();
    const size_t n0 = t->set.n;
    size_t taken = 0;
    for (;;) {
        PL_TRY(take_sample(env, t, out, q->keep));
        taken++;
        const size_t kept = q->keep ? t->set.n - n0 : taken;
        const double elapsed = pl_now_s() - t0;
        if (q->samples > 0 ? kept >= q->samples : (elapsed >= q->min_s && kept >= q->min_samples))
            break;
        if (elapsed >= q->max_s && kept >= 1)
            break;
        if (taken >= PL_MAX_SAMPLES)
            break;
    }
    if (q->keep) {
        t->measure_s += pl_now_s() - t0;
        pl_energy_region_end(&env->energy, &t->energy, (double)taken * t->reps);
    }
    return 0;
}

void pl_timing_end(pl_timing *t, pl_variant_result *out, char *stop_reason)
{
    if (t->meter->ok || t->meter->why[0]) { /* metered, or there is a reason why not */
        pl_energy_tally_result(t->meter, &t->energy, &out->energy);
        out->has_energy = 1;
    }
    out->latched = t->latched;
    out->measure_s = t->measure_s;
    out->stop_reason = stop_reason;
    out->samples_ms = t->set.x;
    out->n_samples = t->set.n;
    t->set.x = NULL;
    pl_timing_free(t);
}

int pl_measure_variant(pl_measure_env *env, const pl_variant *v, void *state, pl_variant_result *out)
{
    pl_timing *t = pl_timing_begin(env, v, state, out);
    if (!t)
        return -1;
    pl_energy_region_begin(&env->energy, &t->energy);
    double t0 = pl_now_s();
    char *reason = NULL;
    size_t taken = 0;
    for (;;) {
        if (take_sample(env, t, out, 1) != 0) {
            pl_timing_free(t);
            return -1;
        }
        taken++;
        if (should_stop(env->settings, &t->set, pl_now_s() - t0, &t->next_check, &reason))
            break;
    }
    t->measure_s = pl_now_s() - t0;
    pl_energy_region_end(&env->energy, &t->energy, (double)taken * t->reps);
    pl_timing_end(t, out, reason);
    return 0;
}
