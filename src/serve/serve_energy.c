/* The GPU's energy counter through core/nvml.h's loader (serve_energy.h). */
#include "serve/serve_energy.h"

#include <string.h>

#include "core/nvml.h"
#include "core/util.h"

int pl_serve_energy_open(const char *pci_bus_id, pl_serve_energy *e)
{
    memset(e, 0, sizeof *e);
    if (!pci_bus_id || !*pci_bus_id) {
        pl_snprintf(e->why, sizeof e->why, "no GPU: the executor runs no GPU work");
        return -1;
    }
    char why[256];
    if (!pl_nvml_get(why, sizeof why)) {
        pl_snprintf(e->why, sizeof e->why, "NVML: %s", why);
        return -1;
    }
    e->total_energy = (int (*)(void *, unsigned long long *))pl_nvml_symbol("nvmlDeviceGetTotalEnergyConsumption");
    if (!e->total_energy) {
        pl_snprintf(e->why, sizeof e->why, "this NVML has no nvmlDeviceGetTotalEnergyConsumption");
        return -1;
    }
    pl_nvml_device dev;
    if (pl_nvml_device_for_bus_id(pci_bus_id, &dev) != 0) {
        pl_snprintf(e->why, sizeof e->why, "NVML does not know the GPU at %s", pci_bus_id);
        return -1;
    }
    e->device = dev;
    e->ok = 1;
    double j;
    return pl_serve_energy_read(e, &j);
}

int pl_serve_energy_read(pl_serve_energy *e, double *joules)
{
    *joules = 0;
    if (!e->ok)
        return -1;
    unsigned long long mj = 0;
    int rc = e->total_energy(e->device, &mj);
    if (rc != PL_NVML_SUCCESS) {
        pl_snprintf(e->why, sizeof e->why, "nvmlDeviceGetTotalEnergyConsumption: %s", pl_nvml_error(rc));
        e->ok = 0;
        return -1;
    }
    *joules = (double)mj / 1000.0;
    return 0;
}
