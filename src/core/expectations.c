/* Per-GPU expectations: load, validate, compare a run with them, merge a run into them, save.
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
 *         "updated_at": "...",             optional, string or null
 *         "git_commit": "..."              optional, string or null
 *       }
 *     ]
 *   }
 *
 * Unknown keys are errors (a misspelt "tolerence" would otherwise be silently ignored). */
#include "core/expectations.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"

/* ---------------------------------------------------------------- hardware keys */

/* Splits a lower-cased GPU name into alphanumeric words, so that "gh200" never matches "h200". */
typedef struct name_words {
    char buf[256];
    const char *word[32];
    size_t n;
} name_words;

static void split_words(const char *name, name_words *w)
{
    size_t len = 0;
    w->n = 0;
    int in_word = 0;
    for (const char *p = name; *p && len + 1 < sizeof w->buf; p++) {
        int c = tolower((unsigned char)*p);
        if (isalnum(c)) {
            if (!in_word && w->n < sizeof w->word / sizeof w->word[0])
                w->word[w->n++] = &w->buf[len];
            in_word = 1;
            w->buf[len++] = (char)c;
        } else if (in_word) {
            in_word = 0;
            w->buf[len++] = '\0';
        }
    }
    w->buf[len] = '\0';
}

static int has_word(const name_words *w, const char *word)
{
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->word[i], word) == 0)
            return 1;
    return 0;
}

/* Lower-case, non-alphanumerics folded to one '_', without the vendor prefix (every name starts "NVIDIA"). */
static char *fold_name(const name_words *w)
{
    pl_buf b = {0};
    for (size_t i = 0; i < w->n; i++) {
        if (i == 0 && w->n > 1 && strcmp(w->word[0], "nvidia") == 0)
            continue;
        pl_buf_printf(&b, "%s%s", b.len ? "_" : "", w->word[i]);
    }
    return b.data ? b.data : pl_strdup("unknown");
}

static char *key_of_one_gpu(const char *name)
{
    name_words w;
    split_words(name ? name : "", &w);
    /* Variants whose form factor changes the numbers (clocks, power, memory) get their own key. */
    if (has_word(&w, "h100"))
        return pl_strdup(has_word(&w, "pcie") ? "h100_pcie" : has_word(&w, "nvl") ? "h100_nvl" : "h100_sxm");
    if (has_word(&w, "h200"))
        return pl_strdup(has_word(&w, "nvl") ? "h200_nvl" : "h200");
    if (has_word(&w, "a100"))
        return pl_strdup(has_word(&w, "pcie") ? "a100_pcie" : "a100_sxm");
    static const char *const plain[] = {"gh200", "gb200", "gb300", "b200", "b300", "gb10", "l40s"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (has_word(&w, plain[i]))
            return pl_strdup(plain[i]);
    return fold_name(&w);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *pl_hardware_key_from_names(const char *const *gpu_names, size_t n)
{
    if (n == 0)
        return pl_strdup("no_gpu");
    char **keys = pl_xmalloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = key_of_one_gpu(gpu_names[i]);
    /* sorted, so that the key does not depend on the order of the ordinals */
    qsort(keys, n, sizeof *keys, cmp_str_ptr);
    pl_buf b = {0};
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(keys[j], keys[i]) == 0)
            j++;
        if (b.len)
            pl_buf_append(&b, "+");
        if (j - i > 1)
            pl_buf_printf(&b, "%zux_", j - i);
        pl_buf_append(&b, keys[i]);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return b.data;
}

char *pl_expectations_key(const char *const *gpu_names, size_t n)
{
    const char *env = getenv("PERFLAB_EXPECTATION_KEY");
    if (env && *env)
        return pl_strdup(env);
    return pl_hardware_key_from_names(gpu_names, n);
}

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

/* ---------------------------------------------------------------- parameters */

static int cmp_param_by_name(const void *a, const void *b)
{
    const pl_param_kv *x = *(const pl_param_kv *const *)a, *y = *(const pl_param_kv *const *)b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

char *pl_params_canonical(const pl_target_result *t)
{
    /* sorted by name: the same parameters always give the same text, whatever order they were stored in */
    const pl_param_kv **sorted = pl_xmalloc((t->n_params ? t->n_params : 1) * sizeof *sorted);
    for (size_t i = 0; i < t->n_params; i++)
        sorted[i] = &t->params[i];
    qsort(sorted, t->n_params, sizeof *sorted, cmp_param_by_name);
    pl_buf b = {0};
    for (size_t i = 0; i < t->n_params; i++)
        pl_buf_printf(&b, "%s%s=%s", i ? " " : "", sorted[i]->name ? sorted[i]->name : "",
                      sorted[i]->value ? sorted[i]->value : "");
    free(sorted);
    return b.data ? b.data : pl_strdup("");
}

/* ---------------------------------------------------------------- entries */

static void entry_free(pl_expect_entry *x)
{
    free(x->target);
    free(x->variant);
    free(x->params);
    free(x->updated_at);
    free(x->git_commit);
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

static int cmp_entry(const void *a, const void *b)
{
    const pl_expect_entry *x = a, *y = b;
    int c = strcmp(x->target, y->target);
    return c ? c : strcmp(x->variant, y->variant);
}

static pl_expect_entry *find_entry(const pl_expectations *e, const char *target, const char *variant)
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
    pl_snprintf(c->err, c->errlen, "%s: %s: %s", c->path, where, msg);
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
            return schema_error(c, where, "unknown key '%s' (did you mean %s?)", key, hint);
        return schema_error(c, where, "unknown key '%s' (remove it)", key);
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
    static const char *const known[] = {"target",    "variant", "median_ms",  "rel_noise",
                                        "tolerance", "params",  "updated_at", "git_commit"};
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
        get_string(c, j, "git_commit", where, 0, &x->git_commit))
        return -1;
    if (!strchr(x->target, ':'))
        return schema_error(c, where, "target '%s' is not of the form group:name", x->target);
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
            if (cmp_entry(&out->entries[k], x) == 0) {
                char where[48];
                pl_snprintf(where, sizeof where, "entries[%zu]", i);
                return schema_error(c, where, "duplicate of entries[%zu] (%s / %s); keep one of them", k, x->target,
                                    x->variant);
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
        pl_snprintf(c->err, c->errlen, "%s: expected a JSON object at the top level, found %s", c->path,
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
    if (key && strcmp(out->hardware_key, key) != 0)
        return schema_error(c, "hardware_key",
                            "the file is for '%s', not for '%s' (use %s.json, or set "
                            "PERFLAB_EXPECTATION_KEY=%s to compare with this file)",
                            out->hardware_key, key, key, out->hardware_key);
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

int pl_expectations_save(const pl_expectations *e, const char *path, char *err, size_t errlen)
{
    /* sorted copies of the pointers: a stable order makes each update a small diff */
    pl_expect_entry *sorted = pl_xmalloc((e->n_entries ? e->n_entries : 1) * sizeof *sorted);
    memcpy(sorted, e->entries, e->n_entries * sizeof *sorted);
    qsort(sorted, e->n_entries, sizeof *sorted, cmp_entry);

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

/* ---------------------------------------------------------------- compare */

static int is_measured(const pl_variant_result *v)
{
    return (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED) && v->has_stats && v->stats.n > 0;
}

static double finite_or_zero(double x)
{
    return isfinite(x) && x > 0 ? x : 0.0;
}

typedef struct row_list {
    pl_expect_row *rows;
    size_t n, cap;
} row_list;

static pl_expect_row *add_row(row_list *l, const char *target, const char *variant, pl_expect_verdict verdict)
{
    pl_reserve(&l->rows, &l->cap, l->n + 1, sizeof *l->rows);
    pl_expect_row *r = &l->rows[l->n++];
    memset(r, 0, sizeof *r);
    r->target = pl_strdup(target);
    r->variant = pl_strdup(variant);
    r->verdict = verdict;
    r->expected_ms = r->measured_ms = r->change = r->threshold = NAN;
    return r;
}

static char *status_note(pl_status status, const char *reason, const char *what)
{
    if (reason && *reason)
        return pl_strfmt("%s %s: %s", what, pl_status_name(status), reason);
    return pl_strfmt("%s %s", what, pl_status_name(status));
}

/* The measured median against the stored one: the noise-aware rule of expectations.h. */
static void judge(const pl_expect_entry *x, const pl_variant_result *v, pl_expect_row *r)
{
    double noise_run = finite_or_zero(v->stats.rel_noise), noise_stored = finite_or_zero(x->rel_noise);
    double noise = PL_EXPECT_NOISE_SIGMAS * sqrt(noise_run * noise_run + noise_stored * noise_stored);
    r->expected_ms = x->median_ms;
    r->measured_ms = v->stats.median;
    r->change = v->stats.median / x->median_ms - 1.0;
    r->threshold = x->tolerance > noise ? x->tolerance : noise;
    const char *bound = x->tolerance >= noise ? "tolerance" : "noise";
    if (r->change > r->threshold) {
        r->verdict = PL_EXPECT_REGRESSED;
        r->note = pl_strfmt("%.1f%% slower than expected; allowed %.1f%% (%s: tolerance %.1f%%, %.0f-sigma noise "
                            "%.1f%%)",
                            100 * r->change, 100 * r->threshold, bound, 100 * x->tolerance, PL_EXPECT_NOISE_SIGMAS,
                            100 * noise);
    } else if (r->change < -r->threshold) {
        r->verdict = PL_EXPECT_IMPROVED;
        r->note = pl_strfmt("%.1f%% faster than expected; store it with --update-expectations", -100 * r->change);
    } else {
        r->verdict = PL_EXPECT_MET;
    }
}

static void compare_variant(const pl_expectations *e, const pl_target_result *t, const char *params,
                            const pl_variant_result *v, row_list *rows)
{
    const pl_expect_entry *x = find_entry(e, t->name, v->name);
    if (!is_measured(v)) {
        if (!x)
            return; /* neither measured nor expected: nothing to say */
        pl_expect_row *r = add_row(rows, t->name, v->name, PL_EXPECT_MISSING);
        r->expected_ms = x->median_ms;
        if (v->status == PL_STATUS_OK || v->status == PL_STATUS_UNVERIFIED)
            r->note = pl_strfmt("not timed (status %s, no samples)", pl_status_name(v->status));
        else
            r->note = status_note(v->status, v->reason ? v->reason : t->reason, "not timed: status");
        return;
    }
    pl_expect_row *r = add_row(rows, t->name, v->name, PL_EXPECT_NEW);
    r->measured_ms = v->stats.median;
    if (!x) {
        r->note = pl_strdup("no expectation stored yet");
    } else if (x->params && strcmp(x->params, params) != 0) {
        r->note =
            pl_strfmt("measured with other parameters (stored \"%s\", now \"%s\"): not compared", x->params, params);
    } else {
        judge(x, v, r);
    }
}

/* Stored variants of a target that the run has no result for at all (renamed, or the target did not run). */
static void add_absent_variants(const pl_expectations *e, const pl_target_result *t, row_list *rows)
{
    for (size_t i = 0; i < e->n_entries; i++) {
        const pl_expect_entry *x = &e->entries[i];
        if (strcmp(x->target, t->name) != 0 || pl_target_find_variant(t, x->variant))
            continue;
        pl_expect_row *r = add_row(rows, x->target, x->variant, PL_EXPECT_MISSING);
        r->expected_ms = x->median_ms;
        if (t->status != PL_STATUS_OK && t->status != PL_STATUS_UNVERIFIED)
            r->note = status_note(t->status, t->reason, "target status");
        else
            r->note = pl_strdup("no result for this variant in the run (renamed or removed?)");
    }
}

void pl_expectations_compare(const pl_expectations *e, const pl_run *run, pl_expect_report *out)
{
    row_list rows = {0};
    for (size_t ti = 0; ti < run->n_targets; ti++) {
        const pl_target_result *t = &run->targets[ti];
        if (!t->name)
            continue;
        char *params = pl_params_canonical(t);
        for (size_t vi = 0; vi < t->n_variants; vi++)
            if (t->variants[vi].name)
                compare_variant(e, t, params, &t->variants[vi], &rows);
        add_absent_variants(e, t, &rows);
        free(params);
    }

    /* replace whatever rows the report held; key, file and flags are the caller's to set */
    for (size_t i = 0; i < out->n_rows; i++) {
        free(out->rows[i].target);
        free(out->rows[i].variant);
        free(out->rows[i].note);
    }
    free(out->rows);
    out->rows = rows.rows;
    out->n_rows = rows.n;
    out->regressions = 0;
    for (size_t i = 0; i < rows.n; i++)
        out->regressions += rows.rows[i].verdict == PL_EXPECT_REGRESSED;
    out->present = 1;
}

/* ---------------------------------------------------------------- update */

static void replace_string(char **dst, const char *src)
{
    char *copy = pl_strdup(src);
    free(*dst);
    *dst = copy;
}

static pl_expect_entry *add_entry(pl_expectations *e, const char *target, const char *variant)
{
    e->entries = pl_xrealloc(e->entries, (e->n_entries + 1) * sizeof *e->entries);
    pl_expect_entry *x = &e->entries[e->n_entries++];
    memset(x, 0, sizeof *x);
    x->target = pl_strdup(target);
    x->variant = pl_strdup(variant);
    x->tolerance = PL_EXPECT_DEFAULT_TOLERANCE;
    return x;
}

size_t pl_expectations_update(pl_expectations *e, const pl_run *run)
{
    size_t written = 0;
    for (size_t ti = 0; ti < run->n_targets; ti++) {
        const pl_target_result *t = &run->targets[ti];
        char *params = pl_params_canonical(t);
        for (size_t vi = 0; vi < t->n_variants && t->name; vi++) {
            const pl_variant_result *v = &t->variants[vi];
            /* only verified results: an unverified kernel may be fast because it is wrong */
            if (!v->name || v->status != PL_STATUS_OK || !is_measured(v) || !(v->stats.median > 0))
                continue;
            pl_expect_entry *x = find_entry(e, t->name, v->name);
            if (!x)
                x = add_entry(e, t->name, v->name); /* an existing entry keeps its reviewed tolerance */
            x->median_ms = v->stats.median;
            x->rel_noise = finite_or_zero(v->stats.rel_noise);
            replace_string(&x->params, params);
            replace_string(&x->updated_at, run->prov.started_at);
            replace_string(&x->git_commit, run->prov.git_commit);
            written++;
        }
        free(params);
    }
    if (written > 0) {
        e->schema_version = PL_EXPECTATIONS_SCHEMA_VERSION;
        if (!e->hardware_key)
            e->hardware_key = pl_strdup(run->prov.hardware_key);
        /* a run that lacks a field (an old run.json) leaves the stored one as it was */
        if (run->prov.n_gpus > 0 && run->prov.gpus[0].name)
            replace_string(&e->gpu_name, run->prov.gpus[0].name);
        if (run->prov.perflab_version)
            replace_string(&e->perflab_version, run->prov.perflab_version);
        if (run->prov.started_at)
            replace_string(&e->updated_at, run->prov.started_at);
        qsort(e->entries, e->n_entries, sizeof *e->entries, cmp_entry);
    }
    return written;
}
