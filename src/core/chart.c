/* The chart module's common parts: escaping, colours, scales, ticks, axes, legends (chart_impl.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/chart_impl.h"

void pl_xml_escape_into(pl_buf *b, const char *s)
{
    pl_buf_append(b, "");
    for (; s && *s; s++) {
        switch (*s) {
        case '&': pl_buf_append(b, "&amp;"); break;
        case '<': pl_buf_append(b, "&lt;"); break;
        case '>': pl_buf_append(b, "&gt;"); break;
        case '"': pl_buf_append(b, "&quot;"); break;
        default:
            if ((unsigned char)*s < 0x80) {
                /* control characters are not allowed in XML 1.0 text */
                if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                    pl_buf_append(b, " ");
                else
                    pl_buf_appendn(b, s, 1);
                break;
            }
            /* neither bytes that are not UTF-8 (a folder's name) nor U+FFFE, U+FFFF are XML characters: each
             * becomes U+FFFD, the replacement character */
            const size_t n = pl_utf8_length(s);
            const int nonchar =
                n == 3 && (unsigned char)s[0] == 0xef && (unsigned char)s[1] == 0xbf && (unsigned char)s[2] >= 0xbe;
            if (n && !nonchar)
                pl_buf_appendn(b, s, n);
            else
                pl_buf_append(b, "\xef\xbf\xbd");
            s += (n ? n : 1) - 1;
        }
    }
}

/* Ten colours that stay apart for the common kinds of colour blindness (a Tableau-like set). */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

const char *pl_chart_colour(int i)
{
    return i < 0 ? "#999999" : palette[i % (int)(sizeof palette / sizeof palette[0])];
}

void pl_chart_viridis(double t, int rgb[3], int *dark)
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
    if (dark)
        *dark = t < 0.55;
}

/* ---- scales ---- */

static double fwd(pl_axis_scale k, double v)
{
    return k == PL_AXIS_LOG10 ? log10(v) : k == PL_AXIS_LOG2 ? log2(v) : v;
}

int pl_scale_ok(const pl_scale *s, double v)
{
    return isfinite(v) && (s->kind == PL_AXIS_LINEAR || v > 0);
}

static double nice_step(double range, int target)
{
    double rough = range / target;
    double mag = pow(10, floor(log10(rough)));
    double norm = rough / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* Every scale's domain is finite, and a log scale's positive, inside [PL_SCALE_TINY, PL_SCALE_HUGE]: extreme but
 * valid data (a denormal, 1e308) would otherwise give an infinite span and NaN coordinates. */
#define PL_SCALE_TINY 1e-300
#define PL_SCALE_HUGE 1e300

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static void bound_domain(pl_scale *s)
{
    if (s->kind == PL_AXIS_LINEAR) {
        s->d0 = isfinite(s->d0) ? clampd(s->d0, -PL_SCALE_HUGE, PL_SCALE_HUGE) : 0;
        s->d1 = isfinite(s->d1) ? clampd(s->d1, -PL_SCALE_HUGE, PL_SCALE_HUGE) : 1;
        if (!(s->d1 > s->d0))
            s->d1 = s->d0 + (s->d0 == 0 ? 1 : fabs(s->d0));
        return;
    }
    s->d0 = s->d0 > 0 ? clampd(s->d0, PL_SCALE_TINY, PL_SCALE_HUGE / 10) : PL_SCALE_TINY; /* 0: an underflow */
    s->d1 = s->d1 > 0 ? clampd(s->d1, PL_SCALE_TINY, PL_SCALE_HUGE) : s->d0 * 10;
    if (!(s->d1 > s->d0))
        s->d1 = s->d0 * 10;
}

static void scale_fit(pl_scale *s, const pl_axis *a, double lo, double hi);

void pl_scale_fit(pl_scale *s, const pl_axis *a, double lo, double hi)
{
    scale_fit(s, a, lo, hi);
    bound_domain(s);
}

static void scale_fit(pl_scale *s, const pl_axis *a, double lo, double hi)
{
    s->kind = a->scale;
    if ((a->min != 0 || a->max != 0) && isfinite(a->min) && isfinite(a->max)) {
        s->d0 = a->min;
        s->d1 = a->max;
        if (!(s->d1 > s->d0))
            s->d1 = s->d0 + (s->kind == PL_AXIS_LINEAR ? 1 : s->d0 * 10);
        return;
    }
    lo = isfinite(lo) ? clampd(lo, -PL_SCALE_HUGE, PL_SCALE_HUGE) : lo;
    hi = isfinite(hi) ? clampd(hi, -PL_SCALE_HUGE, PL_SCALE_HUGE) : hi;
    if (s->kind == PL_AXIS_LINEAR) {
        if (!isfinite(lo) || !isfinite(hi)) {
            lo = 0;
            hi = 1;
        }
        if (a->from_zero) {
            lo = fmin(lo, 0);
            hi = fmax(hi, 0);
        }
        if (hi <= lo)
            hi = lo + (lo == 0 ? 1 : fabs(lo));
        double step = nice_step(hi - lo, 5);
        s->d0 = floor(lo / step) * step;
        s->d1 = ceil(hi / step) * step;
        return;
    }
    if (!(lo > 0) || !isfinite(lo) || !isfinite(hi) || !(hi > 0)) {
        lo = 1;
        hi = 10;
    }
    lo = fmax(lo, PL_SCALE_TINY);
    const double base = s->kind == PL_AXIS_LOG10 ? 10 : 2;
    s->d0 = pow(base, floor(fwd(s->kind, lo) + 1e-9));
    s->d1 = pow(base, ceil(fwd(s->kind, hi) - 1e-9));
    if (s->d1 <= s->d0)
        s->d1 = s->d0 * base;
}

double pl_scale_map(const pl_scale *s, double v)
{
    double a = fwd(s->kind, s->d0), b = fwd(s->kind, s->d1), x = fwd(s->kind, v);
    const double p = s->p0 + (x - a) / (b - a) * (s->p1 - s->p0);
    /* far outside the plot (or no number: a log of 0) stays a finite coordinate an SVG reader accepts */
    const double reach = 100 * fabs(s->p1 - s->p0) + 1e4;
    return isnan(p) ? s->p0 : clampd(p, fmin(s->p0, s->p1) - reach, fmax(s->p0, s->p1) + reach);
}

size_t pl_scale_ticks(const pl_scale *s, double *ticks, size_t max)
{
    size_t n = 0;
    if (s->kind == PL_AXIS_LINEAR) {
        double step = nice_step(s->d1 - s->d0, 5);
        for (double v = ceil(s->d0 / step - 1e-9) * step; v <= s->d1 + step * 1e-9 && n < max; v += step)
            ticks[n++] = fabs(v) < step * 1e-9 ? 0 : v;
        return n;
    }
    const double base = s->kind == PL_AXIS_LOG10 ? 10 : 2;
    const int e0 = (int)lround(fwd(s->kind, s->d0)), e1 = (int)lround(fwd(s->kind, s->d1));
    const int span = e1 - e0;
    /* log10 over a narrow range: 2x and 5x too; log2 over a wide one: every 2nd, 4th ... power */
    const int every = s->kind == PL_AXIS_LOG2 ? (span > 40 ? 8 : span > 20 ? 4 : span > 10 ? 2 : 1) : 1;
    for (int e = e0; e <= e1 && n < max; e++) {
        if ((e - e0) % every == 0)
            ticks[n++] = pow(base, e);
        if (s->kind == PL_AXIS_LOG10 && span <= 2 && e < e1)
            for (int m = 2; m <= 5 && n < max; m += 3)
                ticks[n++] = m * pow(base, e);
    }
    return n;
}

void pl_tick_label(pl_tick_format f, double v, char *buf, size_t len)
{
    if (v == 0) {
        pl_snprintf(buf, len, "0");
        return;
    }
    if (f == PL_TICKS_BYTES) {
        static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        while (fabs(v) >= 1024 && u < 4) {
            v /= 1024;
            u++;
        }
        pl_snprintf(buf, len, "%g %s", v, units[u]);
        return;
    }
    static const struct {
        double at;
        const char *suffix;
    } si[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e4, "k"}};
    for (size_t i = 0; i < sizeof si / sizeof si[0]; i++)
        if (fabs(v) >= si[i].at) {
            pl_snprintf(buf, len, "%g%s", v / (si[i].at == 1e4 ? 1e3 : si[i].at), si[i].suffix);
            return;
        }
    pl_snprintf(buf, len, "%.4g", v);
}

/* ---- the document and its parts ---- */

void pl_svg_begin(pl_buf *b, int width, int height, int standalone, const char *label)
{
    if (standalone)
        pl_buf_append(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    pl_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"" PL_CHART_FONT "\" font-size=\"12\" role=\"img\" aria-label=\"",
                  width, height, width, height);
    pl_xml_escape_into(b, label ? label : "chart");
    pl_buf_append(b, "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
}

void pl_svg_end(pl_buf *b)
{
    pl_buf_append(b, "</svg>\n");
}

void pl_svg_text(pl_buf *b, double x, double y, const char *anchor, const char *attrs, const char *text)
{
    pl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor, attrs && *attrs ? " " : "",
                  attrs ? attrs : "");
    pl_xml_escape_into(b, text);
    pl_buf_append(b, "</text>\n");
}

void pl_svg_heading(pl_buf *b, const char *title, const char *subtitle)
{
    if (title)
        pl_svg_text(b, 12, 22, "start", "font-size=\"15\" font-weight=\"bold\"", title);
    if (subtitle)
        pl_svg_text(b, 12, 40, "start", "fill=\"#555\"", subtitle);
}

void pl_svg_axis_x(pl_buf *b, const pl_scale *s, const pl_axis *a, double y, double grid_top)
{
    double t[PL_CHART_MAX_TICKS];
    size_t n = pl_scale_ticks(s, t, PL_CHART_MAX_TICKS);
    char lab[48];
    for (size_t i = 0; i < n; i++) {
        double x = pl_scale_map(s, t[i]);
        if (grid_top < y)
            pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x,
                          grid_top, x, y);
        pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", x, y, x, y + 5);
        pl_tick_label(a->format, t[i], lab, sizeof lab);
        pl_svg_text(b, x, y + 18, "middle", "fill=\"#333\"", lab);
    }
    pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", s->p0, y, s->p1, y);
    if (a->label)
        pl_svg_text(b, (s->p0 + s->p1) / 2, y + 36, "middle", "fill=\"#333\"", a->label);
}

void pl_svg_axis_y(pl_buf *b, const pl_scale *s, const pl_axis *a, double x, double grid_right)
{
    double t[PL_CHART_MAX_TICKS];
    size_t n = pl_scale_ticks(s, t, PL_CHART_MAX_TICKS);
    char lab[48];
    for (size_t i = 0; i < n; i++) {
        double y = pl_scale_map(s, t[i]);
        if (grid_right > x)
            pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n", x, y,
                          grid_right, y);
        pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", x - 5, y, x, y);
        pl_tick_label(a->format, t[i], lab, sizeof lab);
        pl_svg_text(b, x - 8, y + 4, "end", "fill=\"#333\"", lab);
    }
    pl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", x, s->p0, x, s->p1);
    if (a->label) {
        double cy = (s->p0 + s->p1) / 2;
        char attrs[96];
        pl_snprintf(attrs, sizeof attrs, "fill=\"#333\" transform=\"rotate(-90 16 %.1f)\"", cy);
        pl_svg_text(b, 16, cy, "middle", attrs, a->label);
    }
}

double pl_text_width(const char *s, double font_size)
{
    size_t chars = 0;
    for (; s && *s; s++)
        chars += ((unsigned char)*s & 0xc0) != 0x80; /* UTF-8: count characters, not bytes */
    return chars * font_size * 0.56;
}

double pl_svg_legend_entry(pl_buf *b, double x, double y, int colour, int line, int dashed, const char *text)
{
    if (line)
        pl_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"%s/>\n",
                      x, y - 4, x + 18, y - 4, pl_chart_colour(colour), dashed ? " stroke-dasharray=\"5 3\"" : "");
    else
        pl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", x + 3, y - 10,
                      pl_chart_colour(colour));
    pl_svg_text(b, x + 24, y, "start", "fill=\"#333\"", text);
    return 24 + pl_text_width(text, 12) + 16;
}
