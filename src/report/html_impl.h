/* What the sections of report.html share (html.c): escaped text, tables, definition lists, figures. Internal to
 * src/report. Everything written is well-formed XML (XHTML-compatible HTML5). */
#ifndef PERFLAB_REPORT_HTML_IMPL_H
#define PERFLAB_REPORT_HTML_IMPL_H

#include "core/util.h"
#include "core/chart.h"
#include "report/html.h"
#include "core/table.h"

/* <tag attrs>escaped text</tag> */
void pl_html_elem(pl_buf *b, const char *tag, const char *attrs, const char *text);
void pl_html_elemf(pl_buf *b, const char *tag, const char *attrs, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A table: right-aligned columns as the pl_table says. */
void pl_html_table(pl_buf *b, const pl_table *t);
/* <dt>key</dt><dd>value</dd> (value NULL or empty: left out). */
void pl_html_dl_item(pl_buf *b, const char *key, const char *value);
/* A chart (takes the SVG): <figure> with the SVG inline. */
void pl_html_figure(pl_buf *b, char *svg);
/* An id for an anchor from a label: letters, digits and '-' (malloc'd). */
char *pl_html_id(const char *prefix, const char *label);

/* A section's heading "<what> <label>" with its anchor (prefix + label), and the provenance list of a report.json
 * that stores it as a "provenance" object or at its top (html_fabric.c). */
void pl_html_heading(pl_buf *b, const char *prefix, const char *what, const pl_report_input *in);
void pl_html_provenance(pl_buf *b, json_t *doc);

/* The sections. */
void pl_html_run_section(pl_buf *b, const pl_report_input *in);
void pl_html_compare_section(pl_buf *b, const pl_report_input *a, const pl_report_input *bb);
void pl_html_gemm_section(pl_buf *b, const pl_report_input *in);
void pl_html_moe_section(pl_buf *b, const pl_report_input *in);
void pl_html_comm_section(pl_buf *b, const pl_report_input *in);
void pl_html_profile_section(pl_buf *b, const pl_report_input *in);
void pl_html_serve_section(pl_buf *b, const pl_report_input *in);
void pl_html_scenario_section(pl_buf *b, const pl_report_input *in);

#endif
