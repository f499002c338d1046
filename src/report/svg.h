/* A heatmap as a self-contained SVG: one cell per (x, y) with its value written in it, coloured on a viridis-like
 * scale from the worst value (dark) to the best (bright), missed cells outlined in red, and a legend. */
#ifndef PERFLAB_COMM_SVG_H
#define PERFLAB_COMM_SVG_H

#include <stddef.h>

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

/* The SVG document (malloc'd). */
char *pl_svg_heatmap(const pl_heatmap *h);

/* Text with &, <, >, " escaped for XML (malloc'd). */
char *pl_xml_escape(const char *s);

#endif
