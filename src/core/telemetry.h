/* Telemetry while a target runs (profile minimal and up): a thread samples the GPU's SM and memory clocks,
 * power and temperature through NVML; each variant reads the min/mean/max of its own window. */
#ifndef PERFLAB_CORE_TELEMETRY_H
#define PERFLAB_CORE_TELEMETRY_H

#include "perflab/results.h"

typedef struct pl_sampler pl_sampler;

/* NULL when NVML is unavailable (why says so). */
pl_sampler *pl_sampler_start(const char *pci_bus_id, double period_s, char *why, size_t whylen);
void pl_sampler_begin_window(pl_sampler *s);
void pl_sampler_end_window(pl_sampler *s, pl_telemetry *out);
void pl_sampler_stop(pl_sampler *s);

void pl_summary_add(pl_summary *s, double x);
/* Add the readings of window w to `into` (a variant timed in several windows). */
void pl_telemetry_merge(pl_telemetry *into, const pl_telemetry *w);

#endif
