/* perflab compare RUN_A RUN_B: what changed from A to B, per target and variant, with a noise-aware verdict. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/run_compare.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/table.h"

static json_t *result_json(const pl_compare_result *c, const pl_run *a, const pl_run *b, double threshold)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < c->n_rows; i++) {
        const pl_compare_row *r = &c->rows[i];
        json_t *o = json_pack("{s:s, s:s, s:s}", "target", r->target, "variant", r->variant, "verdict",
                              pl_compare_verdict_name(r->verdict));
        json_object_set_new(o, "median_a_ms", pl_json_real(r->median_a_ms));
        json_object_set_new(o, "median_b_ms", pl_json_real(r->median_b_ms));
        json_object_set_new(o, "change", pl_json_real(r->change));
        json_object_set_new(o, "ratio", pl_json_real(r->ratio.value));
        json_object_set_new(o, "ratio_ci_low", pl_json_real(r->ratio.lo));
        json_object_set_new(o, "ratio_ci_high", pl_json_real(r->ratio.hi));
        json_object_set_new(o, "energy_ratio", pl_json_real(r->energy_ratio));
        if (r->note)
            json_object_set_new(o, "note", json_string(r->note));
        json_array_append_new(rows, o);
    }
    json_t *counts = json_object();
    for (int v = 0; v < PL_CMP_COUNT; v++)
        json_object_set_new(counts, pl_compare_verdict_name((pl_compare_verdict)v), json_integer(c->counts[v]));
    return json_pack("{s:s?, s:b, s:s?, s:b, s:f, s:o, s:o}", "run_a", a->run_id, "run_a_complete", a->complete,
                     "run_b", b->run_id, "run_b_complete", b->complete, "threshold", threshold, "counts", counts,
                     "rows", rows);
}

static void print_result(const pl_compare_result *c, const pl_run *a, const pl_run *b, double threshold)
{
    const int energy = pl_compare_has_energy(c); /* the energy ratio only where some variant has it in both runs */
    const char *spec[8] = {"target", "variant", ">A median", ">B median", ">change", ">B/A [95% CI]"};
    size_t ncols = 6;
    const size_t col_energy = energy ? ncols++ : 0;
    spec[ncols++] = "verdict";
    if (energy)
        spec[col_energy] = ">J/run B/A";
    pl_table *t = pl_table_new(ncols, spec);
    const char *last = "";
    for (size_t i = 0; i < c->n_rows; i++) {
        const pl_compare_row *r = &c->rows[i];
        size_t row = pl_table_row(t);
        char b1[32], b2[32];
        if (strcmp(last, r->target) != 0)
            pl_table_set(t, row, 0, "%s", r->target);
        last = r->target;
        pl_table_set(t, row, 1, "%s", r->variant);
        pl_table_set(t, row, 2, "%s", pl_format_ms(r->median_a_ms, b1, sizeof b1));
        pl_table_set(t, row, 3, "%s", pl_format_ms(r->median_b_ms, b2, sizeof b2));
        if (!isnan(r->change))
            pl_table_set(t, row, 4, "%+.1f%%", 100 * r->change);
        if (!isnan(r->ratio.lo))
            pl_table_set(t, row, 5, "%.3f [%.3f, %.3f]", r->ratio.value, r->ratio.lo, r->ratio.hi);
        if (energy && !isnan(r->energy_ratio))
            pl_table_set(t, row, col_energy, "%.3f", r->energy_ratio);
        pl_table_set(t, row, ncols - 1, "%s%s%s", pl_compare_verdict_name(r->verdict), r->note ? ": " : "",
                     r->note ? r->note : "");
    }
    printf("perflab compare %s -> %s (threshold %.1f%%)\n", PL_ESC(a->run_id ? a->run_id : "A"),
           PL_ESC(b->run_id ? b->run_id : "B"), 100 * threshold);
    const pl_run *runs[2] = {a, b};
    for (int k = 0; k < 2; k++)
        if (!runs[k]->complete)
            printf("run %c (%s) is incomplete: it was interrupted or killed, or is still under way; %zu target%s "
                   "finished\n",
                   'A' + k, PL_ESC(runs[k]->run_id ? runs[k]->run_id : "?"), runs[k]->n_targets,
                   runs[k]->n_targets == 1 ? "" : "s");
    pl_table_print(t, stdout);
    pl_table_free(t);
    for (int v = 0; v < PL_CMP_COUNT; v++)
        printf("%s%d %s", v ? ", " : "", c->counts[v], pl_compare_verdict_name((pl_compare_verdict)v));
    printf("\n");
}

int pl_cmd_compare(int argc, char **argv)
{
    double threshold_pct = 100 * PL_COMPARE_DEFAULT_THRESHOLD;
    int json = 0, fail_on_slower = 0, help = 0;
    const pl_option opts[] = {
        {"threshold", 0, PL_OPT_DOUBLE, &threshold_pct, "PCT", "smallest change called faster/slower (default 5)", 0,
         1000},
        {"fail-on-slower", 0, PL_OPT_FLAG, &fail_on_slower, NULL, "exit 1 when any variant is slower", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print JSON instead of the table", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("compare", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("compare", err);
    if (help) {
        printf("usage: perflab compare RUN_A RUN_B [--threshold PCT] [--fail-on-slower] [--json]\n\n"
               "RUN_A and RUN_B are artifacts/<run_id> folders (or their run.json). For every target and\n"
               "variant in both: the medians, the change, the ratio B/A with a 95%% bootstrap interval from\n"
               "the raw samples, and a verdict: faster or slower only when the interval excludes 1 AND the\n"
               "change exceeds the threshold; same otherwise. Needs no GPU.\n\noptions:\n");
        pl_options_help(stdout, opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n != 2) {
        pl_strlist_free(&pos);
        return pl_usage_error("compare", "needs two runs: perflab compare RUN_A RUN_B (artifacts/<run_id> folders)");
    }
    pl_run a, b;
    if (pl_run_load(pos.items[0], &a, err, sizeof err) != 0) {
        pl_strlist_free(&pos);
        return pl_usage_error("compare", err);
    }
    if (pl_run_load(pos.items[1], &b, err, sizeof err) != 0) {
        pl_run_free(&a);
        pl_strlist_free(&pos);
        return pl_usage_error("compare", err);
    }
    pl_strlist_free(&pos);
    pl_compare_result c;
    pl_compare_runs(&a, &b, threshold_pct / 100.0, 20261121, &c);
    if (json) {
        json_t *j = result_json(&c, &a, &b, threshold_pct / 100.0);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
        json_decref(j);
    } else {
        print_result(&c, &a, &b, threshold_pct / 100.0);
    }
    int rc = fail_on_slower && c.counts[PL_CMP_SLOWER] > 0 ? PL_EXIT_FAILED : PL_EXIT_OK;
    pl_compare_result_free(&c);
    pl_run_free(&a);
    pl_run_free(&b);
    return rc;
}
