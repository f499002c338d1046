/* What the chart kinds (chart_xy.c, chart_bars.c, chart_heatmap.c) share: the SVG document, text, scales that map
 * data to pixels, ticks and their labels, axes, grids and legends (chart.c). Internal to the chart module. */
#ifndef PERFLAB_CORE_CHART_IMPL_H
#define PERFLAB_CORE_CHART_IMPL_H

#include "core/chart.h"

#define PL_CHART_FONT      "Helvetica, Arial, sans-serif"
#define PL_CHART_MAX_TICKS 24

/* A data interval [d0, d1] on an axis mapped to pixels [p0, p1] (p1 < p0 for a y axis: up is smaller). */
typedef struct pl_scale {
    pl_axis_scale kind;
    double d0, d1;
    double p0, p1;
} pl_scale;

/* The axis's range: what it states, else [lo, hi] of the data widened to nice ends (whole decades or powers of two
 * on log axes, multiples of the tick step on linear ones; from 0 when asked). Data with no finite value (or no
 * positive one on a log axis) gives [0, 1] or [1, 10]. */
void pl_scale_fit(pl_scale *s, const pl_axis *a, double lo, double hi);
double pl_scale_map(const pl_scale *s, double v);
/* Whether v can be drawn on this axis (finite; positive on a log axis). */
int pl_scale_ok(const pl_scale *s, double v);
/* The tick values inside the range, at most max. */
size_t pl_scale_ticks(const pl_scale *s, double *ticks, size_t max);

/* The document: standalone adds the XML declaration. A white background; `label` becomes the accessible name. */
void pl_svg_begin(pl_buf *b, int width, int height, int standalone, const char *label);
void pl_svg_end(pl_buf *b);
/* <text> at (x, y) with an anchor (start, middle, end) and extra attributes (may be ""), the text escaped. */
void pl_svg_text(pl_buf *b, double x, double y, const char *anchor, const char *attrs, const char *text);
/* The title (bold) and subtitle (grey) at the top left. */
void pl_svg_heading(pl_buf *b, const char *title, const char *subtitle);
/* A horizontal axis at pixel row y (ticks, labels and the axis label below), with grid lines up to grid_top
 * (grid_top >= y: none). */
void pl_svg_axis_x(pl_buf *b, const pl_scale *s, const pl_axis *a, double y, double grid_top);
/* A vertical axis at pixel column x, grid lines across to grid_right. */
void pl_svg_axis_y(pl_buf *b, const pl_scale *s, const pl_axis *a, double x, double grid_right);
/* A legend entry: a swatch (a line when `line`, dashed when `dashed`, else a box) and its text; returns the width
 * used, so that entries can follow each other on one row. */
double pl_svg_legend_entry(pl_buf *b, double x, double y, int colour, int line, int dashed, const char *text);
/* About how wide a text is drawn at the given font size (for layout: no font metrics here). */
double pl_text_width(const char *s, double font_size);

#endif
