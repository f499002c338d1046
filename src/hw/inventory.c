#include "hw/inventory.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#include "core/piped_child.h"
#include "core/nvml.h"
#include "core/util.h"
#include "hw/topology.h"

/* What NVML could not say, as "what: why" lines. */
static void missing(json_t *list, const char *what, const char *why)
{
    json_array_append_new(list, json_sprintf("%s: %s", what, why));
}

/* Call an NVML getter that may be absent (NULL) or unsupported; record why in `miss` when it fails. */
#define NVML_GET(n, fn, what, miss, ...)                                                                               \
    ((n)->fn ? ((rc_ = (n)->fn(__VA_ARGS__)) == 0 ? 1 : (missing(miss, what, pl_nvml_error(rc_)), 0))                  \
             : (missing(miss, what, "this NVML lacks " #fn), 0))

static json_t *cuda_attrs(int d, const struct cudaDeviceProp *p)
{
    int v;
#define ATTR(a) (cudaDeviceGetAttribute(&v, (a), d) == cudaSuccess ? v : -1)
    int clock_khz = ATTR(cudaDevAttrClockRate), mem_khz = ATTR(cudaDevAttrMemoryClockRate);
    json_t *j = json_object();
    /* double data rate: two transfers per memory clock */
    double theoretical = mem_khz > 0 ? 2.0 * mem_khz * 1e3 * (p->memoryBusWidth / 8.0) / 1e9 : 0;
    json_object_set_new(j, "memory",
                        json_pack("{s:I, s:i, s:f, s:f}", "total_bytes", (json_int_t)p->totalGlobalMem,
                                  "bus_width_bits", p->memoryBusWidth, "clock_max_mhz", mem_khz / 1000.0,
                                  "theoretical_gbps", theoretical));
    json_object_set_new(
        j, "l2", json_pack("{s:i, s:i}", "bytes", p->l2CacheSize, "persisting_max_bytes", p->persistingL2CacheMaxSize));
    json_object_set_new(j, "shared_memory",
                        json_pack("{s:I, s:I, s:I, s:I}", "per_sm", (json_int_t)p->sharedMemPerMultiprocessor,
                                  "per_block", (json_int_t)p->sharedMemPerBlock, "per_block_optin",
                                  (json_int_t)p->sharedMemPerBlockOptin, "reserved_per_block",
                                  (json_int_t)p->reservedSharedMemPerBlock));
    json_object_set_new(j, "registers",
                        json_pack("{s:i, s:i}", "per_sm", p->regsPerMultiprocessor, "per_block", p->regsPerBlock));
    json_object_set_new(j, "threads",
                        json_pack("{s:i, s:i, s:i, s:i}", "per_sm", p->maxThreadsPerMultiProcessor, "per_block",
                                  p->maxThreadsPerBlock, "warp_size", p->warpSize, "max_blocks_per_sm",
                                  p->maxBlocksPerMultiProcessor));
    json_object_set_new(j, "sm_clock_max_mhz_cuda", json_real(clock_khz / 1000.0));
    static const char *const modes[] = {"default", "exclusive_thread", "prohibited", "exclusive_process"};
    int mode = ATTR(cudaDevAttrComputeMode);
    json_object_set_new(j, "compute_mode", json_string(mode >= 0 && mode < 4 ? modes[mode] : "unknown"));
    json_object_set_new(j, "ecc_enabled", json_boolean(ATTR(cudaDevAttrEccEnabled) == 1));
    json_object_set_new(j, "features",
                        json_pack("{s:b, s:b, s:b, s:i, s:b, s:b, s:b, s:b, s:b}", "cooperative_launch",
                                  p->cooperativeLaunch, "cluster_launch", ATTR(cudaDevAttrClusterLaunch) == 1,
                                  "concurrent_kernels", p->concurrentKernels, "async_engines", p->asyncEngineCount,
                                  "unified_addressing", p->unifiedAddressing, "managed_memory", p->managedMemory,
                                  "pageable_memory_access", p->pageableMemoryAccess, "host_native_atomics",
                                  ATTR(cudaDevAttrHostNativeAtomicSupported) == 1, "integrated", p->integrated));
#undef ATTR
    return j;
}

static void uuid_string(const cudaUUID_t *u, char *buf, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    pl_snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* NUMA node and CPUs near the GPU, from sysfs (what nvidia-smi topo -m shows as affinity). */
static void host_affinity(const char *bus_id, json_t *gpu)
{
    char lower[32], path[128];
    size_t i = 0;
    for (; bus_id[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)tolower((unsigned char)bus_id[i]);
    lower[i] = '\0';
    json_t *h = json_object();
    char err[64];
    pl_snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", lower);
    char *numa = pl_read_file(path, NULL, err, sizeof err);
    pl_snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", lower);
    char *cpus = pl_read_file(path, NULL, err, sizeof err);
    if (numa)
        json_object_set_new(h, "numa_node", json_integer(atoi(numa)));
    if (cpus) {
        cpus[strcspn(cpus, "\n")] = '\0';
        json_object_set_new(h, "local_cpus", json_string(cpus));
    }
    free(numa);
    free(cpus);
    json_object_set_new(gpu, "host", h);
}

static json_t *event_reasons(unsigned long long bits)
{
    static const char *const names[] = {"gpu_idle",     "applications_clocks", "sw_power_cap",        "hw_slowdown",
                                        "sync_boost",   "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake",
                                        "display_clock"};
    json_t *a = json_array();
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (bits & (1ull << i))
            json_array_append_new(a, json_string(names[i]));
    return a;
}

static void nvml_gpu(const pl_nvml *n, const char *bus_id, json_t *gpu, json_t *miss)
{
    pl_nvml_device d;
    if (pl_nvml_device_for_bus_id(bus_id, &d) != 0) {
        missing(miss, "everything NVML reports", "NVML does not know this PCI bus id");
        return;
    }
    int rc_ = 0;
    unsigned a = 0, b = 0;
    char text[96];
    if (NVML_GET(n, device_get_vbios_version, "VBIOS", miss, d, text, sizeof text))
        json_object_set_new(gpu, "vbios", json_string(text));
    json_t *clocks = json_object();
    if (NVML_GET(n, device_get_clock_info, "SM clock", miss, d, PL_NVML_CLOCK_SM, &a))
        json_object_set_new(clocks, "sm_mhz", json_integer(a));
    if (NVML_GET(n, device_get_max_clock_info, "max SM clock", miss, d, PL_NVML_CLOCK_SM, &a))
        json_object_set_new(clocks, "sm_max_mhz", json_integer(a));
    if (NVML_GET(n, device_get_clock_info, "memory clock", miss, d, PL_NVML_CLOCK_MEM, &a))
        json_object_set_new(clocks, "mem_mhz", json_integer(a));
    if (NVML_GET(n, device_get_max_clock_info, "max memory clock", miss, d, PL_NVML_CLOCK_MEM, &a))
        json_object_set_new(clocks, "mem_max_mhz", json_integer(a));
    unsigned long long reasons = 0;
    if (NVML_GET(n, device_get_clocks_event_reasons, "clock event reasons", miss, d, &reasons))
        json_object_set_new(clocks, "event_reasons", event_reasons(reasons));
    json_object_set_new(gpu, "clocks", clocks);
    json_t *power = json_object();
    if (NVML_GET(n, device_get_power_usage, "power draw", miss, d, &a))
        json_object_set_new(power, "draw_w", json_real(a / 1000.0));
    if (NVML_GET(n, device_get_enforced_power_limit, "power limit", miss, d, &a))
        json_object_set_new(power, "limit_w", json_real(a / 1000.0));
    if (NVML_GET(n, device_get_power_default_limit, "default power limit", miss, d, &a))
        json_object_set_new(power, "default_limit_w", json_real(a / 1000.0));
    json_object_set_new(gpu, "power", power);
    if (NVML_GET(n, device_get_temperature, "temperature", miss, d, PL_NVML_TEMPERATURE_GPU, &a))
        json_object_set_new(gpu, "temperature_c", json_integer(a));
    json_t *pcie = json_object();
    if (NVML_GET(n, device_get_curr_pcie_link_generation, "PCIe generation", miss, d, &a))
        json_object_set_new(pcie, "gen", json_integer(a));
    if (NVML_GET(n, device_get_curr_pcie_link_width, "PCIe width", miss, d, &a))
        json_object_set_new(pcie, "width", json_integer(a));
    if (NVML_GET(n, device_get_max_pcie_link_generation, "max PCIe generation", miss, d, &a))
        json_object_set_new(pcie, "max_gen", json_integer(a));
    if (NVML_GET(n, device_get_max_pcie_link_width, "max PCIe width", miss, d, &a))
        json_object_set_new(pcie, "max_width", json_integer(a));
    if (NVML_GET(n, device_get_gpu_max_pcie_link_generation, "GPU's max PCIe generation", miss, d, &a))
        json_object_set_new(pcie, "gpu_max_gen", json_integer(a));
    json_object_set_new(gpu, "pcie", pcie);
    int cur = 0, pend = 0;
    json_t *ecc = json_object();
    if (NVML_GET(n, device_get_ecc_mode, "ECC mode", miss, d, &cur, &pend)) {
        json_object_set_new(ecc, "current", json_boolean(cur));
        json_object_set_new(ecc, "pending", json_boolean(pend));
    }
    json_object_set_new(gpu, "ecc", ecc);
    json_t *mig = json_object();
    if (NVML_GET(n, device_get_mig_mode, "MIG mode", miss, d, &a, &b)) {
        json_object_set_new(mig, "current", json_boolean(a));
        json_object_set_new(mig, "pending", json_boolean(b));
    }
    json_object_set_new(gpu, "mig", mig);
    if (NVML_GET(n, device_get_persistence_mode, "persistence mode", miss, d, &cur))
        json_object_set_new(gpu, "persistence_mode", json_boolean(cur));

    json_t *links = json_array();
    int active_links = 0;
    for (unsigned link = 0; n->device_get_nvlink_state && link < PL_NVML_NVLINK_MAX_LINKS; link++) {
        int active = 0, type = -1;
        int rc = n->device_get_nvlink_state(d, link, &active);
        if (rc != 0) {
            if (link == 0)
                missing(miss, "NVLink", pl_nvml_error(rc));
            break;
        }
        json_t *l = json_pack("{s:i, s:b}", "link", link, "active", active);
        /* nvmlNvlinkVersion_t: 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0 */
        static const char *const versions[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
        if (active && n->device_get_nvlink_version && n->device_get_nvlink_version(d, link, &a) == 0)
            json_object_set_new(l, "version", json_string(a < 8 ? versions[a] : "?"));
        if (active && n->device_get_nvlink_remote_device_type &&
            n->device_get_nvlink_remote_device_type(d, link, &type) == 0 && type == PL_NVML_NVLINK_DEVICE_SWITCH) {
            json_object_set_new(l, "remote", json_string("nvswitch"));
        } else if (active && n->device_get_nvlink_remote_pci_info) {
            pl_nvml_pci_info pci;
            memset(&pci, 0, sizeof pci);
            if (n->device_get_nvlink_remote_pci_info(d, link, &pci) == 0)
                json_object_set_new(l, "remote", json_string(pci.bus_id));
        }
        active_links += active;
        json_array_append_new(links, l);
    }
    if (!n->device_get_nvlink_state)
        missing(miss, "NVLink", "this NVML lacks nvmlDeviceGetNvLinkState");
    json_object_set_new(gpu, "nvlink", json_pack("{s:i, s:o}", "active_links", active_links, "links", links));
}

static json_t *gather_gpu(int i, const pl_nvml *n, const char *nvml_why)
{
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
        return NULL;
    char bus[32] = "", uuid[64];
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    uuid_string(&p.uuid, uuid, sizeof uuid);
    json_t *gpu = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i}", "ordinal", i, "name", p.name, "uuid", uuid, "pci_bus_id",
                            bus, "compute_capability", "", "sm_count", p.multiProcessorCount);
    json_object_set_new(gpu, "compute_capability", json_sprintf("%d.%d", p.major, p.minor));
    json_t *attrs = cuda_attrs(i, &p);
    json_object_update(gpu, attrs);
    json_decref(attrs);
    host_affinity(bus, gpu);
    json_t *miss = json_array();
    if (n)
        nvml_gpu(n, bus, gpu, miss);
    else
        missing(miss, "clocks now, power, temperature, PCIe link, NVLink, ECC/MIG/persistence modes, topology",
                nvml_why);
    json_object_set_new(gpu, "missing", miss);
    return gpu;
}

static json_t *gather_pairs(json_t *gpus)
{
    json_t *pairs = json_array();
    size_t count = json_array_size(gpus);
    for (size_t a = 0; a < count; a++)
        for (size_t b = 0; b < count; b++) {
            if (a == b)
                continue;
            const char *bus_a = json_string_value(json_object_get(json_array_get(gpus, a), "pci_bus_id"));
            const char *bus_b = json_string_value(json_object_get(json_array_get(gpus, b), "pci_bus_id"));
            int access = 0, rank = -1, atomics = 0;
            cudaDeviceCanAccessPeer(&access, (int)a, (int)b);
            cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, (int)a, (int)b);
            cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, (int)a, (int)b);
            pl_pair_link link;
            pl_pair_link_query(bus_a, bus_b, &link);
            char name[16];
            json_t *pj = json_pack("{s:i, s:i, s:b, s:i, s:b, s:s}", "a", (int)a, "b", (int)b, "cuda_p2p_access",
                                   access, "cuda_perf_rank", rank, "cuda_native_atomics", atomics, "link",
                                   pl_pair_link_name(&link, name, sizeof name));
            if (link.known) {
                json_object_set_new(pj, "nvlink", json_boolean(link.nvlink));
                json_object_set_new(pj, "nvlinks", json_integer(link.nvlinks));
            } else {
                json_object_set_new(pj, "nvml", json_string(link.why));
            }
            json_array_append_new(pairs, pj);
        }
    return pairs;
}

static void gather_child(int fd)
{
    json_t *out = json_pack("{s:i, s:s}", "schema_version", PL_INVENTORY_SCHEMA_VERSION, "kind", "perflab.hw");
    char nvml_why[256] = "";
    const pl_nvml *n = pl_nvml_get(nvml_why, sizeof nvml_why);
    char text[96] = "";
    json_t *nvml = json_pack("{s:b}", "available", n != NULL);
    if (n && n->system_get_driver_version && n->system_get_driver_version(text, sizeof text) == 0)
        json_object_set_new(out, "driver_version", json_string(text));
    if (n && n->system_get_nvml_version && n->system_get_nvml_version(text, sizeof text) == 0)
        json_object_set_new(nvml, "version", json_string(text));
    if (!n)
        json_object_set_new(nvml, "reason", json_string(nvml_why));
    json_object_set_new(out, "nvml", nvml);
    int rv = 0, dv = 0, count = 0;
    cudaRuntimeGetVersion(&rv);
    json_object_set_new(out, "cuda_runtime_version", json_integer(rv));
    json_t *gpus = json_array();
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cudaError_t e = libcuda ? cudaGetDeviceCount(&count) : cudaErrorInsufficientDriver;
    if (!libcuda)
        json_object_set_new(out, "error",
                            json_string("no NVIDIA driver: libcuda.so.1 cannot be loaded (is the driver installed?)"));
    else if (e != cudaSuccess)
        json_object_set_new(
            out, "error",
            json_sprintf("the CUDA runtime finds no usable GPU: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e)));
    else if (count == 0)
        json_object_set_new(out, "error", json_string("the CUDA runtime finds no GPU"));
    if (libcuda && cudaDriverGetVersion(&dv) == cudaSuccess)
        json_object_set_new(out, "cuda_driver_version", json_integer(dv));
    for (int i = 0; i < count; i++) {
        json_t *gpu = gather_gpu(i, n, nvml_why);
        if (gpu)
            json_array_append_new(gpus, gpu);
    }
    json_object_set_new(out, "topology", json_pack("{s:o}", "pairs", gather_pairs(gpus)));
    json_object_set_new(out, "gpus", gpus);
    pl_child_send(fd, out);
    json_decref(out);
}

json_t *pl_inventory_gather(double timeout_s, char *err, size_t errlen)
{
    pl_child c;
    if (pl_child_spawn(&c, NULL) != 0) {
        pl_snprintf(err, errlen, "cannot start the inventory process");
        return NULL;
    }
    if (c.pid == 0) {
        gather_child(c.fd);
        _exit(0);
    }
    json_t *msg = NULL;
    int r;
    const double deadline = pl_now_s() + timeout_s;
    while ((r = pl_child_next(&c, deadline, &msg)) == 1)
        json_decref(msg);
    json_t *answer = pl_child_last(&c);
    pl_child_end end;
    pl_child_finish(&c, r != 0, &end);
    if (!answer)
        pl_snprintf(err, errlen, "the inventory process %s", r == -1 ? "did not answer in time" : end.description);
    return answer;
}
