/* perflab report RUN_DIR [RUN_DIR ...]: one self-contained report.html over runs, gemm, MoE readiness, comm and
 * profile folders (report/html.h). Needs no GPU. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/util.h"
#include "core/files.h"
#include "report/html.h"

static const char *kind_name(pl_report_kind k)
{
    static const char *const names[] = {"run", "gemm", "moe_readiness", "comm", "profile", "serve", "scenario"};
    return names[k];
}

/* A path or label as a JSON string: escaped (\xNN) where it is not UTF-8 text, which JSON cannot carry. */
static json_t *text(const char *s)
{
    char *e = pl_escape_dup(s);
    json_t *j = json_string(e);
    free(e);
    return j;
}

static void print_json(const pl_report_input *in, size_t n, const char *path)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:o, s:s, s:o}", "path", text(in[i].path), "kind",
                                              kind_name(in[i].kind), "label", text(in[i].label)));
    json_t *j = json_pack("{s:o, s:o}", "report", text(path), "inputs", list);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    puts(s);
    free(s);
    json_decref(j);
}

#define PL_REPORT_NAME_MAX 200

int pl_cmd_report(int argc, char **argv)
{
    const char *out_dir = ".", *name = "report.html";
    int help = 0, json = 0;
    const pl_option opts[] = {
        {"out", 'o', PL_OPT_STRING, &out_dir, "DIR", "the folder report.html goes into (default: the current one)", 0,
         0},
        {"name", 0, PL_OPT_STRING, &name, "FILE", "the file's name (default report.html)", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print what was read and written as JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("report", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("report", err);
    if (help) {
        printf("usage: perflab report PATH [PATH ...] [--out DIR] [--name FILE]\n\n"
               "One self-contained HTML file (inline SVG and CSS, no script, no network: it opens from disk) over\n"
               "perflab's folders, each recognised by what it holds:\n"
               "  run.json         a run: provenance, the table, the roofline (from the ceilings the run recorded),\n"
               "                   per target the speedups with their 95%% intervals and the bytes ncu measured;\n"
               "                   with two runs or more, before/after of each later run against the first\n"
               "  comparison.json  perflab gemm: TFLOP/s per shape and provider\n"
               "  report.json      perflab moe-readiness (its heatmaps), perflab comm (busbw and p99 against size)\n"
               "                   perflab serve (TTFT and TPOT CDFs, the throughput-latency curve) or\n"
               "                   perflab scenario (each phase's status and headline)\n"
               "  profile.json     perflab profile: the findings\n"
               "An incomplete run (interrupted or killed) is marked as such. Needs no GPU. At most 64 folders, and\n"
               "each document within the limits docs/report.md lists (checked before any work).\n\noptions:\n");
        pl_options_help(stdout, opts);
        printf("\nexit codes: 0 written; 2 bad usage, or an input that is not a perflab folder.\n");
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n == 0) {
        pl_strlist_free(&pos);
        return pl_usage_error("report", "needs at least one folder: perflab report artifacts/<run_id> [...]");
    }
    if (pos.n > PL_REPORT_MAX_INPUTS) {
        pl_strlist_free(&pos);
        pl_snprintf(err, sizeof err, "%zu folders; one report reads at most %d: split them over several reports", pos.n,
                    PL_REPORT_MAX_INPUTS);
        return pl_usage_error("report", err);
    }
    if (strchr(name, '/') || !*name || name[0] == '.' || strlen(name) > PL_REPORT_NAME_MAX || !pl_is_printable(name)) {
        pl_strlist_free(&pos);
        return pl_usage_error("report", "--name takes a plain printable file name of at most 200 bytes (e.g. "
                                        "report.html); put the folder in --out");
    }
    if (!pl_dir_usable(out_dir, "output directory", "--out", err, sizeof err)) {
        pl_strlist_free(&pos);
        return pl_usage_error("report", err);
    }
    pl_report_input *in = pl_xcalloc(pos.n, sizeof *in);
    size_t loaded = 0;
    int rc = PL_EXIT_OK;
    for (; loaded < pos.n; loaded++)
        if (pl_report_input_load(pos.items[loaded], &in[loaded], err, sizeof err) != 0) {
            rc = pl_usage_error("report", err);
            break;
        }
    if (rc == PL_EXIT_OK && pl_mkdir_p(out_dir, err, sizeof err) != 0) /* an --out that cannot be a folder */
        rc = pl_usage_error("report", err);
    if (rc == PL_EXIT_OK) {
        char when[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        char *html = pl_html_report(in, loaded, when);
        pl_report_file file = {.name = name, .text = html};
        if (pl_report_write_files(out_dir, &file, 1, err, sizeof err) != 0) {
            fprintf(stderr, "perflab report: %s\n", err);
            rc = PL_EXIT_FAILED;
        } else {
            char *path = pl_path_join(out_dir, name);
            if (json) {
                print_json(in, loaded, path);
            } else {
                for (size_t i = 0; i < loaded; i++)
                    printf("%-13s %s (%s)\n", kind_name(in[i].kind), PL_ESC(in[i].label), PL_ESC(in[i].path));
                printf("report: %s\n", PL_ESC(path));
            }
            free(path);
        }
        free(html);
    }
    for (size_t i = 0; i < loaded; i++)
        pl_report_input_free(&in[i]);
    free(in);
    pl_strlist_free(&pos);
    return rc;
}
