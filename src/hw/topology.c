#include "hw/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/nvml.h"
#include "core/util.h"

int pl_same_bus_id(const char *a, const char *b)
{
    unsigned da, ba, sa, fa, db, bb, sb, fb;
    if (!a || !b || sscanf(a, "%x:%x:%x.%x", &da, &ba, &sa, &fa) != 4 ||
        sscanf(b, "%x:%x:%x.%x", &db, &bb, &sb, &fb) != 4)
        return 0;
    return da == db && ba == bb && sa == sb && fa == fb;
}

void pl_pair_link_query(const char *bus_a, const char *bus_b, pl_pair_link *out)
{
    memset(out, 0, sizeof *out);
    out->level = -1;
    const pl_nvml *n = pl_nvml_get(out->why, sizeof out->why);
    pl_nvml_device a, b;
    if (!n)
        return;
    if (pl_nvml_device_for_bus_id(bus_a, &a) != 0 || pl_nvml_device_for_bus_id(bus_b, &b) != 0) {
        pl_snprintf(out->why, sizeof out->why, "NVML does not know %s or %s", bus_a, bus_b);
        return;
    }
    out->known = 1;
    int v;
    if (n->device_get_topology_common_ancestor && n->device_get_topology_common_ancestor(a, b, &v) == 0)
        out->level = v;
    if (n->device_get_p2p_status && n->device_get_p2p_status(a, b, PL_NVML_P2P_CAPS_NVLINK, &v) == 0)
        out->nvlink = v == PL_NVML_P2P_STATUS_OK;
    if (!n->device_get_nvlink_state)
        return;
    int direct = 0, to_switch = 0;
    for (unsigned link = 0; link < PL_NVML_NVLINK_MAX_LINKS; link++) {
        int active = 0, type = -1;
        if (n->device_get_nvlink_state(a, link, &active) != 0 || !active)
            continue;
        if (n->device_get_nvlink_remote_device_type && n->device_get_nvlink_remote_device_type(a, link, &type) == 0 &&
            type == PL_NVML_NVLINK_DEVICE_SWITCH) {
            to_switch++;
            continue;
        }
        pl_nvml_pci_info pci;
        memset(&pci, 0, sizeof pci);
        if (n->device_get_nvlink_remote_pci_info && n->device_get_nvlink_remote_pci_info(a, link, &pci) == 0 &&
            pl_same_bus_id(pci.bus_id, bus_b))
            direct++;
    }
    out->nvlinks = direct ? direct : (out->nvlink ? to_switch : 0);
    if (out->nvlinks)
        out->nvlink = 1;
}

const char *pl_pair_link_name(const pl_pair_link *l, char *buf, size_t len)
{
    if (l->nvlinks > 0)
        pl_snprintf(buf, len, "NV%d", l->nvlinks);
    else if (l->nvlink)
        pl_snprintf(buf, len, "NV");
    else
        pl_snprintf(buf, len, "%s", l->level >= 0 ? pl_nvml_topology_name(l->level) : "?");
    return buf;
}

pl_table *pl_gpu_matrix_table(size_t n, const char *corner, int right_aligned, const char *extra)
{
    const char **spec = pl_xcalloc(n + 2, sizeof *spec);
    char **names = pl_xcalloc(n + 1, sizeof *names);
    spec[0] = corner;
    for (size_t j = 0; j < n; j++)
        spec[j + 1] = names[j] = pl_strfmt("%sGPU%zu", right_aligned ? ">" : "", j);
    spec[n + 1] = extra;
    pl_table *t = pl_table_new(n + 1 + (extra != NULL), spec);
    for (size_t j = 0; j < n; j++)
        free(names[j]);
    free(names);
    free(spec);
    for (size_t i = 0; i < n; i++) {
        size_t r = pl_table_row(t);
        pl_table_set(t, r, 0, "GPU%zu", i);
        pl_table_set(t, r, i + 1, "X");
    }
    return t;
}
