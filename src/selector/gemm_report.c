/* perflab gemm's report: the table of the best verified TFLOP/s per shape and provider with the ratios over the
 * best of cuBLAS/cuBLASLt, comparison.json, the per-provider files and summary.md. */
#include "selector/gemm_report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "core/files.h"

static const char *cell_text(const pl_gemm_cell *cell, char *buf, size_t len)
{
    switch (cell->status) {
    case PL_GEMM_OK: pl_snprintf(buf, len, "%.1f", cell->best.tflops); return buf;
    case PL_GEMM_UNSUPPORTED: return "n/a";
    case PL_GEMM_FAILED: return "failed";
    default: return "missing";
    }
}

/* TFLOP/s of provider p over the best cuBLAS/cuBLASLt TFLOP/s for a shape; NaN when either is absent. */
static double ratio_to_cublas(const pl_gemm_comparison *c, size_t s, int p, int best_cublas)
{
    if (p < 0 || best_cublas < 0 || pl_gemm_cell_get(c, s, (size_t)p)->status != PL_GEMM_OK)
        return NAN;
    return pl_gemm_cell_get(c, s, (size_t)p)->best.tflops / pl_gemm_cell_get(c, s, (size_t)best_cublas)->best.tflops;
}

pl_table *pl_gemm_comparison_table(const pl_gemm_comparison *c)
{
    size_t others = 0;
    for (size_t p = 0; p < c->n_providers; p++)
        others += !pl_gemm_provider_is_cublas(&c->providers[p]);
    const size_t ncols = 4 + c->n_providers + 2 + others;
    char **spec = pl_xcalloc(ncols, sizeof *spec);
    size_t col = 0;
    spec[col++] = pl_strdup("shape");
    spec[col++] = pl_strdup(">M");
    spec[col++] = pl_strdup(">N");
    spec[col++] = pl_strdup(">K");
    for (size_t p = 0; p < c->n_providers; p++)
        spec[col++] = pl_strfmt(">%s", c->providers[p].label);
    spec[col++] = pl_strdup("winner");
    spec[col++] = pl_strdup(">winner/cuBLAS");
    for (size_t p = 0; p < c->n_providers; p++)
        if (!pl_gemm_provider_is_cublas(&c->providers[p]))
            spec[col++] = pl_strfmt(">%s/cuBLAS", c->providers[p].label);
    pl_table *t = pl_table_new(ncols, (const char *const *)spec);
    for (size_t i = 0; i < ncols; i++)
        free(spec[i]);
    free(spec);

    double *log_sum = pl_xcalloc(others + 1, sizeof *log_sum);
    int *count = pl_xcalloc(others + 1, sizeof *count);
    char buf[64];
    for (size_t s = 0; s < c->n_shapes; s++) {
        const pl_gemm_shape *sh = &c->shapes[s];
        size_t row = pl_table_row(t);
        col = 0;
        pl_table_set(t, row, col++, "%s", sh->name);
        pl_table_set(t, row, col++, "%lld", sh->m);
        pl_table_set(t, row, col++, "%lld", sh->n);
        pl_table_set(t, row, col++, "%lld", sh->k);
        for (size_t p = 0; p < c->n_providers; p++)
            pl_table_set(t, row, col++, "%s", cell_text(pl_gemm_cell_get(c, s, p), buf, sizeof buf));
        int winner, best_cublas;
        pl_gemm_comparison_leaders(c, s, &winner, &best_cublas);
        pl_table_set(t, row, col++, "%s", winner >= 0 ? c->providers[winner].label : "-");
        double w = ratio_to_cublas(c, s, winner, best_cublas);
        pl_table_set(t, row, col++, isnan(w) ? "-" : "%.3f", w);
        size_t o = 0;
        for (size_t p = 0; p < c->n_providers; p++) {
            if (pl_gemm_provider_is_cublas(&c->providers[p]))
                continue;
            double r = ratio_to_cublas(c, s, (int)p, best_cublas);
            pl_table_set(t, row, col++, isnan(r) ? "-" : "%.3f", r);
            if (!isnan(r)) {
                log_sum[o] += log(r);
                count[o]++;
            }
            o++;
        }
    }
    if (others > 0 && c->n_shapes > 1) {
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "geometric mean");
        for (size_t o = 0; o < others; o++)
            pl_table_set(t, row, 4 + c->n_providers + 2 + o, count[o] ? "%.3f" : "-",
                         count[o] ? exp(log_sum[o] / count[o]) : 0.0);
    }
    free(log_sum);
    free(count);
    return t;
}

static json_t *cell_json(const pl_gemm_cell *cell)
{
    json_t *j = json_object();
    json_object_set_new(j, "status", json_string(pl_gemm_status_name(cell->status)));
    if (cell->status == PL_GEMM_OK) {
        json_object_set_new(j, "tflops", pl_json_real(cell->best.tflops));
        json_object_set_new(j, "median_ms", pl_json_real(cell->best.median_ms));
        json_object_set_new(j, "noise", pl_json_real(cell->best.noise));
        json_object_set_new(j, "kernel", json_string(cell->best.kernel ? cell->best.kernel : ""));
        json_object_set_new(j, "record", pl_gemm_record_to_json(&cell->best));
    } else {
        json_object_set_new(j, "reason", json_string(cell->reason ? cell->reason : ""));
    }
    return j;
}

/* The perflab provider's column, -1 when not asked for. */
static int perflab_column(const pl_gemm_comparison *c)
{
    for (size_t p = 0; p < c->n_providers; p++)
        if (c->providers[p].kind == PL_PROV_PERFLAB)
            return (int)p;
    return -1;
}

/* The heuristic's pick of a shape against the best native configuration; NULL when there is no verdict. */
static json_t *pick_json(const pl_gemm_comparison *c, size_t shape, int col)
{
    pl_gemm_pick_verdict v;
    if (col < 0 || pl_gemm_cell_pick_verdict(pl_gemm_cell_get(c, shape, (size_t)col), &v) != 0)
        return NULL;
    json_t *j = json_pack("{s:s, s:b, s:o, s:s, s:o, s:o, s:b, s:b}", "pick", v.pick, "pick_timed", v.pick_timed,
                          "pick_ms", pl_json_real(v.pick_ms), "best", v.best, "best_ms", pl_json_real(v.best_ms),
                          "pick_over_best", pl_json_real(v.ratio), "pick_is_best", v.is_best, "within_3pct", v.within);
    if (j && v.confirm_rounds > 0) { /* within_3pct is then judged on the head-to-head rounds */
        json_object_set_new(j, "confirmed_pick_over_best", pl_json_real(v.confirmed_ratio));
        json_object_set_new(j, "confirm_rounds", json_integer(v.confirm_rounds));
    }
    return j;
}

/* Over the shapes with a verdict: how often the pick was the best, and within 3% of it. */
static json_t *pick_summary_json(const pl_gemm_comparison *c)
{
    const int col = perflab_column(c);
    int shapes = 0, best = 0, within = 0;
    for (size_t s = 0; col >= 0 && s < c->n_shapes; s++) {
        pl_gemm_pick_verdict v;
        if (pl_gemm_cell_pick_verdict(pl_gemm_cell_get(c, s, (size_t)col), &v) != 0)
            continue;
        shapes++;
        best += v.is_best;
        within += v.within;
    }
    return json_pack("{s:i, s:i, s:i, s:o}", "shapes", shapes, "pick_is_best", best, "within_3pct", within,
                     "fraction_within_3pct", shapes ? pl_json_real((double)within / shapes) : json_null());
}

json_t *pl_gemm_comparison_to_json(const pl_gemm_comparison *c, json_t *about)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string(PL_GEMM_COMPARISON_SCHEMA));
    if (about)
        json_object_update(j, about);
    json_object_set_new(j, "dtype", json_string(c->dtype));
    json_object_set_new(j, "layout", json_string(c->layout));
    json_t *provs = json_array();
    for (size_t p = 0; p < c->n_providers; p++)
        json_array_append_new(provs, json_string(c->providers[p].label));
    json_object_set_new(j, "providers", provs);
    json_t *shapes = json_array();
    const int native = perflab_column(c);
    for (size_t s = 0; s < c->n_shapes; s++) {
        const pl_gemm_shape *sh = &c->shapes[s];
        json_t *results = json_object();
        for (size_t p = 0; p < c->n_providers; p++)
            json_object_set_new(results, c->providers[p].label, cell_json(pl_gemm_cell_get(c, s, p)));
        int winner, best_cublas;
        pl_gemm_comparison_leaders(c, s, &winner, &best_cublas);
        double w = ratio_to_cublas(c, s, winner, best_cublas);
        json_t *row = json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:o}", "shape", sh->name, "m", (json_int_t)sh->m,
                                "n", (json_int_t)sh->n, "k", (json_int_t)sh->k, "results", results, "winner",
                                winner >= 0 ? json_string(c->providers[winner].label) : json_null(), "best_cublas",
                                best_cublas >= 0 ? json_string(c->providers[best_cublas].label) : json_null(),
                                "winner_speedup_vs_best_cublas", pl_json_real(w));
        json_t *pick = pick_json(c, s, native);
        if (pick)
            json_object_set_new(row, "heuristic", pick);
        json_array_append_new(shapes, row);
    }
    json_object_set_new(j, "shapes", shapes);
    if (native >= 0)
        json_object_set_new(j, "heuristic", pick_summary_json(c));
    json_t *geo = json_object();
    for (size_t p = 0; p < c->n_providers; p++) {
        double ls = 0;
        int n = 0;
        for (size_t s = 0; s < c->n_shapes; s++) {
            int winner, best_cublas;
            pl_gemm_comparison_leaders(c, s, &winner, &best_cublas);
            double r = ratio_to_cublas(c, s, (int)p, best_cublas);
            if (!isnan(r)) {
                ls += log(r);
                n++;
            }
        }
        json_object_set_new(geo, c->providers[p].label, n ? pl_json_real(exp(ls / n)) : json_null());
    }
    json_object_set_new(j, "geomean_vs_best_cublas", geo);
    json_t *missing = json_array();
    for (size_t s = 0; s < c->n_shapes; s++)
        for (size_t p = 0; p < c->n_providers; p++) {
            const pl_gemm_cell *cell = pl_gemm_cell_get(c, s, p);
            if (cell->status != PL_GEMM_OK)
                json_array_append_new(missing,
                                      json_pack("{s:s, s:s, s:s, s:s}", "shape", c->shapes[s].name, "provider",
                                                c->providers[p].label, "status", pl_gemm_status_name(cell->status),
                                                "reason", cell->reason ? cell->reason : ""));
        }
    json_object_set_new(j, "missing", missing);
    json_object_set_new(j, "exit_code", json_integer(pl_gemm_comparison_exit_code(c)));
    return j;
}

json_t *pl_gemm_comparison_provider_json(const pl_gemm_comparison *c, size_t provider)
{
    pl_gemm_record_list all = {0};
    for (size_t s = 0; s < c->n_shapes; s++) {
        const pl_gemm_cell *cell = pl_gemm_cell_get(c, s, provider);
        for (size_t i = 0; i < cell->candidates.n; i++) {
            pl_gemm_record r;
            pl_gemm_record_copy(&r, &cell->candidates.items[i]);
            pl_gemm_record_list_push(&all, &r);
        }
    }
    json_t *j = pl_gemm_records_to_json(c->providers[provider].label, &all);
    pl_gemm_record_list_free(&all);
    return j;
}

/* The random draws of settings.random_shapes (select.c), each with the --shapes item that repeats it. */
static void random_draws_markdown(json_t *about, pl_buf *md)
{
    json_t *draws = json_object_get(json_object_get(about, "settings"), "random_shapes");
    size_t i;
    json_t *d;
    json_array_foreach(draws, i, d)
    {
        pl_buf_printf(md, "%s`%s` (seed %lld, %s)", i ? "; " : "Random shapes (docs/gemm.md, \"Random shapes\"): ",
                      json_string_value(json_object_get(d, "spec")),
                      (long long)json_integer_value(json_object_get(d, "seed")),
                      json_is_true(json_object_get(d, "seed_given")) ? "given" : "drawn for this run");
        if (i + 1 == json_array_size(draws))
            pl_buf_printf(md, ".\n\n");
    }
}

static char *summary_markdown(const pl_gemm_comparison *cmp, json_t *about)
{
    pl_buf md = {0};
    pl_buf_printf(&md,
                  "# perflab gemm\n\nTFLOP/s of the best verified configuration per provider (%s, B %s); "
                  "ratios over the best of cuBLAS/cuBLASLt.\n\n",
                  cmp->dtype, strcmp(cmp->layout, "nk") == 0 ? "N×K" : "K×N");
    random_draws_markdown(about, &md);
    pl_table *t = pl_gemm_comparison_table(cmp);
    pl_table_markdown(t, &md);
    pl_table_free(t);
    pl_buf_printf(&md, "\n## Kernels kept\n\n");
    for (size_t s = 0; s < cmp->n_shapes; s++)
        for (size_t p = 0; p < cmp->n_providers; p++) {
            const pl_gemm_cell *c = pl_gemm_cell_get(cmp, s, p);
            if (c->status != PL_GEMM_OK)
                continue;
            char noise[32] = "-";
            if (c->best.noise == c->best.noise) /* not NaN: records from files may not carry it */
                pl_snprintf(noise, sizeof noise, "%.1f%%", 100 * c->best.noise);
            pl_buf_printf(&md, "- %s, %s: %s (%.1f TFLOP/s, %.4f ms, noise %s)\n", cmp->shapes[s].name,
                          cmp->providers[p].label, c->best.kernel ? c->best.kernel : "?", c->best.tflops,
                          c->best.median_ms, noise);
        }
    const int native = perflab_column(cmp);
    int heading = 0;
    for (size_t s = 0; native >= 0 && s < cmp->n_shapes; s++) {
        pl_gemm_pick_verdict v;
        if (pl_gemm_cell_pick_verdict(pl_gemm_cell_get(cmp, s, (size_t)native), &v) != 0)
            continue;
        if (!heading++)
            pl_buf_printf(
                &md, "\n## The heuristic's pick (pl_gemm_bf16) against the best native configuration\n\n"
                     "| shape | pick | best | pick / best (time) | head to head | within 3%% |\n"
                     "| --- | --- | --- | ---: | ---: | --- |\n");
        char ratio[32] = "not timed", h2h[48] = "-";
        if (v.pick_timed)
            pl_snprintf(ratio, sizeof ratio, "%.3f", v.ratio);
        if (v.confirm_rounds > 0)
            pl_snprintf(h2h, sizeof h2h, "%.3f (%d rounds)", v.confirmed_ratio, v.confirm_rounds);
        pl_buf_printf(&md, "| %s | %s | %s | %s | %s | %s |\n", cmp->shapes[s].name, v.pick, v.best, ratio, h2h,
                      v.within ? "yes" : "no");
    }
    if (pl_gemm_comparison_missing(cmp, NULL)) {
        pl_buf_printf(&md, "\n## Without a record\n\n");
        pl_gemm_comparison_missing(cmp, &md);
    }
    return md.data ? md.data : pl_strdup("");
}

int pl_gemm_report_write(const pl_gemm_comparison *cmp, const char *dir, json_t *about, char *err, size_t errlen)
{
    const size_t n = cmp->n_providers + 2;
    pl_report_file *files = pl_xcalloc(n, sizeof *files);
    char **names = pl_xcalloc(n, sizeof *names);
    for (size_t p = 0; p < cmp->n_providers; p++) {
        /* a provider's label may come from a file (json:FILE): never a path, only a file name of its own */
        names[p] = pl_report_safe_name(cmp->providers[p].label, ".json");
        files[p].name = names[p];
        files[p].json = pl_gemm_comparison_provider_json(cmp, p);
    }
    files[cmp->n_providers].name = "comparison.json";
    files[cmp->n_providers].json = pl_gemm_comparison_to_json(cmp, about);
    files[cmp->n_providers + 1].name = "summary.md";
    files[cmp->n_providers + 1].text = summary_markdown(cmp, about);
    int rc = pl_report_write_files(dir, files, n, err, errlen);
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        json_decref(files[i].json);
        free(files[i].text);
    }
    free(names);
    free(files);
    return rc;
}
