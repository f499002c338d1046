/* A MoE readiness report.json as a heatmap: one cell per (message size, skew), flagged where the SLO missed. */
#include "core/moe_heatmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/chart.h"
#include "core/results_json.h"
#include "core/util.h"

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

char *pl_moe_heatmap_from_report(json_t *doc, int which, int standalone)
{
    json_t *set = json_object_get(doc, "settings"), *sizes = json_object_get(set, "message_sizes"),
           *skews = json_object_get(set, "skews"), *points = json_object_get(doc, "points");
    const size_t nx = json_array_size(sizes), ny = json_array_size(skews);
    if (!nx || !ny)
        return NULL;
    char **xl = pl_xcalloc(nx, sizeof *xl), **yl = pl_xcalloc(ny, sizeof *yl);
    double *values = pl_xcalloc(nx * ny, sizeof *values);
    int *flagged = pl_xcalloc(nx * ny, sizeof *flagged);
    char lab[48];
    for (size_t x = 0; x < nx; x++) {
        pl_tick_label(PL_TICKS_BYTES, (double)json_integer_value(json_array_get(sizes, x)), lab, sizeof lab);
        xl[x] = pl_strdup(lab);
    }
    for (size_t y = 0; y < ny; y++)
        yl[y] = pl_strfmt("alpha %.2f", json_number_value(json_array_get(skews, y)));
    for (size_t i = 0; i < nx * ny; i++)
        values[i] = NAN;
    size_t i;
    json_t *p;
    json_array_foreach(points, i, p)
    {
        const json_int_t bytes = json_integer_value(json_object_get(p, "message_bytes"));
        const double skew = json_number_value(json_object_get(p, "skew"));
        for (size_t x = 0; x < nx; x++)
            for (size_t y = 0; y < ny; y++)
                if (json_integer_value(json_array_get(sizes, x)) == bytes &&
                    fabs(json_number_value(json_array_get(skews, y)) - skew) < 1e-9) {
                    values[y * nx + x] = which == 0 ? pl_json_get_real(json_object_get(p, "latency_ms"), "p99")
                                                    : pl_json_get_real(p, "bw_gbps_p50");
                    flagged[y * nx + x] = strcmp(str(json_object_get(p, "slo"), "verdict"), "miss") == 0;
                }
    }
    json_t *slo = json_object_get(doc, "slo");
    const int slo_set = pl_json_get_real(slo, "max_p99_ms") > 0 || pl_json_get_real(slo, "min_bw_gbps") > 0;
    const int ranks = (int)json_integer_value(json_object_get(set, "ranks"));
    char title[160], sub[256];
    pl_snprintf(title, sizeof title, "%s, %s all-to-all over %d rank%s",
                which == 0 ? "p99 latency" : "bandwidth at p50 latency", str(set, "dtype"), ranks,
                ranks == 1 ? "" : "s");
    pl_snprintf(sub, sizeof sub, "%s skew (Zipf alpha over destinations), verdict %s; %s", str(set, "skew_model"),
                str(json_object_get(doc, "verdict"), "overall"), which == 0 ? "lower is better" : "higher is better");
    pl_heatmap h = {.title = title,
                    .subtitle = sub,
                    .x_label = "message bytes per rank",
                    .y_label = "skew",
                    .unit = which == 0 ? "ms" : "GB/s",
                    .value_fmt = which == 0 ? "%.4f" : "%.2f",
                    .nx = nx,
                    .ny = ny,
                    .x_labels = (const char *const *)xl,
                    .y_labels = (const char *const *)yl,
                    .values = values,
                    .flagged = slo_set ? flagged : NULL,
                    .flag_label = "SLO missed",
                    .higher_is_better = which != 0};
    char *svg = pl_chart_heatmap(&h, standalone);
    for (size_t x = 0; x < nx; x++)
        free(xl[x]);
    for (size_t y = 0; y < ny; y++)
        free(yl[y]);
    free(xl);
    free(yl);
    free(values);
    free(flagged);
    return svg;
}
