/* `perflab hw`: every GPU's description from the CUDA runtime, NVML (when present) and sysfs, and the topology
 * between every pair, gathered in a child process (the parent never initialises CUDA) as one JSON document. */
#ifndef PERFLAB_HW_INVENTORY_H
#define PERFLAB_HW_INVENTORY_H

#include <jansson.h>
#include <stdio.h>

#define PL_INVENTORY_SCHEMA_VERSION 1

/* Fork, gather, return the document (caller owns it). NULL with the reason when the child crashed or hung. A
 * machine without a usable GPU gives a document with "error" set and no GPUs. */
json_t *pl_inventory_gather(double timeout_s, char *err, size_t errlen);
/* The tables a person reads: one per GPU, then the topology matrix and what could not be known. */
void pl_inventory_print(json_t *inv, FILE *out);

#endif
