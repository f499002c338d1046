/* `perflab hw` for people: a table per GPU, the topology matrix (nvidia-smi topo -m's words plus CUDA's P2P
 * answer), and one line for everything that could not be known, with the reason. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "hw/inventory.h"
#include "hw/topology.h"
#include "core/table.h"

/* The value at "a.b.c" (NULL when any part is missing). */
static json_t *at(json_t *o, const char *path)
{
    char key[64];
    while (o && *path) {
        size_t len = strcspn(path, ".");
        pl_snprintf(key, sizeof key, "%.*s", (int)len, path);
        o = json_object_get(o, key);
        path += len + (path[len] == '.');
    }
    return o;
}

static int has(json_t *o, const char *path)
{
    return at(o, path) != NULL;
}

static double num(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *str(json_t *o, const char *path)
{
    const char *s = json_string_value(at(o, path));
    return s ? s : "";
}

static const char *on_off(json_t *o, const char *path)
{
    json_t *v = at(o, path);
    return !v ? "?" : json_is_true(v) ? "on" : "off";
}

static void row(pl_table *t, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void row(pl_table *t, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = pl_vstrfmt(fmt, ap);
    va_end(ap);
    size_t r = pl_table_row(t);
    pl_table_set(t, r, 0, "%s", name);
    pl_table_set(t, r, 1, "%s", text);
    free(text);
}

static void nvml_rows(pl_table *t, json_t *g)
{
    pl_buf b = {0};
    if (has(g, "clocks.sm_mhz"))
        pl_buf_printf(&b, "SM %.0f / %.0f MHz, memory %.0f / %.0f MHz (now / max)", num(g, "clocks.sm_mhz"),
                      num(g, "clocks.sm_max_mhz"), num(g, "clocks.mem_mhz"), num(g, "clocks.mem_max_mhz"));
    json_t *reasons = at(g, "clocks.event_reasons");
    for (size_t i = 0; i < json_array_size(reasons); i++)
        pl_buf_printf(&b, "%s%s", i ? ", " : "; held back by: ", json_string_value(json_array_get(reasons, i)));
    if (b.data)
        row(t, "clocks", "%s", b.data);
    pl_buf_free(&b);
    if (has(g, "power.draw_w"))
        row(t, "power", "%.0f W drawn, limit %.0f W (default %.0f W)", num(g, "power.draw_w"), num(g, "power.limit_w"),
            num(g, "power.default_limit_w"));
    if (has(g, "temperature_c"))
        row(t, "temperature", "%.0f C", num(g, "temperature_c"));
    if (has(g, "pcie.gen"))
        row(t, "PCIe", "Gen%.0f x%.0f now, Gen%.0f x%.0f max (the GPU's own max: Gen%.0f)", num(g, "pcie.gen"),
            num(g, "pcie.width"), num(g, "pcie.max_gen"), num(g, "pcie.max_width"), num(g, "pcie.gpu_max_gen"));
    json_t *links = at(g, "nvlink.links");
    if (json_array_size(links)) {
        pl_buf nb = {0};
        const char *version = NULL, *remote = NULL;
        for (size_t i = 0; i < json_array_size(links); i++) {
            json_t *l = json_array_get(links, i);
            if (!json_is_true(json_object_get(l, "active")))
                continue;
            version = str(l, "version");
            remote = str(l, "remote");
        }
        pl_buf_printf(&nb, "%.0f of %zu links active", num(g, "nvlink.active_links"), json_array_size(links));
        if (version && *version)
            pl_buf_printf(&nb, ", NVLink %s", version);
        if (remote && *remote)
            pl_buf_printf(&nb, ", to %s", remote);
        row(t, "NVLink", "%s", nb.data);
        pl_buf_free(&nb);
    }
    if (has(g, "ecc.current"))
        row(t, "ECC", "%s (pending: %s)", on_off(g, "ecc.current"), on_off(g, "ecc.pending"));
    if (has(g, "mig.current"))
        row(t, "MIG", "%s (pending: %s)", on_off(g, "mig.current"), on_off(g, "mig.pending"));
    if (has(g, "persistence_mode"))
        row(t, "persistence mode", "%s", on_off(g, "persistence_mode"));
    if (has(g, "vbios"))
        row(t, "VBIOS", "%s", str(g, "vbios"));
}

static void print_gpu(json_t *g, FILE *out)
{
    static const char *const spec[] = {"property", "value"};
    pl_table *t = pl_table_new(2, spec);
    const double kib = 1024.0, mib = kib * 1024.0, gib = mib * 1024.0;
    row(t, "compute capability", "%s, %.0f SMs", str(g, "compute_capability"), num(g, "sm_count"));
    row(t, "memory", "%.1f GiB, %.0f-bit bus at %.0f MHz: %.0f GB/s theoretical (2 transfers per clock)",
        num(g, "memory.total_bytes") / gib, num(g, "memory.bus_width_bits"), num(g, "memory.clock_max_mhz"),
        num(g, "memory.theoretical_gbps"));
    row(t, "L2", "%.1f MiB (persisting lines up to %.1f MiB)", num(g, "l2.bytes") / mib,
        num(g, "l2.persisting_max_bytes") / mib);
    row(t, "shared memory", "%.0f KiB per SM; per block %.0f KiB (opt-in), %.0f KiB default, %.0f KiB reserved",
        num(g, "shared_memory.per_sm") / kib, num(g, "shared_memory.per_block_optin") / kib,
        num(g, "shared_memory.per_block") / kib, num(g, "shared_memory.reserved_per_block") / kib);
    row(t, "registers", "%.0f per SM, %.0f per block", num(g, "registers.per_sm"), num(g, "registers.per_block"));
    row(t, "threads", "%.0f per SM, %.0f per block, %.0f blocks per SM, warp %.0f", num(g, "threads.per_sm"),
        num(g, "threads.per_block"), num(g, "threads.max_blocks_per_sm"), num(g, "threads.warp_size"));
    row(t, "max SM clock (CUDA)", "%.0f MHz", num(g, "sm_clock_max_mhz_cuda"));
    nvml_rows(t, g);
    row(t, "compute mode", "%s; ECC per CUDA: %s", str(g, "compute_mode"), on_off(g, "ecc_enabled"));
    pl_buf f = {0};
    static const char *const flags[] = {"cooperative_launch",  "cluster_launch", "concurrent_kernels",
                                        "unified_addressing",  "managed_memory", "pageable_memory_access",
                                        "host_native_atomics", "integrated"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char path[64];
        pl_snprintf(path, sizeof path, "features.%s", flags[i]);
        if (json_is_true(at(g, path)))
            pl_buf_printf(&f, "%s%s", f.len ? ", " : "", flags[i]);
    }
    pl_buf_printf(&f, "%s%.0f copy engines", f.len ? "; " : "", num(g, "features.async_engines"));
    row(t, "features", "%s", f.data);
    pl_buf_free(&f);
    if (num(g, "host.numa_node") >= 0)
        row(t, "host affinity", "NUMA node %.0f, CPUs %s", num(g, "host.numa_node"), str(g, "host.local_cpus"));
    else if (has(g, "host.local_cpus"))
        row(t, "host affinity", "no NUMA node, CPUs %s", str(g, "host.local_cpus"));
    fprintf(out, "GPU %.0f  %s  (%s, %s)\n", num(g, "ordinal"), str(g, "name"), str(g, "uuid"), str(g, "pci_bus_id"));
    pl_table_print(t, out);
    pl_table_free(t);
}

static void print_topology(json_t *inv, FILE *out)
{
    json_t *gpus = json_object_get(inv, "gpus"), *pairs = at(inv, "topology.pairs");
    size_t n = json_array_size(gpus);
    if (n < 2) {
        fprintf(out, "\ntopology: 1 GPU, no pairs\n");
        return;
    }
    pl_table *t = pl_gpu_matrix_table(n, "", 0, "CPU affinity");
    for (size_t r = 0; r < n; r++) {
        for (size_t k = 0; k < json_array_size(pairs); k++) {
            json_t *p = json_array_get(pairs, k);
            if ((size_t)num(p, "a") != r)
                continue;
            pl_table_set(t, r, (size_t)num(p, "b") + 1, "%s%s", str(p, "link"),
                         json_is_true(json_object_get(p, "cuda_p2p_access")) ? "" : " (no P2P)");
        }
        pl_table_set(t, r, n + 1, "%s", str(json_array_get(gpus, r), "host.local_cpus"));
    }
    fprintf(out, "\ntopology (NVML's common PCIe ancestor or NVLinks; '(no P2P)' where CUDA refuses peer access):\n");
    pl_table_print(t, out);
    fprintf(out, "  NV#: # NVLinks  PIX: one PCIe switch  PXB: several switches  PHB: a host bridge  NODE: within a "
                 "NUMA node  SYS: across NUMA nodes\n");
    pl_table_free(t);
}

void pl_inventory_print(json_t *inv, FILE *out)
{
    double dv = num(inv, "cuda_driver_version"), rv = num(inv, "cuda_runtime_version");
    fprintf(out, "driver %s, CUDA driver %.0f.%.0f, CUDA runtime %.0f.%.0f; NVML %s\n",
            has(inv, "driver_version") ? str(inv, "driver_version") : "(unknown without NVML)", floor(dv / 1000),
            fmod(dv, 1000) / 10, floor(rv / 1000), fmod(rv, 1000) / 10,
            json_is_true(at(inv, "nvml.available")) ? str(inv, "nvml.version") : str(inv, "nvml.reason"));
    json_t *gpus = json_object_get(inv, "gpus");
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        fputc('\n', out);
        print_gpu(json_array_get(gpus, i), out);
    }
    print_topology(inv, out);
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        json_t *miss = json_object_get(json_array_get(gpus, i), "missing");
        for (size_t k = 0; k < json_array_size(miss); k++)
            fprintf(out, "%snot known for GPU %zu: %s\n", i == 0 && k == 0 ? "\n" : "", i,
                    json_string_value(json_array_get(miss, k)));
    }
}
