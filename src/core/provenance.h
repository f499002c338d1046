/* Where a result came from: perflab's version and commit, the command, the host, the GPUs and their software. */
#ifndef PERFLAB_CORE_PROVENANCE_H
#define PERFLAB_CORE_PROVENANCE_H

#include "core/devprobe.h"
#include "perflab/results.h"

/* inv may be NULL (no GPU needed, or none found). */
void pl_provenance_collect(pl_provenance *p, int argc, char **argv, const pl_gpu_inventory *inv);
/* "2026-11-21T12:13:14Z" for now. */
char *pl_utc_timestamp(void);
/* A run id that sorts by time and does not collide: "20261121-121314-a3f9". */
char *pl_new_run_id(void);

#endif
