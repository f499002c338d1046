#include "core/jschema.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define AT(obj, off, type) ((type *)((char *)(obj) + (off)))
#define CAT(obj, off, type) ((const type *)((const char *)(obj) + (off)))

static json_t *real_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *pl_jtable_to_json(const pl_jtable *t, const void *obj)
{
    json_t *j = json_object();
    for (size_t i = 0; i < t->n; i++) {
        const pl_jfield *f = &t->fields[i];
        json_t *v = NULL;
        switch (f->kind) {
        case PL_J_STR: {
            const char *s = *CAT(obj, f->offset, char *);
            v = s ? json_string(s) : json_null();
            break;
        }
        case PL_J_CHARS: v = json_string(CAT(obj, f->offset, char)); break;
        case PL_J_INT: v = json_integer(*CAT(obj, f->offset, int)); break;
        case PL_J_BOOL: v = json_boolean(*CAT(obj, f->offset, int)); break;
        case PL_J_SIZE: v = json_integer((json_int_t)*CAT(obj, f->offset, size_t)); break;
        case PL_J_U64: v = json_integer((json_int_t)*CAT(obj, f->offset, unsigned long long)); break;
        case PL_J_REAL: v = real_or_null(*CAT(obj, f->offset, double)); break;
        case PL_J_ENUM: {
            int e = *CAT(obj, f->offset, int);
            v = json_string(e >= 0 && e < f->n_names && f->names[e] ? f->names[e] : "unknown");
            break;
        }
        case PL_J_OBJECT:
            if ((f->flags & PL_JF_PRESENCE) && !*CAT(obj, f->present_offset, int))
                continue;
            v = pl_jtable_to_json(f->sub, CAT(obj, f->offset, char));
            break;
        case PL_J_ARRAY: {
            const char *base = *CAT(obj, f->offset, char *);
            size_t n = *CAT(obj, f->count_offset, size_t);
            v = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(v, pl_jtable_to_json(f->sub, base + k * f->elem_size));
            break;
        }
        case PL_J_REALS: {
            const double *xs = *CAT(obj, f->offset, double *);
            size_t n = *CAT(obj, f->count_offset, size_t);
            v = json_array();
            for (size_t k = 0; k < n; k++)
                json_array_append_new(v, real_or_null(xs[k]));
            break;
        }
        case PL_J_CUSTOM: v = f->to(obj); break;
        }
        if (v)
            json_object_set_new(j, f->key, v);
    }
    return j;
}

static int fail(char *err, size_t errlen, const char *key, const char *what)
{
    pl_snprintf(err, errlen, "%s: %s", key, what);
    return -1;
}

/* Prefix a nested error with this level's key: "variants[2]" + ".status: ..." */
static void nest(char *err, size_t errlen, const char *key, long index)
{
    char *inner = pl_strdup(err);
    if (index >= 0)
        pl_snprintf(err, errlen, "%s[%ld].%s", key, index, inner);
    else
        pl_snprintf(err, errlen, "%s.%s", key, inner);
    free(inner);
}

static int read_number(const pl_jfield *f, json_t *v, double *out, char *err, size_t errlen)
{
    if (!v || json_is_null(v)) {
        if (f->flags & PL_JF_REQUIRED)
            return fail(err, errlen, f->key, "missing");
        *out = f->dflt;
        return 0;
    }
    if (json_is_boolean(v) && (f->kind == PL_J_INT || f->kind == PL_J_BOOL)) {
        *out = json_is_true(v);
        return 0;
    }
    if (!json_is_number(v))
        return fail(err, errlen, f->key, "not a number");
    *out = json_number_value(v);
    return 0;
}

/* An integer field: whole, and within the C type's range (checked on the double, before any cast). */
static int read_integer(const pl_jfield *f, json_t *v, double lo, double hi, double *out, char *err, size_t errlen)
{
    if (v && json_is_real(v))
        return fail(err, errlen, f->key, "not an integer");
    if (read_number(f, v, out, err, errlen) != 0)
        return -1;
    if (!(*out >= lo && *out <= hi))
        return fail(err, errlen, f->key, "out of range");
    return 0;
}

static int read_field(const pl_jfield *f, json_t *j, void *obj, char *err, size_t errlen)
{
    json_t *v = json_object_get(j, f->key);
    double x = 0;
    switch (f->kind) {
    case PL_J_STR:
        if (v && json_is_string(v))
            *AT(obj, f->offset, char *) = pl_strdup(json_string_value(v));
        else if (v && !json_is_null(v))
            return fail(err, errlen, f->key, "not a string");
        else if (f->flags & PL_JF_REQUIRED)
            return fail(err, errlen, f->key, "missing");
        return 0;
    case PL_J_CHARS:
        if (v && !json_is_string(v))
            return fail(err, errlen, f->key, "not a string");
        pl_snprintf(AT(obj, f->offset, char), f->size, "%s", v ? json_string_value(v) : "");
        return 0;
    case PL_J_INT:
    case PL_J_BOOL:
        if (read_integer(f, v, (double)INT32_MIN, (double)INT32_MAX, &x, err, errlen) != 0)
            return -1;
        *AT(obj, f->offset, int) = (int)x;
        return 0;
    case PL_J_SIZE:
    case PL_J_U64:
        /* jansson integers are 64-bit signed: the upper half of size_t cannot be written */
        if (read_integer(f, v, 0.0, 9007199254740992.0, &x, err, errlen) != 0)
            return -1;
        if (v && json_is_integer(v)) {
            json_int_t i = json_integer_value(v);
            if (i < 0)
                return fail(err, errlen, f->key, "negative");
            if (f->kind == PL_J_SIZE)
                *AT(obj, f->offset, size_t) = (size_t)i;
            else
                *AT(obj, f->offset, unsigned long long) = (unsigned long long)i;
        } else if (f->kind == PL_J_SIZE) {
            *AT(obj, f->offset, size_t) = (size_t)x;
        } else {
            *AT(obj, f->offset, unsigned long long) = (unsigned long long)x;
        }
        return 0;
    case PL_J_REAL:
        if (read_number(f, v, &x, err, errlen) != 0)
            return -1;
        if ((f->flags & PL_JF_NAN_ZERO) && !isfinite(x))
            x = 0;
        *AT(obj, f->offset, double) = x;
        return 0;
    case PL_J_ENUM: {
        const char *name = v ? json_string_value(v) : NULL;
        int e = -1;
        for (int k = 0; name && k < f->n_names; k++)
            if (f->names[k] && strcmp(f->names[k], name) == 0)
                e = k;
        if (e < 0) {
            if (f->flags & PL_JF_REQUIRED) {
                char what[160];
                pl_snprintf(what, sizeof what, "%s", v ? "unknown value" : "missing");
                return fail(err, errlen, f->key, what);
            }
            e = (int)f->dflt;
        }
        *AT(obj, f->offset, int) = e;
        return 0;
    }
    case PL_J_OBJECT: {
        int present = json_is_object(v);
        if (f->flags & PL_JF_PRESENCE)
            *AT(obj, f->present_offset, int) = present;
        if (!present) {
            if (v && !json_is_null(v))
                return fail(err, errlen, f->key, "not an object");
            if (f->flags & PL_JF_REQUIRED)
                return fail(err, errlen, f->key, "missing");
            if (!(f->flags & PL_JF_PRESENCE))
                return pl_jtable_from_json(f->sub, NULL, AT(obj, f->offset, char), err, errlen); /* defaults */
            return 0;
        }
        if (pl_jtable_from_json(f->sub, v, AT(obj, f->offset, char), err, errlen) != 0) {
            nest(err, errlen, f->key, -1);
            return -1;
        }
        return 0;
    }
    case PL_J_ARRAY: {
        if (v && !json_is_array(v))
            return fail(err, errlen, f->key, "not an array");
        if (!v && (f->flags & PL_JF_REQUIRED))
            return fail(err, errlen, f->key, "missing");
        size_t n = json_array_size(v);
        char *base = pl_xcalloc(n ? n : 1, f->elem_size);
        *AT(obj, f->offset, char *) = base;
        *AT(obj, f->count_offset, size_t) = 0;
        for (size_t k = 0; k < n; k++) {
            *AT(obj, f->count_offset, size_t) = k + 1; /* so that a partial read is freed whole */
            if (pl_jtable_from_json(f->sub, json_array_get(v, k), base + k * f->elem_size, err, errlen) != 0) {
                nest(err, errlen, f->key, (long)k);
                return -1;
            }
        }
        return 0;
    }
    case PL_J_REALS: {
        if (v && !json_is_array(v))
            return fail(err, errlen, f->key, "not an array");
        size_t n = json_array_size(v);
        double *xs = pl_xcalloc(n ? n : 1, sizeof *xs);
        *AT(obj, f->offset, double *) = xs;
        *AT(obj, f->count_offset, size_t) = n;
        for (size_t k = 0; k < n; k++) {
            json_t *e = json_array_get(v, k);
            if (!json_is_number(e)) {
                char what[64];
                pl_snprintf(what, sizeof what, "element %zu is not a number", k);
                return fail(err, errlen, f->key, what);
            }
            xs[k] = json_number_value(e);
        }
        return 0;
    }
    case PL_J_CUSTOM: {
        char sub[256] = "";
        if (f->from(v, obj, sub, sizeof sub) != 0)
            return fail(err, errlen, f->key, sub);
        return 0;
    }
    }
    return 0;
}

int pl_jtable_from_json(const pl_jtable *t, json_t *j, void *obj, char *err, size_t errlen)
{
    if (j && !json_is_object(j)) {
        pl_snprintf(err, errlen, "not a JSON object");
        return -1;
    }
    for (size_t i = 0; i < t->n; i++)
        if (read_field(&t->fields[i], j, obj, err, errlen) != 0)
            return -1;
    return t->after_read ? t->after_read(obj, err, errlen) : 0;
}

void pl_jtable_free(const pl_jtable *t, void *obj)
{
    for (size_t i = 0; i < t->n; i++) {
        const pl_jfield *f = &t->fields[i];
        switch (f->kind) {
        case PL_J_STR: free(*AT(obj, f->offset, char *)); break;
        case PL_J_OBJECT: pl_jtable_free(f->sub, AT(obj, f->offset, char)); break;
        case PL_J_ARRAY: {
            char *base = *AT(obj, f->offset, char *);
            size_t n = *AT(obj, f->count_offset, size_t);
            for (size_t k = 0; base && k < n; k++)
                pl_jtable_free(f->sub, base + k * f->elem_size);
            free(base);
            break;
        }
        case PL_J_REALS: free(*AT(obj, f->offset, double *)); break;
        case PL_J_CUSTOM:
            if (f->free_fn)
                f->free_fn(obj);
            break;
        default: break;
        }
    }
}
