/* report.html: the folders of the other verbs, read from their JSON: gemm (TFLOP/s per shape and provider), MoE
 * readiness (its two heatmaps), comm (busbw and p99 latency against size) and profile (the findings). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/moe_heatmap.h"
#include "report/html_impl.h"

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

void pl_html_heading(pl_buf *b, const char *prefix, const char *what, const pl_report_input *in)
{
    char *id = pl_html_id(prefix, in->label);
    pl_buf_printf(b, "<h2 id=\"%s\">", id);
    pl_xml_escape_into(b, what);
    pl_buf_append(b, " ");
    pl_xml_escape_into(b, in->label);
    pl_buf_append(b, "</h2>\n");
    free(id);
}

/* Provenance as the fabric and gemm reports store it (either a "provenance" object or its keys at the top). */
void pl_html_provenance(pl_buf *b, json_t *doc)
{
    json_t *p = json_object_get(doc, "provenance");
    if (!json_is_object(p))
        p = doc;
    json_t *gpus = json_object_get(p, "gpus");
    const char *gpu = json_is_array(gpus) && json_array_size(gpus) ? str(json_array_get(gpus, 0), "name")
                                                                   : str(json_object_get(doc, "gpu"), "name");
    pl_buf_append(b, "<dl class=\"prov\">\n");
    pl_html_dl_item(b, "GPU", gpu);
    if (json_is_array(gpus) && json_array_size(gpus) > 1) {
        char n[32];
        pl_snprintf(n, sizeof n, "%zu", json_array_size(gpus));
        pl_html_dl_item(b, "GPUs", n);
    }
    pl_html_dl_item(b, "driver", str(p, "driver_version"));
    pl_html_dl_item(b, "perflab", str(p, "git_commit"));
    pl_html_dl_item(b, "command", str(p, "command_line"));
    pl_html_dl_item(b, "started", str(p, "started_at"));
    pl_buf_append(b, "</dl>\n");
}

/* ---- gemm ---- */

void pl_html_gemm_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc, *provs = json_object_get(doc, "providers"), *shapes = json_object_get(doc, "shapes");
    pl_html_heading(b, "gemm-", "perflab gemm", in);
    pl_html_provenance(b, doc);
    const size_t np = json_array_size(provs), nsh = json_array_size(shapes);
    const char **pnames = pl_xcalloc(np + 1, sizeof *pnames), **snames = pl_xcalloc(nsh + 1, sizeof *snames);
    double *v = pl_xcalloc(np * nsh + 1, sizeof *v);
    const char **spec = pl_xcalloc(np + 3, sizeof *spec);
    char **owned = pl_xcalloc(np + 1, sizeof *owned);
    spec[0] = "shape";
    for (size_t p = 0; p < np; p++) {
        pnames[p] = json_string_value(json_array_get(provs, p));
        owned[p] = pl_strfmt(">%s TFLOP/s", pnames[p] ? pnames[p] : "?");
        spec[1 + p] = owned[p];
    }
    spec[1 + np] = "winner";
    spec[2 + np] = ">winner / best cuBLAS";
    pl_table *t = pl_table_new(np + 3, spec);
    for (size_t s = 0; s < nsh; s++) {
        json_t *sh = json_array_get(shapes, s), *res = json_object_get(sh, "results");
        snames[s] = str(sh, "shape");
        size_t row = pl_table_row(t);
        pl_table_set(t, row, 0, "%s", snames[s]);
        for (size_t p = 0; p < np; p++) {
            json_t *cell = json_object_get(res, pnames[p] ? pnames[p] : "");
            const int ok = strcmp(str(cell, "status"), "ok") == 0;
            v[s * np + p] = ok ? pl_json_get_real(cell, "tflops") : NAN;
            if (ok)
                pl_table_set(t, row, 1 + p, "%.1f", v[s * np + p]);
            else
                pl_table_set(t, row, 1 + p, "%s", cell ? str(cell, "status") : "-");
        }
        pl_table_set(t, row, 1 + np, "%s", str(sh, "winner"));
        double w = pl_json_get_real(sh, "winner_speedup_vs_best_cublas");
        if (isfinite(w))
            pl_table_set(t, row, 2 + np, "%.3f", w);
    }
    char *sub = pl_strfmt("best verified configuration per provider; %s, B %s; n/a: no verified record",
                          str(doc, "dtype"), strcmp(str(doc, "layout"), "kn") == 0 ? "K×N" : "N×K");
    pl_bar_chart c = {.title = "GEMM: TFLOP/s per shape and provider",
                      .subtitle = sub,
                      .value = {.label = "TFLOP/s", .scale = PL_AXIS_LINEAR},
                      .n_categories = nsh,
                      .n_series = np,
                      .categories = snames,
                      .series_names = pnames,
                      .values = v,
                      .value_fmt = "%.1f",
                      .reference = NAN};
    if (nsh && np)
        pl_html_figure(b, pl_chart_bars(&c, 0));
    pl_html_table(b, t);
    /* the kernel each provider's best came from */
    pl_buf_append(b, "<ul class=\"findings\">\n");
    for (size_t s = 0; s < nsh; s++) {
        json_t *res = json_object_get(json_array_get(shapes, s), "results");
        for (size_t p = 0; p < np; p++) {
            json_t *cell = json_object_get(res, pnames[p] ? pnames[p] : "");
            if (!cell)
                continue;
            const int ok = strcmp(str(cell, "status"), "ok") == 0;
            pl_html_elemf(b, "li", NULL, "%s, %s: %s", snames[s], pnames[p] ? pnames[p] : "?",
                          ok ? str(cell, "kernel") : str(cell, "reason"));
        }
    }
    pl_buf_append(b, "</ul>\n");
    pl_table_free(t);
    for (size_t p = 0; p < np; p++)
        free(owned[p]);
    free(owned);
    free(spec);
    free(sub);
    free(pnames);
    free(snames);
    free(v);
}

/* ---- MoE readiness ---- */

void pl_html_moe_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc, *v = json_object_get(doc, "verdict"), *slo = json_object_get(doc, "slo");
    pl_html_heading(b, "moe-", "MoE readiness", in);
    pl_html_provenance(b, doc);
    const char *overall = str(v, "overall");
    pl_buf line = {0};
    pl_buf_printf(&line, "verdict: %s (%lld of %lld points missed", overall,
                  (long long)json_integer_value(json_object_get(v, "missed")),
                  (long long)json_integer_value(json_object_get(v, "points")));
    if (json_is_object(slo)) {
        double p99 = pl_json_get_real(slo, "max_p99_ms"), bw = pl_json_get_real(slo, "min_bw_gbps");
        if (isfinite(p99))
            pl_buf_printf(&line, "; SLO p99 <= %g ms", p99);
        if (isfinite(bw))
            pl_buf_printf(&line, "; SLO GB/s at p50 >= %g", bw);
    }
    pl_buf_append(&line, ")");
    pl_html_elem(b, "p",
                 strcmp(overall, "pass") == 0   ? "class=\"good\""
                 : strcmp(overall, "miss") == 0 ? "class=\"bad\""
                                                : "class=\"warn\"",
                 line.data);
    pl_buf_free(&line);
    for (int which = 0; which < 2; which++) {
        char *svg = pl_moe_heatmap_from_report(doc, which, 0);
        if (svg)
            pl_html_figure(b, svg);
    }
}

/* ---- comm ---- */

typedef struct curve {
    char *name;
    double *x, *bw, *p99;
    size_t n;
} curve;

void pl_html_comm_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc, *points = json_object_get(doc, "points");
    pl_html_heading(b, "comm-", "perflab comm", in);
    pl_html_provenance(b, doc);
    /* one curve per collective, dtype and placement, in the order they first appear */
    curve *cs = pl_xcalloc(json_array_size(points) + 1, sizeof *cs);
    size_t nc = 0, i;
    json_t *p;
    json_array_foreach(points, i, p)
    {
        char *name = pl_strfmt("%s %s%s", str(p, "collective"), str(p, "dtype"),
                               json_is_true(json_object_get(p, "in_place")) ? " in-place" : "");
        size_t k = 0;
        while (k < nc && strcmp(cs[k].name, name) != 0)
            k++;
        if (k == nc) {
            cs[nc].name = name;
            cs[nc].x = pl_xcalloc(json_array_size(points), sizeof(double));
            cs[nc].bw = pl_xcalloc(json_array_size(points), sizeof(double));
            cs[nc].p99 = pl_xcalloc(json_array_size(points), sizeof(double));
            nc++;
        } else {
            free(name);
        }
        curve *c = &cs[k];
        c->x[c->n] = (double)json_integer_value(json_object_get(p, "size_bytes"));
        c->bw[c->n] = pl_json_get_real(p, "busbw_gbps");
        c->p99[c->n] = pl_json_get_real(json_object_get(p, "latency_ms"), "p99");
        c->n++;
    }
    pl_series *s = pl_xcalloc(nc + 1, sizeof *s);
    for (int which = 0; which < 2; which++) {
        for (size_t k = 0; k < nc; k++)
            s[k] = (pl_series){.name = cs[k].name,
                               .n = cs[k].n,
                               .x = cs[k].x,
                               .y = which ? cs[k].p99 : cs[k].bw,
                               .lines = 1,
                               .markers = 1,
                               .colour = (int)k};
        json_t *set = json_object_get(doc, "settings");
        char sub[200];
        pl_snprintf(sub, sizeof sub, "%lld ranks (%s launch); %s",
                    (long long)json_integer_value(json_object_get(set, "ranks")), str(set, "launch"),
                    which ? "p99 of every rank's per-operation time"
                          : "busbw at the p50 latency (nccl-tests' factors)");
        pl_xy_chart c = {.title = which ? "p99 latency against message size" : "bus bandwidth against message size",
                         .subtitle = sub,
                         .x = {.label = "message size", .scale = PL_AXIS_LOG2, .format = PL_TICKS_BYTES},
                         .y = {.label = which ? "p99 latency (ms)" : "busbw (GB/s)", .scale = PL_AXIS_LOG10},
                         .series = s,
                         .n_series = nc};
        if (nc)
            pl_html_figure(b, pl_chart_xy(&c, 0));
    }
    for (size_t k = 0; k < nc; k++) {
        free(cs[k].name);
        free(cs[k].x);
        free(cs[k].bw);
        free(cs[k].p99);
    }
    free(cs);
    free(s);
}

/* ---- profile ---- */

void pl_html_profile_section(pl_buf *b, const pl_report_input *in)
{
    json_t *doc = in->doc;
    pl_html_heading(b, "profile-", "perflab profile", in);
    pl_buf_append(b, "<dl class=\"prov\">\n");
    pl_html_dl_item(b, "target", str(doc, "target"));
    pl_html_dl_item(b, "parameters", str(doc, "params"));
    pl_html_dl_item(b, "profiler", str(doc, "ncu"));
    pl_html_dl_item(b, "options", str(doc, "ncu_options"));
    pl_buf_append(b, "</dl>\n");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(doc, "variants"), i, v)
    {
        pl_html_elemf(b, "h3", NULL, "%s: %s", str(v, "variant"), str(v, "technique"));
        pl_buf_append(b, "<ul class=\"findings\">\n");
        size_t k;
        json_t *l;
        json_array_foreach(json_object_get(v, "findings"), k, l) pl_html_elem(b, "li", NULL, json_string_value(l));
        const char *rep = str(json_object_get(v, "metrics"), "report");
        if (*rep)
            pl_html_elemf(b, "li", NULL, "report: %s", rep);
        json_t *nsys = json_object_get(v, "nsys");
        if (nsys)
            pl_html_elemf(b, "li", NULL, "nsys: %s", *str(nsys, "report") ? str(nsys, "report") : str(nsys, "error"));
        pl_buf_append(b, "</ul>\n");
    }
}
