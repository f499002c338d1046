/* How two GPUs are connected, as NVML sees it (nvidia-smi topo -m's words): the PCIe common ancestor and the
 * NVLinks between them. Usable in any process (NVML needs no CUDA context). */
#ifndef PERFLAB_HW_TOPOLOGY_H
#define PERFLAB_HW_TOPOLOGY_H

#include <stddef.h>

#include "core/table.h"

typedef struct pl_pair_link {
    int known;     /* NVML answered for both GPUs */
    int level;     /* nvmlGpuTopologyLevel_t, -1 unknown */
    int nvlink;    /* NVML's P2P status over NVLink is OK */
    int nvlinks;   /* active links joining them (through NVSwitches: all of a's active links) */
    char why[160]; /* when !known */
} pl_pair_link;

void pl_pair_link_query(const char *bus_a, const char *bus_b, pl_pair_link *out);
/* "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", or "?" */
const char *pl_pair_link_name(const pl_pair_link *l, char *buf, size_t len);
/* Whether two PCI bus ids name the same device ("0000:18:00.0" and "00000000:18:00.0" do). */
int pl_same_bus_id(const char *a, const char *b);

/* A table with a row and a column per GPU (rows labelled GPU0.., the diagonal "X"), numbers right-aligned or
 * not, and when `extra` is given one more column at the end. */
pl_table *pl_gpu_matrix_table(size_t n, const char *corner, int right_aligned, const char *extra);

#endif
