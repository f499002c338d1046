/* The harness's own accuracy check: a kernel spins for a known number of nanoseconds of %globaltimer, and the
 * measured median must come within 2% of it (and the half-length spin gives a speedup of 2). */
#include <math.h>
#include <stdio.h>

#include "labs.h"
#include "perflab/perflab.h"

#define SPIN_TOLERANCE 0.02

typedef struct spin_state {
    uint64_t ns;
} spin_state;

static const pl_param_def spin_params[] = {
    PL_INT_PARAM("us", "1000", 10, 10000000, "how long the baseline kernel spins (µs)"),
    PL_PARAMS_END,
};

static int spin_setup(pl_ctx *ctx, const pl_params *p, void **out)
{
    spin_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->ns = (uint64_t)pl_param_int(p, "us") * 1000u;
    *out = s;
    return 0;
}

static int spin_poison(pl_ctx *ctx, void *state)
{
    return 0;
}

/* Nothing to compare: the kernel has no output. Its timing is judged by spin_check_timing instead. */
static int spin_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    pl_verify_set(v, 1, "no output; the measured time is checked against the spin length instead");
    return 0;
}

static int run_full(pl_ctx *ctx, void *state)
{
    return pl_spin_ns(ctx, ((spin_state *)state)->ns);
}

static int run_half(pl_ctx *ctx, void *state)
{
    return pl_spin_ns(ctx, ((spin_state *)state)->ns / 2);
}

static int spin_check_timing(const pl_params *p, const pl_variant *v, double median_ms, char *msg, size_t len)
{
    double expected_ms = (double)pl_param_int(p, "us") / 1000.0;
    if (v->run == run_half)
        expected_ms /= 2;
    double err = median_ms / expected_ms - 1.0;
    if (fabs(err) <= SPIN_TOLERANCE)
        return 0;
    snprintf(msg, len, "timing accuracy: measured %.4f ms for a %.4f ms spin (%+.2f%%, limit ±%.0f%%)", median_ms,
             expected_ms, 100 * err, 100 * SPIN_TOLERANCE);
    return 1;
}

static const pl_variant spin_variants[] = {
    PL_VARIANT("baseline", run_full, "one thread spins --us microseconds of %globaltimer"),
    PL_VARIANT("half", run_half, "spins half as long: a true speedup of 2"),
    PL_VARIANTS_END,
};

const pl_target pl_target_selftest_gpu_spin = {
    .group = "selftest",
    .name = "gpu_spin",
    .summary = "the harness's accuracy check: a kernel spinning a known time must measure within 2%",
    .req = {.needs_gpu = 1},
    .params = spin_params,
    .variants = spin_variants,
    .flags = PL_TARGET_QUICK | PL_TARGET_SELFTEST,
    .setup = spin_setup,
    .poison = spin_poison,
    .check = spin_check,
    .check_timing = spin_check_timing,
};
