/* NVML, loaded at run time with dlopen so that perflab runs (with less telemetry) where it is absent. Only the
 * few functions perflab uses are declared; each may be NULL when the library lacks it. */
#ifndef PERFLAB_CORE_NVML_H
#define PERFLAB_CORE_NVML_H

#include <stddef.h>

typedef struct pl_nvml_device_st *pl_nvml_device;

enum {
    PL_NVML_SUCCESS = 0,
    PL_NVML_CLOCK_GRAPHICS = 0,
    PL_NVML_CLOCK_SM = 1,
    PL_NVML_CLOCK_MEM = 2,
    PL_NVML_TEMPERATURE_GPU = 0,
};

typedef struct pl_nvml {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    const char *(*error_string)(int);
    int (*system_get_driver_version)(char *version, unsigned int length);
    int (*device_get_count)(unsigned int *count);
    int (*device_get_handle_by_index)(unsigned int index, pl_nvml_device *device);
    int (*device_get_handle_by_pci_bus_id)(const char *bus_id, pl_nvml_device *device);
    int (*device_get_clock_info)(pl_nvml_device d, int type, unsigned int *mhz);
    int (*device_get_max_clock_info)(pl_nvml_device d, int type, unsigned int *mhz);
    int (*device_get_power_usage)(pl_nvml_device d, unsigned int *milliwatts);
    int (*device_get_enforced_power_limit)(pl_nvml_device d, unsigned int *milliwatts);
    int (*device_get_temperature)(pl_nvml_device d, int sensor, unsigned int *celsius);
    int (*device_get_clocks_event_reasons)(pl_nvml_device d, unsigned long long *reasons);
} pl_nvml;

/* Loads and initialises NVML once per process. NULL (with the reason in why) when it cannot. */
const pl_nvml *pl_nvml_get(char *why, size_t whylen);
/* Any further symbol, for verbs that need more than the above (NULL when absent). */
void *pl_nvml_symbol(const char *name);
/* The NVML handle of a CUDA device, matched by PCI bus id (the orders of CUDA and NVML can differ). */
int pl_nvml_device_for_bus_id(const char *pci_bus_id, pl_nvml_device *out);

#endif
