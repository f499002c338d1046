/* Per-GPU expectation files: where they are, load and validate, save (the judgement of a run against them is
 * expectations.c).
 *
 * File format (expectations/<hardware_key>.json, schema_version 1), kept easy to review in a diff: entries
 * sorted by target then variant, one object each, keys in a fixed order.
 *
 *   {
 *     "schema_version": 1,                 required, the integer 1
 *     "hardware_key": "h200",              required, must equal the key the file is loaded for
 *     "provenance": {                      optional: the last update (strings or null)
 *       "gpu_name": "NVIDIA H200", "perflab_version": "0.1.0", "updated_at": "2025-01-01T00:00:00Z"
 *     },
 *     "entries": [                         required, may be empty; no two with the same target and variant
 *       {
 *         "target": "memory:coalescing",   required, "group:name"
 *         "variant": "baseline",           required
 *         "median_ms": 0.123,              required, > 0
 *         "rel_noise": 0.004,              optional, >= 0 (default 0): the noise measured when stored
 *         "tolerance": 0.1,                optional, >= 0 (default PL_EXPECT_DEFAULT_TOLERANCE)
 *         "params": "n=64m",               optional: canonical parameters; absent or null = any parameters
 *         "host": "ci-a",                  optional, host-timed variants: the PERFLAB_HOST_KEY of the update
 *         "updated_at": "...",             optional, string or null
 *         "git_commit": "..."              optional, string or null
 *       }
 *     ]
 *   }
 *
 * Unknown keys are errors (a misspelt "tolerence" would otherwise be silently ignored). */
#include "core/expectations.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"

char *pl_expectations_dir(const char *explicit_dir)
{
    if (explicit_dir && *explicit_dir)
        return pl_strdup(explicit_dir);
    const char *env = getenv("PERFLAB_EXPECTATIONS_DIR");
    if (env && *env)
        return pl_strdup(env);
    if (pl_is_dir("expectations"))
        return pl_strdup("expectations");
#ifdef PERFLAB_SOURCE_DIR
    return pl_strdup(PERFLAB_SOURCE_DIR "/expectations");
#else
    return pl_strdup("expectations");
#endif
}

int pl_expectations_key_check(const char *key, const char *from, char *err, size_t errlen)
{
    const size_t n = key ? strlen(key) : 0;
    int ok = n > 0 && n <= PL_EXPECT_KEY_MAX && key[0] != '+' && key[n - 1] != '+';
    for (size_t i = 0; ok && i < n; i++)
        ok = (key[i] >= 'a' && key[i] <= 'z') || (key[i] >= '0' && key[i] <= '9') || key[i] == '_' ||
             (key[i] == '+' && key[i + 1] != '+');
    if (!ok)
        pl_snprintf(err, errlen,
                    "%s '%s' is not a hardware key: use lower-case letters, digits and '_' (h200, 2x_h100_sxm), "
                    "at most %d characters",
                    from, PL_ESC(key ? key : ""), PL_EXPECT_KEY_MAX);
    return ok ? 0 : -1;
}

char *pl_expectations_path(const char *explicit_dir, const char *key, const char *from, char *err, size_t errlen)
{
    if (pl_expectations_key_check(key, from, err, errlen) != 0)
        return NULL;
    char *dir = pl_expectations_dir(explicit_dir);
    char *name = pl_strfmt("%s.json", key);
    char *path = pl_path_join(dir, name);
    free(dir);
    free(name);
    return path;
}

int pl_expect_entry_check(const pl_expect_entry *x, char *err, size_t errlen)
{
    const char *colon = x->target ? strchr(x->target, ':') : NULL;
    if (!x->target || !colon || colon == x->target || !colon[1] || !pl_is_printable(x->target))
        pl_snprintf(err, errlen, "target '%s' is not of the form group:name", PL_ESC(x->target ? x->target : ""));
    else if (!x->variant || !*x->variant || !pl_is_printable(x->variant))
        pl_snprintf(err, errlen, "variant '%s' of %s is not a printable non-empty name",
                    PL_ESC(x->variant ? x->variant : ""), PL_ESC(x->target));
    else if (!isfinite(x->median_ms) || !(x->median_ms > 0))
        pl_snprintf(err, errlen, "%s / %s: median_ms %g is not a positive number", PL_ESC(x->target),
                    PL_ESC(x->variant), x->median_ms);
    else if (!isfinite(x->rel_noise) || x->rel_noise < 0 || !isfinite(x->tolerance) || x->tolerance < 0)
        pl_snprintf(err, errlen, "%s / %s: rel_noise %g and tolerance %g must be numbers >= 0", PL_ESC(x->target),
                    PL_ESC(x->variant), x->rel_noise, x->tolerance);
    else if ((x->params && !pl_is_utf8(x->params)) || (x->updated_at && !pl_is_utf8(x->updated_at)) ||
             (x->git_commit && !pl_is_utf8(x->git_commit)))
        pl_snprintf(err, errlen, "%s / %s: params, updated_at or git_commit is not UTF-8 text", PL_ESC(x->target),
                    PL_ESC(x->variant));
    else
        return 0;
    return -1;
}

/* ---------------------------------------------------------------- entries */

static void entry_free(pl_expect_entry *x)
{
    free(x->target);
    free(x->variant);
    free(x->params);
    free(x->updated_at);
    free(x->git_commit);
    free(x->host);
    memset(x, 0, sizeof *x);
}

void pl_expectations_free(pl_expectations *e)
{
    free(e->hardware_key);
    free(e->gpu_name);
    free(e->perflab_version);
    free(e->updated_at);
    for (size_t i = 0; i < e->n_entries; i++)
        entry_free(&e->entries[i]);
    free(e->entries);
    memset(e, 0, sizeof *e);
}

int pl_expect_entry_cmp(const void *a, const void *b)
{
    const pl_expect_entry *x = a, *y = b;
    int c = strcmp(x->target, y->target);
    return c ? c : strcmp(x->variant, y->variant);
}

pl_expect_entry *pl_expectations_find(const pl_expectations *e, const char *target, const char *variant)
{
    for (size_t i = 0; i < e->n_entries; i++)
        if (strcmp(e->entries[i].target, target) == 0 && strcmp(e->entries[i].variant, variant) == 0)
            return &e->entries[i];
    return NULL;
}

/* ---------------------------------------------------------------- load and validate */

typedef struct load_ctx {
    const char *path;
    char *err;
    size_t errlen;
} load_ctx;

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* "FILE: WHERE: message" */
__attribute__((format(printf, 3, 4))) static int schema_error(const load_ctx *c, const char *where, const char *fmt,
                                                              ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = pl_vstrfmt(fmt, ap);
    va_end(ap);
    pl_snprintf(c->err, c->errlen, "%s: %s: %s", PL_ESC(c->path), where, msg);
    free(msg);
    return -1;
}

/* Rejects keys outside `known`, suggesting the closest known one. */
static int check_keys(const load_ctx *c, const char *where, json_t *obj, const char *const *known, size_t n)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value)
    {
        int ok = 0;
        for (size_t i = 0; i < n && !ok; i++)
            ok = strcmp(key, known[i]) == 0;
        if (ok)
            continue;
        char hint[128];
        if (pl_suggest(key, known, n, 1, hint, sizeof hint) > 0)
            return schema_error(c, where, "unknown key '%s' (did you mean %s?)", PL_ESC(key), hint);
        return schema_error(c, where, "unknown key '%s' (remove it)", PL_ESC(key));
    }
    return 0;
}

/* A required non-empty string, or (optional) an absent/null one -> *out NULL. */
static int get_string(const load_ctx *c, json_t *obj, const char *key, const char *where, int required, char **out)
{
    json_t *v = json_object_get(obj, key);
    char *path = pl_strfmt("%s%s%s", where, *where ? "." : "", key);
    int rc = 0;
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            rc = schema_error(c, path, "missing; expected a non-empty string");
    } else if (!json_is_string(v)) {
        rc = schema_error(c, path, "expected a string, found %s", json_kind(v));
    } else if (required && json_string_length(v) == 0) {
        rc = schema_error(c, path, "expected a non-empty string, found \"\"");
    } else {
        *out = pl_strdup(json_string_value(v));
    }
    free(path);
    return rc;
}

/* A finite number > min_exclusive (positive) or >= 0; absent -> dflt when not required. */
static int get_number(const load_ctx *c, json_t *obj, const char *key, const char *where, int required,
                      int strictly_positive, double dflt, double *out)
{
    json_t *v = json_object_get(obj, key);
    char *path = pl_strfmt("%s.%s", where, key);
    const char *want = strictly_positive ? "a positive number" : "a number >= 0";
    int rc = 0;
    *out = dflt;
    if (!v) {
        if (required)
            rc = schema_error(c, path, "missing; expected %s", want);
    } else if (!json_is_number(v)) {
        rc = schema_error(c, path, "expected %s, found %s", want, json_kind(v));
    } else {
        double x = json_number_value(v);
        if (!isfinite(x) || x < 0 || (strictly_positive && x == 0))
            rc = schema_error(c, path, "expected %s, found %g", want, x);
        else
            *out = x;
    }
    free(path);
    return rc;
}

static int parse_entry(const load_ctx *c, json_t *j, size_t index, pl_expect_entry *x)
{
    static const char *const known[] = {"target", "variant",    "median_ms",  "rel_noise", "tolerance",
                                        "params", "updated_at", "git_commit", "host"};
    char where[48];
    pl_snprintf(where, sizeof where, "entries[%zu]", index);
    if (!json_is_object(j))
        return schema_error(c, where, "expected an object, found %s", json_kind(j));
    if (check_keys(c, where, j, known, sizeof known / sizeof known[0]) ||
        get_string(c, j, "target", where, 1, &x->target) || get_string(c, j, "variant", where, 1, &x->variant) ||
        get_number(c, j, "median_ms", where, 1, 1, 0, &x->median_ms) ||
        get_number(c, j, "rel_noise", where, 0, 0, 0, &x->rel_noise) ||
        get_number(c, j, "tolerance", where, 0, 0, PL_EXPECT_DEFAULT_TOLERANCE, &x->tolerance) ||
        get_string(c, j, "params", where, 0, &x->params) || get_string(c, j, "updated_at", where, 0, &x->updated_at) ||
        get_string(c, j, "git_commit", where, 0, &x->git_commit) || get_string(c, j, "host", where, 0, &x->host))
        return -1;
    char why[512];
    if (pl_expect_entry_check(x, why, sizeof why) != 0)
        return schema_error(c, where, "%s", why);
    return 0;
}

static int parse_entries(const load_ctx *c, json_t *arr, pl_expectations *out)
{
    if (!arr)
        return schema_error(c, "entries", "missing; expected an array of entries (may be empty)");
    if (!json_is_array(arr))
        return schema_error(c, "entries", "expected an array, found %s", json_kind(arr));
    size_t n = json_array_size(arr);
    out->entries = pl_xcalloc(n ? n : 1, sizeof *out->entries);
    for (size_t i = 0; i < n; i++) {
        pl_expect_entry *x = &out->entries[i];
        out->n_entries = i + 1; /* so that a partial entry is freed on error */
        if (parse_entry(c, json_array_get(arr, i), i, x))
            return -1;
        for (size_t k = 0; k < i; k++)
            if (pl_expect_entry_cmp(&out->entries[k], x) == 0) {
                char where[48];
                pl_snprintf(where, sizeof where, "entries[%zu]", i);
                return schema_error(c, where, "duplicate of entries[%zu] (%s / %s); keep one of them", k,
                                    PL_ESC(x->target), PL_ESC(x->variant));
            }
    }
    return 0;
}

static int parse_provenance(const load_ctx *c, json_t *p, pl_expectations *out)
{
    static const char *const known[] = {"gpu_name", "perflab_version", "updated_at"};
    if (!p || json_is_null(p))
        return 0;
    if (!json_is_object(p))
        return schema_error(c, "provenance", "expected an object, found %s", json_kind(p));
    if (check_keys(c, "provenance", p, known, sizeof known / sizeof known[0]) ||
        get_string(c, p, "gpu_name", "provenance", 0, &out->gpu_name) ||
        get_string(c, p, "perflab_version", "provenance", 0, &out->perflab_version) ||
        get_string(c, p, "updated_at", "provenance", 0, &out->updated_at))
        return -1;
    return 0;
}

static int parse_header(const load_ctx *c, json_t *root, const char *key, pl_expectations *out)
{
    static const char *const known[] = {"schema_version", "hardware_key", "provenance", "entries"};
    if (!json_is_object(root)) {
        pl_snprintf(c->err, c->errlen, "%s: expected a JSON object at the top level, found %s", PL_ESC(c->path),
                    json_kind(root));
        return -1;
    }
    if (check_keys(c, "top level", root, known, sizeof known / sizeof known[0]))
        return -1;
    json_t *version = json_object_get(root, "schema_version");
    if (!json_is_integer(version))
        return schema_error(c, "schema_version", "expected the integer %d, found %s", PL_EXPECTATIONS_SCHEMA_VERSION,
                            version ? json_kind(version) : "nothing");
    if (json_integer_value(version) != PL_EXPECTATIONS_SCHEMA_VERSION)
        return schema_error(c, "schema_version", "version %lld is not supported (this perflab reads %d)",
                            (long long)json_integer_value(version), PL_EXPECTATIONS_SCHEMA_VERSION);
    out->schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
    if (get_string(c, root, "hardware_key", "", 1, &out->hardware_key))
        return -1;
    char why[512];
    if (pl_expectations_key_check(out->hardware_key, "the file's key", why, sizeof why) != 0)
        return schema_error(c, "hardware_key", "%s", why);
    if (key && strcmp(out->hardware_key, key) != 0)
        return schema_error(c, "hardware_key",
                            "the file is for '%s', not for '%s' (use %s.json, or set "
                            "PERFLAB_EXPECTATION_KEY=%s to compare with this file)",
                            PL_ESC(out->hardware_key), PL_ESC(key), PL_ESC(key), PL_ESC(out->hardware_key));
    return 0;
}

int pl_expectations_load(const char *path, const char *key, pl_expectations *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!pl_path_exists(path)) {
        out->schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
        out->hardware_key = pl_strdup(key);
        return 1;
    }
    if (pl_is_dir(path)) {
        pl_snprintf(err, errlen,
                    "%s is a directory, not an expectations file: move it away or pass another --expectations-dir",
                    PL_ESC(path));
        return -1;
    }
    json_t *root = pl_json_load_file(path, err, errlen);
    if (!root)
        return -1;
    load_ctx c = {path, err, errlen};
    int rc = parse_header(&c, root, key, out);
    if (rc == 0)
        rc = parse_provenance(&c, json_object_get(root, "provenance"), out);
    if (rc == 0)
        rc = parse_entries(&c, json_object_get(root, "entries"), out);
    json_decref(root);
    if (rc != 0) {
        pl_expectations_free(out);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- save */

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *entry_to_json(const pl_expect_entry *x)
{
    json_t *j = json_object();
    json_object_set_new(j, "target", json_string(x->target));
    json_object_set_new(j, "variant", json_string(x->variant));
    json_object_set_new(j, "median_ms", pl_json_real(x->median_ms));
    json_object_set_new(j, "rel_noise", pl_json_real(x->rel_noise));
    json_object_set_new(j, "tolerance", pl_json_real(x->tolerance));
    json_object_set_new(j, "params", string_or_null(x->params));
    json_object_set_new(j, "updated_at", string_or_null(x->updated_at));
    json_object_set_new(j, "git_commit", string_or_null(x->git_commit));
    if (x->host) /* only host-timed entries stored on a named host carry one */
        json_object_set_new(j, "host", json_string(x->host));
    return j;
}

static char *parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return NULL;
    char *dir = pl_strdup(path);
    dir[slash - path] = '\0';
    return dir;
}

/* The writer's check: the loader's rules on the key and on every entry. */
static int check_before_save(const pl_expectations *e, const char *path, char *err, size_t errlen)
{
    char why[512];
    if (pl_expectations_key_check(e->hardware_key, "hardware_key", why, sizeof why) != 0) {
        pl_snprintf(err, errlen, "not writing %s: %s", PL_ESC(path), why);
        return -1;
    }
    if ((e->gpu_name && !pl_is_utf8(e->gpu_name)) || (e->perflab_version && !pl_is_utf8(e->perflab_version)) ||
        (e->updated_at && !pl_is_utf8(e->updated_at))) {
        pl_snprintf(err, errlen, "not writing %s: the provenance is not UTF-8 text", PL_ESC(path));
        return -1;
    }
    for (size_t i = 0; i < e->n_entries; i++)
        if (pl_expect_entry_check(&e->entries[i], why, sizeof why) != 0) {
            pl_snprintf(err, errlen, "not writing %s: %s (the loader would refuse the file)", PL_ESC(path), why);
            return -1;
        }
    return 0;
}

int pl_expectations_save(const pl_expectations *e, const char *path, char *err, size_t errlen)
{
    if (check_before_save(e, path, err, errlen) != 0)
        return -1;
    /* sorted copies of the pointers: a stable order makes each update a small diff */
    pl_expect_entry *sorted = pl_xmalloc((e->n_entries ? e->n_entries : 1) * sizeof *sorted);
    if (e->n_entries) /* an empty set has no array to copy (memcpy from NULL is undefined even for 0 bytes) */
        memcpy(sorted, e->entries, e->n_entries * sizeof *sorted);
    qsort(sorted, e->n_entries, sizeof *sorted, pl_expect_entry_cmp);

    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(PL_EXPECTATIONS_SCHEMA_VERSION));
    json_object_set_new(root, "hardware_key", string_or_null(e->hardware_key));
    json_t *prov = json_object();
    json_object_set_new(prov, "gpu_name", string_or_null(e->gpu_name));
    json_object_set_new(prov, "perflab_version", string_or_null(e->perflab_version));
    json_object_set_new(prov, "updated_at", string_or_null(e->updated_at));
    json_object_set_new(root, "provenance", prov);
    json_t *entries = json_array();
    for (size_t i = 0; i < e->n_entries; i++)
        json_array_append_new(entries, entry_to_json(&sorted[i]));
    json_object_set_new(root, "entries", entries);
    free(sorted);

    int rc = 0;
    char *dir = parent_dir(path);
    if (dir && !pl_is_dir(dir))
        rc = pl_mkdir_p(dir, err, errlen);
    free(dir);
    if (rc == 0)
        rc = pl_json_save_file(root, path, err, errlen);
    json_decref(root);
    return rc;
}

