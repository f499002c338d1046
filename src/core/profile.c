/* perflab profile: ncu reports with the fixed metric set, findings, and an nsys timeline where it runs
 * (see profile.h). */
#include "core/profile.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/devprobe.h"
#include "core/exit.h"
#include "core/ncu.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "perflab/target_registry.h"
#include "core/files.h"

#define PROBE_TIMEOUT_S 60.0

/* The target's arguments from every 'group:name=...' that names it. */
static int target_args(const pl_profile_request *req, const char *full, pl_buf *args, char *err, size_t errlen)
{
    pl_buf_append(args, "");
    for (size_t i = 0; i < req->n_extra; i++) {
        const char *spec = req->extra_args[i], *eq = strchr(spec, '=');
        if (!eq || eq == spec) {
            pl_snprintf(err, errlen, "malformed --target-extra-arg '%s': write it as '%s=--param value'", PL_ESC(spec),
                        full);
            return -1;
        }
        if (strlen(full) != (size_t)(eq - spec) || strncmp(spec, full, (size_t)(eq - spec)) != 0) {
            pl_snprintf(err, errlen, "--target-extra-arg '%s' names another target than %s", PL_ESC(spec), full);
            return -1;
        }
        pl_buf_printf(args, " %s", eq + 1);
    }
    return 0;
}

static const pl_variant *find_variant(const pl_target *t, const char *name, char *err, size_t errlen)
{
    pl_buf names = {0};
    for (size_t i = 0; t->variants[i].name; i++) {
        if (strcmp(t->variants[i].name, name) == 0) {
            pl_buf_free(&names);
            return &t->variants[i];
        }
        pl_buf_printf(&names, "%s%s", i ? ", " : "", t->variants[i].name);
    }
    pl_snprintf(err, errlen, "--variant %s: %s:%s has no such variant (it has %s)", PL_ESC(name), t->group, t->name,
                names.data);
    pl_buf_free(&names);
    return NULL;
}

/* nsys on the same replay, its capture limited to the profiled run (cudaProfilerApi). */
static json_t *nsys_timeline(const char *exe, const char *full, const char *variant, const char *args,
                             const pl_profile_request *req, const char *base)
{
    char *nsys = pl_which("nsys");
    if (!nsys)
        return json_pack("{s:s}", "error", "nsys (Nsight Systems) is not on the PATH: no timeline");
    char device[16], seed[32];
    pl_snprintf(device, sizeof device, "%d", req->device);
    pl_snprintf(seed, sizeof seed, "%llu", req->seed);
    char *out = pl_strfmt("%s-nsys", base), *log = pl_strfmt("%s-nsys.log", base);
    char *argv[] = {nsys,
                    "profile",
                    "--trace",
                    "cuda",
                    "--capture-range",
                    "cudaProfilerApi",
                    "--force-overwrite",
                    "true",
                    "--output",
                    out,
                    (char *)exe,
                    "__ncu-replay",
                    "--target",
                    (char *)full,
                    "--variant",
                    (char *)variant,
                    "--device",
                    device,
                    "--seed",
                    seed,
                    "--params",
                    (char *)args,
                    NULL};
    int code = pl_exec_wait(argv, log, 1, 1, req->timeout_s);
    char *rep = pl_strfmt("%s.nsys-rep", out);
    json_t *j;
    if (code == 0 && pl_path_exists(rep)) {
        const char *slash = strrchr(rep, '/');
        j = json_pack("{s:s}", "report", slash ? slash + 1 : rep);
    } else {
        char *text = pl_read_file(log, NULL, NULL, 0);
        const char *last = text ? text : "";
        size_t n = strlen(last);
        while (n > 0 && last[n - 1] == '\n')
            n--;
        size_t start = n;
        while (start > 0 && last[start - 1] != '\n')
            start--;
        char *why = pl_strfmt("nsys exited with code %d: %.*s", code, (int)(n - start), last + start);
        j = json_pack("{s:s}", "error", why);
        free(why);
        free(text);
    }
    free(rep);
    free(out);
    free(log);
    free(nsys);
    return j;
}

static json_t *profile_variant(const pl_profile_request *req, const pl_target *t, const char *full, const pl_variant *v,
                               const char *ncu, const char *exe, const char *args, const char *dir,
                               double counted_bytes, int *failed)
{
    char *name = pl_strfmt("%s_%s_%s", t->group, t->name, v->name);
    char *base = pl_path_join(dir, name);
    pl_ncu_metrics m;
    pl_ncu_metrics_init(&m);
    pl_ncu_job job = {.ncu = ncu,
                      .exe = exe,
                      .target = full,
                      .variant = v->name,
                      .params = args,
                      .device = req->device,
                      .seed = req->seed,
                      .out_base = base,
                      .timeout_s = req->timeout_s};
    char err[512];
    fprintf(stderr, "perflab profile: %s / %s under ncu ...\n", full, v->name);
    const int got = pl_ncu_profile(&job, &m, err, sizeof err);
    if (got == 0)
        m.report = pl_strfmt("%s.ncu-rep", name);
    else if (got < 0)
        *failed = 1; /* 1: no kernel to count (a copy engine's variant), which is no failure */
    pl_buf findings = {0};
    pl_ncu_findings(&m, counted_bytes, &findings);
    json_t *lines = json_array();
    for (char *save = NULL, *l = strtok_r(findings.data, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        json_array_append_new(lines, json_string(l));
    json_t *j = json_pack("{s:s, s:s, s:o, s:o, s:o}", "variant", v->name, "technique", v->technique, "metrics",
                          pl_ncu_metrics_to_json(&m), "dram_measured_over_counted",
                          pl_json_real(pl_ncu_dram_ratio(&m, counted_bytes)), "findings", lines);
    if (req->nsys)
        json_object_set_new(j, "nsys", nsys_timeline(exe, full, v->name, args, req, base));
    pl_buf_free(&findings);
    pl_ncu_metrics_free(&m);
    free(name);
    free(base);
    return j;
}

static char *summary_markdown(json_t *doc)
{
    pl_buf md = {0};
    pl_buf_printf(&md, "# perflab profile %s\n\n- %s\n- metric set: `%s`\n- ncu options: %s\n",
                  json_string_value(json_object_get(doc, "target")), json_string_value(json_object_get(doc, "ncu")),
                  json_string_value(json_object_get(doc, "metric_set")),
                  json_string_value(json_object_get(doc, "ncu_options")));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(doc, "variants"), i, v)
    {
        pl_buf_printf(&md, "\n## %s\n\n", json_string_value(json_object_get(v, "variant")));
        size_t k;
        json_t *l;
        json_array_foreach(json_object_get(v, "findings"), k, l) pl_buf_printf(&md, "- %s\n", json_string_value(l));
        const char *rep = json_string_value(json_object_get(json_object_get(v, "metrics"), "report"));
        if (rep)
            pl_buf_printf(&md, "- report: `%s` (open with ncu-ui, or `ncu --import %s --page details`)\n", rep, rep);
        json_t *nsys = json_object_get(v, "nsys");
        if (nsys)
            pl_buf_printf(
                &md, "- nsys: %s\n",
                json_string_value(json_object_get(nsys, json_object_get(nsys, "report") ? "report" : "error")));
    }
    return md.data;
}

int pl_profile_run(const pl_profile_request *req, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    const pl_target *t = pl_registry_find(req->target);
    if (!t) {
        pl_snprintf(err, errlen, "unknown target '%s'; 'perflab list' shows them", req->target);
        return PL_EXIT_USAGE;
    }
    char full[256];
    pl_target_full_name(t, full, sizeof full);
    if (!t->req.needs_gpu) {
        pl_snprintf(err, errlen, "%s runs on the host alone: there is no GPU kernel to profile", full);
        return PL_EXIT_USAGE;
    }
    const pl_variant *only = NULL;
    if (req->variant && !(only = find_variant(t, req->variant, err, errlen)))
        return PL_EXIT_USAGE;
    pl_buf args = {0};
    pl_params p = {0};
    if (target_args(req, full, &args, err, errlen) != 0 ||
        pl_params_init(&p, t->params, full, args.data, 0, err, errlen) != 0 ||
        (t->check_params && t->check_params(&p, NULL, err, errlen) != 0) ||
        !pl_dir_usable(req->artifacts_dir, "artifacts directory", "--artifacts-dir", err, errlen)) {
        pl_buf_free(&args);
        pl_params_free(&p);
        return PL_EXIT_USAGE;
    }
    pl_buf_free(&args);
    int rc = PL_EXIT_NO_GPU;
    char *ncu = pl_ncu_find(), *exe = pl_self_exe(), *canon = pl_ncu_params_args(&p), *dir = NULL, *run_id = NULL;
    pl_gpu_inventory inv = {0};
    char why[256];
    if (!ncu) {
        pl_snprintf(err, errlen, "ncu (Nsight Compute) is not on the PATH: install it, or set PERFLAB_NCU to its path");
        goto out;
    }
    if (pl_gpu_inventory_probe(&inv, PROBE_TIMEOUT_S) != 0 || !inv.usable) {
        pl_snprintf(err, errlen, "no usable GPU: %s", inv.error[0] ? inv.error : "unknown reason");
        goto out;
    }
    if (req->device >= inv.device_count) {
        pl_snprintf(err, errlen, "--device %d: this machine has %d GPU%s", req->device, inv.device_count,
                    inv.device_count == 1 ? "" : "s");
        rc = PL_EXIT_USAGE;
        goto out;
    }
    if (!pl_requirements_met(&t->req, &inv.devices[req->device], inv.device_count, NULL, why, sizeof why)) {
        pl_snprintf(err, errlen, "%s cannot run on this GPU: %s", full, why);
        goto out;
    }
    if (t->check_params && t->check_params(&p, &inv.records[req->device], why, sizeof why) != 0) {
        pl_snprintf(err, errlen, "%s: %s", full, why);
        rc = PL_EXIT_USAGE;
        goto out;
    }
    run_id = pl_new_run_id();
    dir = pl_path_join(req->artifacts_dir, run_id);
    if (pl_mkdir_p(dir, err, errlen) != 0) {
        rc = PL_EXIT_USAGE;
        goto out;
    }
    pl_counters counted = {0};
    if (t->counters)
        t->counters(&p, &counted);
    const double counted_bytes = counted.bytes_read + counted.bytes_written;
    pl_provenance prov;
    pl_provenance_collect(&prov, req->argc, req->argv, &inv);
    pl_buf set = {0};
    for (size_t i = 0; pl_ncu_metric_set[i]; i++)
        pl_buf_printf(&set, "%s%s", i ? "," : "", pl_ncu_metric_set[i]);
    char *tool = pl_ncu_describe();
    json_t *doc =
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "kind", "perflab.profile", "schema_version", 1,
                  "run_id", run_id, "target", full, "params", canon, "ncu", tool, "metric_set", set.data, "ncu_options",
                  "--clock-control none --profile-from-start off (only the variant's own run, between "
                  "cudaProfilerStart and cudaProfilerStop) --launch-count 64",
                  "counters",
                  json_pack("{s:f, s:f, s:f}", "flops", counted.flops, "bytes_read", counted.bytes_read,
                            "bytes_written", counted.bytes_written),
                  "provenance", pl_provenance_to_json(&prov));
    free(tool);
    pl_buf_free(&set);
    pl_provenance_free(&prov);
    json_t *vs = json_array();
    int failed = 0;
    for (size_t i = 0; t->variants[i].name; i++)
        if (!only || only == &t->variants[i])
            json_array_append_new(
                vs, profile_variant(req, t, full, &t->variants[i], ncu, exe, canon, dir, counted_bytes, &failed));
    json_object_set_new(doc, "variants", vs);
    json_object_set_new(doc, "dir", json_string(dir));
    char *md = summary_markdown(doc);
    pl_report_file files[] = {{.name = "profile.json", .json = doc}, {.name = "summary.md", .text = md}};
    if (pl_report_write_files(dir, files, 2, err, errlen) != 0)
        failed = 1;
    free(md);
    *out = doc;
    rc = failed ? PL_EXIT_FAILED : PL_EXIT_OK;
out:
    pl_gpu_inventory_free(&inv);
    pl_params_free(&p);
    free(ncu);
    free(exe);
    free(canon);
    free(dir);
    free(run_id);
    return rc;
}
