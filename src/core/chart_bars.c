/* Horizontal bar charts: a row of bars per category (one per series), interval whiskers, a value after each bar,
 * a reference line (chart.h). */
#include <math.h>
#include <stdlib.h>

#include "core/chart_impl.h"

#define RIGHT      90 /* room for the value written after the longest bar */
#define HEAD       48
#define BAR_H      16
#define BAR_GAP    3
#define GROUP_GAP  12
#define AXIS_SPACE 48

static double at(const double *a, size_t i)
{
    return a ? a[i] : NAN;
}

char *pl_chart_bars(const pl_bar_chart *c, int standalone)
{
    const int width = c->width > 0 ? c->width : 760;
    const size_t ns = c->n_series ? c->n_series : 1, nbars = c->n_categories * ns;
    /* the left margin fits the longest category name */
    double left = 80;
    for (size_t i = 0; i < c->n_categories; i++)
        left = fmax(left, pl_text_width(c->categories[i], 12) + 20);
    left = fmin(left, width * 0.45);
    const int legend_rows = c->series_names && ns > 1 ? 1 : 0;
    const double top = HEAD + 14 + legend_rows * 20;
    const double group_h = ns * (BAR_H + BAR_GAP) - BAR_GAP;
    const double plot_h = c->n_categories * (group_h + GROUP_GAP) + GROUP_GAP;
    const int height = (int)ceil(top + plot_h + AXIS_SPACE);

    pl_scale s = {.kind = c->value.scale};
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < nbars; i++) {
        const double v[3] = {c->values[i], at(c->lo, i), at(c->hi, i)};
        for (int k = 0; k < 3; k++)
            if (pl_scale_ok(&s, v[k])) {
                lo = fmin(lo, v[k]);
                hi = fmax(hi, v[k]);
            }
    }
    if (pl_scale_ok(&s, c->reference)) {
        lo = fmin(lo, c->reference);
        hi = fmax(hi, c->reference);
    }
    pl_axis axis = c->value;
    if (axis.scale == PL_AXIS_LINEAR && axis.min == 0 && axis.max == 0)
        axis.from_zero = 1;
    pl_scale_fit(&s, &axis, lo, hi);
    s.p0 = left;
    s.p1 = width - RIGHT;
    const double base = s.kind == PL_AXIS_LINEAR ? pl_scale_map(&s, fmax(s.d0, fmin(0, s.d1))) : s.p0;

    pl_buf b = {0};
    pl_svg_begin(&b, width, height, standalone, c->title);
    pl_svg_heading(&b, c->title, c->subtitle);
    if (legend_rows) {
        double x = left;
        for (size_t k = 0; k < ns; k++)
            x += pl_svg_legend_entry(&b, x, HEAD + 18, (int)k, 0, 0, c->series_names[k]);
    }
    const double axis_y = top + plot_h;
    pl_svg_axis_x(&b, &s, &axis, axis_y, top);
    char label[64];
    for (size_t g = 0; g < c->n_categories; g++) {
        const double gy = top + GROUP_GAP + g * (group_h + GROUP_GAP);
        pl_svg_text(&b, left - 8, gy + group_h / 2 + 4, "end", "fill=\"#222\"", c->categories[g]);
        for (size_t k = 0; k < ns; k++) {
            const size_t i = g * ns + k;
            const double y = gy + k * (BAR_H + BAR_GAP), v = c->values[i];
            const char *colour = pl_chart_colour(c->colours ? c->colours[i] : (int)k);
            if (!pl_scale_ok(&s, v)) {
                pl_svg_text(&b, base + 4, y + BAR_H - 4, "start", "fill=\"#888\" font-style=\"italic\"", "n/a");
                continue;
            }
            const double x = pl_scale_map(&s, fmin(fmax(v, s.d0), s.d1));
            pl_buf_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\">", fmin(base, x), y,
                          fabs(x - base), BAR_H, colour);
            if (c->value_fmt) {
                pl_snprintf(label, sizeof label, c->value_fmt, v);
                pl_buf_append(&b, "<title>");
                pl_xml_escape_into(&b, label);
                pl_buf_append(&b, "</title>");
            }
            pl_buf_append(&b, "</rect>\n");
            double wl = at(c->lo, i), wh = at(c->hi, i), end = x;
            if (pl_scale_ok(&s, wl) && pl_scale_ok(&s, wh)) {
                const double x0 = pl_scale_map(&s, fmax(wl, s.d0)), x1 = pl_scale_map(&s, fmin(wh, s.d1));
                const double cy = y + BAR_H / 2.0;
                pl_buf_printf(&b,
                              "<path d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f\" stroke=\"#222\" "
                              "stroke-width=\"1.4\" fill=\"none\"/>\n",
                              x0, cy, x1, x0, cy - 5, cy + 5, x1, cy - 5, cy + 5);
                end = fmax(end, x1);
            }
            if (c->value_fmt)
                pl_svg_text(&b, end + 6, y + BAR_H - 4, "start", "font-size=\"11\" fill=\"#222\"", label);
        }
    }
    if (pl_scale_ok(&s, c->reference) && c->reference >= s.d0 && c->reference <= s.d1) {
        const double x = pl_scale_map(&s, c->reference);
        pl_buf_printf(&b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"5 3\"/>\n",
                      x, top, x, axis_y);
        if (c->reference_label)
            pl_svg_text(&b, x + 4, top - 4, "start", "font-size=\"11\" fill=\"#d62728\"", c->reference_label);
    }
    pl_svg_end(&b);
    return b.data;
}
