/* perflab hw: what this machine's GPUs are, as the CUDA runtime, NVML and sysfs describe them. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/util.h"
#include "hw/inventory.h"

#define PL_HW_TIMEOUT_S 60.0

int pl_cmd_hw(int argc, char **argv)
{
    int json = 0, help = 0;
    const pl_option opts[] = {
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print the inventory as JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[512];
    if (pl_options_parse("hw", opts, argc, argv, &pos, err, sizeof err) != 0) {
        pl_strlist_free(&pos);
        return pl_usage_error("hw", err);
    }
    if (help) {
        printf("usage: perflab hw [--json]\n\nEvery GPU: name, compute capability, SMs, clocks (now and max), memory "
               "(size, bus,\ntheoretical bandwidth), L2, shared memory, registers, driver and CUDA versions, power,\n"
               "temperature, PCIe link (now and max), NVLinks, ECC, MIG, persistence mode, host affinity;\nthen the "
               "topology of every pair (NVML's link and CUDA's peer access). NVML is loaded\nat run time: without it, "
               "what the CUDA runtime knows is printed and the rest is named\nas missing.\n\noptions:\n");
        pl_options_help(stdout, opts);
        printf("\nexit codes: 0 ok; 2 bad usage; 3 no usable GPU or driver.\n");
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; perflab hw takes only options", PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error("hw", err);
    }
    pl_strlist_free(&pos);
    json_t *inv = pl_inventory_gather(PL_HW_TIMEOUT_S, err, sizeof err);
    if (!inv) {
        fprintf(stderr, "perflab hw: no usable GPU: %s\n", err);
        return PL_EXIT_NO_GPU;
    }
    if (json_array_size(json_object_get(inv, "gpus")) == 0) {
        const char *why = json_string_value(json_object_get(inv, "error"));
        fprintf(stderr, "perflab hw: no usable GPU: %s\n", why ? why : "the CUDA runtime finds no GPU");
        json_decref(inv);
        return PL_EXIT_NO_GPU;
    }
    if (json) {
        char *s = json_dumps(inv, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
        puts(s);
        free(s);
    } else {
        pl_inventory_print(inv, stdout);
    }
    json_decref(inv);
    return PL_EXIT_OK;
}
