/* report.html: a run (provenance, the table, the roofline, per target its speedups, throughput and measured
 * counters) and the before/after of two runs (html.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ceilings.h"
#include "core/energy.h"
#include "core/run_compare.h"
#include "core/ncu.h"
#include "report/html_impl.h"
#include "core/run_report.h"

#define COMPARE_SEED 20261121u

static void provenance(pl_buf *b, const pl_run *r)
{
    const pl_gpu_record *g = pl_run_gpu(r);
    char *gpu = g ? pl_strfmt("%s (sm_%d%d, %d SMs, %.0f GiB, power limit %.0f W)", g->name, g->cc_major, g->cc_minor,
                              g->sm_count, g->memory_gib, g->power_limit_w)
                  : pl_strdup("no GPU (host targets only)");
    char *sw = pl_strfmt("driver %s, CUDA driver %d, runtime %d", r->prov.driver_version ? r->prov.driver_version : "?",
                         r->prov.cuda_driver_version, r->prov.cuda_runtime_version);
    char *pl = pl_strfmt("%s (%s)", r->prov.perflab_version ? r->prov.perflab_version : "?",
                         r->prov.git_commit ? r->prov.git_commit : "?");
    char *how = pl_strfmt("profile %s, mode %s%s, seed %llu%s", r->settings.profile, r->settings.mode,
                          r->settings.graph ? ", CUDA graph replay" : "", r->settings.seed,
                          r->settings.small ? ", small sizes" : "");
    char *when = pl_strfmt("%s on %s; %.1f s; exit code %d", r->prov.started_at ? r->prov.started_at : "?",
                           r->prov.hostname ? r->prov.hostname : "?", r->duration_s, r->exit_code);
    pl_buf_append(b, "<dl class=\"prov\">\n");
    pl_html_dl_item(b, "GPU", gpu);
    pl_html_dl_item(b, "software", sw);
    pl_html_dl_item(b, "perflab", pl);
    pl_html_dl_item(b, "command", r->prov.command_line);
    pl_html_dl_item(b, "started", when);
    pl_html_dl_item(b, "settings", how);
    pl_html_dl_item(b, "expectations key", r->prov.hardware_key);
    if (r->ceilings) {
        char *c = pl_strfmt("perflab peak run %s on %s, measured %s", r->ceilings->run_id ? r->ceilings->run_id : "?",
                            r->ceilings->gpu_name ? r->ceilings->gpu_name : "?",
                            r->ceilings->measured_at ? r->ceilings->measured_at : "?");
        pl_html_dl_item(b, "ceilings", c);
        free(c);
    }
    pl_html_dl_item(b, "counters", r->profiler);
    pl_buf_append(b, "</dl>\n");
    free(gpu);
    free(sw);
    free(pl);
    free(how);
    free(when);
}

static void problems(pl_buf *b, const pl_run *r)
{
    pl_buf items = {0};
    for (size_t i = 0; i < r->n_targets; i++) {
        const pl_target_result *t = &r->targets[i];
        if (t->reason && t->status != PL_STATUS_OK) {
            pl_buf_append(&items, "<li>");
            pl_xml_escape_into(&items, t->name);
            pl_buf_printf(&items, ": <b>%s</b>: ", pl_status_name(t->status));
            pl_xml_escape_into(&items, t->reason);
            pl_buf_append(&items, "</li>\n");
            if (t->status == PL_STATUS_SKIPPED)
                continue;
        }
        for (size_t j = 0; j < t->n_variants; j++) {
            const pl_variant_result *v = &t->variants[j];
            if (!v->reason || v->status == PL_STATUS_OK || v->status == PL_STATUS_NOT_RUN ||
                (t->reason && strcmp(t->reason, v->reason) == 0))
                continue;
            pl_buf_append(&items, "<li>");
            pl_xml_escape_into(&items, t->name);
            pl_buf_append(&items, " / ");
            pl_xml_escape_into(&items, v->name);
            pl_buf_printf(&items, ": <b>%s</b>: ", pl_status_name(v->status));
            pl_xml_escape_into(&items, v->reason);
            pl_buf_append(&items, "</li>\n");
        }
    }
    if (items.data)
        pl_buf_printf(b, "<div class=\"bad\"><b>Not ok</b><ul>\n%s</ul></div>\n", items.data);
    pl_buf_free(&items);
}

static void expectations(pl_buf *b, const pl_run *r)
{
    const pl_expect_report *e = &r->expectations;
    if (!e->present)
        return;
    int counts[PL_EXPECT_COUNT] = {0};
    for (size_t i = 0; i < e->n_rows; i++)
        counts[e->rows[i].verdict]++;
    pl_buf line = {0};
    pl_buf_printf(&line, "expectations %s: ", e->key ? e->key : "?");
    for (int v = 0; v < PL_EXPECT_COUNT; v++)
        pl_buf_printf(&line, "%s%d %s", v ? ", " : "", counts[v], pl_expect_verdict_name((pl_expect_verdict)v));
    pl_html_elem(b, "p", counts[PL_EXPECT_REGRESSED] && !e->accepted ? "class=\"bad\"" : "class=\"meta\"", line.data);
    pl_buf_free(&line);
}

/* ---- the roofline ---- */

typedef struct roof {
    pl_ceiling_id id;
    const char *name;
} roof;

static const roof memory_roofs[] = {
    {PL_CEIL_HBM_GBPS, "HBM"}, {PL_CEIL_L2_GBPS, "L2"}, {PL_CEIL_SMEM_GBPS, "shared memory"}};
static const roof compute_roofs[] = {{PL_CEIL_FP32_TFLOPS, "FP32 (CUDA cores)"},
                                     {PL_CEIL_BF16_TFLOPS, "BF16 tensor"},
                                     {PL_CEIL_FP8_TFLOPS, "FP8 tensor"}};

static int plottable(const pl_variant_result *v)
{
    return v->has_stats && v->tflops > 0 && v->arithmetic_intensity > 0 && isfinite(v->tflops) &&
           isfinite(v->arithmetic_intensity);
}

static void roofline(pl_buf *b, const pl_run *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_targets; i++)
        for (size_t j = 0; j < r->targets[i].n_variants; j++)
            n += plottable(&r->targets[i].variants[j]);
    if (n == 0)
        return;
    const pl_ceilings *c = r->ceilings;
    /* the axes: every point, and the roofs' ridge points, with room on both sides */
    double ai_lo = INFINITY, ai_hi = -INFINITY, tf_lo = INFINITY, tf_hi = -INFINITY;
    for (size_t i = 0; i < r->n_targets; i++)
        for (size_t j = 0; j < r->targets[i].n_variants; j++) {
            const pl_variant_result *v = &r->targets[i].variants[j];
            if (!plottable(v))
                continue;
            ai_lo = fmin(ai_lo, v->arithmetic_intensity);
            ai_hi = fmax(ai_hi, v->arithmetic_intensity);
            tf_lo = fmin(tf_lo, v->tflops);
            tf_hi = fmax(tf_hi, v->tflops);
        }
    double peak = NAN;
    for (size_t k = 0; c && k < 3; k++)
        if (isfinite(c->value[compute_roofs[k].id]))
            peak = isfinite(peak) ? fmax(peak, c->value[compute_roofs[k].id]) : c->value[compute_roofs[k].id];
    const double hbm = c ? c->value[PL_CEIL_HBM_GBPS] : NAN;
    if (isfinite(peak)) {
        tf_hi = fmax(tf_hi, peak);
        if (isfinite(hbm))
            ai_hi = fmax(ai_hi, 4 * peak * 1000 / hbm); /* past the HBM ridge */
    }
    pl_axis ax = {.label = "arithmetic intensity (FLOP per byte of device memory, counted)", .scale = PL_AXIS_LOG10};
    pl_axis ay = {.label = "achieved TFLOP/s", .scale = PL_AXIS_LOG10};
    ax.min = pow(10, floor(log10(ai_lo)) - 1);
    ax.max = pow(10, ceil(log10(ai_hi)));
    ay.min = pow(10, floor(log10(tf_lo)));
    ay.max = pow(10, ceil(log10(tf_hi * 1.5)));

    /* roofs: each memory ceiling's slope up to the highest compute ceiling, each compute ceiling flat from where
     * the HBM slope meets it */
    pl_series series[16];
    double xs[16][2], ys[16][2];
    char *names[16];
    size_t ns = 0;
    for (size_t k = 0; c && k < 3; k++) {
        double bw = c->value[memory_roofs[k].id];
        if (!isfinite(bw) || !isfinite(peak))
            continue;
        xs[ns][0] = ax.min;
        ys[ns][0] = ax.min * bw / 1000;
        xs[ns][1] = fmin(ax.max, peak * 1000 / bw);
        ys[ns][1] = xs[ns][1] * bw / 1000;
        if (ys[ns][0] < ay.min) { /* start where the slope enters the plot */
            xs[ns][0] = ay.min * 1000 / bw;
            ys[ns][0] = ay.min;
        }
        names[ns] = pl_strfmt("%s %.0f GB/s", memory_roofs[k].name, bw);
        series[ns] = (pl_series){.name = names[ns],
                                 .n = 2,
                                 .x = xs[ns],
                                 .y = ys[ns],
                                 .lines = 1,
                                 .dashed = k > 0,
                                 .colour = -1,
                                 .end_label = NULL};
        ns++;
    }
    for (size_t k = 0; c && k < 3; k++) {
        double f = c->value[compute_roofs[k].id];
        if (!isfinite(f))
            continue;
        xs[ns][0] = isfinite(hbm) ? fmax(ax.min, f * 1000 / hbm) : ax.min;
        ys[ns][0] = f;
        xs[ns][1] = ax.max;
        ys[ns][1] = f;
        names[ns] = pl_strfmt("%s %.0f TFLOP/s", compute_roofs[k].name, f);
        series[ns] = (pl_series){.name = NULL,
                                 .n = 2,
                                 .x = xs[ns],
                                 .y = ys[ns],
                                 .lines = 1,
                                 .dashed = k == 0,
                                 .colour = -1,
                                 .end_label = names[ns]};
        ns++;
    }
    /* the variants: one series per target (its colour), labelled, and arrows from the baseline to the others */
    const size_t roofs = ns;
    pl_arrow *arrows = pl_xcalloc(n + 1, sizeof *arrows);
    size_t na = 0;
    double *px = pl_xcalloc(n, sizeof *px), *py = pl_xcalloc(n, sizeof *py);
    char **labels = pl_xcalloc(n, sizeof *labels);
    size_t used = 0;
    for (size_t i = 0; i < r->n_targets && ns < 16; i++) {
        const pl_target_result *t = &r->targets[i];
        const size_t first = used;
        const pl_variant_result *base = t->n_variants ? &t->variants[0] : NULL;
        for (size_t j = 0; j < t->n_variants; j++) {
            const pl_variant_result *v = &t->variants[j];
            if (!plottable(v))
                continue;
            px[used] = v->arithmetic_intensity;
            py[used] = v->tflops;
            labels[used] = pl_strdup(v->name);
            used++;
            if (j > 0 && base && plottable(base))
                arrows[na++] = (pl_arrow){base->arithmetic_intensity, base->tflops, v->arithmetic_intensity, v->tflops,
                                          (int)(ns - roofs)};
        }
        if (used > first) {
            names[ns] = pl_strdup(t->name);
            series[ns] = (pl_series){.name = names[ns],
                                     .n = used - first,
                                     .x = px + first,
                                     .y = py + first,
                                     .labels = (const char *const *)labels + first,
                                     .markers = 1,
                                     .colour = (int)(ns - roofs)};
            ns++;
        }
    }
    char sub[256];
    pl_snprintf(sub, sizeof sub, "%s%s",
                c ? "roofs: the ceilings perflab peak measured on this GPU, as this run recorded them"
                  : "no ceilings were recorded (run perflab peak on this GPU first): points only",
                na ? "; arrows go from each baseline to its optimized variants" : "");
    pl_xy_chart chart = {.title = "Roofline",
                         .subtitle = sub,
                         .height = 480,
                         .x = ax,
                         .y = ay,
                         .series = series,
                         .n_series = ns,
                         .arrows = arrows,
                         .n_arrows = na};
    pl_html_elem(b, "h3", NULL, "Roofline");
    pl_html_figure(b, pl_chart_xy(&chart, 0));
    for (size_t k = 0; k < ns; k++)
        free(names[k]);
    for (size_t k = 0; k < used; k++)
        free(labels[k]);
    free(labels);
    free(px);
    free(py);
    free(arrows);
}

/* ---- per target ---- */

static void speedup_chart(pl_buf *b, const pl_target_result *t)
{
    size_t with = 0;
    for (size_t j = 0; j < t->n_variants; j++)
        with += t->variants[j].has_speedup;
    if (with == 0)
        return;
    const size_t n = t->n_variants;
    const char **cats = pl_xcalloc(n, sizeof *cats);
    double *v = pl_xcalloc(n, sizeof *v), *lo = pl_xcalloc(n, sizeof *lo), *hi = pl_xcalloc(n, sizeof *hi);
    int *col = pl_xcalloc(n, sizeof *col);
    for (size_t j = 0; j < n; j++) {
        const pl_variant_result *x = &t->variants[j];
        cats[j] = x->name;
        v[j] = lo[j] = hi[j] = NAN;
        col[j] = -1;
        if (j == 0 && x->has_stats) {
            v[j] = 1.0; /* the baseline, by definition */
            col[j] = 0;
        } else if (x->has_speedup) {
            v[j] = x->speedup.value;
            lo[j] = x->speedup.lo;
            hi[j] = x->speedup.hi;
            col[j] = !x->speedup.significant ? -1 : x->speedup.value >= 1 ? 2 : 3;
        }
    }
    char *title = pl_strfmt("%s: speedup over the baseline", t->name);
    pl_bar_chart c = {.title = title,
                      .subtitle = "median(baseline) / median(variant); whiskers: the 95% bootstrap interval; green: "
                                  "faster, red: slower, grey: not significant",
                      .value = {.label = "speedup (x)", .scale = PL_AXIS_LINEAR},
                      .n_categories = n,
                      .n_series = 1,
                      .categories = cats,
                      .values = v,
                      .lo = lo,
                      .hi = hi,
                      .colours = col,
                      .value_fmt = "%.2fx",
                      .reference = 1.0,
                      .reference_label = "baseline"};
    pl_html_figure(b, pl_chart_bars(&c, 0));
    free(title);
    free(cats);
    free(v);
    free(lo);
    free(hi);
    free(col);
}

/* Memory-bound targets (bytes but no FLOPs): GB/s against the HBM ceiling. */
static void bandwidth_chart(pl_buf *b, const pl_run *r, const pl_target_result *t)
{
    if (t->counters.flops > 0 || t->counters.bytes_read + t->counters.bytes_written <= 0)
        return;
    const size_t n = t->n_variants;
    const char **cats = pl_xcalloc(n, sizeof *cats);
    double *v = pl_xcalloc(n, sizeof *v);
    size_t any = 0;
    for (size_t j = 0; j < n; j++) {
        cats[j] = t->variants[j].name;
        v[j] = t->variants[j].has_stats ? t->variants[j].gbps : NAN;
        any += isfinite(v[j]);
    }
    const double hbm = r->ceilings ? r->ceilings->value[PL_CEIL_HBM_GBPS] : NAN;
    char *title = pl_strfmt("%s: achieved bandwidth", t->name);
    char *ref = isfinite(hbm) ? pl_strfmt("HBM ceiling %.0f GB/s", hbm) : NULL;
    pl_bar_chart c = {.title = title,
                      .subtitle = "bytes the work must move (counted) / median time",
                      .value = {.label = "GB/s", .scale = PL_AXIS_LINEAR},
                      .n_categories = n,
                      .n_series = 1,
                      .categories = cats,
                      .values = v,
                      .value_fmt = "%.0f GB/s",
                      .reference = hbm,
                      .reference_label = ref};
    if (any)
        pl_html_figure(b, pl_chart_bars(&c, 0));
    free(title);
    free(ref);
    free(cats);
    free(v);
}

/* The counters ncu measured: DRAM and L2 bytes over the counted ones (a chart), and the utilisations (a table). */
static void counters(pl_buf *b, const pl_target_result *t)
{
    size_t with = 0;
    for (size_t j = 0; j < t->n_variants; j++)
        with += t->variants[j].has_ncu;
    if (with == 0)
        return;
    const double counted = t->counters.bytes_read + t->counters.bytes_written;
    const size_t n = t->n_variants;
    const char **cats = pl_xcalloc(n, sizeof *cats);
    double *v = pl_xcalloc(2 * n, sizeof *v);
    static const char *const series[] = {"DRAM bytes (ncu) / counted", "L2 bytes (ncu) / counted"};
    static const char *const spec[] = {"variant",     ">kernels",  ">DRAM read",   ">DRAM write",     ">DRAM/counted",
                                       ">L2/counted", ">DRAM %",   ">L2 %",        ">L1 %",           ">shared %",
                                       ">SM %",       ">tensor %", ">occupancy %", ">bank conflicts", "note"};
    pl_table *tab = pl_table_new(sizeof spec / sizeof spec[0], spec);
    for (size_t j = 0; j < n; j++) {
        const pl_variant_result *x = &t->variants[j];
        const pl_ncu_metrics *m = &x->ncu;
        cats[j] = x->name;
        v[2 * j] = v[2 * j + 1] = NAN;
        if (!x->has_ncu)
            continue;
        size_t row = pl_table_row(tab);
        pl_table_set(tab, row, 0, "%s", x->name);
        if (m->error) {
            pl_table_set(tab, row, 14, "%s", m->error);
            continue;
        }
        v[2 * j] = pl_ncu_dram_ratio(m, counted);
        v[2 * j + 1] = counted > 0 ? m->l2_bytes / counted : NAN;
        const double cells[] = {m->dram_bytes_read / 1e6,
                                m->dram_bytes_write / 1e6,
                                v[2 * j],
                                v[2 * j + 1],
                                m->dram_pct,
                                m->l2_pct,
                                m->l1_pct,
                                m->shared_pct,
                                m->sm_pct,
                                m->tensor_pct,
                                m->occupancy_pct,
                                m->bank_conflicts};
        const char *fmts[] = {"%.1f MB", "%.1f MB", "%.2f", "%.2f", "%.1f", "%.1f",
                              "%.1f",    "%.1f",    "%.1f", "%.1f", "%.1f", "%.0f"};
        pl_table_set(tab, row, 1, "%d", m->kernels);
        for (size_t k = 0; k < sizeof cells / sizeof cells[0]; k++)
            if (isfinite(cells[k]))
                pl_table_set(tab, row, 2 + k, fmts[k], cells[k]);
            else
                pl_table_set(tab, row, 2 + k, "-");
        if (m->report)
            pl_table_set(tab, row, 14, "%s", m->report);
    }
    char *title = pl_strfmt("%s: bytes measured by ncu over the bytes counted", t->name);
    pl_bar_chart c = {.title = title,
                      .subtitle = "one replay of each variant under Nsight Compute (caches flushed first, clocks as "
                                  "they were); 1.0 = exactly the bytes the work must move",
                      .value = {.label = "measured / counted", .scale = PL_AXIS_LINEAR},
                      .n_categories = n,
                      .n_series = 2,
                      .categories = cats,
                      .series_names = series,
                      .values = v,
                      .value_fmt = "%.2f",
                      .reference = 1.0,
                      .reference_label = "counted bytes"};
    pl_html_figure(b, pl_chart_bars(&c, 0));
    pl_html_table(b, tab);
    pl_table_free(tab);
    free(title);
    free(cats);
    free(v);
}

/* The GPU's energy over each variant's timed samples (perflab/results.h, pl_energy), or why there is none. */
static void energy(pl_buf *b, const pl_target_result *t)
{
    size_t with = 0;
    for (size_t j = 0; j < t->n_variants; j++)
        with += t->variants[j].has_energy;
    if (with == 0)
        return; /* timed before energy was recorded, or not timed */
    const int per_element = t->counters.elements > 0;
    static const char *const spec[] = {"variant", ">energy", ">J/run", ">J/element", ">timed s", ">average W",
                                       ">runs",   "note"};
    pl_table *tab = pl_table_new(sizeof spec / sizeof spec[0], spec);
    char buf[48];
    for (size_t j = 0; j < t->n_variants; j++) {
        const pl_variant_result *x = &t->variants[j];
        if (!x->has_energy)
            continue;
        const pl_energy *e = &x->energy;
        size_t row = pl_table_row(tab);
        pl_table_set(tab, row, 0, "%s", x->name);
        pl_table_set(tab, row, 1, "%s", pl_format_joules(e->energy_j, buf, sizeof buf));
        pl_table_set(tab, row, 2, "%s", pl_format_joules(e->joules_per_run, buf, sizeof buf));
        pl_table_set(tab, row, 3, "%s", per_element ? pl_format_joules(e->joules_per_element, buf, sizeof buf) : "-");
        if (isfinite(e->timed_s))
            pl_table_set(tab, row, 4, "%.2f", e->timed_s);
        if (isfinite(e->average_power_w))
            pl_table_set(tab, row, 5, "%.0f", e->average_power_w);
        pl_table_set(tab, row, 6, "%.0f", e->runs);
        pl_table_set(tab, row, 7, "%s", e->note ? e->note : "");
    }
    pl_html_elemf(b, "p", "class=\"meta\"",
                  "%s: the GPU's energy over each variant's timed samples, from NVML's total-energy counter read "
                  "before and after every timed round: the whole GPU's draw, idle power between samples included",
                  t->name);
    pl_html_table(b, tab);
    pl_table_free(tab);
}

static void target_section(pl_buf *b, const pl_run *r, const pl_target_result *t)
{
    pl_html_elemf(b, "h3", NULL, "%s — %s", t->name, pl_status_name(t->status));
    pl_buf params = {0};
    for (size_t k = 0; k < t->n_params; k++)
        pl_buf_printf(&params, "%s--%s %s", k ? " " : "", t->params[k].name, t->params[k].value);
    pl_html_elemf(b, "p", "class=\"meta\"", "%s%s%s", t->summary ? t->summary : "", params.data ? "; parameters: " : "",
                  params.data ? params.data : "");
    pl_buf_free(&params);
    if (t->has_gate)
        pl_html_elemf(b, "p", t->gate_met ? "class=\"good\"" : "class=\"bad\"", "objective %s: %s",
                      t->gate_met ? "met" : "missed", t->gate_detail ? t->gate_detail : "");
    speedup_chart(b, t);
    bandwidth_chart(b, r, t);
    counters(b, t);
    energy(b, t);
}

void pl_html_run_section(pl_buf *b, const pl_report_input *in)
{
    const pl_run *r = &in->run;
    char *id = pl_html_id("run-", in->label);
    pl_buf_printf(b, "<h2 id=\"%s\">", id);
    pl_buf_printf(b, "perflab %s ", r->settings.verify_only ? "verify" : "run");
    pl_xml_escape_into(b, in->label);
    pl_buf_append(b, "</h2>\n");
    free(id);
    if (!r->complete)
        pl_html_elemf(b, "div", "class=\"warn\"",
                      "Incomplete run: %zu target%s finished; the run was interrupted, killed or is still under way, "
                      "so the targets after them are missing.",
                      r->n_targets, r->n_targets == 1 ? "" : "s");
    provenance(b, r);
    pl_table *t = pl_run_table(r);
    pl_html_table(b, t);
    pl_table_free(t);
    problems(b, r);
    expectations(b, r);
    roofline(b, r);
    for (size_t i = 0; i < r->n_targets; i++)
        if (r->targets[i].n_variants > 0 && r->targets[i].status != PL_STATUS_SKIPPED)
            target_section(b, r, &r->targets[i]);
}

/* ---- before / after ---- */

void pl_html_compare_section(pl_buf *b, const pl_report_input *a, const pl_report_input *bb)
{
    pl_compare_result c;
    pl_compare_runs(&a->run, &bb->run, PL_COMPARE_DEFAULT_THRESHOLD, COMPARE_SEED, &c);
    pl_html_elemf(b, "h3", NULL, "%s → %s", a->label, bb->label);
    const pl_run *runs[2] = {&a->run, &bb->run};
    for (int k = 0; k < 2; k++)
        if (!runs[k]->complete)
            pl_html_elemf(b, "div", "class=\"warn\"", "run %s is incomplete: it was interrupted or killed",
                          k ? bb->label : a->label);
    char **cats = pl_xcalloc(c.n_rows + 1, sizeof *cats);
    double *v = pl_xcalloc(c.n_rows + 1, sizeof *v), *lo = pl_xcalloc(c.n_rows + 1, sizeof *lo),
           *hi = pl_xcalloc(c.n_rows + 1, sizeof *hi);
    int *col = pl_xcalloc(c.n_rows + 1, sizeof *col);
    const int energy = pl_compare_has_energy(&c);
    const char *const spec[] = {"target", "variant", ">before", ">after", ">change", ">after/before [95% CI]",
                                energy ? ">J/run after/before" : "verdict", "verdict"};
    const size_t verdict_col = energy ? 7 : 6;
    pl_table *t = pl_table_new(verdict_col + 1, spec);
    char b1[32], b2[32];
    for (size_t i = 0; i < c.n_rows; i++) {
        const pl_compare_row *w = &c.rows[i];
        cats[i] = pl_strfmt("%s / %s", w->target, w->variant);
        v[i] = w->ratio.value;
        lo[i] = w->ratio.lo;
        hi[i] = w->ratio.hi;
        col[i] = w->verdict == PL_CMP_FASTER ? 2 : w->verdict == PL_CMP_SLOWER ? 3 : -1;
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", w->target);
        pl_table_set(t, row, 1, "%s", w->variant);
        pl_table_set(t, row, 2, "%s", pl_format_ms(w->median_a_ms, b1, sizeof b1));
        pl_table_set(t, row, 3, "%s", pl_format_ms(w->median_b_ms, b2, sizeof b2));
        if (isfinite(w->change))
            pl_table_set(t, row, 4, "%+.1f%%", 100 * w->change);
        if (isfinite(w->ratio.lo))
            pl_table_set(t, row, 5, "%.3f [%.3f, %.3f]", w->ratio.value, w->ratio.lo, w->ratio.hi);
        if (energy && isfinite(w->energy_ratio))
            pl_table_set(t, row, 6, "%.3f", w->energy_ratio);
        pl_table_set(t, row, verdict_col, "%s%s%s", pl_compare_verdict_name(w->verdict), w->note ? ": " : "",
                     w->note ? w->note : "");
    }
    pl_bar_chart chart = {.title = "median after / median before, per variant",
                          .subtitle = "below 1: faster; whiskers: the 95% bootstrap interval of the ratio; green "
                                      "faster, red slower, grey same (within 5% or the interval includes 1)",
                          .value = {.label = "after / before", .scale = PL_AXIS_LINEAR},
                          .n_categories = c.n_rows,
                          .n_series = 1,
                          .categories = (const char *const *)cats,
                          .values = v,
                          .lo = lo,
                          .hi = hi,
                          .colours = col,
                          .value_fmt = "%.3f",
                          .reference = 1.0,
                          .reference_label = "no change"};
    if (c.n_rows)
        pl_html_figure(b, pl_chart_bars(&chart, 0));
    pl_html_table(b, t);
    pl_table_free(t);
    for (size_t i = 0; i < c.n_rows; i++)
        free(cats[i]);
    free(cats);
    free(v);
    free(lo);
    free(hi);
    free(col);
    pl_compare_result_free(&c);
}
