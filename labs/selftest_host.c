/* Host-only self-tests of the harness: known sleeps (statistics and speedups), a crash, a hang, a wrong result
 * and a noisy variant, so that isolation, timeouts, verification and statistics are tested without a GPU. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "labs.h"
#include "perflab/perflab.h"

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- shared state: an output array checked against a float64 reference ---- */

typedef struct host_state {
    double ms; /* how long a run sleeps */
    size_t n;
    float *in;
    float *out;
    double *ref;
    unsigned noise_seed;
} host_state;

static const pl_param_def sleep_params[] = {
    PL_FLOAT_PARAM("ms", "2", 0.01, 10000, "how long the baseline sleeps per run"),
    PL_INT_PARAM("n", "1024", 1, 1 << 24, "elements of the checked output"),
    PL_PARAMS_END,
};

static void host_counters(const pl_params *p, pl_counters *c)
{
    size_t n = (size_t)pl_param_int(p, "n");
    c->elements = (double)n;
    c->bytes_read = 4.0 * (double)n;
    c->bytes_written = 4.0 * (double)n;
}

static int host_setup(pl_ctx *ctx, const pl_params *p, void **out)
{
    host_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->ms = pl_param_float(p, "ms");
    s->n = (size_t)pl_param_int(p, "n");
    s->in = pl_host_alloc(ctx, s->n * sizeof *s->in);
    s->out = pl_host_alloc(ctx, s->n * sizeof *s->out);
    s->ref = pl_host_alloc(ctx, s->n * sizeof *s->ref);
    if (!s->in || !s->out || !s->ref)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        s->in[i] = pl_uniform_host(ctx->seed, 1, i, -1.0f, 1.0f);
        s->ref[i] = 2.0 * (double)s->in[i];
    }
    s->noise_seed = (unsigned)ctx->seed;
    *out = s;
    return 0;
}

static int host_poison(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    memset(s->out, 0xff, s->n * sizeof *s->out);
    return 0;
}

static int host_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    host_state *s = state;
    pl_verify_f32(s->out, s->ref, s->n, PL_DTYPE_F32, 0, v);
    return 0;
}

static void compute(host_state *s)
{
    for (size_t i = 0; i < s->n; i++)
        s->out[i] = 2.0f * s->in[i];
}

static int run_sleep_full(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    compute(s);
    sleep_ms(s->ms);
    return 0;
}

static int run_sleep_half(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    compute(s);
    sleep_ms(s->ms / 2);
    return 0;
}

#define HOST_TARGET(var, tname, tsummary, tvariants)                                                                   \
    const pl_target var = {.group = "selftest",                                                                        \
                           .name = tname,                                                                              \
                           .summary = tsummary,                                                                        \
                           .req = {.needs_gpu = 0},                                                                    \
                           .params = sleep_params,                                                                     \
                           .variants = tvariants,                                                                      \
                           .flags = PL_TARGET_SELFTEST,                                                                \
                           .counters = host_counters,                                                                  \
                           .setup = host_setup,                                                                        \
                           .poison = host_poison,                                                                      \
                           .check = host_check}

/* ---- selftest:sleep ---- */

static const pl_variant sleep_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "sleeps --ms per run"),
    PL_VARIANT("half", run_sleep_half, "sleeps --ms/2 per run: a true speedup of 2"),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_sleep, "sleep", "host sleeps of known length: statistics and a speedup of 2",
            sleep_variants);

/* ---- selftest:host_timed ---- */

static const pl_variant host_timed_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "sleeps --ms per run: gated on any host"),
    PL_VARIANT("host", run_sleep_half,
               "sleeps --ms/2 per run, declared host-timed: gated only on the host that stored it",
               .flags = PL_VARIANT_HOST_TIMED),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_host_timed, "host_timed",
            "host sleeps, one declared host-timed: the expectations gate judges it by its host", host_timed_variants);

/* ---- selftest:crash ---- */

static int run_crash(pl_ctx *ctx, void *state)
{
    raise(SIGSEGV);
    return 0;
}

static const pl_variant crash_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "sleeps --ms per run"),
    PL_VARIANT("crashes", run_crash, "raises SIGSEGV: the target's process dies"),
    PL_VARIANT("after", run_sleep_half, "never reached: recorded as not run"),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_crash, "crash", "a variant that crashes its process: isolation", crash_variants);

/* ---- selftest:hang ---- */

static int run_hang(pl_ctx *ctx, void *state)
{
    for (;;)
        pause();
    return 0;
}

static const pl_variant hang_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "sleeps --ms per run"),
    PL_VARIANT("hangs", run_hang, "never returns: the runner's timeout kills it"),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_hang, "hang", "a variant that never returns: the per-target timeout", hang_variants);

/* ---- selftest:wrong ---- */

static int run_wrong(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    compute(s);
    s->out[s->n / 2] += 1.0f; /* one element off: relative L2 error far above fp32's 1e-5 */
    return 0;
}

static int run_partial(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    for (size_t i = 0; i + 1 < s->n; i++) /* the last element is never written */
        s->out[i] = 2.0f * s->in[i];
    return 0;
}

static const pl_variant wrong_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "computes out = 2*in"),
    PL_VARIANT("wrong", run_wrong, "one element off by 1.0: fails verification"),
    PL_VARIANT("partial", run_partial, "leaves the last element unwritten: fails verification"),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_wrong, "wrong", "variants that compute a wrong or partial result: verification",
            wrong_variants);

/* ---- selftest:noisy ---- */

/* Sleep ms * (1 + X) with X exponential (mean 1): heavy right tail, as preemption gives real timings. */
static int run_noisy(pl_ctx *ctx, void *state)
{
    host_state *s = state;
    compute(s);
    s->noise_seed = s->noise_seed * 1103515245u + 12345u;
    double u = ((s->noise_seed >> 8) & 0xffffff) / 16777216.0;
    sleep_ms(s->ms * (1.0 - log(1.0 - u)));
    return 0;
}

static const pl_variant noisy_variants[] = {
    PL_VARIANT("baseline", run_sleep_full, "sleeps --ms per run"),
    PL_VARIANT("noisy", run_noisy, "sleeps --ms times 1 + Exp(1): noise that adaptive stopping cannot beat"),
    PL_VARIANTS_END,
};
HOST_TARGET(pl_target_selftest_noisy, "noisy", "a variant with heavy-tailed noise: statistics and stopping rules",
            noisy_variants);

/* ---- selftest:gate ---- */

/* The sleep self-test judged against an objective it is given: a target-level gate (pl_gate) beyond
 * verification, as an SLO sweep reports it. Met when --ms is within --objective-ms. */
static const pl_param_def gate_params[] = {
    PL_FLOAT_PARAM("ms", "2", 0.01, 10000, "how long a run sleeps"),
    PL_INT_PARAM("n", "1024", 1, 1 << 24, "elements of the checked output"),
    PL_FLOAT_PARAM("objective-ms", "1000", 0.01, 1e6, "the objective: the gate is missed when --ms exceeds it"),
    PL_PARAMS_END,
};

typedef struct gate_state {
    host_state host; /* first: the shared run and check functions take it */
    double objective_ms;
} gate_state;

static int gate_setup(pl_ctx *ctx, const pl_params *p, void **out)
{
    void *host;
    PL_TRY(host_setup(ctx, p, &host));
    gate_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->host = *(host_state *)host;
    s->objective_ms = pl_param_float(p, "objective-ms");
    *out = s;
    return 0;
}

static void gate_teardown(pl_ctx *ctx, void *state)
{
    gate_state *s = state;
    pl_gate(ctx, s->host.ms <= s->objective_ms, "a sleep of %g ms against an objective of %g ms", s->host.ms,
            s->objective_ms);
}

const pl_target pl_target_selftest_gate = {
    .group = "selftest",
    .name = "gate",
    .summary = "the sleep self-test judged against an objective: a missed gate is a failure (slo_missed)",
    .req = {.needs_gpu = 0},
    .params = gate_params,
    .variants = sleep_variants,
    .flags = PL_TARGET_SELFTEST,
    .counters = host_counters,
    .setup = gate_setup,
    .poison = host_poison,
    .check = host_check,
    .teardown = gate_teardown,
};
