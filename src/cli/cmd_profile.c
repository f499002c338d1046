/* perflab profile TARGET [--variant V]: an Nsight Compute report per variant with perflab's metric set, the
 * findings worth reading first, and an Nsight Systems timeline where nsys runs (core/profile.h). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/ncu.h"
#include "core/profile.h"
#include "core/util.h"

static void usage(const pl_option *opts)
{
    printf("usage: perflab profile TARGET [--variant V] [--target-extra-arg 'TARGET=--param value'] [options]\n\n"
           "Replays each variant of TARGET (or only V) once under Nsight Compute (ncu) with a fixed metric set:\n"
           "DRAM bytes read and written, L2/L1/shared-memory throughput, achieved occupancy, SM and tensor-pipe\n"
           "throughput, shared-memory wavefronts and bank conflicts, kernel time. Only the variant's own run is\n"
           "profiled (setup and references are not), clocks are left as they are (--clock-control none).\n"
           "Writes <artifacts-dir>/<run_id>/ with one .ncu-rep per variant, profile.json and summary.md, and\n"
           "prints the findings: measured DRAM bytes against the counted ones, the busiest unit, occupancy,\n"
           "bank conflicts. With nsys on the PATH, an Nsight Systems timeline of the same run too.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 ok; 1 a replay failed (profile.json says why); 2 bad usage; 3 no usable GPU, or no\n"
           "ncu on the PATH.\n");
}

static void print_doc(json_t *doc)
{
    printf("perflab profile %s (%s)\n%s\n", json_string_value(json_object_get(doc, "target")),
           json_string_value(json_object_get(doc, "params")), json_string_value(json_object_get(doc, "ncu")));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(doc, "variants"), i, v)
    {
        json_t *m = json_object_get(v, "metrics");
        printf("\n%s: %s\n", json_string_value(json_object_get(v, "variant")),
               json_string_value(json_object_get(v, "technique")));
        size_t k;
        json_t *l;
        json_array_foreach(json_object_get(v, "findings"), k, l) printf("  - %s\n", json_string_value(l));
        const char *rep = json_string_value(json_object_get(m, "report"));
        if (rep)
            printf("  report: %s\n", PL_ESC(rep));
        json_t *nsys = json_object_get(v, "nsys");
        if (nsys && json_object_get(nsys, "report"))
            printf("  nsys: %s\n", json_string_value(json_object_get(nsys, "report")));
        else if (nsys)
            printf("  nsys: %s\n", json_string_value(json_object_get(nsys, "error")));
    }
    printf("\nartifacts: %s\n", PL_ESC(json_string_value(json_object_get(doc, "dir"))));
}

int pl_cmd_profile(int argc, char **argv)
{
    const char *variant = NULL, *artifacts = "artifacts";
    int device = 0, help = 0, json = 0, no_nsys = 0;
    double timeout_s = 600, seed = 20260101;
    pl_strlist extra = {0};
    const pl_option opts[] = {
        {"variant", 0, PL_OPT_STRING, &variant, "V", "only this variant (default: every variant)", 0, 0},
        {"target-extra-arg", 0, PL_OPT_LIST, &extra, "'T=ARGS'", "the target's parameters, as perflab run takes them",
         0, 0},
        {"device", 0, PL_OPT_INT, &device, "N", "the GPU (default 0)", 0, 1024},
        {"seed", 0, PL_OPT_DOUBLE, &seed, "S", "seed of the random inputs (default 20260101)", 0, 1e18},
        {"artifacts-dir", 0, PL_OPT_STRING, &artifacts, "DIR", "where the profile folder goes (default artifacts)", 0,
         0},
        {"timeout-s", 0, PL_OPT_DOUBLE, &timeout_s, "S", "kill a replay under ncu after S seconds (default 600)", 1,
         86400},
        {"no-nsys", 0, PL_OPT_FLAG, &no_nsys, NULL, "skip the Nsight Systems timeline", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print profile.json instead of the findings", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024] = "";
    if (pl_options_parse("profile", opts, argc, argv, &pos, err, sizeof err) != 0) {
        pl_strlist_free(&extra);
        return pl_usage_error("profile", err);
    }
    if (help) {
        usage(opts);
        pl_strlist_free(&pos);
        pl_strlist_free(&extra);
        return PL_EXIT_OK;
    }
    if (pos.n != 1) {
        pl_strlist_free(&pos);
        pl_strlist_free(&extra);
        return pl_usage_error("profile", "needs one target: perflab profile TARGET [--variant V] (perflab list shows "
                                         "them)");
    }
    pl_profile_request req = {.target = pos.items[0],
                              .variant = variant,
                              .extra_args = extra.items,
                              .n_extra = extra.n,
                              .artifacts_dir = artifacts,
                              .device = device,
                              .seed = (unsigned long long)seed,
                              .timeout_s = timeout_s,
                              .nsys = !no_nsys,
                              .argc = pl_cli_argc,
                              .argv = pl_cli_argv};
    json_t *doc = NULL;
    int rc = pl_profile_run(&req, &doc, err, sizeof err);
    if (err[0])
        fprintf(stderr, "perflab profile: %s\n", err);
    if (doc && json) {
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(s);
        free(s);
    } else if (doc) {
        print_doc(doc);
    }
    json_decref(doc);
    pl_strlist_free(&pos);
    pl_strlist_free(&extra);
    return rc;
}
