/* The inputs of perflab report: a folder (or its JSON file) recognised by what it holds (html.h). */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"
#include "report/html.h"

static const char *const known_files[] = {"run.json", "comparison.json", "report.json", "profile.json"};

/* The folder's own name ("artifacts/gemm-x/" -> "gemm-x"). */
static char *folder_name(const char *file)
{
    char *copy = pl_strdup(file);
    char *dir = dirname(copy);
    char *base = pl_strdup(basename(dir));
    free(copy);
    return base;
}

static int classify(json_t *doc, pl_report_kind *kind)
{
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    const char *k = json_string_value(json_object_get(doc, "kind"));
    if (json_is_array(json_object_get(doc, "targets")) && json_object_get(doc, "schema_version"))
        *kind = PL_INPUT_RUN;
    else if (schema && strncmp(schema, "perflab.gemm.comparison/", 24) == 0)
        *kind = PL_INPUT_GEMM;
    else if (k && strcmp(k, "moe_readiness") == 0)
        *kind = PL_INPUT_MOE;
    else if (k && strcmp(k, "comm") == 0)
        *kind = PL_INPUT_COMM;
    else if (k && strcmp(k, "perflab.profile") == 0)
        *kind = PL_INPUT_PROFILE;
    else if (k && strcmp(k, "serve") == 0 && schema && strncmp(schema, "perflab.serve/", 14) == 0)
        *kind = PL_INPUT_SERVE;
    else if (k && strcmp(k, "scenario") == 0 && schema && strncmp(schema, "perflab.scenario/", 17) == 0)
        *kind = PL_INPUT_SCENARIO;
    else
        return -1;
    return 0;
}

static int over(const char *what, size_t n, size_t max, char *err, size_t errlen)
{
    if (n <= max)
        return 0;
    pl_snprintf(err, errlen, "%zu %s; a report draws at most %zu", n, what, max);
    return 1;
}

/* The comm report's curves, counted up to one past the limit. */
static size_t comm_curves(json_t *points)
{
    const char *seen[PL_REPORT_MAX_CURVES + 1][3];
    int in_place[PL_REPORT_MAX_CURVES + 1];
    size_t n = 0, i;
    json_t *p;
    json_array_foreach(points, i, p)
    {
        const char *c = json_string_value(json_object_get(p, "collective")),
                   *d = json_string_value(json_object_get(p, "dtype"));
        const int ip = json_is_true(json_object_get(p, "in_place"));
        size_t k = 0;
        while (k < n &&
               !(strcmp(seen[k][0], c ? c : "") == 0 && strcmp(seen[k][1], d ? d : "") == 0 && in_place[k] == ip))
            k++;
        if (k < n)
            continue;
        if (n == PL_REPORT_MAX_CURVES)
            return n + 1;
        seen[n][0] = c ? c : "";
        seen[n][1] = d ? d : "";
        in_place[n++] = ip;
    }
    return n;
}

/* A serve report's TTFT and TPOT samples, every rate. */
static size_t serve_samples(json_t *rates)
{
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(rates, i, r)
    {
        json_t *s = json_object_get(r, "samples");
        n += json_array_size(json_object_get(s, "ttft_ms")) + json_array_size(json_object_get(s, "tpot_ms"));
    }
    return n;
}

/* Limits on what a document makes the report draw (html.h), checked before any work. */
static int check_size(pl_report_kind kind, json_t *doc, char *err, size_t errlen)
{
    json_t *set = json_object_get(doc, "settings");
    switch (kind) {
    case PL_INPUT_RUN: return 0; /* pl_run_from_json's own limits */
    case PL_INPUT_GEMM:
        return over("providers", json_array_size(json_object_get(doc, "providers")), PL_REPORT_MAX_PROVIDERS, err,
                    errlen) ||
               over("shapes", json_array_size(json_object_get(doc, "shapes")), PL_REPORT_MAX_SHAPES, err, errlen);
    case PL_INPUT_MOE:
        return over("message sizes x skews cells",
                    json_array_size(json_object_get(set, "message_sizes")) *
                        json_array_size(json_object_get(set, "skews")),
                    PL_REPORT_MAX_CELLS, err, errlen) ||
               over("points", json_array_size(json_object_get(doc, "points")), PL_REPORT_MAX_CELLS, err, errlen);
    case PL_INPUT_COMM:
        return over("points", json_array_size(json_object_get(doc, "points")), PL_REPORT_MAX_POINTS, err, errlen) ||
               over("curves", comm_curves(json_object_get(doc, "points")), PL_REPORT_MAX_CURVES, err, errlen);
    case PL_INPUT_PROFILE:
        return over("variants", json_array_size(json_object_get(doc, "variants")), PL_REPORT_MAX_VARIANTS, err, errlen);
    case PL_INPUT_SERVE:
        return over("request rates", json_array_size(json_object_get(doc, "rates")), PL_REPORT_MAX_RATES, err,
                    errlen) ||
               over("latency samples", serve_samples(json_object_get(doc, "rates")), PL_REPORT_MAX_SAMPLES, err,
                    errlen);
    case PL_INPUT_SCENARIO:
        return over("phases", json_array_size(json_object_get(doc, "phases")), PL_REPORT_MAX_CURVES, err, errlen);
    }
    return 0;
}

int pl_report_input_load(const char *path, pl_report_input *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!pl_path_exists(path)) {
        pl_snprintf(err, errlen, "%s: no such file or folder", PL_ESC(path));
        return -1;
    }
    char *file = NULL;
    if (pl_is_dir(path)) {
        for (size_t i = 0; i < sizeof known_files / sizeof known_files[0] && !file; i++) {
            char *cand = pl_path_join(path, known_files[i]);
            if (pl_path_exists(cand))
                file = cand;
            else
                free(cand);
        }
        if (!file) {
            pl_snprintf(err, errlen,
                        "%s: not a perflab folder (no run.json, comparison.json, report.json or profile.json in it)",
                        PL_ESC(path));
            return -1;
        }
    } else {
        file = pl_strdup(path);
    }
    char sub[768];
    json_t *doc = pl_json_load_file(file, sub, sizeof sub);
    if (!doc) {
        pl_snprintf(err, errlen, "%s", sub);
        free(file);
        return -1;
    }
    if (classify(doc, &out->kind) != 0) {
        pl_snprintf(err, errlen,
                    "%s: not a perflab result (expected a run.json, a gemm comparison.json, a moe-readiness, comm, "
                    "serve or scenario report.json, or a profile.json)",
                    PL_ESC(file));
        json_decref(doc);
        free(file);
        return -1;
    }
    if (check_size(out->kind, doc, sub, sizeof sub)) {
        pl_snprintf(err, errlen, "%s: %s", PL_ESC(file), sub);
        json_decref(doc);
        free(file);
        return -1;
    }
    out->path = file;
    if (out->kind == PL_INPUT_RUN) {
        int rc = pl_run_from_json(doc, &out->run, sub, sizeof sub);
        json_decref(doc);
        if (rc != 0) {
            pl_snprintf(err, errlen, "%s: %s", PL_ESC(file), sub);
            pl_report_input_free(out);
            return -1;
        }
        out->label = pl_strdup(out->run.run_id ? out->run.run_id : "run");
        return 0;
    }
    out->doc = doc;
    const char *id = json_string_value(json_object_get(doc, "run_id"));
    out->label = id && out->kind != PL_INPUT_MOE && out->kind != PL_INPUT_COMM ? pl_strdup(id) : folder_name(file);
    return 0;
}

void pl_report_input_free(pl_report_input *in)
{
    if (in->kind == PL_INPUT_RUN)
        pl_run_free(&in->run);
    json_decref(in->doc);
    free(in->path);
    free(in->label);
    memset(in, 0, sizeof *in);
}
