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
    else
        return -1;
    return 0;
}

int pl_report_input_load(const char *path, pl_report_input *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!pl_path_exists(path)) {
        pl_snprintf(err, errlen, "%s: no such file or folder", path);
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
                        path);
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
                    "%s: not a perflab result (expected a run.json, a gemm comparison.json, a moe-readiness or comm "
                    "report.json, or a profile.json)",
                    file);
        json_decref(doc);
        free(file);
        return -1;
    }
    out->path = file;
    if (out->kind == PL_INPUT_RUN) {
        int rc = pl_run_from_json(doc, &out->run, sub, sizeof sub);
        json_decref(doc);
        if (rc != 0) {
            pl_snprintf(err, errlen, "%s: %s", file, sub);
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
