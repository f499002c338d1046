/* perflab gemm's report: its table, its JSON files and summary.md. */
#ifndef PERFLAB_SELECTOR_GEMM_REPORT_H
#define PERFLAB_SELECTOR_GEMM_REPORT_H

#include <jansson.h>

#include "core/table.h"
#include "selector/provider_comparison.h"

/* Shapes x providers in TFLOP/s, the winner, and each provider's ratio over the best of cuBLAS/cuBLASLt, with a
 * geometric-mean row. */
pl_table *pl_gemm_comparison_table(const pl_gemm_comparison *c);
/* comparison.json; `about` (provenance, settings) is merged in when given. */
json_t *pl_gemm_comparison_to_json(const pl_gemm_comparison *c, json_t *about);
/* A provider's file: every record tried for it over all shapes. */
json_t *pl_gemm_comparison_provider_json(const pl_gemm_comparison *c, size_t provider);
/* <provider>.json per provider, comparison.json and summary.md into dir, each atomically. */
int pl_gemm_report_write(const pl_gemm_comparison *cmp, const char *dir, json_t *about, char *err, size_t errlen);

#endif
