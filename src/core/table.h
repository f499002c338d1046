/* A text table: columns sized to their contents, printed for a terminal or as Markdown. */
#ifndef PERFLAB_CORE_TABLE_H
#define PERFLAB_CORE_TABLE_H

#include <stdio.h>
#include "core/util.h"

typedef struct pl_table {
    size_t ncols, nrows, cap;
    char **headers;
    int *right;    /* right-align this column (numbers) */
    char ***cells; /* [row][col] */
} pl_table;

/* `spec` lists the columns: "name" left-aligned, ">name" right-aligned, e.g. {"target", ">median"}. */
pl_table *pl_table_new(size_t ncols, const char *const *spec);
/* A new empty row; returns its index. */
size_t pl_table_row(pl_table *t);
void pl_table_set(pl_table *t, size_t row, size_t col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void pl_table_print(const pl_table *t, FILE *out);
/* pl_table_print's text, appended to out. */
void pl_table_text(const pl_table *t, pl_buf *out);
void pl_table_markdown(const pl_table *t, pl_buf *out);
void pl_table_free(pl_table *t);

#endif
