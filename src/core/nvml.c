#include "core/nvml.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static pl_nvml nvml;
static int tried, loaded;
static char failure[256];

static void *sym(const char *name)
{
    return nvml.lib ? dlsym(nvml.lib, name) : NULL;
}

void *pl_nvml_symbol(const char *name)
{
    return loaded ? sym(name) : NULL;
}

static int load(void)
{
    /* for checking what perflab does on a machine without NVML */
    const char *off = getenv("PERFLAB_NVML_DISABLE");
    if (off && *off && strcmp(off, "0") != 0) {
        pl_snprintf(failure, sizeof failure, "NVML disabled by PERFLAB_NVML_DISABLE");
        return -1;
    }
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib)
        nvml.lib = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib) {
        pl_snprintf(failure, sizeof failure, "NVML (libnvidia-ml.so.1) is not installed");
        return -1;
    }
    /* dlsym returns void*; the cast through a union keeps the conversion to a function pointer well defined */
#define LOAD(field, name)                                                                                              \
    do {                                                                                                               \
        union {                                                                                                        \
            void *p;                                                                                                   \
            __typeof__(nvml.field) f;                                                                                  \
        } u_ = {sym(name)};                                                                                            \
        nvml.field = u_.f;                                                                                             \
    } while (0)
    LOAD(init, "nvmlInit_v2");
    LOAD(shutdown, "nvmlShutdown");
    LOAD(error_string, "nvmlErrorString");
    LOAD(system_get_driver_version, "nvmlSystemGetDriverVersion");
    LOAD(device_get_count, "nvmlDeviceGetCount_v2");
    LOAD(device_get_handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(device_get_handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    LOAD(device_get_clock_info, "nvmlDeviceGetClockInfo");
    LOAD(device_get_max_clock_info, "nvmlDeviceGetMaxClockInfo");
    LOAD(device_get_power_usage, "nvmlDeviceGetPowerUsage");
    LOAD(device_get_enforced_power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    LOAD(device_get_temperature, "nvmlDeviceGetTemperature");
    LOAD(device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!nvml.device_get_clocks_event_reasons)
        LOAD(device_get_clocks_event_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(system_get_nvml_version, "nvmlSystemGetNVMLVersion");
    LOAD(device_get_uuid, "nvmlDeviceGetUUID");
    LOAD(device_get_vbios_version, "nvmlDeviceGetVbiosVersion");
    LOAD(device_get_power_default_limit, "nvmlDeviceGetPowerManagementDefaultLimit");
    LOAD(device_get_curr_pcie_link_generation, "nvmlDeviceGetCurrPcieLinkGeneration");
    LOAD(device_get_curr_pcie_link_width, "nvmlDeviceGetCurrPcieLinkWidth");
    LOAD(device_get_max_pcie_link_generation, "nvmlDeviceGetMaxPcieLinkGeneration");
    LOAD(device_get_max_pcie_link_width, "nvmlDeviceGetMaxPcieLinkWidth");
    LOAD(device_get_gpu_max_pcie_link_generation, "nvmlDeviceGetGpuMaxPcieLinkGeneration");
    LOAD(device_get_nvlink_state, "nvmlDeviceGetNvLinkState");
    LOAD(device_get_nvlink_version, "nvmlDeviceGetNvLinkVersion");
    LOAD(device_get_nvlink_remote_pci_info, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    LOAD(device_get_nvlink_remote_device_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    LOAD(device_get_ecc_mode, "nvmlDeviceGetEccMode");
    LOAD(device_get_mig_mode, "nvmlDeviceGetMigMode");
    LOAD(device_get_persistence_mode, "nvmlDeviceGetPersistenceMode");
    LOAD(device_get_topology_common_ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    LOAD(device_get_p2p_status, "nvmlDeviceGetP2PStatus");
#undef LOAD
    if (!nvml.init || !nvml.device_get_handle_by_pci_bus_id) {
        pl_snprintf(failure, sizeof failure, "NVML lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2");
        return -1;
    }
    int rc = nvml.init();
    if (rc != PL_NVML_SUCCESS) {
        pl_snprintf(failure, sizeof failure, "nvmlInit failed: %s",
                    nvml.error_string ? nvml.error_string(rc) : "unknown error");
        return -1;
    }
    return 0;
}

const pl_nvml *pl_nvml_get(char *why, size_t whylen)
{
    if (!tried) {
        tried = 1;
        loaded = load() == 0;
    }
    if (!loaded)
        pl_snprintf(why, whylen, "%s", failure);
    return loaded ? &nvml : NULL;
}

int pl_nvml_device_for_bus_id(const char *pci_bus_id, pl_nvml_device *out)
{
    char why[8];
    const pl_nvml *n = pl_nvml_get(why, sizeof why);
    if (!n || !pci_bus_id || !*pci_bus_id)
        return -1;
    return n->device_get_handle_by_pci_bus_id(pci_bus_id, out) == PL_NVML_SUCCESS ? 0 : -1;
}

const char *pl_nvml_error(int rc)
{
    static char buf[32];
    if (loaded && nvml.error_string)
        return nvml.error_string(rc);
    pl_snprintf(buf, sizeof buf, "error %d", rc);
    return buf;
}

const char *pl_nvml_topology_name(int level)
{
    /* nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10, MULTIPLE 20, HOSTBRIDGE 30, NODE 40, SYSTEM 50 */
    switch (level) {
    case 0: return "SELF";
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    case 50: return "SYS";
    default: return "?";
    }
}
