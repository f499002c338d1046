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
    PL_NVML_ERROR_NOT_SUPPORTED = 3,
    PL_NVML_ERROR_INVALID_ARGUMENT = 2,
    PL_NVML_NVLINK_MAX_LINKS = 18, /* NVML_NVLINK_MAX_LINKS (Hopper and Blackwell have 18) */
    PL_NVML_P2P_CAPS_READ = 0,     /* nvmlGpuP2PCapsIndex_t */
    PL_NVML_P2P_CAPS_NVLINK = 2,
    PL_NVML_P2P_STATUS_OK = 0,
    PL_NVML_NVLINK_DEVICE_SWITCH = 2, /* nvmlIntNvLinkDeviceType_t */
};

/* nvmlPciInfo_t as the _v2/_v3 entry points fill it. */
typedef struct pl_nvml_pci_info {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} pl_nvml_pci_info;

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
    /* for `perflab hw`: each may be NULL (older drivers), and each may answer NOT_SUPPORTED */
    int (*system_get_nvml_version)(char *version, unsigned int length);
    int (*device_get_uuid)(pl_nvml_device d, char *uuid, unsigned int length);
    int (*device_get_vbios_version)(pl_nvml_device d, char *version, unsigned int length);
    int (*device_get_power_default_limit)(pl_nvml_device d, unsigned int *milliwatts);
    int (*device_get_curr_pcie_link_generation)(pl_nvml_device d, unsigned int *gen);
    int (*device_get_curr_pcie_link_width)(pl_nvml_device d, unsigned int *width);
    int (*device_get_max_pcie_link_generation)(pl_nvml_device d, unsigned int *gen); /* of the slot and GPU */
    int (*device_get_max_pcie_link_width)(pl_nvml_device d, unsigned int *width);
    int (*device_get_gpu_max_pcie_link_generation)(pl_nvml_device d, unsigned int *gen); /* of the GPU alone */
    int (*device_get_nvlink_state)(pl_nvml_device d, unsigned int link, int *active);
    int (*device_get_nvlink_version)(pl_nvml_device d, unsigned int link, unsigned int *version);
    int (*device_get_nvlink_remote_pci_info)(pl_nvml_device d, unsigned int link, pl_nvml_pci_info *pci);
    int (*device_get_nvlink_remote_device_type)(pl_nvml_device d, unsigned int link, int *type);
    int (*device_get_ecc_mode)(pl_nvml_device d, int *current, int *pending);
    int (*device_get_mig_mode)(pl_nvml_device d, unsigned int *current, unsigned int *pending);
    int (*device_get_persistence_mode)(pl_nvml_device d, int *enabled);
    int (*device_get_topology_common_ancestor)(pl_nvml_device a, pl_nvml_device b, int *level);
    int (*device_get_p2p_status)(pl_nvml_device a, pl_nvml_device b, int caps_index, int *status);
} pl_nvml;

/* Loads and initialises NVML once per process. NULL (with the reason in why) when it cannot. */
const pl_nvml *pl_nvml_get(char *why, size_t whylen);
/* Any further symbol, for verbs that need more than the above (NULL when absent). */
void *pl_nvml_symbol(const char *name);
/* The NVML handle of a CUDA device, matched by PCI bus id (the orders of CUDA and NVML can differ). */
int pl_nvml_device_for_bus_id(const char *pci_bus_id, pl_nvml_device *out);
/* NVML's message for a return code ("Not Supported"), or "error N" when NVML is not loaded. */
const char *pl_nvml_error(int rc);
/* "PIX", "PXB", "PHB", "NODE", "SYS" or "SELF" for an nvmlGpuTopologyLevel_t (nvidia-smi topo -m's words). */
const char *pl_nvml_topology_name(int level);

#endif
