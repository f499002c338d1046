/* x-y charts: series drawn as lines and/or markers, labels beside points, arrows between points (chart.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/chart_impl.h"

#define LEFT       78
#define RIGHT      24
#define TOP        62 /* the plot's top without a legend; each legend row pushes it down */
#define BOTTOM     56
#define LEGEND_ROW 18

/* The data's extent on each axis, over the points each axis can draw. */
static void extent(const pl_xy_chart *c, const pl_scale *sx, const pl_scale *sy, double *x0, double *x1, double *y0,
                   double *y1)
{
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (size_t i = 0; i < c->n_series; i++)
        for (size_t k = 0; k < c->series[i].n; k++) {
            double x = c->series[i].x[k], y = c->series[i].y[k];
            if (!pl_scale_ok(sx, x) || !pl_scale_ok(sy, y))
                continue;
            *x0 = fmin(*x0, x);
            *x1 = fmax(*x1, x);
            *y0 = fmin(*y0, y);
            *y1 = fmax(*y1, y);
        }
}

/* The legend, wrapped over rows under the heading; returns the rows used. */
static int legend(pl_buf *b, const pl_xy_chart *c, double width, int draw)
{
    double x = LEFT, y = TOP;
    int rows = 0;
    for (size_t i = 0; i < c->n_series; i++) {
        const pl_series *s = &c->series[i];
        if (!s->name)
            continue;
        double w = 24 + pl_text_width(s->name, 12) + 16;
        if (rows == 0)
            rows = 1;
        if (x + w > width - RIGHT && x > LEFT) {
            x = LEFT;
            rows++;
        }
        if (draw)
            pl_svg_legend_entry(b, x, y + (rows - 1) * LEGEND_ROW, s->colour, s->lines, s->dashed, s->name);
        x += w;
    }
    return rows;
}

/* Inside the axes' ranges (a point outside is left out rather than drawn over the axes). */
static int inside(const pl_scale *sx, const pl_scale *sy, double x, double y)
{
    const double ex = (sx->d1 - sx->d0) * 1e-9, ey = (sy->d1 - sy->d0) * 1e-9;
    return pl_scale_ok(sx, x) && pl_scale_ok(sy, y) && x >= sx->d0 - ex && x <= sx->d1 + ex && y >= sy->d0 - ey &&
           y <= sy->d1 + ey;
}

/* End labels already written (their baselines), so that a label close to another goes under its line instead. */
typedef struct label_rows {
    double y[32];
    size_t n;
} label_rows;

static double free_row(label_rows *rows, double y)
{
    for (size_t i = 0; i < rows->n; i++)
        if (fabs(rows->y[i] - y) < 13) {
            y += 19; /* under the line rather than over it */
            break;
        }
    if (rows->n < 32)
        rows->y[rows->n++] = y;
    return y;
}

/* Point labels already placed (their boxes, estimated from 11-px text), so that labels of points close together
 * are stacked one under another instead of printed over each other. */
typedef struct label_boxes {
    double x0[64], x1[64], y0[64], y1[64];
    size_t n;
} label_boxes;

static int box_free(const label_boxes *bx, double x0, double x1, double y0, double y1)
{
    for (size_t i = 0; i < bx->n; i++)
        if (x0 < bx->x1[i] && bx->x0[i] < x1 && y0 < bx->y1[i] && bx->y0[i] < y1)
            return 0;
    return 1;
}

static void box_add(label_boxes *bx, double x0, double x1, double y0, double y1)
{
    if (bx->n < sizeof bx->x0 / sizeof bx->x0[0]) {
        bx->x0[bx->n] = x0;
        bx->x1[bx->n] = x1;
        bx->y0[bx->n] = y0;
        bx->y1[bx->n] = y1;
        bx->n++;
    }
}

/* Writes a point's label right of and above the point or, where that place is taken, at the nearest free row
 * above or below it, with a faint leader line back to the point. */
static void point_label(pl_buf *b, label_boxes *bx, double px, double py, const char *text)
{
    const double w = 6.2 * (double)strlen(text), h = 12, x = px + 7;
    double y = py - 7;
    for (int k = 0; k <= 12; k++) {
        const double dy = (k % 2 ? -1.0 : 1.0) * 13.0 * (double)((k + 1) / 2);
        if (box_free(bx, x, x + w, py - 7 + dy - h + 2, py - 7 + dy + 2)) {
            y = py - 7 + dy;
            break;
        }
    }
    box_add(bx, x, x + w, y - h + 2, y + 2);
    if (fabs(y - (py - 7)) > 1)
        pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" stroke-width=\"1\"/>\n",
                      px + 3, py, x - 1, y - 4);
    pl_svg_text(b, x, y, "start", "font-size=\"11\" fill=\"#222\"", text);
}

static void draw_series(pl_buf *b, const pl_series *s, const pl_scale *sx, const pl_scale *sy, label_rows *rows,
                        label_boxes *bx)
{
    const char *colour = pl_chart_colour(s->colour);
    if (s->lines) {
        pl_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
                      s->dashed ? " stroke-dasharray=\"6 4\"" : "");
        for (size_t k = 0; k < s->n; k++)
            if (inside(sx, sy, s->x[k], s->y[k]))
                pl_buf_printf(b, "%.1f,%.1f ", pl_scale_map(sx, s->x[k]), pl_scale_map(sy, s->y[k]));
        pl_buf_append(b, "\"/>\n");
    }
    double lx = NAN, ly = NAN;
    for (size_t k = 0; k < s->n; k++) {
        if (!inside(sx, sy, s->x[k], s->y[k]))
            continue;
        lx = pl_scale_map(sx, s->x[k]);
        ly = pl_scale_map(sy, s->y[k]);
        if (s->markers) {
            pl_buf_printf(b,
                          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"white\" stroke-width=\"1\">",
                          lx, ly, colour);
            if (s->labels && s->labels[k]) {
                pl_buf_append(b, "<title>");
                pl_xml_escape_into(b, s->labels[k]);
                pl_buf_append(b, "</title>");
            }
            pl_buf_append(b, "</circle>\n");
        }
        if (s->labels && s->labels[k])
            point_label(b, bx, lx, ly, s->labels[k]);
    }
    if (s->end_label && isfinite(lx)) {
        char attrs[64];
        pl_snprintf(attrs, sizeof attrs, "font-size=\"11\" fill=\"%s\"", colour);
        const double ey = free_row(rows, ly - 6), ew = 6.2 * (double)strlen(s->end_label);
        box_add(bx, lx - 4 - ew, lx - 4, ey - 10, ey + 2); /* point labels keep clear of it */
        pl_svg_text(b, lx - 4, ey, "end", attrs, s->end_label);
    }
}

static void draw_arrow(pl_buf *b, const pl_arrow *a, const pl_scale *sx, const pl_scale *sy)
{
    if (!inside(sx, sy, a->x0, a->y0) || !inside(sx, sy, a->x1, a->y1))
        return;
    double x0 = pl_scale_map(sx, a->x0), y0 = pl_scale_map(sy, a->y0);
    double x1 = pl_scale_map(sx, a->x1), y1 = pl_scale_map(sy, a->y1);
    double dx = x1 - x0, dy = y1 - y0, len = sqrt(dx * dx + dy * dy);
    if (len < 12)
        return; /* the points overlap: no room for an arrow */
    double ux = dx / len, uy = dy / len;
    /* stop short of both markers; the head is a small filled triangle */
    x0 += 7 * ux;
    y0 += 7 * uy;
    x1 -= 7 * ux;
    y1 -= 7 * uy;
    const char *colour = pl_chart_colour(a->colour);
    pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.6\"/>\n", x0,
                  y0, x1 - 6 * ux, y1 - 6 * uy, colour);
    pl_buf_printf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"/>\n", x1, y1, x1 - 9 * ux + 4 * uy,
                  y1 - 9 * uy - 4 * ux, x1 - 9 * ux - 4 * uy, y1 - 9 * uy + 4 * ux, colour);
}

char *pl_chart_xy(const pl_xy_chart *c, int standalone)
{
    const int width = c->width > 0 ? c->width : 760;
    pl_buf probe = {0};
    const int legend_rows = legend(&probe, c, width, 0);
    pl_buf_free(&probe);
    const int top = TOP + legend_rows * LEGEND_ROW;
    const int height = (c->height > 0 ? c->height : 460) + legend_rows * LEGEND_ROW;
    pl_scale sx = {.kind = c->x.scale}, sy = {.kind = c->y.scale};
    double x0, x1, y0, y1;
    extent(c, &sx, &sy, &x0, &x1, &y0, &y1);
    pl_scale_fit(&sx, &c->x, x0, x1);
    pl_scale_fit(&sy, &c->y, y0, y1);
    sx.p0 = LEFT;
    sx.p1 = width - RIGHT;
    sy.p0 = height - BOTTOM;
    sy.p1 = top;

    pl_buf b = {0};
    pl_svg_begin(&b, width, height, standalone, c->title);
    pl_svg_heading(&b, c->title, c->subtitle);
    legend(&b, c, width, 1);
    pl_svg_axis_x(&b, &sx, &c->x, sy.p0, sy.p1);
    pl_svg_axis_y(&b, &sy, &c->y, sx.p0, sx.p1);
    label_rows rows = {.n = 0};
    label_boxes boxes = {.n = 0};
    for (size_t i = 0; i < c->n_series; i++)
        if (c->series[i].lines)
            draw_series(&b, &c->series[i], &sx, &sy, &rows, &boxes);
    for (size_t i = 0; i < c->n_arrows; i++)
        draw_arrow(&b, &c->arrows[i], &sx, &sy);
    for (size_t i = 0; i < c->n_series; i++)
        if (!c->series[i].lines)
            draw_series(&b, &c->series[i], &sx, &sy, &rows, &boxes);
    pl_svg_end(&b);
    return b.data;
}
