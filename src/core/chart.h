/* One SVG module for every chart perflab draws: axes (linear, log10, log2) with nice ticks and units, legends,
 * a categorical palette and a viridis colour scale; on top of them x-y charts (lines, labelled points, arrows:
 * the roofline, fabric curves), bar charts (grouped, with interval whiskers and a reference line: speedups,
 * TFLOP/s per provider, before/after ratios) and heatmaps (MoE readiness). Each returns an <svg> element
 * (malloc'd), standalone (an XML document of its own, for a file) or inline (for the HTML report). Only finite
 * numbers reach the SVG: a NaN value is drawn as "n/a" or left out, never written. */
#ifndef PERFLAB_CORE_CHART_H
#define PERFLAB_CORE_CHART_H

#include <stddef.h>

#include "core/util.h"

/* Text with &, <, >, " escaped for XML, appended to b. */
void pl_xml_escape_into(pl_buf *b, const char *s);

/* The categorical palette (10 colours, cycling), as "#rrggbb"; i < 0 is grey. */
const char *pl_chart_colour(int i);
/* Viridis from t = 0 (dark purple) to 1 (yellow), interpolated; *dark: text on it should be white. */
void pl_chart_viridis(double t, int rgb[3], int *dark);

typedef enum pl_axis_scale { PL_AXIS_LINEAR, PL_AXIS_LOG10, PL_AXIS_LOG2 } pl_axis_scale;
typedef enum pl_tick_format {
    PL_TICKS_NUMBER, /* 0.001 ... 1, 10, 100, 1k, 10k, 1M */
    PL_TICKS_BYTES,  /* 1 B, 4 KiB, 1 MiB, 1 GiB (binary units: log2 axes of sizes) */
} pl_tick_format;

/* A tick's label: "2.5k", "0.001", "4 KiB". */
void pl_tick_label(pl_tick_format f, double v, char *buf, size_t len);

typedef struct pl_axis {
    const char *label;
    pl_axis_scale scale;
    pl_tick_format format;
    double min, max; /* 0 and 0: from the data (log axes widen to whole decades or powers of two) */
    int from_zero;   /* linear: the range includes 0 */
} pl_axis;

/* ---- x-y charts ---- */

typedef struct pl_series {
    const char *name; /* in the legend; NULL: not in it */
    size_t n;
    const double *x, *y;        /* points with a non-finite or (log axis) non-positive coordinate are left out */
    const char *const *labels;  /* a label beside each point, or NULL */
    int lines, markers, dashed; /* how it is drawn */
    int colour;                 /* palette index; -1 grey */
    const char *end_label;      /* written beside its last point (a roof's name), or NULL */
} pl_series;

typedef struct pl_arrow {
    double x0, y0, x1, y1; /* from -> to, data coordinates */
    int colour;
} pl_arrow;

typedef struct pl_xy_chart {
    const char *title, *subtitle;
    int width, height; /* 0: 760 x 460 */
    pl_axis x, y;
    const pl_series *series;
    size_t n_series;
    const pl_arrow *arrows;
    size_t n_arrows;
} pl_xy_chart;

char *pl_chart_xy(const pl_xy_chart *c, int standalone);

/* ---- bar charts ---- */

typedef struct pl_bar_chart {
    const char *title, *subtitle;
    int width;     /* 0: 760; the height follows the number of bars */
    pl_axis value; /* the value axis, horizontal: linear (from 0 unless set) or log */
    size_t n_categories, n_series;
    const char *const *categories;   /* one row of bars each, labelled on the left */
    const char *const *series_names; /* the legend (NULL when there is one series) */
    const double *values;            /* [category * n_series + series]; NaN: no bar, "n/a" */
    const double *lo, *hi;           /* interval whiskers [same index], or NULL */
    const int *colours;              /* palette index per bar [same index], or NULL: by series */
    const char *value_fmt;           /* printf format of the label after each bar ("%.2fx"); NULL: none */
    double reference;                /* a vertical line at this value (NaN: none), e.g. 1.0 for a speedup */
    const char *reference_label;
} pl_bar_chart;

char *pl_chart_bars(const pl_bar_chart *c, int standalone);

/* ---- heatmaps ---- */

typedef struct pl_heatmap {
    const char *title;
    const char *subtitle; /* may be NULL */
    const char *x_label, *y_label;
    const char *unit;      /* shown after each value and on the legend */
    const char *value_fmt; /* printf format of a value, e.g. "%.3f" */
    size_t nx, ny;
    const char *const *x_labels; /* [nx] */
    const char *const *y_labels; /* [ny] */
    const double *values;        /* [y * nx + x]; NaN: no value ("n/a", grey) */
    const int *flagged;          /* [y * nx + x] or NULL: outlined (e.g. an SLO missed) */
    const char *flag_label;      /* legend text for the outline, e.g. "SLO missed" */
    int higher_is_better;
} pl_heatmap;

/* Cells coloured on the viridis scale from the worst value (dark) to the best (bright), each value written in its
 * cell, flagged cells outlined in red, and the scale as a legend. */
char *pl_chart_heatmap(const pl_heatmap *h, int standalone);

#endif
