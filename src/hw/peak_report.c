#include "hw/peak_report.h"

#include "core/files.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "hw/topology.h"
#include "core/table.h"

json_t *pl_peak_doc_new(const char *run_id, const pl_provenance *prov, const pl_peak_options *o,
                        const pl_device_info *dev)
{
    json_t *groups = json_array();
    static const char *const names[] = {"memory", "cache", "compute", "tensor", "host", "launch", "p2p"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (o->groups & (1u << i))
            json_array_append_new(groups, json_string(names[i]));
    const char *name = dev->name;
    char *key = pl_hardware_key_from_names(&name, 1);
    json_t *doc = json_pack("{s:i, s:s, s:s, s:o, s:{s:i, s:s, s:s, s:s}, s:{s:b, s:o, s:i, s:I, s:I, s:I}}",
                            "schema_version", PL_PEAK_SCHEMA_VERSION, "kind", "perflab.peak", "run_id", run_id,
                            "provenance", pl_provenance_to_json(prov), "gpu", "ordinal", dev->ordinal, "name",
                            dev->name, "pci_bus_id", dev->pci_bus_id, "hardware_key", key, "options", "quick", o->quick,
                            "groups", groups, "gemm_n", o->gemm_n, "hbm_bytes", (json_int_t)o->hbm_bytes, "host_bytes",
                            (json_int_t)o->host_bytes, "p2p_bytes", (json_int_t)o->p2p_bytes);
    free(key);
    json_object_set_new(doc, "figures", json_array());
    json_object_set_new(doc, "lost", json_array());
    return doc;
}

void pl_peak_doc_add(json_t *doc, json_t *msg)
{
    if (json_object_get(msg, "lost"))
        json_array_append_new(json_object_get(doc, "lost"), msg);
    else
        json_array_append_new(json_object_get(doc, "figures"), msg);
}

double pl_peak_datasheet_value(const pl_datasheet *s, const char *key)
{
    if (!s || !key)
        return NAN;
    static const struct {
        const char *key;
        size_t offset;
        double scale;
    } map[] = {
        {"memory", offsetof(pl_datasheet, memory_gbps), 1},
        {"fp32", offsetof(pl_datasheet, fp32_tflops), 1},
        {"fp64", offsetof(pl_datasheet, fp64_tflops), 1},
        {"bf16", offsetof(pl_datasheet, bf16_tflops), 1},
        {"fp16", offsetof(pl_datasheet, fp16_tflops), 1},
        {"tf32", offsetof(pl_datasheet, tf32_tflops), 1},
        {"fp8", offsetof(pl_datasheet, fp8_tflops), 1},
        {"host", offsetof(pl_datasheet, host_link_gbps), 1},
        {"host_both", offsetof(pl_datasheet, host_link_gbps), 2},
        /* NVLink is published for both directions together */
        {"nvlink", offsetof(pl_datasheet, nvlink_gbps), 0.5},
        {"nvlink_both", offsetof(pl_datasheet, nvlink_gbps), 1},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].key, key) == 0)
            return *(const double *)((const char *)s + map[i].offset) * map[i].scale;
    return NAN;
}

static json_t *figure(json_t *doc, const char *id)
{
    json_t *figs = json_object_get(doc, "figures");
    for (size_t i = 0; i < json_array_size(figs); i++) {
        json_t *f = json_array_get(figs, i);
        const char *fid = json_string_value(json_object_get(f, "id"));
        if (fid && strcmp(fid, id) == 0)
            return f;
    }
    return NULL;
}

/* The value of an ok figure, NAN otherwise. */
static double ok_value(json_t *doc, const char *id)
{
    json_t *f = figure(doc, id);
    const char *st = json_string_value(json_object_get(f, "status"));
    return f && st && strcmp(st, "ok") == 0 ? pl_json_get_real(f, "value") : NAN;
}

/* passed < 0: a ratio shown for information, with no rule to pass */
static void add_check(json_t *checks, const char *name, double ratio, const char *rule, int passed)
{
    if (isnan(ratio))
        return;
    json_t *c = json_pack("{s:s, s:f, s:s}", "name", name, "ratio", ratio, "rule", rule);
    json_object_set_new(c, "passed", passed < 0 ? json_null() : json_boolean(passed));
    json_array_append_new(checks, c);
}

void pl_peak_doc_judge(json_t *doc, const pl_datasheet *sheet)
{
    if (sheet)
        json_object_set_new(doc, "datasheet",
                            json_pack("{s:s, s:s, s:s, s:s}", "key", sheet->key, "name", sheet->name, "source",
                                      sheet->source, "note", sheet->note));
    else
        json_object_set_new(doc, "datasheet", json_null());
    json_t *figs = json_object_get(doc, "figures");
    for (size_t i = 0; i < json_array_size(figs); i++) {
        json_t *f = json_array_get(figs, i);
        double value = pl_json_get_real(f, "value");
        double ref = pl_peak_datasheet_value(sheet, json_string_value(json_object_get(f, "datasheet_key")));
        if (!isnan(ref)) {
            json_object_set_new(f, "datasheet_value", json_real(ref));
            json_object_set_new(f, "datasheet_source", json_string(sheet->source));
        } else {
            ref = pl_json_get_real(f, "reference_value");
        }
        if (!isnan(ref) && !isnan(value) && ref > 0)
            json_object_set_new(f, "pct_of_datasheet", json_real(100.0 * value / ref));
    }
    /* what makes the ceilings trustworthy: each against the library a user would pick, in the same run */
    json_t *checks = json_array();
    double copy = ok_value(doc, "hbm_copy") / ok_value(doc, "hbm_memcpy");
    add_check(checks, "copy kernel vs cudaMemcpy D2D", copy, ">= 0.90", copy >= 0.90);
    /* the heuristic's choice is what both libraries run untuned: the same GEMM must run at the same rate */
    double lt = ok_value(doc, "lt_bf16_heuristic") / ok_value(doc, "cublas_bf16");
    add_check(checks, "cuBLASLt BF16 (heuristic's choice) vs plain cuBLAS BF16", lt, "within 5%",
              fabs(lt - 1.0) <= 0.05);
    double tuned = ok_value(doc, "lt_bf16") / ok_value(doc, "cublas_bf16");
    add_check(checks, "cuBLASLt BF16 (best algorithm) vs plain cuBLAS BF16", tuned, "what trying algorithms gains", -1);
    double pinned = ok_value(doc, "h2d_pinned") / ok_value(doc, "h2d_pageable");
    add_check(checks, "pinned vs pageable H2D", pinned, ">= 1.5", pinned >= 1.5);
    json_object_set_new(doc, "checks", checks);
}

int pl_peak_doc_failed(json_t *doc)
{
    if (json_array_size(json_object_get(doc, "lost")) > 0)
        return 1;
    json_t *figs = json_object_get(doc, "figures");
    for (size_t i = 0; i < json_array_size(figs); i++) {
        const char *st = json_string_value(json_object_get(json_array_get(figs, i), "status"));
        if (!st || strcmp(st, "failed") == 0)
            return 1;
    }
    return 0;
}

void pl_peak_fill_ceilings(json_t *doc, pl_ceilings *c)
{
    static const struct {
        pl_ceiling_id id;
        const char *figures[2]; /* the better of the two */
    } from[] = {
        {PL_CEIL_HBM_GBPS, {"hbm_copy", "hbm_memcpy"}},
        {PL_CEIL_L2_GBPS, {"l2_read", NULL}},
        {PL_CEIL_SMEM_GBPS, {"smem_read", NULL}},
        {PL_CEIL_FP32_TFLOPS, {"fp32_fma", NULL}},
        {PL_CEIL_FP64_TFLOPS, {"fp64_fma", NULL}},
        {PL_CEIL_BF16_TFLOPS, {"lt_bf16", "cublas_bf16"}},
        /* (lt_bf16 is the best cuBLASLt algorithm; the heuristic's choice cannot beat it) */
        {PL_CEIL_FP16_TFLOPS, {"lt_fp16", NULL}},
        {PL_CEIL_TF32_TFLOPS, {"lt_tf32", NULL}},
        {PL_CEIL_FP8_TFLOPS, {"lt_fp8", NULL}},
        {PL_CEIL_H2D_GBPS, {"h2d_pinned", NULL}},
        {PL_CEIL_D2H_GBPS, {"d2h_pinned", NULL}},
    };
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        double best = NAN;
        const char *best_id = NULL;
        for (int k = 0; k < 2 && from[i].figures[k]; k++) {
            double v = ok_value(doc, from[i].figures[k]);
            if (!isnan(v) && (isnan(best) || v > best)) {
                best = v;
                best_id = from[i].figures[k];
            }
        }
        if (isnan(best))
            continue;
        c->value[from[i].id] = best;
        free(c->source[from[i].id]);
        c->source[from[i].id] = pl_strfmt("%s (run %s)", best_id, json_string_value(json_object_get(doc, "run_id")));
    }
}

/* ---- the table ---- */

static const char *fmt_value(double v, char *buf, size_t len)
{
    if (isnan(v))
        pl_snprintf(buf, len, "-");
    else
        pl_snprintf(buf, len, "%.*f", v >= 100 ? 0 : v >= 10 ? 1 : 2, v);
    return buf;
}

static int is_p2p_matrix(json_t *f)
{
    return json_object_get(f, "src") != NULL;
}

static void print_figures(json_t *doc, FILE *out)
{
    static const char *const spec[] = {"group",      "figure",      ">value", "unit",     "bytes counted",
                                       ">datasheet", ">% of sheet", ">noise", "how / why"};
    pl_table *t = pl_table_new(9, spec);
    json_t *figs = json_object_get(doc, "figures");
    const char *last_group = "";
    char b[64];
    for (size_t i = 0; i < json_array_size(figs); i++) {
        json_t *f = json_array_get(figs, i);
        if (is_p2p_matrix(f))
            continue;
        const char *group = json_string_value(json_object_get(f, "group"));
        const char *status = json_string_value(json_object_get(f, "status"));
        size_t r = pl_table_row(t);
        if (group && strcmp(group, last_group) != 0) {
            pl_table_set(t, r, 0, "%s", group);
            last_group = group;
        }
        pl_table_set(t, r, 1, "%s", json_string_value(json_object_get(f, "label")));
        pl_table_set(t, r, 3, "%s", json_string_value(json_object_get(f, "unit")));
        const char *counted = json_string_value(json_object_get(f, "counted"));
        pl_table_set(t, r, 4, "%s", counted ? counted : "");
        if (!status || strcmp(status, "ok") != 0) {
            pl_table_set(t, r, 2, "%s", status ? status : "?");
            pl_table_set(t, r, 8, "%s", json_string_value(json_object_get(f, "reason")));
            continue;
        }
        pl_table_set(t, r, 2, "%s", fmt_value(pl_json_get_real(f, "value"), b, sizeof b));
        double sheet = pl_json_get_real(f, "datasheet_value");
        if (isnan(sheet))
            sheet = pl_json_get_real(f, "reference_value");
        pl_table_set(t, r, 5, "%s%s", fmt_value(sheet, b, sizeof b),
                     json_object_get(f, "reference_value") ? " (derived)" : "");
        double pct = pl_json_get_real(f, "pct_of_datasheet");
        pl_table_set(t, r, 6, "%s", isnan(pct) ? "-" : (pl_snprintf(b, sizeof b, "%.1f%%", pct), b));
        double noise = pl_json_get_real(f, "noise");
        pl_table_set(t, r, 7, "%s", isnan(noise) ? "-" : (pl_snprintf(b, sizeof b, "%.1f%%", 100 * noise), b));
        const char *config = json_string_value(json_object_get(f, "config"));
        const char *check = json_string_value(json_object_get(f, "check"));
        pl_table_set(t, r, 8, "%s%s%s", config ? config : "", config && check ? "; " : "", check ? check : "");
    }
    pl_table_print(t, out);
    pl_table_free(t);
}

/* How each figure was measured, one line each (the P2P matrices' methods are said once per mode). */
static void print_methods(json_t *doc, FILE *out)
{
    json_t *figs = json_object_get(doc, "figures");
    int width = 0;
    for (size_t i = 0; i < json_array_size(figs); i++) {
        int len = (int)strlen(json_string_value(json_object_get(json_array_get(figs, i), "label")));
        width = len > width ? len : width;
    }
    fprintf(out, "\nhow each was measured:\n");
    for (size_t i = 0; i < json_array_size(figs); i++) {
        json_t *f = json_array_get(figs, i);
        const char *method = json_string_value(json_object_get(f, "method"));
        if (!is_p2p_matrix(f) && method && *method)
            fprintf(out, "  %-*s  %s\n", width, json_string_value(json_object_get(f, "label")), method);
    }
}

/* One matrix per mode: rows are the source GPU, columns the destination. */
static void print_p2p(json_t *doc, FILE *out)
{
    static const struct {
        const char *mode, *title;
    } modes[] = {
        {"ce", "copy engine, one way (GB/s)"},
        {"sm", "SM stores, one way (GB/s)"},
        {"ce_bidir", "copy engine, both ways (GB/s, sum)"},
        {"sm_bidir", "SM stores, both ways (GB/s, sum)"},
        {"latency", "load latency (ns)"},
    };
    json_t *figs = json_object_get(doc, "figures");
    int n = 0;
    for (size_t i = 0; i < json_array_size(figs); i++) {
        json_t *f = json_array_get(figs, i);
        if (is_p2p_matrix(f)) {
            int hi = (int)json_integer_value(json_object_get(f, "dst")) + 1;
            int lo = (int)json_integer_value(json_object_get(f, "src")) + 1;
            n = hi > n ? hi : n;
            n = lo > n ? lo : n;
        }
    }
    for (size_t m = 0; n > 1 && m < sizeof modes / sizeof modes[0]; m++) {
        pl_table *t = pl_gpu_matrix_table((size_t)n, "src \\ dst", 1, NULL);
        double pct_lo = NAN, pct_hi = NAN;
        const char *sheet_what = "", *method = NULL;
        for (size_t i = 0; i < json_array_size(figs); i++) {
            json_t *f = json_array_get(figs, i);
            const char *mode = json_string_value(json_object_get(f, "mode"));
            if (!is_p2p_matrix(f) || !mode || strcmp(mode, modes[m].mode) != 0)
                continue;
            size_t src = (size_t)json_integer_value(json_object_get(f, "src"));
            size_t dst = (size_t)json_integer_value(json_object_get(f, "dst"));
            const char *st = json_string_value(json_object_get(f, "status"));
            if (!method)
                method = json_string_value(json_object_get(f, "method"));
            double pct = pl_json_get_real(f, "pct_of_datasheet");
            if (!isnan(pct)) {
                pct_lo = isnan(pct_lo) || pct < pct_lo ? pct : pct_lo;
                pct_hi = isnan(pct_hi) || pct > pct_hi ? pct : pct_hi;
                const char *key = json_string_value(json_object_get(f, "datasheet_key"));
                sheet_what = key && strncmp(key, "nvlink", 6) == 0 ? "NVLink, per GPU" : "host link";
            }
            char b[64];
            const char *cell =
                st && strcmp(st, "ok") == 0 ? fmt_value(pl_json_get_real(f, "value"), b, sizeof b) : (st ? st : "?");
            pl_table_set(t, src, dst + 1, "%s", cell);
            if (strstr(modes[m].mode, "bidir"))
                pl_table_set(t, dst, src + 1, "%s", cell);
        }
        fprintf(out, "\nGPU <-> GPU, %s:\n", modes[m].title);
        pl_table_print(t, out);
        if (!isnan(pct_lo))
            fprintf(out, "  %.0f%% to %.0f%% of the datasheet (%s)\n", pct_lo, pct_hi, sheet_what);
        if (method)
            fprintf(out, "  how: %s\n", method);
        pl_table_free(t);
    }
}

void pl_peak_print(json_t *doc, FILE *out)
{
    json_t *sheet = json_object_get(doc, "datasheet");
    fprintf(out, "perflab peak %s · GPU %lld %s · datasheet: %s\n", json_string_value(json_object_get(doc, "run_id")),
            json_integer_value(json_object_get(json_object_get(doc, "gpu"), "ordinal")),
            json_string_value(json_object_get(json_object_get(doc, "gpu"), "name")),
            json_is_object(sheet) ? json_string_value(json_object_get(sheet, "name")) : "none for this GPU");
    print_figures(doc, out);
    print_methods(doc, out);
    print_p2p(doc, out);
    json_t *checks = json_object_get(doc, "checks");
    for (size_t i = 0; i < json_array_size(checks); i++) {
        json_t *c = json_array_get(checks, i);
        json_t *passed = json_object_get(c, "passed");
        fprintf(out, "%s%s: %.3f (%s)%s\n", i == 0 ? "\nsame-run checks:\n" : "",
                json_string_value(json_object_get(c, "name")), pl_json_get_real(c, "ratio"),
                json_string_value(json_object_get(c, "rule")),
                json_is_null(passed)   ? ""
                : json_is_true(passed) ? " ok"
                                       : " LOW: this ceiling is suspect");
    }
    json_t *lost = json_object_get(doc, "lost");
    for (size_t i = 0; i < json_array_size(lost); i++) {
        json_t *l = json_array_get(lost, i);
        fprintf(out, "task %s lost: %s\n", json_string_value(json_object_get(l, "task")),
                json_string_value(json_object_get(l, "lost")));
    }
    if (json_is_object(sheet))
        fprintf(out, "datasheet: %s (%s)\n", json_string_value(json_object_get(sheet, "source")),
                json_string_value(json_object_get(sheet, "note")));
}

int pl_peak_report_write(const char *run_dir, json_t *doc, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        pl_snprintf(err, errlen, "out of memory writing the peak summary");
        return -1;
    }
    pl_peak_print(doc, mem);
    fclose(mem);
    char *md = pl_strfmt("# perflab peak %s\n\nMeasured ceilings (peak.json has every figure and how it was "
                         "measured).\n\n```\n%s```\n",
                         json_string_value(json_object_get(doc, "run_id")), text ? text : "");
    free(text);
    pl_report_file files[] = {
        {.name = "peak.json", .json = doc},
        {.name = "summary.md", .text = md},
    };
    int rc = pl_report_write_files(run_dir, files, 2, err, errlen);
    free(md);
    return rc;
}
