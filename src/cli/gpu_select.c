#include "cli/gpu_select.h"

#include <stdio.h>

#include "cli/options.h"
#include "core/util.h"

#define PL_FIND_GPUS_TIMEOUT_S 60.0

int pl_cli_find_gpus(const char *verb, int device, pl_gpu_inventory *inv)
{
    if (pl_gpu_inventory_probe(inv, PL_FIND_GPUS_TIMEOUT_S) != 0 || !inv->usable) {
        fprintf(stderr, "perflab %s: no usable GPU: %s\n", verb, inv->error[0] ? inv->error : "unknown reason");
        pl_gpu_inventory_free(inv);
        return PL_EXIT_NO_GPU;
    }
    if (device >= inv->device_count) {
        char err[160];
        pl_snprintf(err, sizeof err, "--device %d: this machine has %d GPU%s (0..%d)", device, inv->device_count,
                    inv->device_count == 1 ? "" : "s", inv->device_count - 1);
        pl_gpu_inventory_free(inv);
        return pl_usage_error(verb, err);
    }
    return PL_EXIT_OK;
}
