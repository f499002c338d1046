/* GEMM shapes for perflab gemm: the built-in transformer set, `--shapes NAME|MxNxK,...` and `--shapes-file`. */
#ifndef PERFLAB_SELECTOR_SHAPES_H
#define PERFLAB_SELECTOR_SHAPES_H

#include <stddef.h>

#define PL_GEMM_SHAPE_NAME_MAX 96
#define PL_GEMM_MAX_SHAPES     4096        /* in one --shapes or --shapes-file */
#define PL_GEMM_DIM_MAX        (1LL << 20) /* per dimension; M·N must also fit the kernels' 32-bit element counts */

typedef struct pl_gemm_shape {
    char name[PL_GEMM_SHAPE_NAME_MAX];
    long long m, n, k;
} pl_gemm_shape;

/* One `random:N[:SEED]` of a list: what it drew, so that a run can state it and be repeated. */
typedef struct pl_gemm_random_draw {
    unsigned count;
    unsigned long long seed;
    int seed_given; /* 0: drawn from /dev/urandom for this run */
} pl_gemm_random_draw;

typedef struct pl_gemm_shape_list {
    pl_gemm_shape *items;
    size_t n, cap;
    pl_gemm_random_draw *random; /* the random draws among the items, in order */
    size_t n_random, cap_random;
} pl_gemm_shape_list;

/* A built-in shape, the group it belongs to and where it comes from (a model's projection, or why synthetic). */
typedef struct pl_gemm_builtin {
    pl_gemm_shape shape;
    const char *group; /* "prefill", "decode" or "wide" */
    const char *origin;
} pl_gemm_builtin;

/* The built-in shapes, in their listing order. */
const pl_gemm_builtin *pl_gemm_builtins(size_t *n);
/* Named groups of built-ins: "default" (prefill + decode: what a plain `perflab gemm` runs), "prefill" (the large
 * ones), "decode" (M = 16, 64, 128), "wide" (every class of shape inference and training meet). */
const char *const *pl_gemm_shape_groups(size_t *n);
/* 1 when the built-in belongs to the group (a name of pl_gemm_shape_groups). */
int pl_gemm_group_has(const char *group, const pl_gemm_builtin *b);

/* Append the shapes of a comma list: built-in names, group names, MxNxK (named m{M}_n{N}_k{K}) or random:N[:SEED]
 * (selector/shapes_random.h). A shape already in the list is not added twice. On bad input returns -1 with one line
 * naming the item and the fix. */
int pl_gemm_shapes_parse(const char *spec, pl_gemm_shape_list *out, char *err, size_t errlen);

/* Append the shapes of a file: one per line, `MxNxK`, `NAME MxNxK`, `NAME M N K` or a built-in name; '#' starts a
 * comment; blank lines are skipped. Errors read "FILE:LINE: what is wrong; the fix". */
int pl_gemm_shapes_load_file(const char *path, pl_gemm_shape_list *out, char *err, size_t errlen);

/* One dimension: decimal digits alone (no sign, space, fraction or exponent), from 1 to PL_GEMM_DIM_MAX. 0 with
 * *out set, or -1. */
int pl_gemm_dim_parse(const char *s, long long *out);

/* Append a shape unless one of the same name and sizes is in the list already. */
void pl_gemm_shape_list_add(pl_gemm_shape_list *l, const pl_gemm_shape *s);
/* 0 when `count` more shapes fit the list's bound (PL_GEMM_MAX_SHAPES), else -1 with err saying so. */
int pl_gemm_shape_list_room(const pl_gemm_shape_list *l, size_t count, const char *where, char *err, size_t errlen);
void pl_gemm_shape_list_free(pl_gemm_shape_list *l);
double pl_gemm_shape_flops(const pl_gemm_shape *s);

#endif
