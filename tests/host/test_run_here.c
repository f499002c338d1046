/* A target run in the caller's process (pl_runner_run_here, what libperflab.so's callables go through): the state the
 * caller hands in reaches every run and check, the counters it gives make the throughput, a wrong result is
 * failed_verification and not timed, and the statistics and speedups are those of a forked run. Host-timed targets:
 * no GPU needed. */
#include <math.h>
#include <string.h>

#include "core/runner.h"
#include "core/util.h"
#include "testutil.h"

typedef struct calls {
    int runs[3], checks[3];
    int wrong; /* the index of the variant whose check fails, -1: none */
} calls;

static int index_of(const pl_ctx *ctx)
{
    return strcmp(ctx->variant, "baseline") == 0 ? 0 : strcmp(ctx->variant, "fast") == 0 ? 1 : 2;
}

static void spin(double s)
{
    double t0 = pl_now_s();
    while (pl_now_s() - t0 < s) {
    }
}

static int run(pl_ctx *ctx, void *state)
{
    calls *c = state;
    int i = index_of(ctx);
    c->runs[i]++;
    spin(i == 1 ? 50e-6 : 100e-6);
    return 0;
}

static int check(pl_ctx *ctx, void *state, pl_verification *v)
{
    calls *c = state;
    int i = index_of(ctx);
    c->checks[i]++;
    pl_verify_set(v, i != c->wrong, "%s", i != c->wrong ? "right" : "wrong on purpose");
    return 0;
}

static const pl_variant variants[] = {
    {"baseline", "100 us of host work", run, 0, {0}},
    {"fast", "50 us of host work", run, 0, {0}},
    {"wrong", "a result its check refuses", run, 0, {0}},
    {0},
};

static const pl_target target = {
    .group = "test", .name = "here", .summary = "host work run in this process", .variants = variants, .check = check};

static pl_run_settings settings(void)
{
    pl_run_settings s;
    memset(&s, 0, sizeof s);
    s.profile = "none";
    s.mode = "hot";
    s.iterations = 20;
    s.warmup = 2;
    s.max_time_s = 5;
    s.max_noise = 0.02;
    s.min_samples = 1;
    s.seed = 1;
    return s;
}

START_TEST(state_counters_and_verdicts)
{
    calls c = {.wrong = 2};
    pl_params p;
    char err[256];
    ck_assert_int_eq(pl_params_init(&p, NULL, "test:here", "", 0, err, sizeof err), 0);
    pl_run_settings s = settings();
    const pl_counters work = {.bytes_read = 1e6};
    pl_target_result r;
    ck_assert_int_eq(pl_runner_run_here(&target, &p, &s, NULL, NULL, &c, &work, &r), 0);
    ck_assert_uint_eq(r.n_variants, 3);
    ck_assert_int_eq(r.variants[0].status, PL_STATUS_OK);
    ck_assert_int_eq(r.variants[1].status, PL_STATUS_OK);
    ck_assert_int_eq(r.variants[2].status, PL_STATUS_FAILED_VERIFICATION);
    ck_assert_int_eq(r.status, PL_STATUS_FAILED_VERIFICATION);
    ck_assert_int_eq(c.checks[0], 1);
    ck_assert_int_eq(c.checks[2], 1);
    ck_assert_int_eq(c.runs[2], 1); /* the wrong one ran once, to be checked, and was not timed */
    ck_assert_uint_eq(r.variants[1].n_samples, 20);
    ck_assert_msg(c.runs[1] >= 20 + 2, "fast ran %d times", c.runs[1]);
    ck_assert(r.variants[1].has_stats && r.variants[1].has_speedup);
    ck_assert_msg(r.variants[1].speedup.value > 1.3, "speedup %g", r.variants[1].speedup.value);
    ck_assert_msg(r.variants[0].gbps > 0 && isfinite(r.variants[0].gbps), "GB/s %g", r.variants[0].gbps);
    pl_target_result_free(&r);
    pl_params_free(&p);
}
END_TEST

START_TEST(interleaved_rounds)
{
    calls c = {.wrong = -1};
    pl_params p;
    char err[256];
    ck_assert_int_eq(pl_params_init(&p, NULL, "test:here", "", 0, err, sizeof err), 0);
    pl_run_settings s = settings();
    s.rounds = 4;
    pl_target_result r;
    ck_assert_int_eq(pl_runner_run_here(&target, &p, &s, NULL, NULL, &c, NULL, &r), 0);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(r.variants[i].status, PL_STATUS_OK);
        ck_assert_uint_eq(r.variants[i].n_samples, 20); /* the 20 samples spread over the 4 rounds */
        ck_assert_msg(strstr(r.variants[i].stop_reason, "interleaved"), "%s", r.variants[i].stop_reason);
    }
    pl_target_result_free(&r);
    pl_params_free(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("run_here");
    TCase *tc = tcase_create("run_here");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, state_counters_and_verdicts);
    tcase_add_test(tc, interleaved_rounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
