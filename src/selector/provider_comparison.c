#include "selector/provider_comparison.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/results_json.h"

static const char *const kind_names[] = {"cublas", "cublaslt", "perflab", "cutlass", "json"};

const char *pl_gemm_default_providers(const char *dtype)
{
    if (strcmp(dtype, "fp8") == 0)
        return "cublaslt,perflab";
    if (strcmp(dtype, "fp16") == 0)
        return "cublas,cublaslt";
    return "cublas,cublaslt,perflab";
}

int pl_gemm_provider_is_cublas(const pl_gemm_provider *p)
{
    return p->cublas_family;
}

/* A json file made of cuBLAS/cuBLASLt records (e.g. another run's cublaslt.json) stands for cuBLAS too. */
static int json_is_cublas(const pl_gemm_record_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].provider, "cublas") != 0 && strcmp(l->items[i].provider, "cublaslt") != 0)
            return 0;
    return l->n > 0;
}

int pl_gemm_provider_needs_gpu(const pl_gemm_provider *p)
{
    return p->kind == PL_PROV_CUBLAS || p->kind == PL_PROV_CUBLASLT || p->kind == PL_PROV_PERFLAB;
}

void pl_gemm_providers_free(pl_gemm_provider *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i].label);
        free(p[i].path);
        pl_gemm_record_list_free(&p[i].loaded);
    }
    free(p);
}

/* A label names a column and the provider's file (<label>.json beside comparison.json): letters, digits and
 * "_-.+", a letter or digit first, at most PL_GEMM_LABEL_MAX bytes, and not "comparison". */
#define PL_GEMM_LABEL_MAX 64
static int label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == '+';
}

static int safe_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > PL_GEMM_LABEL_MAX || !label_char(s[0]) || s[0] == '_' || s[0] == '-' || s[0] == '.' ||
        s[0] == '+' || strcmp(s, "comparison") == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!label_char(s[i]))
            return 0;
    return 1;
}

/* A json file's column: its records' provider when they agree (and can name a file; else an error), or
 * "json_<the file's base name>" with every other character folded to '_'. NULL with err on a bad name. */
static char *json_label(const char *path, const pl_gemm_record_list *l, char *err, size_t errlen)
{
    const char *name = l->n ? l->items[0].provider : NULL;
    for (size_t i = 1; name && i < l->n; i++)
        if (strcmp(l->items[i].provider, name) != 0)
            name = NULL;
    if (name && pl_index_of(kind_names, PL_PROV_KIND_COUNT - 1, name) < 0) {
        if (safe_label(name))
            return pl_strdup(name);
        pl_snprintf(err, errlen,
                    "--providers: %s: provider '%s' cannot name a column and a file: use letters, digits, '_', '-', "
                    "'.' or '+' (a letter or digit first, up to %d; not 'comparison')",
                    PL_ESC(path), PL_ESC(name), PL_GEMM_LABEL_MAX);
        return NULL;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char *label = pl_strfmt("json_%.*s", PL_GEMM_LABEL_MAX - 5, base);
    char *dot = strrchr(label, '.');
    if (dot && dot > label + 5)
        *dot = '\0';
    for (char *c = label; *c; c++)
        if (!label_char(*c))
            *c = '_';
    return label;
}

int pl_gemm_providers_parse(const char *spec, pl_gemm_provider **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    char *copy = pl_strdup(spec);
    int rc = 0;
    size_t cap = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        pl_gemm_provider p;
        memset(&p, 0, sizeof p);
        if (strncmp(tok, "json:", 5) == 0) {
            p.kind = PL_PROV_JSON;
            p.path = pl_strdup(tok + 5);
            if (!*p.path) {
                pl_snprintf(err, errlen, "--providers: 'json:' needs a file, e.g. json:triton.json");
                rc = -1;
            } else if (pl_gemm_records_load(p.path, &p.loaded, err, errlen) != 0) {
                rc = -1;
            } else if (!(p.label = json_label(p.path, &p.loaded, err, errlen))) {
                rc = -1;
            } else {
                p.cublas_family = json_is_cublas(&p.loaded);
            }
        } else {
            int k = pl_index_of(kind_names, PL_PROV_JSON, tok);
            if (k < 0) {
                char sugg[128];
                if (pl_suggest(tok, kind_names, PL_PROV_JSON, 2, sugg, sizeof sugg) > 0)
                    pl_snprintf(err, errlen, "--providers: unknown provider '%s' (did you mean %s?)", PL_ESC(tok),
                                sugg);
                else
                    pl_snprintf(err, errlen,
                                "--providers: unknown provider '%s': choose from cublas, cublaslt, perflab, cutlass, "
                                "json:FILE",
                                PL_ESC(tok));
                rc = -1;
            } else {
                p.kind = (pl_gemm_provider_kind)k;
                p.label = pl_strdup(kind_names[k]);
                p.cublas_family = p.kind == PL_PROV_CUBLAS || p.kind == PL_PROV_CUBLASLT;
            }
        }
        for (size_t i = 0; rc == 0 && i < *n; i++)
            if (strcmp((*out)[i].label, p.label) == 0) {
                pl_snprintf(err, errlen, "--providers: '%s' is named twice", PL_ESC(p.label));
                rc = -1;
            }
        if (rc != 0) {
            free(p.label);
            free(p.path);
            pl_gemm_record_list_free(&p.loaded);
            break;
        }
        pl_reserve(out, &cap, *n + 1, sizeof **out);
        (*out)[(*n)++] = p;
    }
    free(copy);
    if (rc == 0 && *n == 0) {
        pl_snprintf(err, errlen,
                    "--providers is empty: name at least one of cublas, cublaslt, perflab, cutlass, "
                    "json:FILE");
        rc = -1;
    }
    if (rc != 0) {
        pl_gemm_providers_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void pl_gemm_comparison_init(pl_gemm_comparison *c, const pl_gemm_shape *shapes, size_t n_shapes,
                             const pl_gemm_provider *providers, size_t n_providers, const char *dtype,
                             const char *layout)
{
    memset(c, 0, sizeof *c);
    c->shapes = shapes;
    c->n_shapes = n_shapes;
    c->providers = providers;
    c->n_providers = n_providers;
    c->dtype = dtype;
    c->layout = layout;
    c->cells = pl_xcalloc(n_shapes * n_providers + 1, sizeof *c->cells);
    for (size_t i = 0; i < n_shapes * n_providers; i++) {
        c->cells[i].status = PL_GEMM_MISSING;
        c->cells[i].reason = pl_strdup("no record came back");
    }
}

void pl_gemm_comparison_free(pl_gemm_comparison *c)
{
    for (size_t i = 0; c->cells && i < c->n_shapes * c->n_providers; i++) {
        free(c->cells[i].reason);
        free(c->cells[i].pick);
        free(c->cells[i].confirm_best);
        pl_gemm_record_free(&c->cells[i].best);
        pl_gemm_record_list_free(&c->cells[i].candidates);
    }
    free(c->cells);
    memset(c, 0, sizeof *c);
}

pl_gemm_cell *pl_gemm_cell_at(pl_gemm_comparison *c, size_t shape, size_t provider)
{
    return &c->cells[shape * c->n_providers + provider];
}

const pl_gemm_cell *pl_gemm_cell_get(const pl_gemm_comparison *c, size_t shape, size_t provider)
{
    return &c->cells[shape * c->n_providers + provider];
}

void pl_gemm_cell_set(pl_gemm_cell *cell, pl_gemm_status status, const char *reason)
{
    free(cell->reason);
    cell->status = status;
    cell->reason = pl_strdup(reason);
}

void pl_gemm_cell_set_pick(pl_gemm_cell *cell, const char *pick)
{
    free(cell->pick);
    cell->pick = pick && *pick ? pl_strdup(pick) : NULL;
}

void pl_gemm_cell_set_confirm(pl_gemm_cell *cell, const char *best, double pick_ms, double best_ms, int rounds)
{
    free(cell->confirm_best);
    cell->confirm_best = NULL;
    if (best && *best && pick_ms > 0 && best_ms > 0 && rounds > 0) {
        cell->confirm_best = pl_strdup(best);
        cell->confirm_pick_ms = pick_ms;
        cell->confirm_best_ms = best_ms;
        cell->confirm_rounds = rounds;
    }
}

int pl_gemm_cell_pick_verdict(const pl_gemm_cell *cell, pl_gemm_pick_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->pick_ms = v->best_ms = v->ratio = v->confirmed_ratio = NAN;
    if (!cell->pick || cell->status != PL_GEMM_OK || !cell->best.kernel)
        return -1;
    v->pick = cell->pick;
    v->best = cell->best.kernel;
    v->best_ms = cell->best.median_ms;
    for (size_t i = 0; i < cell->candidates.n; i++) {
        const pl_gemm_record *r = &cell->candidates.items[i];
        if (r->kernel && strcmp(r->kernel, cell->pick) == 0 && r->status == PL_GEMM_OK && r->verified &&
            r->median_ms > 0) {
            v->pick_timed = 1;
            v->pick_ms = r->median_ms;
        }
    }
    v->is_best = strcmp(v->pick, v->best) == 0;
    if (v->pick_timed) {
        v->ratio = v->pick_ms / v->best_ms;
        v->within = v->ratio <= 1 + PL_GEMM_PICK_TOLERANCE;
        /* a re-timing of this pick against this best: the verdict is the head-to-head one */
        if (!v->is_best && cell->confirm_best && strcmp(cell->confirm_best, v->best) == 0) {
            v->confirmed_ratio = cell->confirm_pick_ms / cell->confirm_best_ms;
            v->confirm_rounds = cell->confirm_rounds;
            v->within = v->confirmed_ratio <= 1 + PL_GEMM_PICK_TOLERANCE;
        }
    }
    return 0;
}

void pl_gemm_cell_settle(pl_gemm_cell *cell, pl_gemm_record_list *tried, pl_gemm_status fallback, const char *reason)
{
    const pl_gemm_record *best = pl_gemm_records_fastest(tried);
    pl_gemm_record_free(&cell->best);
    if (best) {
        pl_gemm_record_copy(&cell->best, best);
        pl_gemm_cell_set(cell, PL_GEMM_OK, NULL);
    } else {
        const char *why = reason ? reason : tried->n && tried->items[0].reason ? tried->items[0].reason : "no record";
        pl_gemm_cell_set(cell, fallback, why);
    }
    for (size_t i = 0; i < tried->n; i++)
        pl_gemm_record_list_push(&cell->candidates, &tried->items[i]);
    tried->n = 0;
    pl_gemm_record_list_free(tried); /* taken whole: nothing left for the caller to free */
}

void pl_gemm_comparison_fill_from_files(pl_gemm_comparison *c)
{
    for (size_t p = 0; p < c->n_providers; p++) {
        const pl_gemm_provider *prov = &c->providers[p];
        if (prov->kind != PL_PROV_JSON)
            continue;
        for (size_t s = 0; s < c->n_shapes; s++) {
            const pl_gemm_shape *sh = &c->shapes[s];
            pl_gemm_cell *cell = pl_gemm_cell_at(c, s, p);
            pl_gemm_record_list tried = {0};
            int any = 0;
            for (size_t i = 0; i < prov->loaded.n; i++) {
                const pl_gemm_record *r = &prov->loaded.items[i];
                if (r->m != sh->m || r->n != sh->n || r->k != sh->k || strcmp(r->dtype, c->dtype) != 0 ||
                    strcmp(r->layout, c->layout) != 0)
                    continue;
                any = 1;
                pl_gemm_record copy;
                pl_gemm_record_copy(&copy, r);
                if (copy.status == PL_GEMM_OK && !copy.verified) {
                    copy.status = PL_GEMM_FAILED;
                    free(copy.reason);
                    copy.reason = pl_strfmt("%s: the record is not verified", prov->path);
                }
                pl_gemm_record_list_push(&tried, &copy);
            }
            if (any) {
                pl_gemm_cell_settle(cell, &tried, PL_GEMM_FAILED, NULL);
            } else {
                char *why = pl_strfmt("%s has no %s/%s record for %lldx%lldx%lld", prov->path, c->dtype, c->layout,
                                      sh->m, sh->n, sh->k);
                pl_gemm_cell_set(cell, PL_GEMM_MISSING, why);
                free(why);
            }
            pl_gemm_record_list_free(&tried);
        }
    }
}

void pl_gemm_comparison_leaders(const pl_gemm_comparison *c, size_t shape, int *winner, int *best_cublas)
{
    *winner = *best_cublas = -1;
    for (size_t p = 0; p < c->n_providers; p++) {
        const pl_gemm_cell *cell = pl_gemm_cell_get(c, shape, p);
        if (cell->status != PL_GEMM_OK)
            continue;
        if (*winner < 0 || cell->best.tflops > pl_gemm_cell_get(c, shape, (size_t)*winner)->best.tflops)
            *winner = (int)p;
        if (pl_gemm_provider_is_cublas(&c->providers[p]) &&
            (*best_cublas < 0 || cell->best.tflops > pl_gemm_cell_get(c, shape, (size_t)*best_cublas)->best.tflops))
            *best_cublas = (int)p;
    }
}

size_t pl_gemm_comparison_missing(const pl_gemm_comparison *c, pl_buf *out)
{
    size_t count = 0;
    for (size_t s = 0; s < c->n_shapes; s++)
        for (size_t p = 0; p < c->n_providers; p++) {
            const pl_gemm_cell *cell = pl_gemm_cell_get(c, s, p);
            if (cell->status == PL_GEMM_OK)
                continue;
            count++;
            if (out)
                pl_buf_printf(out, "  %s  %s  %s: %s\n", PL_ESC(c->shapes[s].name), PL_ESC(c->providers[p].label),
                              pl_gemm_status_name(cell->status), PL_ESC(cell->reason ? cell->reason : ""));
        }
    return count;
}

int pl_gemm_comparison_exit_code(const pl_gemm_comparison *c)
{
    return pl_gemm_comparison_missing(c, NULL) > 0 ? 1 : 0;
}
