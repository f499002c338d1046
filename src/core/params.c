#include "perflab/params.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "perflab/results.h"

int pl_parse_size(const char *text, long long *out)
{
    if (!text || !*text)
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno == ERANGE)
        return -1;
    long long mult = 1;
    if (*end) {
        switch (tolower((unsigned char)*end)) {
        case 'k': mult = 1LL << 10; break;
        case 'm': mult = 1LL << 20; break;
        case 'g': mult = 1LL << 30; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I') /* "64Mi" reads as 64m */
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end)
            return -1;
    }
    if (v > LLONG_MAX / mult || v < LLONG_MIN / mult) /* exact: mult is a power of two */
        return -1;
    *out = v * mult;
    return 0;
}

/* x as a long long, saturated: a float parameter may hold any finite double, its integer view stays defined. */
static long long saturate_ll(double x)
{
    if (x >= 0x1p63)
        return LLONG_MAX;
    if (x < -0x1p63)
        return LLONG_MIN;
    return (long long)x;
}

static int choice_ok(const char *choices, const char *text)
{
    size_t len = strlen(text);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, text, n) == 0)
            return 1;
        p = bar ? bar + 1 : p + n;
    }
    return 0;
}

static int below_min(const pl_param_def *d, double x)
{
    return (d->min != 0 || d->max != 0) && x < d->min;
}

static int above_max(const pl_param_def *d, double x)
{
    return d->max > d->min && x > d->max;
}

int pl_param_parse_value(const pl_param_def *def, const char *text, long long *i, double *f, char *err, size_t errlen)
{
    *i = 0;
    *f = 0;
    switch (def->type) {
    case PL_PARAM_INT:
        if (pl_parse_size(text, i) != 0) {
            pl_snprintf(err, errlen, "'--%s' expects an integer (e.g. 4096, or 64m for 64*2^20), not '%s'", def->name,
                        PL_ESC(text));
            return -1;
        }
        *f = (double)*i;
        break;
    case PL_PARAM_FLOAT: {
        char *end;
        errno = 0;
        *f = strtod(text, &end);
        if (end == text || *end || errno == ERANGE || !isfinite(*f)) {
            pl_snprintf(err, errlen, "'--%s' expects a number (e.g. 0.5), not '%s'", def->name, PL_ESC(text));
            return -1;
        }
        break;
    }
    case PL_PARAM_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes") || !strcmp(text, "on"))
            *i = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no") || !strcmp(text, "off"))
            *i = 0;
        else {
            pl_snprintf(err, errlen, "'--%s' expects true or false, not '%s'", def->name, PL_ESC(text));
            return -1;
        }
        *f = (double)*i;
        break;
    case PL_PARAM_STRING:
        if (def->choices && !choice_ok(def->choices, text)) {
            pl_snprintf(err, errlen, "'--%s' must be one of %s, not '%s'", def->name, def->choices, PL_ESC(text));
            return -1;
        }
        break;
    }
    if (def->type == PL_PARAM_INT || def->type == PL_PARAM_FLOAT) {
        /* the range is checked on the double; only then does a float get its integer view */
        if (below_min(def, *f) && !(def->max > def->min)) {
            pl_snprintf(err, errlen, "'--%s' must be at least %g, not %s", def->name, def->min, PL_ESC(text));
            return -1;
        }
        if (below_min(def, *f) || above_max(def, *f)) {
            pl_snprintf(err, errlen, "'--%s' must be between %g and %g, not %s", def->name, def->min, def->max,
                        PL_ESC(text));
            return -1;
        }
        if (def->type == PL_PARAM_FLOAT)
            *i = saturate_ll(*f);
    }
    return 0;
}

/* Split a shell-like string into words; single and double quotes group. Returns -1 on an open quote. */
static int split_words(const char *s, char ***words, size_t *n)
{
    *words = NULL;
    *n = 0;
    size_t cap = 0;
    while (s && *s) {
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        pl_buf w = {0};
        pl_buf_appendn(&w, "", 0);
        while (*s && !isspace((unsigned char)*s)) {
            if (*s == '"' || *s == '\'') {
                char q = *s++;
                const char *close = strchr(s, q);
                if (!close) {
                    pl_buf_free(&w);
                    for (size_t i = 0; i < *n; i++)
                        free((*words)[i]);
                    free(*words);
                    *words = NULL;
                    *n = 0;
                    return -1;
                }
                pl_buf_appendn(&w, s, (size_t)(close - s));
                s = close + 1;
            } else {
                pl_buf_appendn(&w, s++, 1);
            }
        }
        pl_reserve(words, &cap, *n + 1, sizeof **words);
        (*words)[(*n)++] = w.data;
    }
    return 0;
}

static pl_param_value *find_value(const pl_params *p, const char *name)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->values[i].def->name, name) == 0)
            return &p->values[i];
    return NULL;
}

static void list_names(const pl_param_def *defs, char *out, size_t len)
{
    pl_buf b = {0};
    for (const pl_param_def *d = defs; d && d->name; d++)
        pl_buf_printf(&b, "%s--%s", b.len ? ", " : "", d->name);
    pl_snprintf(out, len, "%s", b.data ? b.data : "none");
    pl_buf_free(&b);
}

static int set_value(pl_param_value *v, const char *text, int overridden, const char *target, char *err, size_t errlen)
{
    char sub[1024];
    long long i;
    double f;
    if (pl_param_parse_value(v->def, text, &i, &f, sub, sizeof sub) != 0) {
        pl_snprintf(err, errlen, "%s: %s", target, sub);
        return -1;
    }
    free(v->text);
    v->text = pl_strdup(text);
    v->i = i;
    v->f = f;
    v->overridden = overridden;
    return 0;
}

static int apply_word(pl_params *out, const pl_param_def *defs, const char *target, char **words, size_t n, size_t *k,
                      char *err, size_t errlen)
{
    const char *w = words[*k];
    if (strncmp(w, "--", 2) != 0 || !w[2]) {
        pl_snprintf(err, errlen, "%s: unexpected '%s' in its arguments: write parameters as '--name value'", target,
                    PL_ESC(w));
        return -1;
    }
    char *name = pl_strdup(w + 2);
    char *eq = strchr(name, '=');
    const char *value = NULL;
    if (eq) {
        *eq = '\0';
        value = eq + 1;
    }
    pl_param_value *v = find_value(out, name);
    if (!v) {
        const char **names = pl_xcalloc(out->count + 1, sizeof *names);
        for (size_t i = 0; i < out->count; i++)
            names[i] = out->values[i].def->name;
        size_t idx[1];
        char all[512];
        list_names(defs, all, sizeof all);
        if (pl_suggest_indices(name, names, out->count, 1, idx) > 0)
            pl_snprintf(err, errlen, "%s has no parameter '--%s' (did you mean '--%s'?); its parameters: %s", target,
                        PL_ESC(name), names[idx[0]], all);
        else
            pl_snprintf(err, errlen, "%s has no parameter '--%s'; its parameters: %s", target, PL_ESC(name), all);
        free(names);
        free(name);
        return -1;
    }
    if (!value) {
        if (v->def->type == PL_PARAM_BOOL && (*k + 1 >= n || strncmp(words[*k + 1], "--", 2) == 0)) {
            value = "true"; /* a bare boolean flag */
        } else if (*k + 1 >= n) {
            pl_snprintf(err, errlen, "%s: '--%s' needs a value", target, PL_ESC(name));
            free(name);
            return -1;
        } else {
            value = words[++*k];
        }
    }
    int rc = set_value(v, value, 1, target, err, errlen);
    free(name);
    return rc;
}

int pl_params_init(pl_params *out, const pl_param_def *defs, const char *target_name, const char *args, int small,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *target = target_name ? target_name : "target";
    for (const pl_param_def *d = defs; d && d->name; d++)
        out->count++;
    out->values = pl_xcalloc(out->count ? out->count : 1, sizeof *out->values);
    for (size_t i = 0; i < out->count; i++) {
        out->values[i].def = &defs[i];
        const char *initial = small && defs[i].small_value ? defs[i].small_value : defs[i].default_value;
        if (set_value(&out->values[i], initial ? initial : "", 0, target, err, errlen) != 0) {
            pl_params_free(out);
            return -1; /* a bad default is a bug in the target; say so loudly */
        }
    }
    char **words;
    size_t n;
    if (split_words(args, &words, &n) != 0) {
        pl_snprintf(err, errlen, "%s: unbalanced quote in its arguments '%s'", target, PL_ESC(args));
        pl_params_free(out);
        return -1;
    }
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++)
        rc = apply_word(out, defs, target, words, n, &k, err, errlen);
    for (size_t k = 0; k < n; k++)
        free(words[k]);
    free(words);
    if (rc != 0)
        pl_params_free(out);
    return rc;
}

void pl_params_free(pl_params *p)
{
    for (size_t i = 0; i < p->count; i++)
        free(p->values[i].text);
    free(p->values);
    memset(p, 0, sizeof *p);
}

static const pl_param_value *must_find(const pl_params *p, const char *name)
{
    const pl_param_value *v = find_value(p, name);
    if (!v) {
        fprintf(stderr, "perflab: internal error: parameter '%s' is not declared by its target\n", name);
        abort();
    }
    return v;
}

long long pl_param_int(const pl_params *p, const char *name)
{
    return must_find(p, name)->i;
}

double pl_param_float(const pl_params *p, const char *name)
{
    return must_find(p, name)->f;
}

const char *pl_param_str(const pl_params *p, const char *name)
{
    return must_find(p, name)->text;
}

int pl_param_bool(const pl_params *p, const char *name)
{
    return (int)must_find(p, name)->i;
}

int pl_params_refuse(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = pl_vstrfmt(fmt, ap);
    va_end(ap);
    pl_snprintf(err, errlen, "%s", line);
    free(line);
    return -1;
}

double pl_gpu_memory_bytes(const struct pl_gpu_record *gpu)
{
    return gpu && gpu->memory_gib > 0 ? gpu->memory_gib * 1024.0 * 1024.0 * 1024.0 : 0.0;
}

int pl_check_device_memory(const struct pl_gpu_record *gpu, double bytes, const char *fix, char *err, size_t errlen)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (!(pl_gpu_memory_bytes(gpu) > 0) || bytes <= pl_gpu_memory_bytes(gpu))
        return 0;
    return pl_params_refuse(err, errlen, "needs %.1f GiB of device memory; %s has %.1f GiB: %s", bytes / gib,
                            gpu->name ? gpu->name : "the GPU", gpu->memory_gib, fix);
}
