/* The headline figures of the scenario's phases (scenario_headline.h). */
#include "serve/scenario_headline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"

void pl_scenario_headline_hw(const pl_scenario *s, pl_scenario_phase *p, const char *folder)
{
    (void)folder;
    const pl_gpu_inventory *inv = &s->inv;
    if (!inv->usable || inv->device_count < 1)
        return;
    p->headline = json_pack("{s:i, s:s, s:s}", "gpus", inv->device_count, "name", inv->devices[0].name, "driver",
                            inv->driver_version);
    pl_snprintf(p->headline_text, sizeof p->headline_text, "%d x %s, driver %s", inv->device_count,
                inv->devices[0].name, inv->driver_version[0] ? inv->driver_version : "?");
}

void pl_scenario_headline_peak(const pl_scenario *s, pl_scenario_phase *p, const char *folder)
{
    if (!s->inv.usable)
        return;
    const char *names[] = {s->inv.devices[s->device].name};
    char *key = pl_hardware_key(names, 1), *path = pl_ceilings_path(folder, key), err[512];
    pl_ceilings c;
    if (pl_ceilings_load(path, &c, err, sizeof err) == 0) {
        const double hbm = c.value[PL_CEIL_HBM_GBPS], bf16 = c.value[PL_CEIL_BF16_TFLOPS],
                     fp8 = c.value[PL_CEIL_FP8_TFLOPS];
        p->headline = json_pack("{s:o, s:o, s:o}", "hbm_gbps", pl_json_real(hbm), "bf16_tflops", pl_json_real(bf16),
                                "fp8_tflops", pl_json_real(fp8));
        pl_snprintf(p->headline_text, sizeof p->headline_text,
                    "device memory %.0f GB/s, BF16 %.0f TFLOP/s, FP8 %.0f TFLOP/s (measured)", hbm, bf16, fp8);
    }
    pl_ceilings_free(&c);
    free(key);
    free(path);
}

void pl_scenario_headline_run(const pl_scenario *s, pl_scenario_phase *p, const char *folder)
{
    (void)s;
    char *path = pl_file_in_subfolder(folder, "run.json"), err[512];
    json_t *doc = path ? pl_json_load_file(path, err, sizeof err) : NULL;
    free(path);
    if (!doc)
        return;
    json_t *counts = json_object(), *t;
    size_t i, n = 0;
    json_array_foreach(json_object_get(doc, "targets"), i, t)
    {
        const char *st = json_string_value(json_object_get(t, "status"));
        st = st ? st : "unknown";
        json_object_set_new(counts, st, json_integer(json_integer_value(json_object_get(counts, st)) + 1));
        n++;
    }
    pl_buf b = {0};
    pl_buf_printf(&b, "%zu targets", n);
    const char *k;
    json_t *v;
    json_object_foreach(counts, k, v) pl_buf_printf(&b, ", %lld %s", (long long)json_integer_value(v), k);
    pl_snprintf(p->headline_text, sizeof p->headline_text, "%s", b.data);
    pl_buf_free(&b);
    p->headline = json_pack("{s:I, s:o}", "targets", (json_int_t)n, "by_status", counts);
    json_decref(doc);
}

void pl_scenario_headline_moe(const pl_scenario *s, pl_scenario_phase *p, const char *folder)
{
    (void)s;
    char *path = pl_path_join(folder, "report.json"), err[512];
    json_t *doc = pl_json_load_file(path, err, sizeof err);
    free(path);
    json_t *v = doc ? json_object_get(doc, "verdict") : NULL;
    if (v) {
        p->headline = json_incref(v);
        pl_snprintf(p->headline_text, sizeof p->headline_text, "SLO verdict %s: %lld points, %lld missed",
                    json_string_value(json_object_get(v, "overall")),
                    (long long)json_integer_value(json_object_get(v, "points")),
                    (long long)json_integer_value(json_object_get(v, "missed")));
    }
    json_decref(doc);
}

void pl_scenario_headline_serve(const pl_scenario *s, pl_scenario_phase *p, const char *folder)
{
    (void)s;
    char *path = pl_file_in_subfolder(folder, "report.json"), err[512];
    json_t *doc = path ? pl_json_load_file(path, err, sizeof err) : NULL;
    free(path);
    if (!doc)
        return;
    json_t *rates = json_array(), *r;
    pl_buf b = {0};
    size_t i;
    json_array_foreach(json_object_get(doc, "rates"), i, r)
    {
        json_t *m = json_object_get(r, "metrics"), *rate = json_object_get(r, "request_rate");
        char name[32];
        if (json_is_string(rate))
            pl_snprintf(name, sizeof name, "%s", json_string_value(rate));
        else
            pl_snprintf(name, sizeof name, "%g", json_number_value(rate));
        const double tok = pl_json_get_real(m, "output_throughput"), ttft = pl_json_get_real(m, "p99_ttft_ms"),
                     tpot = pl_json_get_real(m, "p99_tpot_ms"),
                     pct = pl_json_get_real(r, "output_throughput_pct_of_ceiling");
        json_array_append_new(rates, json_pack("{s:s, s:o, s:o, s:o, s:o}", "request_rate", name, "output_throughput",
                                               pl_json_real(tok), "p99_ttft_ms", pl_json_real(ttft), "p99_tpot_ms",
                                               pl_json_real(tpot), "pct_of_ceiling", pl_json_real(pct)));
        pl_buf_printf(&b, "%srate %s: %.0f out tok/s", b.len ? "; " : "", name, tok);
        if (isfinite(pct))
            pl_buf_printf(&b, " (%.0f%% of ceiling)", pct);
        pl_buf_printf(&b, ", p99 TTFT %.1f ms, p99 TPOT %.2f ms", ttft, tpot);
    }
    p->headline =
        json_pack("{s:s?, s:o}", "executor", json_string_value(json_object_get(doc, "executor")), "rates", rates);
    pl_snprintf(p->headline_text, sizeof p->headline_text, "%s", b.data ? b.data : "");
    pl_buf_free(&b);
    json_decref(doc);
}
