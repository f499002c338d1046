/* artifacts/<run_id>/: run.json, summary.md, results.csv and logs/, every file written atomically. */
#ifndef PERFLAB_CORE_ARTIFACTS_H
#define PERFLAB_CORE_ARTIFACTS_H

#include "perflab/results.h"

/* Create <artifacts_dir>/<run_id>/logs/ (checking that it can be written) and set run->run_dir. Returns -1
 * with a one-line message naming the directory and the fix. */
int pl_artifacts_prepare(pl_run *run, const char *artifacts_dir, char *err, size_t errlen);
/* Write run.json, summary.md and results.csv. */
int pl_artifacts_write(const pl_run *run, char *err, size_t errlen);

#endif
