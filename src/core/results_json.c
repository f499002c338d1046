#include "core/results_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ---- JSON primitives ---- */

json_t *pl_json_real(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

double pl_json_get_real(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

json_t *pl_json_load_file(const char *path, char *err, size_t errlen)
{
    size_t len;
    char *text = pl_read_file(path, &len, err, errlen);
    if (!text)
        return NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    free(text);
    if (!j)
        pl_snprintf(err, errlen, "%s:%d:%d: %s", PL_ESC(path), je.line, je.column, PL_ESC(je.text));
    return j;
}

int pl_json_load_as(const char *path, int (*read)(json_t *j, void *out, char *err, size_t errlen), void *out, char *err,
                    size_t errlen)
{
    if (!pl_path_exists(path))
        return 1;
    json_t *j = pl_json_load_file(path, err, errlen);
    if (!j)
        return -1;
    char why[512];
    int rc = read(j, out, why, sizeof why);
    json_decref(j);
    if (rc != 0)
        pl_snprintf(err, errlen, "%s: %s", PL_ESC(path), why);
    return rc != 0 ? -1 : 0;
}

int pl_json_save_file(json_t *j, const char *path, char *err, size_t errlen)
{
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    if (!text) {
        pl_snprintf(err, errlen, "cannot encode JSON for '%s'", PL_ESC(path));
        return -1;
    }
    size_t len = strlen(text);
    char *with_newline = pl_strfmt("%s\n", text);
    free(text);
    int rc = pl_write_file_atomic(path, with_newline, len + 1, err, errlen);
    free(with_newline);
    return rc;
}

char *pl_json_dumps_line(json_t *j)
{
    return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
}

/* ---- run: the tables of results_schema.c, behind the checks that say a document is no run at all ---- */

json_t *pl_run_to_json(const pl_run *r)
{
    return pl_run_fields_to_json(r);
}

/* What one run.json may hold, checked on the document before any statistics are computed: each variant's
 * statistics and bootstrap intervals are work, so a small crafted file must not buy minutes of it. */
int pl_run_json_check_size(json_t *j, char *err, size_t errlen)
{
    json_t *targets = json_object_get(j, "targets");
    size_t n_variants = 0, i;
    json_t *t;
    if (json_array_size(targets) > PL_RUN_MAX_TARGETS) {
        pl_snprintf(err, errlen, "%zu targets; a run.json perflab reads holds at most %d", json_array_size(targets),
                    PL_RUN_MAX_TARGETS);
        return -1;
    }
    json_array_foreach(targets, i, t)
    {
        json_t *variants = json_object_get(t, "variants"), *v;
        size_t k;
        n_variants += json_array_size(variants);
        json_array_foreach(variants, k, v)
        {
            if (json_array_size(json_object_get(v, "samples_ms")) > PL_RUN_MAX_SAMPLES) {
                pl_snprintf(err, errlen,
                            "targets[%zu].variants[%zu]: more than %d samples (the most --iterations takes)", i, k,
                            PL_RUN_MAX_SAMPLES);
                return -1;
            }
        }
    }
    if (n_variants > PL_RUN_MAX_VARIANTS) {
        pl_snprintf(err, errlen, "%zu variants in all; a run.json perflab reads holds at most %d", n_variants,
                    PL_RUN_MAX_VARIANTS);
        return -1;
    }
    return 0;
}

int pl_run_from_json(json_t *j, pl_run *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(j)) {
        pl_snprintf(err, errlen, "not a perflab run: the document is not a JSON object");
        return -1;
    }
    if (!json_is_integer(json_object_get(j, "schema_version"))) {
        pl_snprintf(err, errlen, "not a perflab run: no \"schema_version\"");
        return -1;
    }
    if (pl_run_json_check_size(j, err, errlen) != 0)
        return -1;
    json_int_t version = json_integer_value(json_object_get(j, "schema_version"));
    if (version > PL_SCHEMA_VERSION || version < 1) {
        pl_snprintf(err, errlen,
                    "run schema_version %lld is not supported (this perflab reads 1..%d): use a matching perflab",
                    (long long)version, PL_SCHEMA_VERSION);
        return -1;
    }
    if (!json_is_array(json_object_get(j, "targets"))) {
        pl_snprintf(err, errlen, "not a perflab run: \"targets\" is not an array");
        return -1;
    }
    if (pl_run_fields_from_json(j, r, err, errlen) != 0) {
        pl_run_free(r);
        return -1;
    }
    return 0;
}

int pl_run_load(const char *path, pl_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *file = pl_is_dir(path) ? pl_path_join(path, "run.json") : pl_strdup(path);
    if (!pl_path_exists(file)) {
        pl_snprintf(err, errlen, "'%s' is not a run: no %s (give an artifacts/<run_id> folder or its run.json)",
                    PL_ESC(path), PL_ESC(file));
        free(file);
        return -1;
    }
    json_t *j = pl_json_load_file(file, err, errlen);
    if (!j) {
        free(file);
        return -1;
    }
    char sub[512];
    int rc = pl_run_from_json(j, out, sub, sizeof sub);
    json_decref(j);
    if (rc != 0) {
        pl_snprintf(err, errlen, "%s: %s", PL_ESC(file), sub);
        pl_run_free(out);
    } else {
        out->run_dir = pl_is_dir(path) ? pl_strdup(path) : NULL;
    }
    free(file);
    return rc;
}

