/* Heatmaps: one cell per (x, y) with its value written in it, the viridis scale from the worst value to the best,
 * flagged cells outlined, the scale and the flag as a legend (chart.h). */
#include <math.h>
#include <stdlib.h>

#include "core/chart_impl.h"

#define CELL_W   120
#define CELL_H   52
#define LEFT     110
#define TOP      78
#define LEGEND_W 190

char *pl_chart_heatmap(const pl_heatmap *h, int standalone)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < h->nx * h->ny; i++)
        if (isfinite(h->values[i])) {
            lo = fmin(lo, h->values[i]);
            hi = fmax(hi, h->values[i]);
        }
    const int width = LEFT + (int)h->nx * CELL_W + LEGEND_W, height = TOP + (int)h->ny * CELL_H + 70;
    pl_buf b = {0};
    pl_svg_begin(&b, width, height, standalone, h->title);
    pl_svg_heading(&b, h->title, h->subtitle);
    char buf[160], val[64];
    for (size_t y = 0; y < h->ny; y++) {
        for (size_t x = 0; x < h->nx; x++) {
            const double v = h->values[y * h->nx + x];
            const int cx = LEFT + (int)x * CELL_W, cy = TOP + (int)y * CELL_H;
            int rgb[3] = {200, 200, 200}, dark = 0;
            if (isfinite(v)) {
                double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
                pl_chart_viridis(h->higher_is_better ? t : 1.0 - t, rgb, &dark);
                pl_snprintf(val, sizeof val, h->value_fmt, v);
            } else {
                pl_snprintf(val, sizeof val, "n/a");
            }
            pl_buf_printf(&b,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" stroke=\"white\" "
                          "stroke-width=\"2\"><title>",
                          cx, cy, CELL_W, CELL_H, rgb[0], rgb[1], rgb[2]);
            pl_snprintf(buf, sizeof buf, "%s %s", val, h->unit);
            pl_xml_escape_into(&b, buf);
            pl_buf_append(&b, "</title></rect>\n");
            if (h->flagged && h->flagged[y * h->nx + x])
                pl_buf_printf(&b,
                              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#d62728\" "
                              "stroke-width=\"4\"/>\n",
                              cx + 3, cy + 3, CELL_W - 6, CELL_H - 6);
            pl_svg_text(&b, cx + CELL_W / 2.0, cy + CELL_H / 2.0 + 5, "middle",
                        dark ? "fill=\"white\" font-weight=\"bold\"" : "fill=\"black\" font-weight=\"bold\"", val);
        }
        pl_svg_text(&b, LEFT - 10, TOP + (double)y * CELL_H + CELL_H / 2.0 + 5, "end", "", h->y_labels[y]);
    }
    for (size_t x = 0; x < h->nx; x++)
        pl_svg_text(&b, LEFT + (double)x * CELL_W + CELL_W / 2.0, TOP - 8, "middle", "", h->x_labels[x]);
    pl_svg_text(&b, LEFT + h->nx * CELL_W / 2.0, TOP + (double)h->ny * CELL_H + 24, "middle", "fill=\"#333\"",
                h->x_label);
    const double mid = TOP + h->ny * CELL_H / 2.0;
    pl_snprintf(buf, sizeof buf, "fill=\"#333\" transform=\"rotate(-90 18 %.1f)\"", mid);
    pl_svg_text(&b, 18, mid, "middle", buf, h->y_label);

    /* legend: the scale from worst to best, with its end values; the gradient's id differs between the heatmaps of
     * one HTML page (it follows the title) */
    const int lx = LEFT + (int)h->nx * CELL_W + 30, ly = TOP, lh = (int)h->ny * CELL_H;
    unsigned long id = 5381;
    for (const char *p = h->title; p && *p; p++)
        id = id * 33 + (unsigned char)*p;
    for (const char *p = h->subtitle; p && *p; p++)
        id = id * 33 + (unsigned char)*p;
    pl_buf_printf(&b, "<defs><linearGradient id=\"scale%08lx\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n",
                  id & 0xfffffffful);
    for (int s = 0; s <= 10; s++) {
        int rgb[3];
        pl_chart_viridis(s / 10.0, rgb, NULL);
        pl_buf_printf(&b, "<stop offset=\"%d%%\" stop-color=\"rgb(%d,%d,%d)\"/>\n", s * 10, rgb[0], rgb[1], rgb[2]);
    }
    pl_buf_append(&b, "</linearGradient></defs>\n");
    pl_buf_printf(&b,
                  "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"%d\" fill=\"url(#scale%08lx)\" stroke=\"#999\"/>\n",
                  lx, ly, lh, id & 0xfffffffful);
    if (isfinite(lo)) {
        double best = h->higher_is_better ? hi : lo, worst = h->higher_is_better ? lo : hi;
        pl_snprintf(val, sizeof val, h->value_fmt, best);
        pl_snprintf(buf, sizeof buf, "%s %s (best)", val, h->unit);
        pl_svg_text(&b, lx + 24, ly + 10, "start", "", buf);
        pl_snprintf(val, sizeof val, h->value_fmt, worst);
        pl_snprintf(buf, sizeof buf, "%s %s (worst)", val, h->unit);
        pl_svg_text(&b, lx + 24, ly + lh, "start", "", buf);
    }
    if (h->flagged && h->flag_label) {
        pl_buf_printf(&b,
                      "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"14\" fill=\"none\" stroke=\"#d62728\" "
                      "stroke-width=\"3\"/>\n",
                      lx, ly + lh + 16);
        pl_svg_text(&b, lx + 24, ly + lh + 28, "start", "", h->flag_label);
    }
    pl_svg_end(&b);
    return b.data;
}
