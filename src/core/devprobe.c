#include "core/devprobe.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#include "core/piped_child.h"
#include "core/nvml.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/capabilities.h"

int pl_device_info_query(int ordinal, pl_device_info *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, ordinal);
    if (e != cudaSuccess) {
        pl_snprintf(err, errlen, "cudaGetDeviceProperties(%d): %s", ordinal, cudaGetErrorString(e));
        return -1;
    }
    d->ordinal = ordinal;
    pl_snprintf(d->name, sizeof d->name, "%s", p.name);
    if (cudaDeviceGetPCIBusId(d->pci_bus_id, sizeof d->pci_bus_id, ordinal) != cudaSuccess)
        d->pci_bus_id[0] = '\0';
    d->cc_major = p.major;
    d->cc_minor = p.minor;
    d->sm_count = p.multiProcessorCount;
    d->global_mem_bytes = p.totalGlobalMem;
    d->l2_bytes = (size_t)p.l2CacheSize;
    d->smem_per_block_optin = p.sharedMemPerBlockOptin;
    d->smem_per_sm = p.sharedMemPerMultiprocessor;
    d->regs_per_sm = p.regsPerMultiprocessor;
    d->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    d->mem_bus_width_bits = p.memoryBusWidth;
    int cluster = 0;
    if (cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, ordinal) == cudaSuccess)
        d->cluster_launch = cluster;
    pl_nvml_device nd;
    char why[8];
    const pl_nvml *n = pl_nvml_get(why, sizeof why);
    if (n && pl_nvml_device_for_bus_id(d->pci_bus_id, &nd) == 0 && n->device_get_max_clock_info) {
        unsigned int mhz;
        if (n->device_get_max_clock_info(nd, PL_NVML_CLOCK_SM, &mhz) == 0)
            d->sm_clock_max_mhz = (int)mhz;
        if (n->device_get_max_clock_info(nd, PL_NVML_CLOCK_MEM, &mhz) == 0)
            d->mem_clock_max_mhz = (int)mhz;
    }
    return 0;
}

json_t *pl_device_info_to_json(const pl_device_info *d)
{
    return json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i}", "ordinal",
                     d->ordinal, "name", d->name, "pci_bus_id", d->pci_bus_id, "cc_major", d->cc_major, "cc_minor",
                     d->cc_minor, "sm_count", d->sm_count, "global_mem_bytes", (json_int_t)d->global_mem_bytes,
                     "l2_bytes", (json_int_t)d->l2_bytes, "smem_per_block_optin", (json_int_t)d->smem_per_block_optin,
                     "smem_per_sm", (json_int_t)d->smem_per_sm, "regs_per_sm", d->regs_per_sm, "max_threads_per_sm",
                     d->max_threads_per_sm, "sm_clock_max_mhz", d->sm_clock_max_mhz, "mem_clock_max_mhz",
                     d->mem_clock_max_mhz, "mem_bus_width_bits", d->mem_bus_width_bits, "cluster_launch",
                     d->cluster_launch);
}

static long long jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

void pl_device_info_from_json(json_t *j, pl_device_info *d)
{
    memset(d, 0, sizeof *d);
    d->ordinal = (int)jint(j, "ordinal");
    pl_snprintf(d->name, sizeof d->name, "%s", jstr(j, "name"));
    pl_snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", jstr(j, "pci_bus_id"));
    d->cc_major = (int)jint(j, "cc_major");
    d->cc_minor = (int)jint(j, "cc_minor");
    d->sm_count = (int)jint(j, "sm_count");
    d->global_mem_bytes = (size_t)jint(j, "global_mem_bytes");
    d->l2_bytes = (size_t)jint(j, "l2_bytes");
    d->smem_per_block_optin = (size_t)jint(j, "smem_per_block_optin");
    d->smem_per_sm = (size_t)jint(j, "smem_per_sm");
    d->regs_per_sm = (int)jint(j, "regs_per_sm");
    d->max_threads_per_sm = (int)jint(j, "max_threads_per_sm");
    d->sm_clock_max_mhz = (int)jint(j, "sm_clock_max_mhz");
    d->mem_clock_max_mhz = (int)jint(j, "mem_clock_max_mhz");
    d->mem_bus_width_bits = (int)jint(j, "mem_bus_width_bits");
    d->cluster_launch = (int)jint(j, "cluster_launch");
}

/* Provenance figures that change (clocks now, temperature) and the power limit, from NVML. */
static void nvml_record(const pl_device_info *d, json_t *rec)
{
    char why[8];
    const pl_nvml *n = pl_nvml_get(why, sizeof why);
    pl_nvml_device nd;
    if (!n || pl_nvml_device_for_bus_id(d->pci_bus_id, &nd) != 0)
        return;
    unsigned int v;
    if (n->device_get_clock_info && n->device_get_clock_info(nd, PL_NVML_CLOCK_SM, &v) == 0)
        json_object_set_new(rec, "sm_clock_mhz", json_integer(v));
    if (n->device_get_clock_info && n->device_get_clock_info(nd, PL_NVML_CLOCK_MEM, &v) == 0)
        json_object_set_new(rec, "mem_clock_mhz", json_integer(v));
    if (n->device_get_enforced_power_limit && n->device_get_enforced_power_limit(nd, &v) == 0)
        json_object_set_new(rec, "power_limit_w", json_real(v / 1000.0));
    if (n->device_get_temperature && n->device_get_temperature(nd, PL_NVML_TEMPERATURE_GPU, &v) == 0)
        json_object_set_new(rec, "temperature_c", json_integer(v));
}

/* Everything the probe learns, as one JSON object (in the child, or in a process that uses CUDA anyway). */
static json_t *probe_answer(void)
{
    json_t *out = json_object();
    char nvml_why[256] = "";
    const pl_nvml *n = pl_nvml_get(nvml_why, sizeof nvml_why);
    json_object_set_new(out, "nvml_status", json_string(nvml_why));
    char drv[64] = "";
    if (n && n->system_get_driver_version)
        n->system_get_driver_version(drv, sizeof drv);
    json_object_set_new(out, "driver_version", json_string(drv));

    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int count = 0, dv = 0, rv = 0;
    cudaRuntimeGetVersion(&rv);
    json_object_set_new(out, "cuda_runtime_version", json_integer(rv));
    if (!libcuda) {
        json_object_set_new(out, "error",
                            json_string("no NVIDIA driver: libcuda.so.1 cannot be loaded (is the driver installed?)"));
    } else {
        cudaDriverGetVersion(&dv);
        json_object_set_new(out, "cuda_driver_version", json_integer(dv));
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess)
            json_object_set_new(out, "error",
                                json_sprintf("the CUDA runtime finds no usable GPU: %s (%s)", cudaGetErrorString(e),
                                             cudaGetErrorName(e)));
        else if (count == 0)
            json_object_set_new(out, "error", json_string("the CUDA runtime finds no GPU"));
    }
    json_t *devs = json_array();
    for (int i = 0; i < count; i++) {
        pl_device_info d;
        char err[256];
        if (pl_device_info_query(i, &d, err, sizeof err) != 0) {
            json_object_set_new(out, "error", json_string(err));
            break;
        }
        json_t *dj = pl_device_info_to_json(&d);
        json_t *rec = json_object();
        nvml_record(&d, rec);
        json_object_set_new(dj, "now", rec);
        json_array_append_new(devs, dj);
    }
    json_object_set_new(out, "devices", devs);
    return out;
}

static void fill_record(const pl_device_info *d, json_t *now, pl_gpu_record *g)
{
    g->ordinal = d->ordinal;
    g->name = pl_strdup(d->name);
    g->pci_bus_id = pl_strdup(d->pci_bus_id);
    g->cc_major = d->cc_major;
    g->cc_minor = d->cc_minor;
    g->sm_count = d->sm_count;
    g->memory_gib = (double)d->global_mem_bytes / (1024.0 * 1024.0 * 1024.0);
    g->l2_mib = (double)d->l2_bytes / (1024.0 * 1024.0);
    g->sm_clock_max_mhz = d->sm_clock_max_mhz;
    g->mem_clock_max_mhz = d->mem_clock_max_mhz;
    g->sm_clock_mhz = (int)jint(now, "sm_clock_mhz");
    g->mem_clock_mhz = (int)jint(now, "mem_clock_mhz");
    g->power_limit_w = pl_json_get_real(now, "power_limit_w");
    g->temperature_c = (int)jint(now, "temperature_c");
}

static void inventory_from_answer(json_t *answer, pl_gpu_inventory *inv);

int pl_gpu_inventory_probe(pl_gpu_inventory *inv, double timeout_s)
{
    memset(inv, 0, sizeof *inv);
    pl_child c;
    if (pl_child_spawn(&c, NULL) != 0) {
        pl_snprintf(inv->error, sizeof inv->error, "cannot start the GPU probe process");
        return -1;
    }
    if (c.pid == 0) {
        json_t *out = probe_answer();
        pl_child_send(c.fd, out);
        json_decref(out);
        _exit(0);
    }
    json_t *msg = NULL;
    double deadline = pl_now_s() + timeout_s;
    int r;
    while ((r = pl_child_next(&c, deadline, &msg)) == 1)
        json_decref(msg); /* one message is expected; pl_child_last keeps it */
    json_t *answer = pl_child_last(&c);
    pl_child_end end;
    pl_child_finish(&c, r != 0, &end);
    if (r == -1)
        pl_snprintf(end.description, sizeof end.description, "did not answer within %.0f s", timeout_s);
    if (!answer) {
        pl_snprintf(inv->error, sizeof inv->error, "the GPU probe process %s", end.description);
        return -1;
    }
    inventory_from_answer(answer, inv);
    json_decref(answer);
    return 0;
}

int pl_gpu_inventory_query(pl_gpu_inventory *inv)
{
    memset(inv, 0, sizeof *inv);
    json_t *answer = probe_answer();
    inventory_from_answer(answer, inv);
    json_decref(answer);
    return 0;
}

static void inventory_from_answer(json_t *answer, pl_gpu_inventory *inv)
{
    pl_snprintf(inv->driver_version, sizeof inv->driver_version, "%s", jstr(answer, "driver_version"));
    pl_snprintf(inv->nvml_status, sizeof inv->nvml_status, "%s", jstr(answer, "nvml_status"));
    inv->cuda_driver_version = (int)jint(answer, "cuda_driver_version");
    inv->cuda_runtime_version = (int)jint(answer, "cuda_runtime_version");
    json_t *devs = json_object_get(answer, "devices");
    inv->device_count = (int)json_array_size(devs);
    inv->devices = pl_xcalloc((size_t)inv->device_count + 1, sizeof *inv->devices);
    inv->records = pl_xcalloc((size_t)inv->device_count + 1, sizeof *inv->records);
    for (int i = 0; i < inv->device_count; i++) {
        json_t *dj = json_array_get(devs, (size_t)i);
        pl_device_info_from_json(dj, &inv->devices[i]);
        fill_record(&inv->devices[i], json_object_get(dj, "now"), &inv->records[i]);
    }
    const char *error = json_string_value(json_object_get(answer, "error"));
    inv->usable = !error && inv->device_count > 0;
    pl_snprintf(inv->error, sizeof inv->error, "%s", error ? error : "");
}

void pl_gpu_inventory_free(pl_gpu_inventory *inv)
{
    for (int i = 0; i < inv->device_count; i++) {
        free(inv->records[i].name);
        free(inv->records[i].pci_bus_id);
    }
    free(inv->records);
    free(inv->devices);
    memset(inv, 0, sizeof *inv);
}

int pl_requirements_met(const pl_requirements *r, const pl_device_info *d, int device_count,
                        const pl_capabilities *caps, char *why, size_t whylen)
{
    if (!r->needs_gpu && !r->min_cc && !r->features && r->min_gpus <= 1)
        return 1;
    if (!d) {
        pl_snprintf(why, whylen, "needs a GPU");
        return 0;
    }
    int cc = d->cc_major * 10 + d->cc_minor;
    if (r->min_cc && cc < r->min_cc) {
        pl_snprintf(why, whylen, "needs compute capability %d.%d or newer; %s is %d.%d", r->min_cc / 10, r->min_cc % 10,
                    d->name, d->cc_major, d->cc_minor);
        return 0;
    }
    if (r->max_cc && cc > r->max_cc) {
        pl_snprintf(why, whylen,
                    "is built for compute capability %d.%d at most (architecture-specific code); %s is %d.%d",
                    r->max_cc / 10, r->max_cc % 10, d->name, d->cc_major, d->cc_minor);
        return 0;
    }
    if (r->min_gpus > device_count) {
        pl_snprintf(why, whylen, "needs %d GPUs; this machine has %d", r->min_gpus, device_count);
        return 0;
    }
    static const struct {
        unsigned bit;
        const char *name;
        int min_cc, max_cc;
    } feats[] = {
        {PL_FEAT_WGMMA, "wgmma (sm_90a)", 90, 90},          {PL_FEAT_TMA, "TMA", 90, 0},
        {PL_FEAT_CLUSTERS, "thread-block clusters", 90, 0}, {PL_FEAT_TCGEN05, "tcgen05 (sm_100a)", 100, 103},
        {PL_FEAT_FP8, "FP8 tensor cores", 89, 0},
    };
    for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++) {
        if (!(r->features & feats[i].bit))
            continue;
        /* What `perflab probe` measured on this GPU decides; without it, the compute capability does. */
        char measured[512];
        int probed = pl_capabilities_feature(caps, d, feats[i].bit, measured, sizeof measured);
        if (probed == 0) {
            pl_snprintf(why, whylen, "needs %s: %s", feats[i].name, measured);
            return 0;
        }
        int ok = cc >= feats[i].min_cc && (!feats[i].max_cc || cc <= feats[i].max_cc);
        if (feats[i].bit == PL_FEAT_CLUSTERS)
            ok = ok && d->cluster_launch;
        if (!ok && probed != 1) {
            pl_snprintf(why, whylen, "needs %s, which %s (compute capability %d.%d) lacks", feats[i].name, d->name,
                        d->cc_major, d->cc_minor);
            return 0;
        }
    }
    return 1;
}
