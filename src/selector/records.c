#include "selector/records.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"
#include "core/util.h"

static const char *const status_names[] = {"ok", "failed", "unsupported", "missing"};

const char *pl_gemm_status_name(pl_gemm_status s)
{
    return pl_name_of(status_names, PL_GEMM_STATUS_COUNT, (int)s);
}

int pl_gemm_status_from_name(const char *name)
{
    return pl_index_of(status_names, PL_GEMM_STATUS_COUNT, name);
}

void pl_gemm_record_free(pl_gemm_record *r)
{
    free(r->provider);
    free(r->shape);
    free(r->dtype);
    free(r->layout);
    free(r->kernel);
    free(r->reason);
    json_decref(r->config);
    memset(r, 0, sizeof *r);
}

void pl_gemm_record_copy(pl_gemm_record *dst, const pl_gemm_record *src)
{
    *dst = *src;
    dst->provider = pl_strdup(src->provider);
    dst->shape = pl_strdup(src->shape);
    dst->dtype = pl_strdup(src->dtype);
    dst->layout = pl_strdup(src->layout);
    dst->kernel = pl_strdup(src->kernel);
    dst->reason = pl_strdup(src->reason);
    dst->config = src->config ? json_deep_copy(src->config) : NULL;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *pl_gemm_record_to_json(const pl_gemm_record *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "provider", str_or_null(r->provider));
    json_object_set_new(j, "shape", str_or_null(r->shape));
    json_object_set_new(j, "m", json_integer(r->m));
    json_object_set_new(j, "n", json_integer(r->n));
    json_object_set_new(j, "k", json_integer(r->k));
    json_object_set_new(j, "dtype", str_or_null(r->dtype));
    json_object_set_new(j, "layout", str_or_null(r->layout));
    json_object_set_new(j, "kernel", str_or_null(r->kernel));
    json_object_set_new(j, "config", r->config ? json_incref(r->config) : json_object());
    json_object_set_new(j, "median_ms", pl_json_real(r->median_ms));
    json_object_set_new(j, "tflops", pl_json_real(r->tflops));
    json_object_set_new(j, "noise", pl_json_real(r->noise));
    json_object_set_new(j, "samples", json_integer(r->samples));
    json_object_set_new(j, "verified", json_boolean(r->verified));
    json_object_set_new(j, "rel_l2_error", pl_json_real(r->rel_l2_error));
    json_object_set_new(j, "status", json_string(pl_gemm_status_name(r->status)));
    json_object_set_new(j, "reason", str_or_null(r->reason));
    return j;
}

static int fail(char *err, size_t errlen, const char *where, const char *key, const char *expected, json_t *found)
{
    const char *what = !found                   ? "nothing"
                       : json_is_null(found)    ? "null"
                       : json_is_string(found)  ? "a string"
                       : json_is_number(found)  ? "a number"
                       : json_is_boolean(found) ? "a boolean"
                       : json_is_array(found)   ? "an array"
                                                : "an object";
    pl_snprintf(err, errlen, "%s.%s: expected %s, found %s", where, key, expected, what);
    return -1;
}

static int get_string(json_t *j, const char *where, const char *key, int required, char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(j, key);
    if (!v || json_is_null(v)) {
        if (required)
            return fail(err, errlen, where, key, "a string", v);
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v))
        return fail(err, errlen, where, key, "a string", v);
    *out = pl_strdup(json_string_value(v));
    return 0;
}

static int get_dim(json_t *j, const char *where, const char *key, long long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1)
        return fail(err, errlen, where, key, "a positive integer", v);
    *out = json_integer_value(v);
    return 0;
}

/* A number or null (NaN) when optional; positive when `positive`. */
static int get_real(json_t *j, const char *where, const char *key, int required, int positive, double *out, char *err,
                    size_t errlen)
{
    json_t *v = json_object_get(j, key);
    const char *expected = positive ? "a positive number" : "a number";
    if (!v || json_is_null(v)) {
        *out = NAN;
        return required ? fail(err, errlen, where, key, expected, v) : 0;
    }
    if (!json_is_number(v) || (positive && !(json_number_value(v) > 0)))
        return fail(err, errlen, where, key, expected, v);
    *out = json_number_value(v);
    return 0;
}

int pl_gemm_record_from_json(json_t *j, const char *where, pl_gemm_record *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!json_is_object(j)) {
        pl_snprintf(err, errlen, "%s: expected an object (a record)", where);
        return -1;
    }
    char *status = NULL;
    int rc = -1;
    if (get_string(j, where, "provider", 1, &r->provider, err, errlen) ||
        get_string(j, where, "shape", 0, &r->shape, err, errlen) || get_dim(j, where, "m", &r->m, err, errlen) ||
        get_dim(j, where, "n", &r->n, err, errlen) || get_dim(j, where, "k", &r->k, err, errlen) ||
        get_string(j, where, "dtype", 1, &r->dtype, err, errlen) ||
        get_string(j, where, "layout", 0, &r->layout, err, errlen) ||
        get_string(j, where, "kernel", 0, &r->kernel, err, errlen) ||
        get_string(j, where, "status", 0, &status, err, errlen) ||
        get_string(j, where, "reason", 0, &r->reason, err, errlen))
        goto out;
    r->status = PL_GEMM_OK;
    if (status) {
        int s = pl_gemm_status_from_name(status);
        if (s < 0) {
            pl_snprintf(err, errlen, "%s.status: expected ok, failed, unsupported or missing, found '%s'", where,
                        PL_ESC(status));
            goto out;
        }
        r->status = (pl_gemm_status)s;
    }
    const int ok = r->status == PL_GEMM_OK;
    json_t *verified = json_object_get(j, "verified");
    if (!json_is_boolean(verified)) {
        fail(err, errlen, where, "verified", "true or false", verified);
        goto out;
    }
    r->verified = json_is_true(verified);
    if (get_real(j, where, "median_ms", ok, ok, &r->median_ms, err, errlen) ||
        get_real(j, where, "tflops", 0, 0, &r->tflops, err, errlen) ||
        get_real(j, where, "noise", 0, 0, &r->noise, err, errlen) ||
        get_real(j, where, "rel_l2_error", 0, 0, &r->rel_l2_error, err, errlen))
        goto out;
    json_t *samples = json_object_get(j, "samples");
    if (samples && !json_is_null(samples)) {
        if (!json_is_integer(samples) || json_integer_value(samples) < 0) {
            fail(err, errlen, where, "samples", "a non-negative integer", samples);
            goto out;
        }
        r->samples = json_integer_value(samples);
    }
    json_t *config = json_object_get(j, "config");
    if (config && !json_is_null(config)) {
        if (!json_is_object(config)) {
            fail(err, errlen, where, "config", "an object", config);
            goto out;
        }
        r->config = json_incref(config);
    }
    if (!r->layout)
        r->layout = pl_strdup("nk");
    if (isnan(r->tflops) && r->median_ms > 0)
        r->tflops = 2.0 * (double)r->m * (double)r->n * (double)r->k / (r->median_ms * 1e9);
    rc = 0;
out:
    free(status);
    if (rc != 0)
        pl_gemm_record_free(r);
    return rc;
}

void pl_gemm_record_list_push(pl_gemm_record_list *l, pl_gemm_record *r)
{
    pl_reserve(&l->items, &l->cap, l->n + 1, sizeof *l->items);
    l->items[l->n++] = *r;
    memset(r, 0, sizeof *r);
}

void pl_gemm_record_list_free(pl_gemm_record_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        pl_gemm_record_free(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int pl_gemm_records_load(const char *path, pl_gemm_record_list *out, char *err, size_t errlen)
{
    json_t *doc = pl_json_load_file(path, err, errlen);
    if (!doc) {
        /* jansson's syntax errors quote the input ("invalid token near '\x11'") */
        char esc[1024];
        pl_snprintf(err, errlen, "%s", pl_escape(err, 0, esc, sizeof esc));
        return -1;
    }
    json_t *records = doc;
    int rc = 0;
    if (json_is_object(doc)) {
        json_t *schema = json_object_get(doc, "schema");
        if (schema && (!json_is_string(schema) || strcmp(json_string_value(schema), PL_GEMM_RECORDS_SCHEMA) != 0)) {
            pl_snprintf(err, errlen, "%s: schema is not \"%s\": not a perflab gemm records file", path,
                        PL_GEMM_RECORDS_SCHEMA);
            rc = -1;
        }
        records = json_object_get(doc, "records");
    }
    if (rc == 0 && !json_is_array(records)) {
        pl_snprintf(err, errlen, "%s: expected an array of records, or an object with \"records\": [...]", path);
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < json_array_size(records); i++) {
        char where[512];
        pl_snprintf(where, sizeof where, "%s: records[%zu]", path, i);
        pl_gemm_record r;
        if ((rc = pl_gemm_record_from_json(json_array_get(records, i), where, &r, err, errlen)) == 0)
            pl_gemm_record_list_push(out, &r);
    }
    json_decref(doc);
    return rc;
}

json_t *pl_gemm_records_to_json(const char *provider, const pl_gemm_record_list *l)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(arr, pl_gemm_record_to_json(&l->items[i]));
    return json_pack("{s:s, s:s, s:o}", "schema", PL_GEMM_RECORDS_SCHEMA, "provider", provider, "records", arr);
}

const pl_gemm_record *pl_gemm_records_fastest(const pl_gemm_record_list *l)
{
    const pl_gemm_record *best = NULL;
    for (size_t i = 0; i < l->n; i++) {
        const pl_gemm_record *r = &l->items[i];
        if (r->status == PL_GEMM_OK && r->verified && r->median_ms > 0 && (!best || r->median_ms < best->median_ms))
            best = r;
    }
    return best;
}
