/* perflab probe: compile-and-run feature probes on each GPU; the results go to
 * <artifacts-dir>/hardware_capabilities.json, which the requirements check of `perflab run` reads. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/gpu_select.h"
#include "cli/options.h"
#include "core/piped_child.h"
#include "core/devprobe.h"
#include "core/provenance.h"
#include "core/util.h"
#include "core/capabilities.h"
#include "hw/probes.h"
#include "perflab_build_info.h"
#include "core/table.h"

#define PL_PROBE_TASK_TIMEOUT_S 60.0

typedef struct probe_collect {
    pl_gpu_capabilities *gpu;
} probe_collect;

static void on_message(void *arg, json_t *msg)
{
    probe_collect *pc = arg;
    pl_gpu_capabilities *g = pc->gpu;
    pl_probe_result *p = pl_push(&g->probes, &g->n_probes, NULL, sizeof *p);
    const char *lost = json_string_value(json_object_get(msg, "lost"));
    p->name = pl_strdup(json_string_value(json_object_get(msg, lost ? "task" : "probe")));
    if (lost) {
        p->status = PL_PROBE_FAILED;
        p->detail = pl_strfmt("the probe %s", lost);
        p->value = NAN;
        p->ms = NAN;
    } else {
        int st = pl_probe_status_from_name(json_string_value(json_object_get(msg, "status")));
        p->status = st < 0 ? PL_PROBE_FAILED : (pl_probe_status)st;
        p->detail = pl_strdup(json_string_value(json_object_get(msg, "detail")));
        json_t *v = json_object_get(msg, "value");
        p->value = json_is_number(v) ? json_number_value(v) : NAN;
        p->ms = json_number_value(json_object_get(msg, "ms"));
    }
    json_decref(msg);
}

static void print_table(const pl_capabilities *run, FILE *out)
{
    static const char *const spec[] = {"GPU", "probe", "status", ">value", "what was checked / found"};
    pl_table *t = pl_table_new(5, spec);
    for (size_t i = 0; i < run->n_gpus; i++) {
        const pl_gpu_capabilities *g = &run->gpus[i];
        for (size_t k = 0; k < g->n_probes; k++) {
            const pl_probe_result *p = &g->probes[k];
            size_t r = pl_table_row(t);
            if (k == 0)
                pl_table_set(t, r, 0, "%d %s", g->ordinal, g->name);
            pl_table_set(t, r, 1, "%s", p->name);
            pl_table_set(t, r, 2, "%s", pl_probe_status_name(p->status));
            if (!isnan(p->value))
                pl_table_set(t, r, 3, "%.0f", p->value);
            pl_table_set(t, r, 4, "%s", p->detail ? p->detail : "");
        }
    }
    pl_table_print(t, out);
    pl_table_free(t);
}

int pl_cmd_probe(int argc, char **argv)
{
    int json = 0, help = 0, device = -1;
    const char *artifacts_dir = "artifacts";
    const pl_option opts[] = {
        {"device", 'd', PL_OPT_INT, &device, "N", "probe GPU N only (default: every GPU)", 0, 1024},
        {"artifacts-dir", 0, PL_OPT_STRING, &artifacts_dir, "D",
         "where hardware_capabilities.json goes (default ./artifacts)", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print this run's capabilities as JSON", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("probe", opts, argc, argv, &pos, err, sizeof err) != 0) {
        pl_strlist_free(&pos);
        return pl_usage_error("probe", err);
    }
    if (help) {
        printf("usage: perflab probe [--device N] [--artifacts-dir D] [--json]\n\nOn each GPU, a tiny kernel per "
               "feature whose result is checked exactly: thread-block\nclusters (the largest size that launches; "
               "DSMEM reads of a neighbour's shared memory),\nTMA (a bulk tensor copy with out-of-bounds fill), wgmma "
               "(sm_90a), tcgen05 (sm_100a),\nFP8 tensor cores (mma.sync e4m3) and cooperative launch (grid.sync). "
               "Each is passed,\nfailed (it should work here and did not) or not_available (with the reason).\n"
               "Results go to <artifacts-dir>/hardware_capabilities.json (or $PERFLAB_CAPABILITIES);\n'perflab run' "
               "judges targets' feature requirements from that file when it has this GPU.\n\noptions:\n");
        pl_options_help(stdout, opts);
        printf("\nexit codes: 0 ok; 1 a probe failed; 2 bad usage; 3 no usable GPU or driver.\n");
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; perflab probe takes only options",
                    PL_ESC(pos.items[0]));
        pl_strlist_free(&pos);
        return pl_usage_error("probe", err);
    }
    pl_strlist_free(&pos);
    if (!pl_dir_usable(artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        return pl_usage_error("probe", err);
    pl_gpu_inventory inv;
    int found = pl_cli_find_gpus("probe", device, &inv);
    if (found != PL_EXIT_OK)
        return found;
    pl_child_install_interrupt_handler();
    size_t n_tasks;
    const pl_hw_task *tasks = pl_probe_tasks(&n_tasks);
    pl_capabilities run = {.schema_version = PL_CAPABILITIES_SCHEMA_VERSION};
    run.updated_at = pl_utc_timestamp();
    run.perflab_version = pl_strdup(PERFLAB_VERSION);
    int interrupted = 0;
    for (int d = 0; d < inv.device_count && !interrupted; d++) {
        if (device >= 0 && d != device)
            continue;
        pl_gpu_capabilities *g = pl_push(&run.gpus, &run.n_gpus, NULL, sizeof *g);
        const pl_device_info *dev = &inv.devices[d];
        g->ordinal = d;
        g->name = pl_strdup(dev->name);
        g->pci_bus_id = pl_strdup(dev->pci_bus_id);
        g->cc_major = dev->cc_major;
        g->cc_minor = dev->cc_minor;
        g->driver_version = pl_strdup(inv.driver_version[0] ? inv.driver_version : "unknown");
        g->probed_at = pl_utc_timestamp();
        pl_probe_options po = {.device = d};
        probe_collect pc = {g};
        interrupted = pl_hw_run_tasks(tasks, n_tasks, &po, PL_PROBE_TASK_TIMEOUT_S, on_message, &pc) == -2;
    }
    pl_gpu_inventory_free(&inv);
    int rc = PL_EXIT_OK;
    for (size_t i = 0; i < run.n_gpus; i++)
        for (size_t k = 0; k < run.gpus[i].n_probes; k++)
            if (run.gpus[i].probes[k].status == PL_PROBE_FAILED)
                rc = PL_EXIT_FAILED;
    if (interrupted) {
        fprintf(stderr, "perflab probe: interrupted; %s left as it was\n", PL_CAPABILITIES_FILE);
        pl_capabilities_free(&run);
        return PL_EXIT_INTERRUPTED;
    }
    if (json) {
        json_t *j = pl_capabilities_to_json(&run);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
        json_decref(j);
    } else {
        print_table(&run, stdout);
    }

    /* merge into the machine's file: other GPUs' entries stay */
    char *path = pl_capabilities_path(artifacts_dir);
    pl_capabilities all;
    if (pl_capabilities_load(path, &all, err, sizeof err) < 0)
        fprintf(stderr, "perflab probe: replacing %s\n", err);
    all.schema_version = PL_CAPABILITIES_SCHEMA_VERSION;
    free(all.updated_at);
    free(all.perflab_version);
    all.updated_at = pl_strdup(run.updated_at);
    all.perflab_version = pl_strdup(run.perflab_version);
    for (size_t i = 0; i < run.n_gpus; i++)
        pl_capabilities_merge(&all, &run.gpus[i]);
    if (pl_mkdir_p(artifacts_dir, err, sizeof err) != 0 || pl_capabilities_save(&all, path, err, sizeof err) != 0) {
        fprintf(stderr, "perflab probe: %s\n", err);
        rc = PL_EXIT_FAILED;
    } else if (!json) {
        printf("capabilities: %s\n", PL_ESC(path));
    }
    free(path);
    pl_capabilities_free(&all);
    pl_capabilities_free(&run);
    return rc;
}
