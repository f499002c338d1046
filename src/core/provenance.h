/* Where a result came from: perflab's version and commit, the command, the host, the GPUs and their software. */
#ifndef PERFLAB_CORE_PROVENANCE_H
#define PERFLAB_CORE_PROVENANCE_H

#include "core/devprobe.h"
#include "perflab/results.h"

/* inv may be NULL (no GPU needed, or none found). */
void pl_provenance_collect(pl_provenance *p, int argc, char **argv, const pl_gpu_inventory *inv);
/* The key for a set of GPUs: "h100_sxm", "h100_pcie", "h200", "b200", "gb200", "a100", "l40s", "gb10", …,
 * prefixed "<n>x_" for n > 1 GPUs of one kind (e.g. "2x_h200"); unknown names are lower-cased with
 * non-alphanumerics folded to '_'. It names the expectations file and the ceilings of that kind of GPU. */
char *pl_hardware_key_from_names(const char *const *gpu_names, size_t n);
/* PERFLAB_EXPECTATION_KEY if set, else pl_hardware_key_from_names. malloc'd. */
char *pl_hardware_key(const char *const *gpu_names, size_t n);
/* "2026-11-21T12:13:14Z" for now. */
char *pl_utc_timestamp(void);
/* A run id that sorts by time and does not collide: "20261121-121314-a3f9". */
char *pl_new_run_id(void);

#endif
