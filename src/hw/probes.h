/* The feature probes of `perflab probe`, run per GPU in child processes. */
#ifndef PERFLAB_HW_PROBES_H
#define PERFLAB_HW_PROBES_H

#include <stddef.h>

#include "hw/hwchild.h"

typedef struct pl_probe_options {
    int device; /* the GPU the probes run on */
} pl_probe_options;

/* One task per probe, in the order of the table: clusters, tma, wgmma, tcgen05, fp8_mma, cooperative_launch.
 * Each sends {"probe", "status", "detail", "value", "ms"}. */
const pl_hw_task *pl_probe_tasks(size_t *count);

#endif
