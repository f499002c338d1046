/* How a run reads: the table on the terminal, summary.md and results.csv in the artifacts. */
#ifndef PERFLAB_CORE_RUN_REPORT_H
#define PERFLAB_CORE_RUN_REPORT_H

#include <stdio.h>
#include "perflab/results.h"
#include "core/table.h"

pl_table *pl_run_table(const pl_run *r);
/* Header line, the table, one line per target or variant that is not ok, the expectations verdicts. */
void pl_run_print(const pl_run *r, FILE *out);
char *pl_run_summary_markdown(const pl_run *r);
char *pl_run_results_csv(const pl_run *r);
/* "4.71x [4.70, 4.72]", with " n.s." when the interval includes 1; "-" without a speedup. */
const char *pl_format_speedup(const pl_variant_result *v, char *buf, size_t len);

#endif
