/* perflab calc cost-per-token: energy and money per token (calc.h; formulas in docs/calc.md). */
#include <math.h>
#include <string.h>

#include "calc/calc.h"
#include "core/util.h"

int pl_cost_compute(const pl_cost_request *q, pl_cost_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!(q->avg_power_w > 0) || !(q->throughput_tps > 0)) {
        pl_snprintf(err, errlen,
                    "--avg-power (W) and --throughput (tokens/s) must be positive, or take them from a run "
                    "with --from-run");
        return -1;
    }
    if (!(q->pue >= 1)) {
        pl_snprintf(err, errlen, "--pue %g: the facility's power over the IT power is 1 or more", q->pue);
        return -1;
    }
    if (q->electricity_per_kwh < 0 || q->gpu_hour_cost < 0) {
        pl_snprintf(err, errlen, "--electricity-cost and --gpu-hour-cost cannot be negative");
        return -1;
    }
    r->joules_per_token = q->avg_power_w / q->throughput_tps;
    r->facility_joules_per_token = r->joules_per_token * q->pue;
    r->kwh_per_mtok = r->facility_joules_per_token * 1e6 / 3.6e6;
    r->energy_per_mtok = r->kwh_per_mtok * q->electricity_per_kwh;
    r->hardware_per_mtok = q->gpu_hour_cost / (q->throughput_tps * 3600.0) * 1e6;
    r->total_per_mtok = r->energy_per_mtok + r->hardware_per_mtok;
    r->tokens_per_kwh = 3.6e6 / r->facility_joules_per_token;
    const double all[] = {r->joules_per_token, r->facility_joules_per_token, r->kwh_per_mtok,
                          r->energy_per_mtok,  r->hardware_per_mtok,         r->total_per_mtok,
                          r->tokens_per_kwh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!isfinite(all[i]) || (all[i] == 0 && i != 3 && i != 4 && i != 5)) {
            pl_snprintf(err, errlen,
                        "--avg-power %g W at %g tokens/s gives an energy per token that a double cannot hold; "
                        "pass figures of a real GPU",
                        q->avg_power_w, q->throughput_tps);
            return -1;
        }
    return 0;
}

int pl_cost_from_run(const pl_run *run, const char *target, const char *variant, double tokens_per_iteration,
                     double *power_w, double *throughput_tps, double *median_ms, char *err, size_t errlen)
{
    const pl_target_result *t = pl_run_find_target(run, target);
    if (!t) {
        pl_snprintf(err, errlen, "the run has no target '%s'", PL_ESC(target));
        return -1;
    }
    const pl_variant_result *v = pl_target_find_variant(t, variant);
    if (!v) {
        pl_snprintf(err, errlen, "%s has no variant '%s' in this run", PL_ESC(target), PL_ESC(variant));
        return -1;
    }
    if (!v->has_stats || v->stats.n == 0) {
        pl_snprintf(err, errlen, "%s / %s was not timed in this run (%s)", PL_ESC(target), PL_ESC(variant),
                    pl_status_name(v->status));
        return -1;
    }
    if (!v->has_telemetry || v->telemetry.power_w.n == 0) {
        pl_snprintf(err, errlen,
                    "%s / %s has no measured power: run it with --profile minimal (NVML telemetry), or "
                    "give --avg-power",
                    PL_ESC(target), PL_ESC(variant));
        return -1;
    }
    if (!(tokens_per_iteration > 0)) {
        pl_snprintf(err, errlen, "--tokens-per-iteration must be positive: the tokens one run of the variant produces");
        return -1;
    }
    if (!(v->stats.median > 0) || !isfinite(v->stats.median) || !(v->telemetry.power_w.mean > 0)) {
        pl_snprintf(err, errlen, "%s / %s has a median time of %g ms and a power of %g W: no throughput follows",
                    PL_ESC(target), PL_ESC(variant), v->stats.median, v->telemetry.power_w.mean);
        return -1;
    }
    *power_w = v->telemetry.power_w.mean;
    *median_ms = v->stats.median;
    *throughput_tps = tokens_per_iteration / (v->stats.median / 1e3);
    return 0;
}

json_t *pl_cost_json(const pl_cost_request *q, const pl_cost_result *r)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "avg_power_w", q->avg_power_w,
                     "throughput_tokens_per_s", q->throughput_tps, "electricity_per_kwh", q->electricity_per_kwh, "pue",
                     q->pue, "gpu_hour_cost", q->gpu_hour_cost, "joules_per_token", r->joules_per_token,
                     "facility_joules_per_token", r->facility_joules_per_token, "kwh_per_million_tokens",
                     r->kwh_per_mtok, "energy_cost_per_million_tokens", r->energy_per_mtok,
                     "hardware_cost_per_million_tokens", r->hardware_per_mtok, "total_cost_per_million_tokens",
                     r->total_per_mtok, "tokens_per_kwh", r->tokens_per_kwh);
}
