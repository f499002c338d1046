/* The `cutlass` provider: run CUTLASS's profiler (CUTLASS_PROFILER_BIN) per shape with its kernel search and read
 * its CSV by header names, so that column order and extra columns of other CUTLASS versions do not matter. */
#ifndef PERFLAB_SELECTOR_CUTLASS_H
#define PERFLAB_SELECTOR_CUTLASS_H

#include "selector/records.h"
#include "selector/shapes.h"

#define PL_CUTLASS_ENV "CUTLASS_PROFILER_BIN"

/* Parse a cutlass_profiler CSV (one or more sections, each led by its "Problem,Provider,..." header): one record per
 * data row, provider "cutlass", kernel = the Operation column, configuration from the cta_*, cluster_* and stages
 * columns, median_ms = Runtime, verified = Disposition "passed" (CUTLASS checks against its reference), status ok
 * only for Status "success" and a passed disposition. Every row's m, n, k are whole numbers equal to `shape`'s (the
 * problem the profiler was asked for), or the file is rejected. `source` names the file in errors
 * ("FILE:LINE: ..."). */
int pl_cutlass_csv_parse(const char *text, const char *source, const pl_gemm_shape *shape, const char *dtype,
                         const char *layout, pl_gemm_record_list *out, char *err, size_t errlen);

/* The profiler's arguments for one shape (argv[0] = bin, NULL-terminated, malloc'd strings); its CSV is written to
 * `prefix`.gemm.csv. dtype bf16|fp16|fp8, layout nk|kn. */
char **pl_cutlass_argv(const char *bin, const pl_gemm_shape *s, const char *dtype, const char *layout,
                       const char *prefix);
void pl_cutlass_argv_free(char **argv);

/* Run the profiler for one shape (its output in log_path), wait at most timeout_s, parse its CSV. Returns 0 with
 * the records appended, or -1 with why (not found, exit status, timeout, CSV error). */
int pl_cutlass_run(const char *bin, const pl_gemm_shape *s, const char *dtype, const char *layout, const char *workdir,
                   const char *log_path, double timeout_s, pl_gemm_record_list *out, char *err, size_t errlen);

#endif
