/* perflab gemm's providers and the comparison: one cell per (shape, provider) holding the best verified record
 * or why there is none, the winner per shape and its speedup over the best of cuBLAS/cuBLASLt, the table,
 * comparison.json, and the exit code (1 when any requested cell has no record). */
#ifndef PERFLAB_SELECTOR_PROVIDER_COMPARISON_H
#define PERFLAB_SELECTOR_PROVIDER_COMPARISON_H

#include <jansson.h>

#include "core/util.h"
#include "core/table.h"
#include "selector/records.h"
#include "selector/shapes.h"

typedef enum pl_gemm_provider_kind {
    PL_PROV_CUBLAS,   /* cublasGemmEx, default algorithm */
    PL_PROV_CUBLASLT, /* every heuristic algorithm up to --max-algos, the best kept */
    PL_PROV_PERFLAB,  /* every native kernel configuration that supports the shape */
    PL_PROV_CUTLASS,  /* cutlass_profiler, when CUTLASS_PROFILER_BIN names one */
    PL_PROV_JSON,     /* json:FILE, records made elsewhere */
    PL_PROV_KIND_COUNT
} pl_gemm_provider_kind;

typedef struct pl_gemm_provider {
    pl_gemm_provider_kind kind;
    char *label; /* the column and file name: cublas, cublaslt, perflab, cutlass, or a json file's provider (never a
                  * path: letters, digits and "_-.+" only) */
    char *path;  /* json: the file */
    pl_gemm_record_list loaded;
    int cublas_family; /* cublas, cublaslt, or a json file of their records: the ratios' denominator */
} pl_gemm_provider;

/* The providers a plain `perflab gemm` asks for with this dtype: bf16 all three of cuBLAS, cuBLASLt and perflab;
 * fp16 cuBLAS and cuBLASLt (perflab's kernels are bf16); fp8 cuBLASLt alone. */
const char *pl_gemm_default_providers(const char *dtype);
/* Parse "cublas,cublaslt,perflab,cutlass,json:FILE" (json files are loaded and checked here). -1 with one line on
 * bad input (unknown name, duplicate, unreadable or malformed file). */
int pl_gemm_providers_parse(const char *spec, pl_gemm_provider **out, size_t *n, char *err, size_t errlen);
void pl_gemm_providers_free(pl_gemm_provider *p, size_t n);
int pl_gemm_provider_is_cublas(const pl_gemm_provider *p);
int pl_gemm_provider_needs_gpu(const pl_gemm_provider *p);

typedef struct pl_gemm_cell {
    pl_gemm_status status;
    char *reason;
    pl_gemm_record best;            /* valid when status is OK */
    pl_gemm_record_list candidates; /* everything tried, for the provider's file */
    char *pick;                     /* perflab: the heuristic's kernel (pl_gemm_bf16's choice), or NULL */
    /* perflab, --rounds > 1, pick not the best: the two re-timed head to head after the sweep (best its kernel) */
    char *confirm_best;
    double confirm_pick_ms, confirm_best_ms;
    int confirm_rounds;
} pl_gemm_cell;

#define PL_GEMM_PICK_TOLERANCE 0.03 /* the heuristic's pick counts as good within 3% of the best configuration */

/* How the heuristic's pick fared in its cell: its record against the cell's best. */
typedef struct pl_gemm_pick_verdict {
    const char *pick, *best; /* kernel names (best NULL when the cell has none) */
    int pick_timed;          /* the pick has a verified, timed record */
    double pick_ms, best_ms; /* NaN where absent */
    double ratio;            /* pick_ms / best_ms, NaN where either is absent */
    double confirmed_ratio;  /* the head-to-head re-timing's pick_ms / best_ms; NaN where there was none */
    int confirm_rounds;      /* its rounds (0: none) */
    int is_best, within;     /* the best itself; within PL_GEMM_PICK_TOLERANCE of it (0 when not timed), judged on
                                the head-to-head ratio where there is one */
} pl_gemm_pick_verdict;

/* 0 with the verdict when the cell has a pick and a best record; -1 otherwise. */
int pl_gemm_cell_pick_verdict(const pl_gemm_cell *cell, pl_gemm_pick_verdict *v);

typedef struct pl_gemm_comparison {
    const pl_gemm_shape *shapes;
    size_t n_shapes;
    const pl_gemm_provider *providers;
    size_t n_providers;
    const char *dtype, *layout;
    pl_gemm_cell *cells; /* [shape * n_providers + provider] */
} pl_gemm_comparison;

/* Every cell starts missing ("no record came back"). */
void pl_gemm_comparison_init(pl_gemm_comparison *c, const pl_gemm_shape *shapes, size_t n_shapes,
                             const pl_gemm_provider *providers, size_t n_providers, const char *dtype,
                             const char *layout);
void pl_gemm_comparison_free(pl_gemm_comparison *c);
pl_gemm_cell *pl_gemm_cell_at(pl_gemm_comparison *c, size_t shape, size_t provider);
const pl_gemm_cell *pl_gemm_cell_get(const pl_gemm_comparison *c, size_t shape, size_t provider);
/* Set a cell from the records tried for it: the fastest verified ok one is the best; without one the cell is
 * `fallback` (failed or unsupported) with `reason` (or the first candidate's reason). Takes the records: `tried` is
 * left empty, with nothing to free. */
void pl_gemm_cell_settle(pl_gemm_cell *cell, pl_gemm_record_list *tried, pl_gemm_status fallback, const char *reason);
void pl_gemm_cell_set(pl_gemm_cell *cell, pl_gemm_status status, const char *reason);
void pl_gemm_cell_set_pick(pl_gemm_cell *cell, const char *pick); /* NULL or "" clears it */
/* The head-to-head re-timing of the pick against the best configuration `best` (bench_child.c: confirm_pick). */
void pl_gemm_cell_set_confirm(pl_gemm_cell *cell, const char *best, double pick_ms, double best_ms, int rounds);
/* Fill the cells of json: providers from their loaded records. */
void pl_gemm_comparison_fill_from_files(pl_gemm_comparison *c);

/* Winner and best-cuBLAS provider indices of a shape (-1 when none). */
void pl_gemm_comparison_leaders(const pl_gemm_comparison *c, size_t shape, int *winner, int *best_cublas);
/* Lines "SHAPE  PROVIDER  missing|failed|unsupported: reason" for every cell without a record; the count. */
size_t pl_gemm_comparison_missing(const pl_gemm_comparison *c, pl_buf *out);
int pl_gemm_comparison_exit_code(const pl_gemm_comparison *c);

#endif
