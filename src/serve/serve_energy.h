/* The GPU's energy over a serving run: NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ since
 * the driver loaded; Volta and later) read before and after, through the core's meter (core/energy.h). Where
 * there is no NVML, no such GPU or no counter, the meter says why in one line. */
#ifndef PERFLAB_SERVE_SERVE_ENERGY_H
#define PERFLAB_SERVE_SERVE_ENERGY_H

#include <stddef.h>

#include "core/energy.h"

typedef struct pl_serve_energy {
    int ok;
    pl_energy_meter meter;
    char why[192]; /* when !ok: "energy: not available (...)"'s reason */
} pl_serve_energy;

/* Opens the meter for the GPU at pci_bus_id (NULL: none; why then says there is no GPU). 0, or -1 with e->why. */
int pl_serve_energy_open(const char *pci_bus_id, pl_serve_energy *e);
/* The counter in joules. 0, or -1 with e->why set and e->ok cleared. */
int pl_serve_energy_read(pl_serve_energy *e, double *joules);

#endif
