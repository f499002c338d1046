/* run.json: results to JSON and back, and JSON files read with precise error positions and written atomically. */
#ifndef PERFLAB_CORE_RESULTS_JSON_H
#define PERFLAB_CORE_RESULTS_JSON_H

/* The most a run.json that perflab reads may hold (refused before any statistics are computed): targets, variants
 * over all targets, and samples of one variant (--iterations' largest value). */
#define PL_RUN_MAX_TARGETS  1024
#define PL_RUN_MAX_VARIANTS 1024
#define PL_RUN_MAX_SAMPLES  10000000

#include <jansson.h>
#include "perflab/results.h"

json_t *pl_run_to_json(const pl_run *r);
json_t *pl_provenance_to_json(const pl_provenance *p);
/* Fills *out (zeroed first). Returns -1 with "what is wrong, at which key" when the document is not a run. */
int pl_run_from_json(json_t *j, pl_run *out, char *err, size_t errlen);
/* Accepts a run directory or the path of its run.json. */
int pl_run_load(const char *path, pl_run *out, char *err, size_t errlen);
/* The limits above on a run document (pl_run_from_json applies them first); -1 with one line. */
int pl_run_json_check_size(json_t *j, char *err, size_t errlen);

/* Each struct to JSON and back (results_schema.c: one field table per struct drives these and the frees of
 * perflab/results.h). *_from_json zeroes *out first; after an error, free it. */
json_t *pl_variant_result_to_json(const pl_variant_result *v);
int pl_variant_result_from_json(json_t *j, pl_variant_result *out, char *err, size_t errlen);
json_t *pl_ncu_metrics_to_json(const pl_ncu_metrics *m);
int pl_ncu_metrics_from_json(json_t *j, pl_ncu_metrics *out, char *err, size_t errlen);
void pl_ncu_metrics_free(pl_ncu_metrics *m);
json_t *pl_target_result_to_json(const pl_target_result *t);
int pl_target_result_from_json(json_t *j, pl_target_result *out, char *err, size_t errlen);
int pl_provenance_from_json(json_t *j, pl_provenance *out, char *err, size_t errlen);
json_t *pl_run_settings_to_json(const pl_run_settings *s);
int pl_run_settings_from_json(json_t *j, pl_run_settings *out, char *err, size_t errlen);
json_t *pl_expect_report_to_json(const pl_expect_report *r);
int pl_expect_report_from_json(json_t *j, pl_expect_report *out, char *err, size_t errlen);
/* The run's own table, without the checks of pl_run_from_json. */
json_t *pl_run_fields_to_json(const pl_run *r);
int pl_run_fields_from_json(json_t *j, pl_run *out, char *err, size_t errlen);
void pl_run_fields_free(pl_run *r);

/* Load a JSON file; a syntax error reads "FILE:LINE:COLUMN: message". */
json_t *pl_json_load_file(const char *path, char *err, size_t errlen);
/* A JSON file read into a struct by `read`: 0 loaded, 1 no such file (nothing read), -1 unreadable or malformed (err:
 * "FILE: what is wrong", or the syntax error's position). */
int pl_json_load_as(const char *path, int (*read)(json_t *j, void *out, char *err, size_t errlen), void *out, char *err,
                    size_t errlen);
/* Indented, keys in insertion order, written through pl_write_file_atomic. */
int pl_json_save_file(json_t *j, const char *path, char *err, size_t errlen);
/* Compact one-line JSON text (malloc'd), for the pipe between child and parent. */
char *pl_json_dumps_line(json_t *j);

/* NaN/Inf cannot be JSON numbers: they are written as null and read back as NaN. */
json_t *pl_json_real(double x);
double pl_json_get_real(json_t *obj, const char *key); /* NaN when absent or null */

#endif
