/* perflab report and the chart module: the document over every kind of folder (runs written by host self-tests
 * here, an incomplete run, two runs for before/after, and the real H200 results in docs/results: a roofline run with
 * ncu counters, a gemm folder, a moe-readiness report, a profile), every HTML and SVG parsed by expat (a
 * conforming XML parser), the figures that must appear in it, no NaN in any SVG, ticks and labels, and the errors. */
#include <expat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "core/chart.h"
#include "report/html.h"
#include "testutil.h"
#include "xmlcheck.h"

#define FIXTURES PERFLAB_SOURCE_DIR "/docs/results"

/* ---- XML well-formedness, by expat (tests/xmlcheck.h) ---- */

typedef pl_xml_stats xml_stats;

/* Parses the document; fails the test with expat's message and the line on any error. */
static xml_stats parse_xml(const char *text, const char *what)
{
    xml_stats s;
    char why[512];
    ck_assert_msg(pl_xml_check(text, &s, why, sizeof why) == 0, "%s: %s", what, why);
    return s;
}

START_TEST(xml_checker_can_fail)
{
    /* the check itself: expat refuses what a browser would forgive */
    XML_Parser p = XML_ParserCreate("UTF-8");
    const char *bad = "<html><body><p>a &nbsp; b<br></p></body></html>";
    ck_assert_int_eq(XML_Parse(p, bad, (int)strlen(bad), 1), XML_STATUS_ERROR);
    XML_ParserFree(p);
}
END_TEST

/* ---- the chart module ---- */

START_TEST(ticks_and_labels)
{
    char b[48];
    pl_tick_label(PL_TICKS_NUMBER, 1000, b, sizeof b);
    ck_assert_str_eq(b, "1000");
    pl_tick_label(PL_TICKS_NUMBER, 10000, b, sizeof b);
    ck_assert_str_eq(b, "10k");
    pl_tick_label(PL_TICKS_NUMBER, 2.5e6, b, sizeof b);
    ck_assert_str_eq(b, "2.5M");
    pl_tick_label(PL_TICKS_NUMBER, 0.001, b, sizeof b);
    ck_assert_str_eq(b, "0.001");
    pl_tick_label(PL_TICKS_BYTES, 4096, b, sizeof b);
    ck_assert_str_eq(b, "4 KiB");
    pl_tick_label(PL_TICKS_BYTES, 3 * 1048576.0, b, sizeof b);
    ck_assert_str_eq(b, "3 MiB");

    /* a log-log chart: whole decades, a tick label per decade, points placed between them */
    const double x[] = {0.25, 0.25, 3000}, y[] = {0.085, 0.65, 700};
    const char *labels[] = {"baseline", "coalesced", "gemm"};
    pl_series s = {.name = "points & <things>", .n = 3, .x = x, .y = y, .labels = labels, .markers = 1, .colour = 0};
    pl_arrow a = {0.25, 0.085, 0.25, 0.65, 0};
    pl_xy_chart c = {.title = "t",
                     .x = {.label = "AI", .scale = PL_AXIS_LOG10},
                     .y = {.label = "TFLOP/s", .scale = PL_AXIS_LOG10},
                     .series = &s,
                     .n_series = 1,
                     .arrows = &a,
                     .n_arrows = 1};
    char *svg = pl_chart_xy(&c, 1);
    xml_stats st = parse_xml(svg, "the x-y chart");
    ck_assert_int_eq(st.svgs, 1);
    ck_assert(strncmp(svg, "<?xml", 5) == 0);
    ck_assert(strstr(svg, ">0.1<") && strstr(svg, ">1000<") && strstr(svg, ">10k<") && strstr(svg, ">0.01<"));
    ck_assert(strstr(svg, "points &amp; &lt;things&gt;")); /* escaped */
    ck_assert(strstr(svg, "<polygon"));                    /* the arrow's head */
    ck_assert(strstr(svg, ">coalesced</text>"));
    free(svg);

    /* a point that a log axis cannot draw is left out, never written as NaN */
    const double bad_x[] = {NAN, -1, 2}, bad_y[] = {1, 1, INFINITY};
    pl_series sb = {.name = "bad", .n = 3, .x = bad_x, .y = bad_y, .markers = 1, .lines = 1};
    c.series = &sb;
    c.n_arrows = 0;
    svg = pl_chart_xy(&c, 0);
    parse_xml(svg, "an x-y chart of bad points");
    ck_assert_ptr_null(strstr(svg, "<circle"));
    free(svg);
}
END_TEST

START_TEST(bars_with_intervals_and_gaps)
{
    const char *cats[] = {"baseline", "vec", "none"};
    const double v[] = {1, 1.45, NAN}, lo[] = {NAN, 1.44, NAN}, hi[] = {NAN, 1.46, NAN};
    pl_bar_chart c = {.title = "speedup",
                      .value = {.label = "x", .scale = PL_AXIS_LINEAR},
                      .n_categories = 3,
                      .n_series = 1,
                      .categories = cats,
                      .values = v,
                      .lo = lo,
                      .hi = hi,
                      .value_fmt = "%.2fx",
                      .reference = 1.0,
                      .reference_label = "baseline"};
    char *svg = pl_chart_bars(&c, 1);
    parse_xml(svg, "the bar chart");
    ck_assert(strstr(svg, ">1.45x<") && strstr(svg, ">n/a<") && strstr(svg, "stroke-dasharray"));
    ck_assert_int_eq((int)(strstr(svg, "<path") != NULL), 1); /* the one whisker */
    free(svg);

    const char *prov[] = {"cublas", "perflab"}, *shapes[] = {"s1", "s2"};
    const double tf[] = {738.7, 710.9, NAN, 500};
    pl_bar_chart g = {.title = "gemm",
                      .value = {.label = "TFLOP/s"},
                      .n_categories = 2,
                      .n_series = 2,
                      .categories = shapes,
                      .series_names = prov,
                      .values = tf,
                      .value_fmt = "%.1f",
                      .reference = NAN};
    svg = pl_chart_bars(&g, 0);
    parse_xml(svg, "the grouped bar chart");
    ck_assert(strstr(svg, ">cublas<") && strstr(svg, ">perflab<") && strstr(svg, ">738.7<"));
    free(svg);
}
END_TEST

/* ---- perflab report over folders ---- */

/* A run of the host self-tests into dir; returns its folder (malloc'd). */
static char *host_run(const char *dir, const char *targets)
{
    char *args = pl_strfmt("run --targets %s --profile minimal --quiet --artifacts-dir '%s' --expectations-dir '%s' "
                           "--min-time-s 0.05 --max-time-s 0.2",
                           targets, dir, dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    free(args);
    ck_assert_msg(r.exit_code == 0 || r.exit_code == 1, "exit %d: %s", r.exit_code, r.err);
    char *p = strstr(r.out, "artifacts: ");
    ck_assert_ptr_nonnull(p);
    p += strlen("artifacts: ");
    char *run = pl_strfmt("%.*s", (int)strcspn(p, "\n"), p);
    pl_cmd_result_free(&r);
    return run;
}

/* The same run marked as cut short (what a killed run leaves). */
static char *incomplete_copy(const char *dir, const char *run_dir)
{
    char err[512];
    char *src = pl_path_join(run_dir, "run.json");
    json_t *j = pl_json_load_file(src, err, sizeof err);
    ck_assert_msg(j, "%s", err);
    json_object_set_new(j, "complete", json_false());
    json_object_set_new(j, "run_id", json_string("killed-run"));
    char *out = pl_path_join(dir, "killed");
    ck_assert_int_eq(pl_mkdir_p(out, err, sizeof err), 0);
    char *dst = pl_path_join(out, "run.json");
    ck_assert_int_eq(pl_json_save_file(j, dst, err, sizeof err), 0);
    json_decref(j);
    free(src);
    free(dst);
    return out;
}

/* A comm report.json in perflab comm's shape: two collectives over four sizes. */
static char *comm_fixture(const char *dir)
{
    json_t *pts = json_array();
    const char *colls[] = {"allreduce", "alltoall"};
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 4; k++) {
            double bytes = 65536.0 * (1 << (3 * k)), t_ms = 0.01 + bytes / 200e9 * 1e3 * (c + 1);
            json_array_append_new(pts, json_pack("{s:s, s:s, s:b, s:I, s:f, s:{s:f, s:f}, s:s}", "collective", colls[c],
                                                 "dtype", "bf16", "in_place", 0, "size_bytes", (json_int_t)bytes,
                                                 "busbw_gbps", bytes / (t_ms * 1e-3) / 1e9, "latency_ms", "p50", t_ms,
                                                 "p99", 1.2 * t_ms, "status", "ok"));
        }
    json_t *doc = json_pack("{s:i, s:s, s:{s:s, s:i}, s:o}", "schema_version", 1, "kind", "comm", "settings", "launch",
                            "threads", "ranks", 8, "points", pts);
    char err[256];
    char *out = pl_path_join(dir, "comm-fixture");
    ck_assert_int_eq(pl_mkdir_p(out, err, sizeof err), 0);
    char *file = pl_path_join(out, "report.json");
    ck_assert_int_eq(pl_json_save_file(doc, file, err, sizeof err), 0);
    json_decref(doc);
    free(file);
    return out;
}

START_TEST(report_over_every_kind_of_folder)
{
    char *dir = pl_test_tmpdir("report");
    char *a = host_run(dir, "selftest:sleep,selftest:gate");
    char *b = host_run(dir, "selftest:sleep,selftest:gate");
    char *killed = incomplete_copy(dir, a);
    char *comm = comm_fixture(dir);
    char *out = pl_path_join(dir, "out");
    char *args = pl_strfmt("report '%s' '%s' '%s' " FIXTURES "/h200-report/run-memory-roofline " FIXTURES
                           "/h200-report/gemm-4096 " FIXTURES "/2x_h200/moe_slo_report.json " FIXTURES
                           "/h200-report/profile-coalescing '%s' --out '%s'",
                           a, b, killed, comm, out);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    free(args);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    ck_assert(strstr(r.out, "moe_readiness") && strstr(r.out, "report: "));
    pl_cmd_result_free(&r);

    char *path = pl_path_join(out, "report.html");
    char err[256];
    char *html = pl_read_file(path, NULL, err, sizeof err);
    ck_assert_msg(html, "%s", err);
    xml_stats st = parse_xml(html, "report.html");
    /* roofline + per-target charts of the H200 run, two speedup charts per host run, gemm, 2 heatmaps, 2 comm
     * curves, before/after: many inline SVGs */
    ck_assert_msg(st.svgs >= 14, "%d SVGs", st.svgs);
    ck_assert(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    ck_assert(!strstr(html, "<script"));
    ck_assert(!strstr(html, "src=\"http") && !strstr(html, "href=\"http"));
    /* what a reader must find */
    ck_assert(strstr(html, "Incomplete run"));
    ck_assert(strstr(html, "Roofline") && strstr(html, "HBM 4237 GB/s") && strstr(html, "BF16 tensor 711 TFLOP/s"));
    ck_assert(strstr(html, "memory:coalescing: speedup over the baseline") && strstr(html, ">7.68x<"));
    ck_assert(strstr(html, "DRAM bytes (ncu) / counted") && strstr(html, ">7.45<")); /* the strided L2 bytes */
    ck_assert(strstr(html, "ncu 2025.3.1.0"));
    ck_assert(strstr(html, "GEMM: TFLOP/s per shape and provider") && strstr(html, ">738.7<"));
    ck_assert(strstr(html, "p99 latency, bf16 all-to-all over 2 ranks") && strstr(html, "SLO missed"));
    ck_assert(strstr(html, "bus bandwidth against message size") && strstr(html, ">64 KiB<"));
    ck_assert(strstr(html, "Before / after") && strstr(html, "median after / median before"));
    ck_assert(strstr(html, "DRAM traffic matches the counted bytes")); /* the profile's findings */
    ck_assert(strstr(html, "selftest:gate"));
    free(html);
    free(path);
    free(out);
    free(a);
    free(b);
    free(killed);
    free(comm);
    free(dir);
}
END_TEST

START_TEST(report_refuses_what_it_cannot_read)
{
    pl_cmd_result r = pl_run_perflab(NULL, "report");
    ck_assert_int_eq(r.exit_code, 2);
    pl_cmd_result_free(&r);
    char *dir = pl_test_tmpdir("report-bad");
    char *args = pl_strfmt("report '%s'", dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "not a perflab folder"), "%s", r.err);
    pl_cmd_result_free(&r);
    free(args);
    char *file = pl_path_join(dir, "report.json");
    char err[128];
    ck_assert_int_eq(pl_write_file_atomic(file, "{\"kind\": \"other\"}", 17, err, sizeof err), 0);
    args = pl_strfmt("report '%s'", dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "not a perflab result"), "%s", r.err);
    pl_cmd_result_free(&r);
    free(args);
    r = pl_run_perflab(NULL, "report /nonexistent/run");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert(strstr(r.err, "no such file or folder"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "report " FIXTURES "/2x_h200 --name ../x.html");
    ck_assert_int_eq(r.exit_code, 2);
    pl_cmd_result_free(&r);
    free(file);
    free(dir);
}
END_TEST

/* The moe-readiness heatmap files, drawn by the chart module, parse as SVG documents of their own. */
START_TEST(standalone_heatmap)
{
    const char *xl[] = {"48 KiB", "2 MiB"}, *yl[] = {"alpha 1.00"};
    const double v[] = {0.022, NAN};
    const int f[] = {0, 1};
    pl_heatmap h = {.title = "p99 & co",
                    .x_label = "bytes",
                    .y_label = "skew",
                    .unit = "ms",
                    .value_fmt = "%.4f",
                    .nx = 2,
                    .ny = 1,
                    .x_labels = xl,
                    .y_labels = yl,
                    .values = v,
                    .flagged = f,
                    .flag_label = "SLO missed"};
    char *svg = pl_chart_heatmap(&h, 1);
    parse_xml(svg, "the heatmap");
    ck_assert(strstr(svg, ">0.0220<") && strstr(svg, ">n/a<") && strstr(svg, "url(#scale"));
    free(svg);
}
END_TEST

/* One line on stderr, exit `code`, the line holding `says`. */
static void expect_line(const char *args, int code, const char *says)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    const char *nl = strchr(r.err, '\n');
    ck_assert_msg(r.exit_code == code && strstr(r.err, says) && nl && !nl[1],
                  "%.300s: exit %d, expected %d with '%s': %s", args, r.exit_code, code, says, r.err);
    pl_cmd_result_free(&r);
}

static void write_doc(json_t *doc, const char *folder)
{
    char err[256];
    ck_assert_int_eq(pl_mkdir_p(folder, err, sizeof err), 0);
    char *file = pl_path_join(folder, "report.json");
    ck_assert_msg(pl_json_save_file(doc, file, err, sizeof err) == 0, "%s", err);
    json_decref(doc);
    free(file);
}

/* A comm report of n_curves collectives (named by `name` and the index), two sizes each, busbw `bw`. */
static char *comm_doc(const char *dir, const char *folder, size_t n_curves, const char *name, double bw)
{
    json_t *pts = json_array();
    for (size_t c = 0; c < n_curves; c++)
        for (int k = 0; k < 2; k++) {
            char coll[64];
            snprintf(coll, sizeof coll, "%s%zu", name, c);
            json_array_append_new(pts,
                                  json_pack("{s:s, s:s, s:b, s:I, s:f, s:{s:f, s:f}, s:s}", "collective", coll, "dtype",
                                            "bf16", "in_place", 0, "size_bytes", (json_int_t)65536 << k, "busbw_gbps",
                                            bw, "latency_ms", "p50", 0.01, "p99", 0.02, "status", "ok"));
        }
    char *out = pl_path_join(dir, folder);
    write_doc(json_pack("{s:i, s:s, s:{s:s, s:i}, s:o}", "schema_version", 1, "kind", "comm", "settings", "launch",
                        "threads", "ranks", 8, "points", pts),
              out);
    return out;
}

/* The report of the folders in `args` (--out added), parsed as XML with no NaN attribute. */
static void report_parses(const char *dir, const char *args)
{
    char *out = pl_path_join(dir, "out");
    char *full = pl_strfmt("report %s --out '%s'", args, out);
    pl_cmd_result r = pl_run_perflab(NULL, full);
    ck_assert_msg(r.exit_code == 0, "%s: exit %d: %s", full, r.exit_code, r.err);
    pl_cmd_result_free(&r);
    char *path = pl_path_join(out, "report.html"), err[256];
    char *html = pl_read_file(path, NULL, err, sizeof err);
    ck_assert_msg(html, "%s", err);
    parse_xml(html, full);
    free(html);
    free(path);
    free(full);
    free(out);
}

static void extreme_speedup(json_t *root)
{
    json_t *vs = json_object_get(json_array_get(json_object_get(root, "targets"), 0), "variants");
    for (size_t v = 0; v < 2; v++) {
        json_t *samples = json_object_get(json_array_get(vs, v), "samples_ms");
        for (size_t i = 0; i < json_array_size(samples); i++)
            json_array_set_new(samples, i, json_real(v ? 1e-8 : 1e300));
    }
}

/* Names with U+FFFE and folders whose names are not UTF-8 broke the XML; extreme but valid numbers (a speedup of
 * 1e308, a busbw of 5e-324) gave NaN coordinates. */
START_TEST(report_xml_survives_odd_names_and_extreme_numbers)
{
    char *dir = pl_test_tmpdir("report-odd");
    char *odd = comm_doc(dir, "comm-\xff\xfe", 2,
                         "all\xef\xbf\xbe"
                         "reduce",
                         5e-324);
    char *run = pl_test_write_run(dir, "run-\xc3(", extreme_speedup);
    char *args = pl_strfmt("'%s' '%s'", odd, run);
    report_parses(dir, args);
    free(args);
    /* the --json listing keeps every input, escaped where it is not UTF-8 */
    char *out = pl_path_join(dir, "out\xff");
    args = pl_strfmt("report '%s' '%s' --out '%s' --json", odd, run, out);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    ck_assert_msg(j, "not JSON: %s", r.out);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "inputs")), 2);
    ck_assert_msg(strstr(json_string_value(json_object_get(j, "report")), "out\\xff/report.html"), "%s", r.out);
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);
    /* the chart module on its own: a denormal on a log axis, +-1e308 on a linear one */
    const double x[] = {5e-324, 1e-300, 1e308}, y[] = {-1e308, 1e308, 5e-324};
    pl_series sr = {.name = "x", .n = 3, .x = x, .y = y, .markers = 1, .lines = 1};
    pl_xy_chart c = {.title = "t",
                     .x = {.label = "x", .scale = PL_AXIS_LOG10},
                     .y = {.label = "y", .scale = PL_AXIS_LINEAR},
                     .series = &sr,
                     .n_series = 1};
    char *svg = pl_chart_xy(&c, 1);
    parse_xml(svg, "an x-y chart of extreme numbers");
    free(svg);
    c.x.min = 0;
    c.x.max = 5e-324; /* an axis range that underflows */
    c.y.scale = PL_AXIS_LOG2;
    svg = pl_chart_xy(&c, 1);
    parse_xml(svg, "an x-y chart with an underflowing range");
    free(svg);
    free(out);
    free(run);
    free(odd);
    free(dir);
}
END_TEST

/* /dev/zero read forever; a 181 KB MoE report made a 1.85 GB page; 30,000 comm curves took 44 s: limits first. */
START_TEST(report_inputs_are_bounded)
{
    char *dir = pl_test_tmpdir("report-limits");
    expect_line("report /dev/zero", 2, "not a regular file");
    char *link = pl_path_join(dir, "zero-run"), err[256];
    ck_assert_int_eq(pl_mkdir_p(link, err, sizeof err), 0);
    char *cmd = pl_strfmt("ln -sf /dev/zero '%s/run.json' && mkfifo '%s/fifo.json'", link, dir);
    ck_assert_int_eq(system(cmd), 0);
    free(cmd);
    char *args = pl_strfmt("report '%s'", link);
    expect_line(args, 2, "not a regular file");
    free(args);
    args = pl_strfmt("compare '%s' '%s'", link, link);
    expect_line(args, 2, "not a regular file");
    free(args);
    args = pl_strfmt("report '%s/fifo.json'", dir);
    expect_line(args, 2, "not a regular file");
    free(args);

    json_t *sizes = json_array(), *skews = json_array();
    for (int i = 0; i < 2000; i++) {
        json_array_append_new(sizes, json_integer(1024 + i));
        json_array_append_new(skews, json_real(1 + i * 1e-3));
    }
    char *moe = pl_path_join(dir, "moe");
    write_doc(json_pack("{s:i, s:s, s:{s:o, s:o, s:i}, s:[]}", "schema_version", 1, "kind", "moe_readiness", "settings",
                        "message_sizes", sizes, "skews", skews, "ranks", 2, "points"),
              moe);
    args = pl_strfmt("report '%s'", moe);
    const double t0 = pl_now_s();
    expect_line(args, 2, "cells; a report draws at most");
    free(args);
    char *comm = comm_doc(dir, "comm-many", 30000, "c", 100);
    args = pl_strfmt("report '%s'", comm);
    expect_line(args, 2, "a report draws at most");
    free(args);
    ck_assert_msg(pl_now_s() - t0 < 20, "the refusals took %.1f s", pl_now_s() - t0);
    /* more folders than one report reads */
    pl_buf many = {0};
    pl_buf_append(&many, "report");
    for (int i = 0; i <= PL_REPORT_MAX_INPUTS; i++)
        pl_buf_printf(&many, " '%s'", moe);
    expect_line(many.data, 2, "at most");
    pl_buf_free(&many);
    free(comm);
    free(moe);
    free(link);
    free(dir);
}
END_TEST

/* --out /proc/x and a 300-byte --name exited 1 (a failed write) where run exits 2; a --name with a newline and ESC
 * made that file. */
START_TEST(report_output_names_are_checked_first)
{
    char *dir = pl_test_tmpdir("report-out");
    char *run = pl_test_write_run(dir, "run", NULL);
    char *args = pl_strfmt("report '%s' --out /proc/x", run);
    expect_line(args, 2, "/proc/x");
    free(args);
    char name[301];
    memset(name, 'a', 300);
    name[300] = '\0';
    args = pl_strfmt("report '%s' --out '%s' --name %s", run, dir, name);
    expect_line(args, 2, "--name");
    free(args);
    args = pl_strfmt("report '%s' --out '%s' --name \"$(printf 'a\\nb\\033.html')\"", run, dir);
    expect_line(args, 2, "--name");
    free(args);
    char *made = pl_path_join(dir, "a\nb\x1b.html");
    ck_assert_msg(!pl_path_exists(made), "the file '%s' was made", made);
    free(made);
    free(run);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, xml_checker_can_fail);
    tcase_add_test(t, ticks_and_labels);
    tcase_add_test(t, bars_with_intervals_and_gaps);
    tcase_add_test(t, standalone_heatmap);
    tcase_add_test(t, report_over_every_kind_of_folder);
    tcase_add_test(t, report_refuses_what_it_cannot_read);
    tcase_add_test(t, report_xml_survives_odd_names_and_extreme_numbers);
    tcase_add_test(t, report_inputs_are_bounded);
    tcase_add_test(t, report_output_names_are_checked_first);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
