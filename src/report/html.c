/* report.html: the document, its style, the table of contents, and the pieces every section uses (html.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_impl.h"

/* No '<' or '&' in here: the style sheet sits in the document as XML text. */
static const char *const style =
    "body{font-family:Helvetica,Arial,sans-serif;color:#222;margin:24px auto;max-width:1180px;padding:0 16px;"
    "line-height:1.4}"
    "h1{font-size:26px;margin:0 0 4px}h2{font-size:21px;margin:36px 0 8px;padding-top:12px;"
    "border-top:2px solid #4e79a7}h3{font-size:16px;margin:22px 0 6px}"
    ".meta{color:#666;font-size:13px}"
    "nav ul{columns:2;font-size:14px}"
    "dl.prov{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:13px;margin:8px 0}"
    "dl.prov dt{color:#666}dl.prov dd{margin:0;font-family:Menlo,Consolas,monospace;word-break:break-all}"
    "table{border-collapse:collapse;font-size:12.5px;margin:8px 0 12px}"
    "th,td{border:1px solid #d8d8d8;padding:3px 7px;text-align:left;white-space:nowrap}"
    "th{background:#f3f5f8}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr:nth-child(even) td{background:#fafafa}"
    ".warn{background:#fff4e5;border-left:4px solid #f28e2b;padding:8px 12px;margin:10px 0}"
    ".bad{background:#fdecea;border-left:4px solid #e15759;padding:8px 12px;margin:10px 0}"
    ".good{background:#edf7ed;border-left:4px solid #59a14f;padding:8px 12px;margin:10px 0}"
    "figure{margin:10px 0 18px}figure svg{max-width:100%;height:auto;border:1px solid #eee}"
    "ul.findings li{margin:2px 0}"
    ".scroll{overflow-x:auto}"
    "footer{margin-top:40px;color:#888;font-size:12px}";

void pl_html_elem(pl_buf *b, const char *tag, const char *attrs, const char *text)
{
    pl_buf_printf(b, "<%s%s%s>", tag, attrs && *attrs ? " " : "", attrs ? attrs : "");
    pl_xml_escape_into(b, text);
    pl_buf_printf(b, "</%s>\n", tag);
}

void pl_html_elemf(pl_buf *b, const char *tag, const char *attrs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = pl_vstrfmt(fmt, ap);
    va_end(ap);
    pl_html_elem(b, tag, attrs, text);
    free(text);
}

void pl_html_table(pl_buf *b, const pl_table *t)
{
    pl_buf_append(b, "<div class=\"scroll\"><table>\n<tr>");
    for (size_t c = 0; c < t->ncols; c++) {
        pl_buf_append(b, t->right[c] ? "<th class=\"n\">" : "<th>");
        pl_xml_escape_into(b, t->headers[c]);
        pl_buf_append(b, "</th>");
    }
    pl_buf_append(b, "</tr>\n");
    for (size_t r = 0; r < t->nrows; r++) {
        pl_buf_append(b, "<tr>");
        for (size_t c = 0; c < t->ncols; c++) {
            pl_buf_append(b, t->right[c] ? "<td class=\"n\">" : "<td>");
            pl_xml_escape_into(b, t->cells[r][c] ? t->cells[r][c] : "");
            pl_buf_append(b, "</td>");
        }
        pl_buf_append(b, "</tr>\n");
    }
    pl_buf_append(b, "</table></div>\n");
}

void pl_html_dl_item(pl_buf *b, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    pl_html_elem(b, "dt", NULL, key);
    pl_html_elem(b, "dd", NULL, value);
}

void pl_html_figure(pl_buf *b, char *svg)
{
    pl_buf_append(b, "<figure>\n");
    pl_buf_append(b, svg);
    pl_buf_append(b, "</figure>\n");
    free(svg);
}

char *pl_html_id(const char *prefix, const char *label)
{
    pl_buf b = {0};
    pl_buf_append(&b, prefix);
    for (const unsigned char *s = (const unsigned char *)(label ? label : ""); *s; s++)
        pl_buf_appendn(&b, isalnum(*s) ? (const char *)s : "-", 1);
    return b.data;
}

static const char *kind_name(pl_report_kind k)
{
    switch (k) {
    case PL_INPUT_RUN: return "run";
    case PL_INPUT_GEMM: return "gemm";
    case PL_INPUT_MOE: return "moe-readiness";
    case PL_INPUT_COMM: return "comm";
    case PL_INPUT_SERVE: return "serve";
    case PL_INPUT_SCENARIO: return "scenario";
    default: return "profile";
    }
}

static const char *id_prefix(pl_report_kind k)
{
    switch (k) {
    case PL_INPUT_RUN: return "run-";
    case PL_INPUT_GEMM: return "gemm-";
    case PL_INPUT_MOE: return "moe-";
    case PL_INPUT_COMM: return "comm-";
    case PL_INPUT_SERVE: return "serve-";
    case PL_INPUT_SCENARIO: return "scenario-";
    default: return "profile-";
    }
}

char *pl_html_report(const pl_report_input *in, size_t n, const char *generated_at)
{
    pl_buf b = {0};
    pl_buf_append(&b, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
                      "<meta charset=\"utf-8\"/>\n<title>perflab report</title>\n<style>");
    pl_buf_append(&b, style);
    pl_buf_append(&b, "</style>\n</head>\n<body>\n<h1>perflab report</h1>\n");
    pl_html_elemf(&b, "p", "class=\"meta\"",
                  "generated %s from %zu input%s; every figure below was measured (the "
                  "report computes nothing but ratios and intervals already stored)",
                  generated_at ? generated_at : "", n, n == 1 ? "" : "s");
    pl_buf_append(&b, "<nav><ul>\n");
    size_t runs = 0;
    for (size_t i = 0; i < n; i++) {
        char *id = pl_html_id(id_prefix(in[i].kind), in[i].label);
        pl_buf_printf(&b, "<li><a href=\"#%s\">", id);
        pl_xml_escape_into(&b, kind_name(in[i].kind));
        pl_buf_append(&b, " ");
        pl_xml_escape_into(&b, in[i].label);
        pl_buf_append(&b, "</a></li>\n");
        free(id);
        runs += in[i].kind == PL_INPUT_RUN;
    }
    if (runs >= 2)
        pl_buf_append(&b, "<li><a href=\"#before-after\">before / after</a></li>\n");
    pl_buf_append(&b, "</ul></nav>\n");
    for (size_t i = 0; i < n; i++) {
        switch (in[i].kind) {
        case PL_INPUT_RUN: pl_html_run_section(&b, &in[i]); break;
        case PL_INPUT_GEMM: pl_html_gemm_section(&b, &in[i]); break;
        case PL_INPUT_MOE: pl_html_moe_section(&b, &in[i]); break;
        case PL_INPUT_COMM: pl_html_comm_section(&b, &in[i]); break;
        case PL_INPUT_PROFILE: pl_html_profile_section(&b, &in[i]); break;
        case PL_INPUT_SERVE: pl_html_serve_section(&b, &in[i]); break;
        case PL_INPUT_SCENARIO: pl_html_scenario_section(&b, &in[i]); break;
        }
    }
    if (runs >= 2) {
        /* every later run against the first one given */
        const pl_report_input *first = NULL;
        pl_buf_append(&b, "<h2 id=\"before-after\">Before / after</h2>\n");
        for (size_t i = 0; i < n; i++) {
            if (in[i].kind != PL_INPUT_RUN)
                continue;
            if (!first)
                first = &in[i];
            else
                pl_html_compare_section(&b, first, &in[i]);
        }
    }
    pl_buf_append(&b, "<footer>perflab report: inline SVG and CSS, no script and no network; the raw samples are in "
                      "each run.json</footer>\n</body>\n</html>\n");
    return b.data;
}
