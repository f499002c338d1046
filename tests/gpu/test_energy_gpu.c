/* On a GPU: a short timed run of memory:vectorized_copy, one variant after another and in interleaved rounds; where
 * NVML has the GPU's total-energy counter, every variant's energy is positive, at a plausible average power
 * (20-1500 W) over about the time its samples took, and the table shows J/run; where it has none, every variant says
 * why and holds no figure. Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/energy.h"
#include "core/results_json.h"
#include "core/run_report.h"
#include "testutil.h"

static void check_run(const char *tag, const char *args)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load(tag, args, &run, &r);
    ck_assert_msg(code == 0, "%s: exit %d\n%s%s", tag, code, r.out, r.err);
    pl_test_expect_all_ok(&run, 1);
    const pl_gpu_record *gpu = pl_run_gpu(&run);
    ck_assert_ptr_nonnull(gpu);
    pl_energy_meter m;
    const int counter = pl_energy_meter_open_nvml(&m, gpu->pci_bus_id) == 0;
    if (!counter)
        printf("%s: no energy counter on %s (%s): checking that each variant says so\n", tag, gpu->name, m.why);
    const pl_target_result *t = pl_run_find_target(&run, "memory:vectorized_copy");
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < t->n_variants; i++) {
        const pl_variant_result *v = &t->variants[i];
        const pl_energy *e = &v->energy;
        ck_assert_msg(v->has_energy, "%s: no energy record", v->name);
        if (!counter) {
            ck_assert(isnan(e->energy_j) && e->note && *e->note);
            continue;
        }
        ck_assert_msg(e->energy_j > 0, "%s: energy %g J (%s)", v->name, e->energy_j, e->note ? e->note : "");
        ck_assert_msg(e->average_power_w > 20 && e->average_power_w < 1500, "%s: %.1f W over %.3f s", v->name,
                      e->average_power_w, e->timed_s);
        /* the counter covers the kept samples' time, plus an NVML reading at each end of each round */
        ck_assert_msg(e->timed_s >= 0.9 * v->measure_s && e->timed_s <= v->measure_s + 0.1, "%s: %.3f s vs %.3f s",
                      v->name, e->timed_s, v->measure_s);
        ck_assert_msg(e->runs >= (double)v->n_samples * v->reps_per_sample, "%s: %.0f runs, %zu samples x %d",
                      v->name, e->runs, v->n_samples, v->reps_per_sample);
        ck_assert_double_eq_tol(e->joules_per_run, e->energy_j / e->runs, 1e-12 * e->energy_j);
        printf("%s %s: %.3f J over %.2f s, %.0f W, %.3g J/run\n", tag, v->name, e->energy_j, e->timed_s,
               e->average_power_w, e->joules_per_run);
    }
    pl_table *table = pl_run_table(&run); /* the table perflab run prints */
    int has_column = 0;
    for (size_t c = 0; c < table->ncols; c++)
        has_column |= strcmp(table->headers[c], "J/run") == 0;
    ck_assert_int_eq(has_column, counter);
    pl_table_free(table);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}

START_TEST(energy_one_variant_after_another)
{
    check_run("energy-seq", "run --targets memory:vectorized_copy --min-time-s 1 --rounds 1");
}
END_TEST

START_TEST(energy_in_interleaved_rounds)
{
    check_run("energy-rounds", "run --targets memory:vectorized_copy --min-time-s 0.4 --rounds 3");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("energy_gpu");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, energy_one_variant_after_another);
    tcase_add_test(tc, energy_in_interleaved_rounds);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
