/* What GPUs this machine has, asked in a child process so that the parent never initialises CUDA (a CUDA
 * context does not survive fork, and a wedged driver must not hang the parent). */
#ifndef PERFLAB_CORE_DEVPROBE_H
#define PERFLAB_CORE_DEVPROBE_H

#include <jansson.h>
#include "perflab/ctx.h"
#include "perflab/results.h"

typedef struct pl_gpu_inventory {
    int usable;      /* at least one GPU that the CUDA runtime can use */
    char error[512]; /* why not, one line */
    int device_count;
    int cuda_driver_version, cuda_runtime_version;
    char driver_version[64]; /* NVML's driver version string, or "" */
    char nvml_status[256];   /* "" when NVML works, else why not */
    pl_device_info *devices;
    pl_gpu_record *records; /* the same GPUs as provenance records (clocks now, power limit, temperature) */
} pl_gpu_inventory;

/* Fork a child that asks the CUDA runtime (and NVML) and reports back. Returns 0 when the child answered
 * (inv->usable says whether there is a GPU), -1 when it crashed or hung. */
int pl_gpu_inventory_probe(pl_gpu_inventory *inv, double timeout_s);
/* The same asked in this process, which then has a CUDA context: for a process that uses CUDA anyway (Python with
 * torch, src/py). Returns 0 (inv->usable says whether there is a GPU). */
int pl_gpu_inventory_query(pl_gpu_inventory *inv);
void pl_gpu_inventory_free(pl_gpu_inventory *inv);

/* In a process that may use CUDA: fill the device's description (NVML clocks when present). */
int pl_device_info_query(int ordinal, pl_device_info *out, char *err, size_t errlen);
json_t *pl_device_info_to_json(const pl_device_info *d);
void pl_device_info_from_json(json_t *j, pl_device_info *d);

struct pl_capabilities;
/* Whether a device meets the requirements; if not, why (one line). Features are judged by what `perflab probe`
 * measured on this GPU where `caps` (loaded once by the caller; may be NULL) says, else by the compute capability. */
int pl_requirements_met(const pl_requirements *r, const pl_device_info *d, int device_count,
                        const struct pl_capabilities *caps, char *why, size_t whylen);

#endif
