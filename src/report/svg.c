#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define CELL_W   120
#define CELL_H   52
#define LEFT     110
#define TOP      78
#define LEGEND_W 190

char *pl_xml_escape(const char *s)
{
    pl_buf b = {0};
    pl_buf_append(&b, "");
    for (; s && *s; s++) {
        switch (*s) {
        case '&': pl_buf_append(&b, "&amp;"); break;
        case '<': pl_buf_append(&b, "&lt;"); break;
        case '>': pl_buf_append(&b, "&gt;"); break;
        case '"': pl_buf_append(&b, "&quot;"); break;
        default: pl_buf_appendn(&b, s, 1);
        }
    }
    return b.data;
}

/* Viridis at five stops, interpolated: t = 0 dark purple (worst) .. 1 yellow (best). */
static void colour(double t, int rgb[3], int *dark)
{
    static const double stops[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    if (!(t >= 0))
        t = 0;
    if (t > 1)
        t = 1;
    double x = t * 4;
    int i = (int)x < 4 ? (int)x : 3;
    double f = x - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (int)lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
    *dark = t < 0.55;
}

static void text(pl_buf *b, double x, double y, const char *anchor, const char *style, const char *s)
{
    char *e = pl_xml_escape(s);
    pl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>%s</text>\n", x, y, anchor, style, e);
    free(e);
}

char *pl_svg_heatmap(const pl_heatmap *h)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < h->nx * h->ny; i++)
        if (isfinite(h->values[i])) {
            lo = fmin(lo, h->values[i]);
            hi = fmax(hi, h->values[i]);
        }
    const int width = LEFT + (int)h->nx * CELL_W + LEGEND_W, height = TOP + (int)h->ny * CELL_H + 70;
    pl_buf b = {0};
    pl_buf_printf(&b,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                  width, height, width, height);
    text(&b, 12, 24, "start", "font-size=\"16\" font-weight=\"bold\"", h->title);
    if (h->subtitle)
        text(&b, 12, 44, "start", "fill=\"#555\"", h->subtitle);
    char buf[160], val[64];
    for (size_t y = 0; y < h->ny; y++) {
        for (size_t x = 0; x < h->nx; x++) {
            const double v = h->values[y * h->nx + x];
            const int cx = LEFT + (int)x * CELL_W, cy = TOP + (int)y * CELL_H;
            int rgb[3] = {200, 200, 200}, dark = 0;
            if (isfinite(v)) {
                double t = hi > lo ? (v - lo) / (hi - lo) : 1.0;
                colour(h->higher_is_better ? t : 1.0 - t, rgb, &dark);
                pl_snprintf(val, sizeof val, h->value_fmt, v);
            } else {
                pl_snprintf(val, sizeof val, "n/a");
            }
            pl_buf_printf(&b,
                          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" "
                          "stroke=\"white\" stroke-width=\"2\"><title>%s %s</title></rect>\n",
                          cx, cy, CELL_W, CELL_H, rgb[0], rgb[1], rgb[2], val, h->unit);
            if (h->flagged && h->flagged[y * h->nx + x])
                pl_buf_printf(&b,
                              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#d62728\" "
                              "stroke-width=\"4\"/>\n",
                              cx + 3, cy + 3, CELL_W - 6, CELL_H - 6);
            text(&b, cx + CELL_W / 2.0, cy + CELL_H / 2.0 + 5, "middle",
                 dark ? "fill=\"white\" font-weight=\"bold\"" : "fill=\"black\" font-weight=\"bold\"", val);
        }
        text(&b, LEFT - 10, TOP + (double)y * CELL_H + CELL_H / 2.0 + 5, "end", "", h->y_labels[y]);
    }
    for (size_t x = 0; x < h->nx; x++)
        text(&b, LEFT + (double)x * CELL_W + CELL_W / 2.0, TOP - 8, "middle", "", h->x_labels[x]);
    text(&b, LEFT + h->nx * CELL_W / 2.0, TOP + (double)h->ny * CELL_H + 24, "middle", "fill=\"#333\"", h->x_label);
    pl_buf_printf(&b,
                  "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 18 %.1f)\">",
                  TOP + h->ny * CELL_H / 2.0, TOP + h->ny * CELL_H / 2.0);
    char *ylab = pl_xml_escape(h->y_label);
    pl_buf_printf(&b, "%s</text>\n", ylab);
    free(ylab);

    /* legend: the scale from worst to best, with its end values */
    const int lx = LEFT + (int)h->nx * CELL_W + 30, ly = TOP, lh = (int)h->ny * CELL_H;
    pl_buf_append(&b, "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
    for (int s = 0; s <= 10; s++) {
        int rgb[3], dark;
        colour(s / 10.0, rgb, &dark);
        pl_buf_printf(&b, "<stop offset=\"%d%%\" stop-color=\"rgb(%d,%d,%d)\"/>\n", s * 10, rgb[0], rgb[1], rgb[2]);
    }
    pl_buf_append(&b, "</linearGradient></defs>\n");
    pl_buf_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"%d\" fill=\"url(#scale)\" stroke=\"#999\"/>\n", lx,
                  ly, lh);
    if (isfinite(lo)) {
        double best = h->higher_is_better ? hi : lo, worst = h->higher_is_better ? lo : hi;
        pl_snprintf(val, sizeof val, h->value_fmt, best);
        pl_snprintf(buf, sizeof buf, "%s %s (best)", val, h->unit);
        text(&b, lx + 24, ly + 10, "start", "", buf);
        pl_snprintf(val, sizeof val, h->value_fmt, worst);
        pl_snprintf(buf, sizeof buf, "%s %s (worst)", val, h->unit);
        text(&b, lx + 24, ly + lh, "start", "", buf);
    }
    if (h->flagged && h->flag_label) {
        pl_buf_printf(&b,
                      "<rect x=\"%d\" y=\"%d\" width=\"18\" height=\"14\" fill=\"none\" stroke=\"#d62728\" "
                      "stroke-width=\"3\"/>\n",
                      lx, ly + lh + 16);
        text(&b, lx + 24, ly + lh + 28, "start", "", h->flag_label);
    }
    pl_buf_append(&b, "</svg>\n");
    return b.data;
}
