/* A variant's energy from NVML's total-energy counter (energy.h). */
#include "core/energy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/nvml.h"
#include "core/util.h"

static int nvml_read(pl_energy_meter *m, double *joules)
{
    unsigned long long mj = 0;
    int rc = m->nvml_total_energy(m->source, &mj);
    if (rc != PL_NVML_SUCCESS) {
        pl_snprintf(m->why, sizeof m->why, "nvmlDeviceGetTotalEnergyConsumption: %s", pl_nvml_error(rc));
        return -1;
    }
    *joules = (double)mj / 1000.0;
    return 0;
}

void pl_energy_meter_none(pl_energy_meter *m, const char *why)
{
    memset(m, 0, sizeof *m);
    pl_snprintf(m->why, sizeof m->why, "%s", why);
}

int pl_energy_meter_open_nvml(pl_energy_meter *m, const char *pci_bus_id)
{
    memset(m, 0, sizeof *m);
    if (!pci_bus_id || !*pci_bus_id) {
        pl_energy_meter_none(m, "no GPU: nothing to meter");
        return -1;
    }
    char why[160];
    const pl_nvml *n = pl_nvml_get(why, sizeof why);
    if (!n) {
        pl_snprintf(m->why, sizeof m->why, "NVML: %s", why);
        return -1;
    }
    m->nvml_total_energy =
        (int (*)(void *, unsigned long long *))pl_nvml_symbol("nvmlDeviceGetTotalEnergyConsumption");
    if (!m->nvml_total_energy) {
        pl_snprintf(m->why, sizeof m->why, "this NVML has no nvmlDeviceGetTotalEnergyConsumption");
        return -1;
    }
    pl_nvml_device dev;
    if (pl_nvml_device_for_bus_id(pci_bus_id, &dev) != 0) {
        pl_snprintf(m->why, sizeof m->why, "NVML does not know the GPU at %s", pci_bus_id);
        return -1;
    }
    unsigned int mig = 0, pending = 0;
    if (n->device_get_mig_mode && n->device_get_mig_mode(dev, &mig, &pending) == PL_NVML_SUCCESS && mig) {
        pl_snprintf(m->why, sizeof m->why,
                    "MIG is on: the counter is the whole GPU's, other instances' work included");
        return -1;
    }
    m->source = dev;
    m->read = nvml_read;
    m->ok = 1;
    double j;
    if (m->read(m, &j) != 0) { /* a GPU without the counter answers Not Supported here */
        m->ok = 0;
        return -1;
    }
    return 0;
}

/* The counter now, or -1 (the tally then gives no figure, and says why). */
static int read_counter(pl_energy_meter *m, pl_energy_tally *t, double *joules)
{
    if (!m->ok || t->why[0])
        return -1;
    if (m->read(m, joules) != 0) {
        pl_snprintf(t->why, sizeof t->why, "%s", m->why);
        return -1;
    }
    return 0;
}

void pl_energy_region_begin(pl_energy_meter *m, pl_energy_tally *t)
{
    t->open = read_counter(m, t, &t->j0) == 0;
    t->t0 = pl_now_s();
}

void pl_energy_region_end(pl_energy_meter *m, pl_energy_tally *t, double runs)
{
    const double t1 = pl_now_s();
    double j1;
    if (!t->open || read_counter(m, t, &j1) != 0)
        return;
    t->open = 0;
    if (j1 < t->j0) {
        pl_snprintf(t->why, sizeof t->why, "the energy counter went backwards (%.3f J -> %.3f J)", t->j0, j1);
        return;
    }
    t->joules += j1 - t->j0;
    t->seconds += t1 - t->t0;
    t->runs += runs;
}

void pl_energy_tally_result(const pl_energy_meter *m, const pl_energy_tally *t, pl_energy *out)
{
    free(out->note);
    memset(out, 0, sizeof *out);
    out->energy_j = out->joules_per_run = out->joules_per_element = out->timed_s = out->average_power_w = NAN;
    out->runs = t->runs;
    if (!m->ok && !t->why[0]) {
        out->note = pl_strdup(m->why[0] ? m->why : "no energy counter");
        return;
    }
    if (t->why[0]) {
        out->note = pl_strdup(t->why);
        return;
    }
    if (t->runs <= 0 || t->seconds <= 0) {
        out->note = pl_strdup("no timed region was metered");
        return;
    }
    if (t->joules <= 0) {
        /* the driver updates the counter periodically, not every millijoule: a short region may see no step */
        out->note = pl_strfmt("the energy counter did not advance over %.3f s of timed samples (it is updated "
                              "less often): time longer (--min-time-s)",
                              t->seconds);
        out->timed_s = t->seconds;
        return;
    }
    out->energy_j = t->joules;
    out->timed_s = t->seconds;
    out->joules_per_run = t->joules / t->runs;
    out->average_power_w = t->joules / t->seconds;
}

void pl_energy_derive(pl_energy *e, double elements)
{
    e->joules_per_element = elements > 0 && isfinite(e->joules_per_run) ? e->joules_per_run / elements : NAN;
}

const char *pl_format_joules(double joules, char *buf, size_t len)
{
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1, "J"}, {1e-3, "mJ"}, {1e-6, "\u00b5J"}, {1e-9, "nJ"}};
    if (!isfinite(joules)) {
        pl_snprintf(buf, len, "-");
        return buf;
    }
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && fabs(joules) < units[u].scale)
        u++;
    const double x = joules / units[u].scale;
    const int decimals = fabs(x) >= 100 ? 0 : fabs(x) >= 10 ? 1 : 2;
    pl_snprintf(buf, len, "%.*f %s", decimals, x, units[u].unit);
    return buf;
}
