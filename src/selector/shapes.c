#include "selector/shapes.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Transformer GEMMs: prefill (many tokens) projections and MLPs, and decode-sized ones (M = batch of 16-128
 * tokens) against 4096-28672 wide weights (Llama-3 8B/70B-like widths). */
static const pl_gemm_shape builtins[] = {
    {"prefill_mlp_gather_m8192_n16384_k4096", 8192, 16384, 4096},
    {"prefill_mlp_expand_m16384_n16384_k8192", 16384, 16384, 8192},
    {"decode_mlp_m4096_n4096_k8192", 4096, 4096, 8192},
    {"kv_proj_m4096_n4096_k4096", 4096, 4096, 4096},
    {"attention_qk_m8192_n4096_k4096", 8192, 4096, 4096},
    {"square_m8192_n8192_k8192", 8192, 8192, 8192},
    {"decode_m16_n4096_k4096", 16, 4096, 4096},
    {"decode_m16_n28672_k8192", 16, 28672, 8192},
    {"decode_m64_n14336_k4096", 64, 14336, 4096},
    {"decode_m64_n4096_k14336", 64, 4096, 14336},
    {"decode_m128_n28672_k8192", 128, 28672, 8192},
    {"decode_m128_n8192_k28672", 128, 8192, 28672},
};
#define N_BUILTINS (sizeof builtins / sizeof builtins[0])
#define N_PREFILL  6 /* the first six */

static const char *const groups[] = {"default", "prefill", "decode"};

const pl_gemm_shape *pl_gemm_builtin_shapes(size_t *n)
{
    *n = N_BUILTINS;
    return builtins;
}

const char *const *pl_gemm_shape_groups(size_t *n)
{
    *n = sizeof groups / sizeof groups[0];
    return groups;
}

double pl_gemm_shape_flops(const pl_gemm_shape *s)
{
    return 2.0 * (double)s->m * (double)s->n * (double)s->k;
}

void pl_gemm_shape_list_free(pl_gemm_shape_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

static void add(pl_gemm_shape_list *l, const pl_gemm_shape *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, s->name) == 0 && l->items[i].m == s->m && l->items[i].n == s->n &&
            l->items[i].k == s->k)
            return;
    pl_reserve(&l->items, &l->cap, l->n + 1, sizeof *l->items);
    l->items[l->n++] = *s;
}

static int add_group(pl_gemm_shape_list *l, const char *name)
{
    size_t first = 0, last = N_BUILTINS;
    if (strcmp(name, "prefill") == 0)
        last = N_PREFILL;
    else if (strcmp(name, "decode") == 0)
        first = N_PREFILL;
    else if (strcmp(name, "default") != 0)
        return 0;
    for (size_t i = first; i < last; i++)
        add(l, &builtins[i]);
    return 1;
}

/* A positive dimension within the limit; *end is left after its digits. */
static int parse_dim(const char *s, const char **end, long long *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno || v < 1 || v > PL_GEMM_DIM_MAX)
        return -1;
    *end = e;
    *out = v;
    return 0;
}

int pl_gemm_dim_parse(const char *s, long long *out)
{
    const char *end;
    return parse_dim(s, &end, out) == 0 && !*end ? 0 : -1;
}

/* "MxNxK" exactly (also with 'X'); 0 when it is one, -1 when it is not. */
static int parse_mnk(const char *s, long long *m, long long *n, long long *k)
{
    const char *p = s;
    if (parse_dim(p, &p, m) != 0 || (*p != 'x' && *p != 'X'))
        return -1;
    if (parse_dim(p + 1, &p, n) != 0 || (*p != 'x' && *p != 'X'))
        return -1;
    if (parse_dim(p + 1, &p, k) != 0 || *p)
        return -1;
    return 0;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) >= PL_GEMM_SHAPE_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return 0;
    return 1;
}

static int limits_ok(long long m, long long n, char *err, size_t errlen, const char *where)
{
    if ((double)m * (double)n > 4294967295.0) {
        pl_snprintf(err, errlen, "%s: M·N = %.3g exceeds 2^32 output elements; use a smaller M or N", where,
                    (double)m * (double)n);
        return 0;
    }
    return 1;
}

static const pl_gemm_shape *find_builtin(const char *name)
{
    for (size_t i = 0; i < N_BUILTINS; i++)
        if (strcmp(builtins[i].name, name) == 0)
            return &builtins[i];
    return NULL;
}

static void unknown_name(const char *item, char *err, size_t errlen, const char *where)
{
    const char *names[N_BUILTINS + 3];
    for (size_t i = 0; i < N_BUILTINS; i++)
        names[i] = builtins[i].name;
    for (size_t i = 0; i < 3; i++)
        names[N_BUILTINS + i] = groups[i];
    char sugg[512];
    if (pl_suggest(item, names, N_BUILTINS + 3, 3, sugg, sizeof sugg) > 0)
        pl_snprintf(err, errlen,
                    "%sunknown shape '%s' (did you mean %s?); write MxNxK or a built-in name "
                    "('perflab gemm --list-shapes')",
                    where, PL_ESC(item), sugg);
    else
        pl_snprintf(err, errlen,
                    "%sunknown shape '%s'; write MxNxK (e.g. 4096x4096x4096) or a built-in name "
                    "('perflab gemm --list-shapes')",
                    where, PL_ESC(item));
}

/* One item: a built-in or group name, or MxNxK. */
static int parse_item(const char *item, pl_gemm_shape_list *out, char *err, size_t errlen, const char *where)
{
    pl_gemm_shape s;
    memset(&s, 0, sizeof s);
    if (parse_mnk(item, &s.m, &s.n, &s.k) == 0) {
        if (!limits_ok(s.m, s.n, err, errlen, item))
            return -1;
        pl_snprintf(s.name, sizeof s.name, "m%lld_n%lld_k%lld", s.m, s.n, s.k);
        add(out, &s);
        return 0;
    }
    const pl_gemm_shape *b = find_builtin(item);
    if (b) {
        add(out, b);
        return 0;
    }
    if (add_group(out, item))
        return 0;
    if (isdigit((unsigned char)item[0]))
        pl_snprintf(err, errlen, "%s'%s' is not a shape: write MxNxK with each of M, N, K from 1 to %lld", where,
                    PL_ESC(item), PL_GEMM_DIM_MAX);
    else
        unknown_name(item, err, errlen, where);
    return -1;
}

int pl_gemm_shapes_parse(const char *spec, pl_gemm_shape_list *out, char *err, size_t errlen)
{
    char *copy = pl_strdup(spec);
    int rc = 0, items = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (!*tok)
            continue;
        items++;
        rc = parse_item(tok, out, err, errlen, "--shapes: ");
    }
    free(copy);
    if (rc == 0 && items == 0) {
        pl_snprintf(err, errlen,
                    "--shapes is empty: name shapes, e.g. --shapes 4096x4096x4096,kv_proj_m4096_n4096_k4096");
        return -1;
    }
    return rc;
}

/* Split a line into whitespace-separated words; max + 1 when there are more than max. */
static int split_words(char *line, char **w, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == max)
            return max + 1;
        w[n++] = t;
    }
    return n;
}

/* One line of a shapes file; *items counts the shapes it named. */
static int parse_file_line(char *line, const char *where, pl_gemm_shape_list *out, int *items, char *err, size_t errlen)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *w[5];
    int n = split_words(line, w, 4);
    if (n == 0)
        return 0;
    ++*items;
    if (n == 1)
        return parse_item(w[0], out, err, errlen, where);
    pl_gemm_shape s;
    memset(&s, 0, sizeof s);
    if (n == 2 && parse_mnk(w[1], &s.m, &s.n, &s.k) == 0) {
        /* NAME MxNxK */
    } else if (n == 4 && pl_gemm_dim_parse(w[1], &s.m) == 0 && pl_gemm_dim_parse(w[2], &s.n) == 0 &&
               pl_gemm_dim_parse(w[3], &s.k) == 0) {
        /* NAME M N K */
    } else {
        pl_snprintf(err, errlen, "%sexpected 'MxNxK', 'NAME MxNxK' or 'NAME M N K' with dimensions from 1 to %lld",
                    where, PL_GEMM_DIM_MAX);
        return -1;
    }
    if (!valid_name(w[0])) {
        pl_snprintf(err, errlen, "%sshape name '%s' must be letters, digits, '_', '-' or '.' (up to %d)", where,
                    PL_ESC(w[0]), PL_GEMM_SHAPE_NAME_MAX - 1);
        return -1;
    }
    const pl_gemm_shape *b = find_builtin(w[0]);
    if (b && (b->m != s.m || b->n != s.n || b->k != s.k)) {
        pl_snprintf(err, errlen, "%s'%s' is a built-in shape (%lldx%lldx%lld): pick another name", where, PL_ESC(w[0]),
                    b->m, b->n, b->k);
        return -1;
    }
    if (!limits_ok(s.m, s.n, err, errlen, w[0]))
        return -1;
    pl_snprintf(s.name, sizeof s.name, "%s", w[0]);
    add(out, &s);
    return 0;
}

int pl_gemm_shapes_load_file(const char *path, pl_gemm_shape_list *out, char *err, size_t errlen)
{
    char rerr[512];
    char *text = pl_read_file(path, NULL, rerr, sizeof rerr);
    if (!text) {
        pl_snprintf(err, errlen, "--shapes-file: %s", rerr);
        return -1;
    }
    int rc = 0, lineno = 0, items = 0;
    for (char *line = text; line && rc == 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        char where[512];
        pl_snprintf(where, sizeof where, "%s:%d: ", path, lineno);
        rc = parse_file_line(line, where, out, &items, err, errlen);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (rc == 0 && items == 0) {
        pl_snprintf(err, errlen, "%s: no shapes in the file: write one per line, e.g. 'my_proj 4096 4096 4096'", path);
        return -1;
    }
    return rc;
}
