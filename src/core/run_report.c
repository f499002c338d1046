#include "core/run_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/energy.h"
#include "core/ncu.h"
#include "core/table.h"

static int profile_is(const pl_run *r, const char *p)
{
    return r->settings.profile && strcmp(r->settings.profile, p) == 0;
}

static const char *fmt_num(double x, const char *fmt, char *buf, size_t len)
{
    if (isnan(x))
        pl_snprintf(buf, len, "-");
    else
        pl_snprintf(buf, len, fmt, x);
    return buf;
}

/* Three significant figures at any scale: 3456, 345.6 -> 346, 0.0123. */
static const char *fmt_rate(double x, char *buf, size_t len)
{
    if (isnan(x))
        return fmt_num(x, "", buf, len);
    int decimals = x >= 100 ? 0 : x >= 10 ? 1 : x >= 1 ? 2 : 3;
    pl_snprintf(buf, len, "%.*f", decimals, x);
    return buf;
}

const char *pl_format_speedup(const pl_variant_result *v, char *buf, size_t len)
{
    if (!v->has_speedup) {
        pl_snprintf(buf, len, "-");
        return buf;
    }
    const pl_interval *s = &v->speedup;
    pl_snprintf(buf, len, "%.2fx [%.2f, %.2f]%s", s->value, s->lo, s->hi, s->significant ? "" : " n.s.");
    return buf;
}

static const char *check_cell(const pl_variant_result *v, char *buf, size_t len)
{
    const pl_verification *ver = &v->verification;
    if (!ver->checked)
        pl_snprintf(buf, len, "%s", v->status == PL_STATUS_UNVERIFIED ? "unverified" : "-");
    else if (!ver->passed)
        pl_snprintf(buf, len, "FAIL");
    else if (ver->elements > 0)
        pl_snprintf(buf, len, "ok %.1e", ver->rel_l2_error);
    else
        pl_snprintf(buf, len, "ok");
    return buf;
}

/* Measured DRAM bytes over the counted ones, or why there is no figure. */
static const char *ncu_cell(const pl_variant_result *v, const pl_counters *c, char *buf, size_t len)
{
    if (v->ncu.error)
        return v->ncu.kernels == 0 && (strstr(v->ncu.error, "no kernel") || strstr(v->ncu.error, "No kernels"))
                   ? "no kernel"
                   : "ncu failed";
    return fmt_num(pl_ncu_dram_ratio(&v->ncu, c->bytes_read + c->bytes_written), "%.2f", buf, len);
}

typedef enum column {
    COL_TARGET,
    COL_VARIANT,
    COL_STATUS,
    COL_MEDIAN,
    COL_NOISE,
    COL_SAMPLES,
    COL_TFLOPS,
    COL_GBPS,
    COL_AI,
    COL_PCT_HBM,
    COL_PCT_TENSOR,
    COL_DRAM_RATIO,
    COL_REF,
    COL_SPEEDUP,
    COL_CLOCK,
    COL_POWER,
    COL_JOULES_RUN,
    COL_JOULES_ELEMENT,
    COL_CHECK,
    COL_COUNT
} column;

static const char *const column_spec[COL_COUNT] = {
    "target",  "variant", "status",     ">median",   ">noise",           ">samples", ">TFLOP/s", ">GB/s",
    ">FLOP/B", ">% HBM",  ">% BF16 TC", ">DRAM meas/cnt", ">% of ref", "speedup [95% CI]", ">SM MHz", ">W",
    ">J/run",  ">J/element", "check",
};

pl_table *pl_run_table(const pl_run *r)
{
    /* which columns this run has something to say in */
    int show[COL_COUNT];
    for (int c = 0; c < COL_COUNT; c++)
        show[c] = 1;
    int timed = !r->settings.verify_only;
    show[COL_MEDIAN] = show[COL_NOISE] = show[COL_SAMPLES] = show[COL_SPEEDUP] = timed;
    show[COL_TFLOPS] = show[COL_GBPS] = show[COL_REF] = 0;
    show[COL_AI] = timed && profile_is(r, "roofline");
    /* roofline: each variant's share of what `perflab peak` measured on this kind of GPU */
    /* (recorded in run.json when the run started: never read from disk here) */
    int have_ceilings = show[COL_AI] && r->ceilings;
    const double hbm = have_ceilings ? r->ceilings->value[PL_CEIL_HBM_GBPS] : NAN;
    const double tensor = have_ceilings ? r->ceilings->value[PL_CEIL_BF16_TFLOPS] : NAN;
    show[COL_PCT_HBM] = have_ceilings && !isnan(hbm);
    show[COL_PCT_TENSOR] = have_ceilings && !isnan(tensor);
    show[COL_CLOCK] = show[COL_POWER] = show[COL_DRAM_RATIO] = show[COL_JOULES_RUN] = show[COL_JOULES_ELEMENT] = 0;
    const int telemetry = r->settings.profile && !profile_is(r, "none");
    for (size_t i = 0; timed && i < r->n_targets; i++) {
        for (size_t j = 0; j < r->targets[i].n_variants; j++) {
            const pl_variant_result *v = &r->targets[i].variants[j];
            if (!v->has_stats)
                continue;
            show[COL_TFLOPS] |= !isnan(v->tflops);
            show[COL_GBPS] |= !isnan(v->gbps);
            show[COL_REF] |= !isnan(v->pct_of_reference);
            show[COL_CLOCK] |= v->has_telemetry && v->telemetry.sm_clock_mhz.n > 0;
            show[COL_POWER] |= v->has_telemetry && v->telemetry.power_w.n > 0;
            show[COL_DRAM_RATIO] |= v->has_ncu; /* measured under ncu: DRAM bytes over the counted ones */
            show[COL_JOULES_RUN] |= v->has_energy && isfinite(v->energy.joules_per_run);
            /* most targets count elements; per element is one column more, so it comes with the telemetry */
            show[COL_JOULES_ELEMENT] |= telemetry && v->has_energy && isfinite(v->energy.joules_per_element);
        }
    }
    const char *spec[COL_COUNT];
    int map[COL_COUNT];
    size_t ncols = 0;
    for (int c = 0; c < COL_COUNT; c++) {
        map[c] = show[c] ? (int)ncols : -1;
        if (show[c])
            spec[ncols++] = column_spec[c];
    }
    pl_table *t = pl_table_new(ncols, spec);
    char b[128];
#define SET(col, ...)                                                                                                  \
    do {                                                                                                               \
        if (map[col] >= 0)                                                                                             \
            pl_table_set(t, row, (size_t)map[col], __VA_ARGS__);                                                       \
    } while (0)
    for (size_t i = 0; i < r->n_targets; i++) {
        const pl_target_result *tr = &r->targets[i];
        for (size_t j = 0; j < tr->n_variants; j++) {
            const pl_variant_result *v = &tr->variants[j];
            size_t row = pl_table_row(t);
            if (j == 0)
                SET(COL_TARGET, "%s", tr->name);
            SET(COL_VARIANT, "%s%s", v->name, v->is_reference ? " (ref)" : "");
            SET(COL_STATUS, "%s", pl_status_name(v->status));
            if (v->has_stats) {
                SET(COL_MEDIAN, "%s", pl_format_ms(v->stats.median, b, sizeof b));
                SET(COL_NOISE, "%.1f%%", 100 * v->stats.rel_noise);
                SET(COL_SAMPLES, "%zu", v->stats.n);
                SET(COL_TFLOPS, "%s", fmt_rate(v->tflops, b, sizeof b));
                SET(COL_GBPS, "%s", fmt_rate(v->gbps, b, sizeof b));
                SET(COL_AI, "%s", fmt_num(v->arithmetic_intensity, "%.2f", b, sizeof b));
                SET(COL_PCT_HBM, "%s", fmt_num(100 * v->gbps / hbm, "%.1f%%", b, sizeof b));
                SET(COL_PCT_TENSOR, "%s", fmt_num(100 * v->tflops / tensor, "%.1f%%", b, sizeof b));
                SET(COL_REF, "%s", fmt_num(v->pct_of_reference, "%.1f%%", b, sizeof b));
            }
            if (v->has_ncu)
                SET(COL_DRAM_RATIO, "%s", ncu_cell(v, &tr->counters, b, sizeof b));
            SET(COL_SPEEDUP, "%s", pl_format_speedup(v, b, sizeof b));
            if (v->has_telemetry) {
                SET(COL_CLOCK, "%s",
                    fmt_num(v->telemetry.sm_clock_mhz.n ? v->telemetry.sm_clock_mhz.mean : NAN, "%.0f", b, sizeof b));
                SET(COL_POWER, "%s",
                    fmt_num(v->telemetry.power_w.n ? v->telemetry.power_w.mean : NAN, "%.0f", b, sizeof b));
            }
            if (v->has_energy) {
                SET(COL_JOULES_RUN, "%s", pl_format_joules(v->energy.joules_per_run, b, sizeof b));
                SET(COL_JOULES_ELEMENT, "%s", pl_format_joules(v->energy.joules_per_element, b, sizeof b));
            }
            SET(COL_CHECK, "%s", check_cell(v, b, sizeof b));
        }
    }
#undef SET
    return t;
}

/* Lines that explain every status other than ok, one per target or variant. */
/* A reason from run.json, whole (a verification message may be long) but escaped: one line each. */
static void line_end(pl_buf *out, const char *reason)
{
    pl_buf_append_escaped(out, reason ? reason : "", 0);
    pl_buf_append(out, "\n");
}

static void problems(const pl_run *r, pl_buf *out, const char *bullet)
{
    for (size_t i = 0; i < r->n_targets; i++) {
        const pl_target_result *t = &r->targets[i];
        if (t->reason && t->status != PL_STATUS_OK) {
            pl_buf_printf(out, "%s%s: %s: ", bullet, PL_ESC(t->name), pl_status_name(t->status));
            line_end(out, t->reason);
            if (t->status == PL_STATUS_SKIPPED)
                continue;
        }
        for (size_t j = 0; j < t->n_variants; j++) {
            const pl_variant_result *v = &t->variants[j];
            if (v->reason && v->status != PL_STATUS_OK && v->status != PL_STATUS_NOT_RUN &&
                !(t->reason && strcmp(t->reason, v->reason) == 0)) {
                pl_buf_printf(out, "%s%s / %s: %s: ", bullet, PL_ESC(t->name), PL_ESC(v->name),
                              pl_status_name(v->status));
                line_end(out, v->reason);
            }
        }
    }
}

static void expectation_line(const pl_run *r, pl_buf *out)
{
    const pl_expect_report *e = &r->expectations;
    if (!e->present)
        return;
    int counts[PL_EXPECT_COUNT] = {0};
    for (size_t i = 0; i < e->n_rows; i++)
        counts[e->rows[i].verdict]++;
    pl_buf_printf(out, "expectations %s (%s): ", PL_ESC(e->key ? e->key : "?"),
                  e->file_found ? PL_ESC(e->file) : "no file yet");
    for (int v = 0; v < PL_EXPECT_COUNT; v++)
        pl_buf_printf(out, "%s%d %s", v ? ", " : "", counts[v], pl_expect_verdict_name((pl_expect_verdict)v));
    if (e->updated)
        pl_buf_append(out, "; file updated");
    if (e->regressions && e->accepted)
        pl_buf_append(out, "; regressions accepted");
    pl_buf_append(out, "\n");
    for (size_t i = 0; i < e->n_rows; i++) {
        const pl_expect_row *w = &e->rows[i];
        if (w->verdict != PL_EXPECT_REGRESSED && w->verdict != PL_EXPECT_MISSING && w->verdict != PL_EXPECT_UNGATED)
            continue;
        if (w->verdict == PL_EXPECT_UNGATED) /* no threshold: the note says why it is not judged */
            pl_buf_printf(out, "  %s %s / %s: expected %.4g ms, measured %.4g ms: %s\n",
                          pl_expect_verdict_name(w->verdict), w->target, w->variant, w->expected_ms, w->measured_ms,
                          w->note ? w->note : "");
        else if (isnan(w->measured_ms)) /* not timed: the reason, never NaN figures */
            pl_buf_printf(out, "  %s %s / %s: expected %.4g ms, not timed: %s\n", pl_expect_verdict_name(w->verdict),
                          PL_ESC(w->target), PL_ESC(w->variant), w->expected_ms,
                          PL_ESC(w->note ? w->note : "no result"));
        else
            pl_buf_printf(out, "  %s %s / %s: expected %.4g ms, measured %.4g ms (%+.1f%%, threshold %.1f%%)%s%s\n",
                          pl_expect_verdict_name(w->verdict), PL_ESC(w->target), PL_ESC(w->variant), w->expected_ms,
                          w->measured_ms, 100 * w->change, 100 * w->threshold, w->note ? ": " : "",
                          PL_ESC(w->note ? w->note : ""));
    }
}

/* A run.json rewritten after each target says whether the run reached its end. */
static void incomplete_line(const pl_run *r, pl_buf *out)
{
    if (!r->complete)
        pl_buf_printf(out, "incomplete run: %zu target%s finished; the run was interrupted, killed or is still under way\n",
                      r->n_targets, r->n_targets == 1 ? "" : "s");
}

static const char *gpu_line(const pl_run *r, char *buf, size_t len)
{
    const pl_gpu_record *g = pl_run_gpu(r);
    if (!g) {
        pl_snprintf(buf, len, "no GPU");
        return buf;
    }
    pl_snprintf(buf, len, "GPU %d %s (sm_%d%d, %d SMs)", g->ordinal, PL_ESC(g->name), g->cc_major, g->cc_minor,
                g->sm_count);
    return buf;
}

void pl_run_print(const pl_run *r, FILE *out)
{
    char gpu[384];
    fprintf(out, "perflab %s %s · %s · profile %s · mode %s%s\n", r->settings.verify_only ? "verify" : "run",
            PL_ESC(r->run_id ? r->run_id : ""), gpu_line(r, gpu, sizeof gpu), PL_ESC(r->settings.profile),
            PL_ESC(r->settings.mode), r->settings.graph ? " · graph replay" : "");
    pl_table *t = pl_run_table(r);
    pl_table_print(t, out);
    pl_table_free(t);
    pl_buf b = {0};
    incomplete_line(r, &b);
    if (r->profiler) /* roofline: which tool measured the counters, or why none did */
        pl_buf_printf(&b, "counters: %s\n", PL_ESC(r->profiler));
    problems(r, &b, "");
    expectation_line(r, &b);
    if (b.data)
        fputs(b.data, out);
    pl_buf_free(&b);
    if (r->run_dir)
        fprintf(out, "artifacts: %s\n", PL_ESC(r->run_dir));
}

char *pl_run_summary_markdown(const pl_run *r)
{
    pl_buf b = {0};
    char gpu[384];
    pl_buf_printf(&b, "# perflab %s %s\n\n", r->settings.verify_only ? "verify" : "run", r->run_id);
    pl_buf_printf(&b, "- %s; driver %s, CUDA runtime %d\n", gpu_line(r, gpu, sizeof gpu), r->prov.driver_version,
                  r->prov.cuda_runtime_version);
    pl_buf_printf(&b, "- perflab %s (%s), `%s`\n", r->prov.perflab_version, r->prov.git_commit, r->prov.command_line);
    pl_buf_printf(&b, "- started %s on %s; profile %s, mode %s%s; exit code %d\n\n", r->prov.started_at,
                  r->prov.hostname, r->settings.profile, r->settings.mode, r->settings.graph ? ", graph replay" : "",
                  r->exit_code);
    pl_buf inc = {0};
    incomplete_line(r, &inc);
    if (inc.data)
        pl_buf_printf(&b, "**%.*s**\n\n", (int)inc.len - 1, inc.data);
    pl_buf_free(&inc);
    pl_table *t = pl_run_table(r);
    pl_table_markdown(t, &b);
    pl_table_free(t);
    pl_buf p = {0};
    problems(r, &p, "- ");
    if (p.data)
        pl_buf_printf(&b, "\n## Not ok\n\n%s", p.data);
    pl_buf_free(&p);
    pl_buf e = {0};
    expectation_line(r, &e);
    if (e.data)
        pl_buf_printf(&b, "\n## Expectations\n\n```\n%s```\n", e.data);
    pl_buf_free(&e);
    pl_buf_append(&b,
                  "\nMedian per run (the headline); noise = (IQR/1.349)/median; speedup = median(baseline)/median"
                  "(variant) with a 95% bootstrap interval, n.s. when it includes 1. Raw samples are in run.json.\n");
    return b.data;
}

static void csv_field(pl_buf *b, const char *s)
{
    if (!s) {
        pl_buf_append(b, ",");
        return;
    }
    pl_buf_append(b, "\"");
    for (; *s; s++)
        pl_buf_append(b, *s == '"' ? "\"\"" : (char[]){*s, 0});
    pl_buf_append(b, "\",");
}

static void csv_num(pl_buf *b, double x)
{
    if (isnan(x))
        pl_buf_append(b, ",");
    else
        pl_buf_printf(b, "%.9g,", x);
}

char *pl_run_results_csv(const pl_run *r)
{
    pl_buf b = {0};
    pl_buf_append(&b, "run_id,target,variant,status,median_ms,mean_ms,stdev_ms,min_ms,max_ms,p10_ms,p90_ms,p99_ms,"
                      "iqr_ms,rel_noise,samples,reps_per_sample,tflops,gbps,arithmetic_intensity,pct_of_reference,"
                      "speedup,speedup_ci_low,speedup_ci_high,speedup_significant,verified,rel_l2_error,energy_j,joules_per_run,"
                      "joules_per_element,average_power_w\n");
    for (size_t i = 0; i < r->n_targets; i++) {
        const pl_target_result *t = &r->targets[i];
        for (size_t j = 0; j < t->n_variants; j++) {
            const pl_variant_result *v = &t->variants[j];
            const pl_stats *s = &v->stats;
            double nan = NAN;
            csv_field(&b, r->run_id);
            csv_field(&b, t->name);
            csv_field(&b, v->name);
            csv_field(&b, pl_status_name(v->status));
            int st = v->has_stats;
            csv_num(&b, st ? s->median : nan);
            csv_num(&b, st ? s->mean : nan);
            csv_num(&b, st ? s->stdev : nan);
            csv_num(&b, st ? s->min : nan);
            csv_num(&b, st ? s->max : nan);
            csv_num(&b, st ? s->p10 : nan);
            csv_num(&b, st ? s->p90 : nan);
            csv_num(&b, st ? s->p99 : nan);
            csv_num(&b, st ? s->iqr : nan);
            csv_num(&b, st ? s->rel_noise : nan);
            pl_buf_printf(&b, "%zu,%d,", st ? s->n : 0, v->reps_per_sample);
            csv_num(&b, v->tflops);
            csv_num(&b, v->gbps);
            csv_num(&b, v->arithmetic_intensity);
            csv_num(&b, v->pct_of_reference);
            csv_num(&b, v->has_speedup ? v->speedup.value : nan);
            csv_num(&b, v->has_speedup ? v->speedup.lo : nan);
            csv_num(&b, v->has_speedup ? v->speedup.hi : nan);
            pl_buf_printf(&b, "%d,%s,", v->has_speedup && v->speedup.significant,
                          v->verification.checked ? (v->verification.passed ? "pass" : "fail") : "no");
            if (v->verification.checked)
                pl_buf_printf(&b, "%.3g", v->verification.rel_l2_error);
            const pl_energy *e = &v->energy;
            pl_buf_append(&b, ",");
            csv_num(&b, v->has_energy ? e->energy_j : nan);
            csv_num(&b, v->has_energy ? e->joules_per_run : nan);
            csv_num(&b, v->has_energy ? e->joules_per_element : nan);
            if (v->has_energy && isfinite(e->average_power_w))
                pl_buf_printf(&b, "%.9g", e->average_power_w);
            pl_buf_append(&b, "\n");
        }
    }
    return b.data;
}
