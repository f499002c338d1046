/* The vendor's published figures for the GPUs perflab knows, each with its source, so that every measured
 * ceiling can say what % of the datasheet it reached. Tensor-core figures are stored dense: NVIDIA publishes
 * them "with sparsity" (2:4), twice the dense rate, and the table halves them (the note says so per entry). */
#ifndef PERFLAB_HW_DATASHEET_H
#define PERFLAB_HW_DATASHEET_H

#include <stddef.h>

typedef struct pl_datasheet {
    const char *key;           /* the hardware key (h100_sxm, h200, ...), as expectations use it */
    const char *name;          /* the product as the datasheet names it */
    double min_memory_gib;     /* variants of one key told apart by memory size (A100 40/80 GB) */
    double memory_gbps;        /* device memory bandwidth, GB/s (1e9 bytes) */
    double fp32_tflops;        /* CUDA cores, FMA = 2 FLOPs */
    double fp64_tflops;        /* CUDA cores */
    double fp64_tensor_tflops; /* NAN where not published */
    double tf32_tflops;        /* tensor cores, dense */
    double bf16_tflops;        /* tensor cores, dense */
    double fp16_tflops;        /* tensor cores, dense */
    double fp8_tflops;         /* tensor cores, dense; NAN where the GPU has none */
    double host_link_gbps;     /* per direction */
    const char *host_link;     /* "PCIe Gen5 x16", ... */
    double nvlink_gbps;        /* per GPU, both directions together, as published; NAN for none */
    const char *source;        /* document and address */
    const char *note;          /* how the stored figures relate to the published ones */
} pl_datasheet;

/* The entry for a GPU, from its name (as CUDA or NVML report it) and its memory size; NULL when unknown. */
const pl_datasheet *pl_datasheet_find(const char *gpu_name, double memory_gib);

/* Shared memory serves 32 banks x 4 bytes per clock per SM on every architecture in the table: a derived
 * ceiling (sm_count x 128 B x the maximum SM clock), not a published one. */
#define PL_SMEM_BYTES_PER_CLOCK_PER_SM 128.0
#define PL_SMEM_SOURCE                                                                                                 \
    "derived: 32 banks x 4 B per clock per SM (CUDA C++ Programming Guide, shared memory) x SMs x max SM clock"

#endif
