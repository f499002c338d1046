#include "cli/options.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

void pl_strlist_free(pl_strlist *l)
{
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

static void strlist_push(pl_strlist *l, const char *s)
{
    *(const char **)pl_push(&l->items, &l->n, NULL, sizeof *l->items) = s;
}

int pl_usage_error(const char *verb, const char *msg)
{
    /* the values in msg are escaped where they were written; this keeps any that were not from reaching the
     * terminal raw (escaping twice changes nothing) */
    pl_buf b = {0};
    pl_buf_append_escaped(&b, msg, 0);
    fprintf(stderr, "perflab %s: %s\n", verb, b.data);
    pl_buf_free(&b);
    return PL_EXIT_USAGE;
}

static const pl_option *find_long(const pl_option *opts, const char *name, size_t len)
{
    for (const pl_option *o = opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static const pl_option *find_short(const pl_option *opts, char c)
{
    for (const pl_option *o = opts; o->name; o++)
        if (o->short_name == c)
            return o;
    return NULL;
}

static void unknown_option(const char *verb, const pl_option *opts, const char *word, char *err, size_t errlen)
{
    size_t n = 0;
    while (opts[n].name)
        n++;
    const char **names = pl_xcalloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = opts[i].name;
    const char *bare = word + strspn(word, "-");
    char name[128];
    pl_snprintf(name, sizeof name, "%.*s", (int)strcspn(bare, "="), bare);
    size_t idx[2];
    int found = *name ? pl_suggest_indices(name, names, n, 2, idx) : 0;
    if (found == 2)
        pl_snprintf(err, errlen, "unknown option '%s' (did you mean --%s or --%s?); see 'perflab %s --help'",
                    PL_ESC(word), names[idx[0]], names[idx[1]], verb);
    else if (found == 1)
        pl_snprintf(err, errlen, "unknown option '%s' (did you mean --%s?); see 'perflab %s --help'", PL_ESC(word),
                    names[idx[0]], verb);
    else
        pl_snprintf(err, errlen, "unknown option '%s'; see 'perflab %s --help'", PL_ESC(word), verb);
    free(names);
}

static int set_value(const char *verb, const pl_option *o, const char *value, char *err, size_t errlen)
{
    char *end;
    switch (o->kind) {
    case PL_OPT_FLAG: *(int *)o->dest = 1; return 0;
    case PL_OPT_STRING: *(const char **)o->dest = value; return 0;
    case PL_OPT_LIST: strlist_push(o->dest, value); return 0;
    case PL_OPT_INT: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (end == value || *end || errno) {
            pl_snprintf(err, errlen, "--%s expects an integer, not '%s'", o->name, PL_ESC(value));
            return -1;
        }
        const double lo = o->min < o->max ? o->min : INT_MIN, hi = o->min < o->max ? o->max : INT_MAX;
        if ((double)v < lo || (double)v > hi) {
            pl_snprintf(err, errlen, "--%s must be between %g and %g, not %s", o->name, lo, hi, PL_ESC(value));
            return -1;
        }
        *(int *)o->dest = (int)v;
        return 0;
    }
    case PL_OPT_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(v)) {
            pl_snprintf(err, errlen, "--%s expects a number, not '%s'", o->name, PL_ESC(value));
            return -1;
        }
        if (o->min < o->max && (v < o->min || v > o->max)) {
            pl_snprintf(err, errlen, "--%s must be between %g and %g, not %s", o->name, o->min, o->max, PL_ESC(value));
            return -1;
        }
        *(double *)o->dest = v;
        return 0;
    }
    }
    (void)verb;
    return 0;
}

static int parse(const char *verb, const pl_option *opts, int argc, char **argv, pl_strlist *positional, char *err,
                 size_t errlen)
{
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || a[1] == '\0') {
            strlist_push(positional, a);
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = 1;
            continue;
        }
        const pl_option *o;
        const char *value = NULL;
        if (a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            o = find_long(opts, name, eq ? (size_t)(eq - name) : strlen(name));
            if (eq)
                value = eq + 1;
        } else {
            o = a[2] == '\0' ? find_short(opts, a[1]) : NULL;
        }
        if (!o) {
            unknown_option(verb, opts, a, err, errlen);
            return -1;
        }
        if (o->kind == PL_OPT_FLAG) {
            if (value) {
                pl_snprintf(err, errlen, "--%s takes no value", o->name);
                return -1;
            }
        } else if (!value) {
            if (i + 1 >= argc) {
                pl_snprintf(err, errlen, "--%s needs a value (%s)", o->name, o->metavar ? o->metavar : "VALUE");
                return -1;
            }
            value = argv[++i];
        }
        if (set_value(verb, o, value, err, errlen) != 0)
            return -1;
    }
    return 0;
}

int pl_options_parse(const char *verb, const pl_option *opts, int argc, char **argv, pl_strlist *positional, char *err,
                     size_t errlen)
{
    if (parse(verb, opts, argc, argv, positional, err, errlen) == 0)
        return 0;
    /* on bad input nothing is left for the caller to free */
    pl_strlist_free(positional);
    for (const pl_option *o = opts; o->name; o++)
        if (o->kind == PL_OPT_LIST)
            pl_strlist_free(o->dest);
    return -1;
}

void pl_options_help(FILE *out, const pl_option *opts)
{
    for (const pl_option *o = opts; o->name; o++) {
        char left[64];
        if (o->short_name)
            pl_snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name, o->metavar ? " " : "",
                        o->metavar ? o->metavar : "");
        else
            pl_snprintf(left, sizeof left, "    --%s%s%s", o->name, o->metavar ? " " : "",
                        o->metavar ? o->metavar : "");
        fprintf(out, "  %-30s %s\n", left, o->help);
    }
}

int pl_options_name_list(const char *text, int (*from_name)(const char *), int *out, int max, int *n, char *bad,
                         size_t badlen)
{
    char *copy = pl_strdup(text), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const int v = from_name(tok);
        int dup = 0;
        for (int k = 0; k < *n; k++)
            dup |= out[k] == v;
        if (v < 0 || (!dup && *n >= max)) {
            pl_snprintf(bad, badlen, "%s", tok);
            rc = -1;
            break;
        }
        if (!dup)
            out[(*n)++] = v;
    }
    free(copy);
    return rc;
}
