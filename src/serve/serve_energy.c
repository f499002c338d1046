/* The GPU's energy counter through core/energy.h's meter (serve_energy.h). */
#include "serve/serve_energy.h"

#include <string.h>

#include "core/util.h"

int pl_serve_energy_open(const char *pci_bus_id, pl_serve_energy *e)
{
    memset(e, 0, sizeof *e);
    if (!pci_bus_id || !*pci_bus_id) {
        pl_snprintf(e->why, sizeof e->why, "no GPU: the executor runs no GPU work");
        return -1;
    }
    e->ok = pl_energy_meter_open_nvml(&e->meter, pci_bus_id) == 0;
    if (!e->ok)
        pl_snprintf(e->why, sizeof e->why, "%s", e->meter.why);
    return e->ok ? 0 : -1;
}

int pl_serve_energy_read(pl_serve_energy *e, double *joules)
{
    *joules = 0;
    if (!e->ok)
        return -1;
    if (e->meter.read(&e->meter, joules) != 0) {
        pl_snprintf(e->why, sizeof e->why, "%s", e->meter.why);
        e->ok = 0;
        return -1;
    }
    return 0;
}
