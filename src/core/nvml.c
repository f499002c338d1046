#include "core/nvml.h"

#include <dlfcn.h>
#include <stddef.h>
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
