/* The GPU's energy over a variant's timed samples: NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption,
 * millijoules since the driver loaded; Volta and later) read before and after each timed region, through the core's
 * NVML loader (core/nvml.h). The meter is a small interface the timing code calls (measure.c), so that a test can
 * drive it with a counter of its own. Where there is no counter the meter says why in one line, and the variant's
 * record holds nulls and that line, never a made-up figure. */
#ifndef PERFLAB_CORE_ENERGY_H
#define PERFLAB_CORE_ENERGY_H

#include <stddef.h>
#include "perflab/results.h"

typedef struct pl_energy_meter pl_energy_meter;
struct pl_energy_meter {
    int ok; /* 1: read may be called; 0: why says what is missing */
    /* The counter now, in joules: 0, or -1 with why set. */
    int (*read)(pl_energy_meter *m, double *joules);
    void *source; /* read's own state: NVML's device handle, or a test's counter */
    int (*nvml_total_energy)(void *device, unsigned long long *millijoules);
    char why[192];
};

/* Opens NVML's counter of the GPU at pci_bus_id (NULL or "": none). 0, or -1 with m->why (no NVML, no such GPU, no
 * counter, MIG on: the counter is then the whole GPU's, every instance's work included). */
int pl_energy_meter_open_nvml(pl_energy_meter *m, const char *pci_bus_id);
/* A meter with no counter; why says why. */
void pl_energy_meter_none(pl_energy_meter *m, const char *why);

/* A variant's timed regions, summed: the counter's deltas, the wall time they cover and the runs inside. */
typedef struct pl_energy_tally {
    double joules, seconds, runs;
    double j0, t0; /* the open region's start */
    int open;
    char why[192]; /* set when a reading failed or the counter went backwards: no figure */
} pl_energy_tally;

/* Reads the counter before a timed region, and after it with the runs it held (each sample's runs, dropped samples
 * included: the counter saw them). Both cost one NVML call, outside the timed samples. */
void pl_energy_region_begin(pl_energy_meter *m, pl_energy_tally *t);
void pl_energy_region_end(pl_energy_meter *m, pl_energy_tally *t, double runs);
/* The tally as the variant's record: figures, or NaN and the reason. */
void pl_energy_tally_result(const pl_energy_meter *m, const pl_energy_tally *t, pl_energy *out);
/* joules_per_element from joules_per_run and the target's elements per run (NaN when either is missing). */
void pl_energy_derive(pl_energy *e, double elements);

/* Three significant figures with the unit scaled: "1.23 J", "456 mJ", "12.3 µJ", "4.50 nJ"; "-" for NaN. */
const char *pl_format_joules(double joules, char *buf, size_t len);

#endif
