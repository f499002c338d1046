#include "core/table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

pl_table *pl_table_new(size_t ncols, const char *const *spec)
{
    pl_table *t = pl_xcalloc(1, sizeof *t);
    t->ncols = ncols;
    t->headers = pl_xcalloc(ncols, sizeof *t->headers);
    t->right = pl_xcalloc(ncols, sizeof *t->right);
    for (size_t c = 0; c < ncols; c++) {
        t->right[c] = spec[c][0] == '>';
        t->headers[c] = pl_escape_dup(spec[c] + t->right[c]);
    }
    return t;
}

size_t pl_table_row(pl_table *t)
{
    pl_reserve(&t->cells, &t->cap, t->nrows + 1, sizeof *t->cells);
    t->cells[t->nrows] = pl_xcalloc(t->ncols, sizeof **t->cells);
    return t->nrows++;
}

void pl_table_set(pl_table *t, size_t row, size_t col, const char *fmt, ...)
{
    if (row >= t->nrows || col >= t->ncols)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = pl_vstrfmt(fmt, ap);
    va_end(ap);
    /* names from run.json, expectations and CSV files reach the terminal here: escaped, one line a row */
    free(t->cells[row][col]);
    t->cells[row][col] = pl_escape_dup(text);
    free(text);
}

static const char *cell(const pl_table *t, size_t r, size_t c)
{
    return t->cells[r][c] ? t->cells[r][c] : "";
}

/* Display width: count UTF-8 code points, not bytes. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void pad(FILE *out, size_t n)
{
    while (n--)
        fputc(' ', out);
}

void pl_table_print(const pl_table *t, FILE *out)
{
    size_t *w = pl_xcalloc(t->ncols, sizeof *w);
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = width(t->headers[c]);
        for (size_t r = 0; r < t->nrows; r++)
            if (width(cell(t, r, c)) > w[c])
                w[c] = width(cell(t, r, c));
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->headers[c] : cell(t, r - 1, c);
            size_t gap = w[c] - width(s);
            if (t->right[c])
                pad(out, gap);
            fputs(s, out);
            if (c + 1 < t->ncols) {
                if (!t->right[c])
                    pad(out, gap);
                fputs("  ", out);
            }
        }
        fputc('\n', out);
    }
    free(w);
}

void pl_table_markdown(const pl_table *t, pl_buf *out)
{
    for (size_t c = 0; c < t->ncols; c++)
        pl_buf_printf(out, "| %s ", t->headers[c]);
    pl_buf_append(out, "|\n");
    for (size_t c = 0; c < t->ncols; c++)
        pl_buf_append(out, t->right[c] ? "| ---: " : "| --- ");
    pl_buf_append(out, "|\n");
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            pl_buf_append(out, "| ");
            for (const char *s = cell(t, r, c); *s; s++) /* a '|' would split the cell */
                pl_buf_append(out, *s == '|' ? "\\|" : (char[]){*s, 0});
            pl_buf_append(out, " ");
        }
        pl_buf_append(out, "|\n");
    }
}

void pl_table_free(pl_table *t)
{
    if (!t)
        return;
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++)
            free(t->cells[r][c]);
        free(t->cells[r]);
    }
    for (size_t c = 0; c < t->ncols; c++)
        free(t->headers[c]);
    free(t->headers);
    free(t->right);
    free(t->cells);
    free(t);
}

void pl_table_text(const pl_table *t, pl_buf *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    pl_table_print(t, f);
    fclose(f);
    pl_buf_append(out, buf);
    free(buf);
}
