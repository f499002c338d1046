/* perflab gemm as one call below the CLI: every provider of every shape verified and timed, the best record per
 * (shape, provider) kept, and the report written into artifacts/gemm-<run_id>/. */
#ifndef PERFLAB_SELECTOR_SELECT_H
#define PERFLAB_SELECTOR_SELECT_H

#include <jansson.h>

#include "perflab/results.h"
#include "selector/provider_comparison.h"

typedef struct pl_gemm_select_request {
    const pl_gemm_shape *shapes;
    size_t n_shapes;
    const pl_gemm_random_draw *random; /* the random:N[:SEED] draws among the shapes, stated in the report */
    size_t n_random;
    const pl_gemm_provider *providers;
    size_t n_providers;
    const char *dtype, *layout;
    int max_algos;
    const pl_run_settings *settings; /* timing; device and seed */
    double timeout_s;                /* per shape */
    double budget_s;                 /* per shape, the timing rounds within it; 0: no budget */
    int tune;                        /* bf16: the pick tuned on the device before the shape is timed (gemm/tune.h) */
    const char *tune_file;           /* tuned picks read from it first (when it exists) and, with tune, saved to it */
    const char *artifacts_dir;
    int progress;
    int argc; /* the command line, for provenance */
    char **argv;
} pl_gemm_select_request;

typedef struct pl_gemm_selection {
    pl_run run; /* id, folder, provenance, settings (no targets) */
    pl_gemm_comparison cmp;
    json_t *about; /* provenance and settings as comparison.json states them */
} pl_gemm_selection;

/* Returns the exit code: 0 every (shape, provider) has a verified record, 1 some have none (or the report could not
 * be written: err says why), 2 bad input (err), 3 no usable GPU (err), 130 interrupted. Free *out either way. */
int pl_gemm_select_run(const pl_gemm_select_request *req, pl_gemm_selection *out, char *err, size_t errlen);
void pl_gemm_selection_free(pl_gemm_selection *s);

/* One line saying how the configurations were timed (the budget a shape, the rounds inside it), for the summary
 * perflab gemm prints. */
char *pl_gemm_timing_line(const pl_run_settings *s, double budget_s);

#endif
