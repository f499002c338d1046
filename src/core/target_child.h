/* The target's side of the isolation: runs in the child process that the runner forks. */
#ifndef PERFLAB_CORE_TARGET_CHILD_H
#define PERFLAB_CORE_TARGET_CHILD_H

#include "perflab/results.h"
#include "perflab/target.h"

/* Set up, verify and time every variant of t, sending to fd: {"t":"progress"}, one {"t":"variant", ...} per
 * variant (a pl_variant_result), {"t":"target","status","reason"} when the target as a whole fails, and
 * {"t":"done"} at the end. Returns; the caller _exits. */
struct pl_capabilities;
/* caps: what `perflab probe` measured (may be NULL), for the variants' feature requirements. run_dir: the run's
 * folder (NULL: none), where a roofline run's ncu replays leave their reports. */
void pl_child_run_target(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                         const struct pl_capabilities *caps, const char *run_dir, int fd);

#endif
