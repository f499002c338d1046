/* On a GPU: perflab hw (with and without NVML), probe (and the capabilities it writes deciding requirements),
 * peak (every figure measured or skipped with a reason, the same-run checks of the issue, peak.json and the
 * ceilings) and the roofline columns those ceilings feed. Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/capabilities.h"
#include "testutil.h"

static json_t *run_json(const char *env, const char *args, int expect_code, pl_cmd_result *r)
{
    *r = pl_run_perflab(env, args);
    if (r->exit_code != expect_code) /* the whole output to the log: Check's message has a size limit */
        printf("perflab %s\nstdout:\n%s\nstderr:\n%s\n", args, r->out, r->err);
    ck_assert_msg(r->exit_code == expect_code, "perflab %s: exit %d (output above)", args, r->exit_code);
    json_error_t je;
    json_t *j = json_loads(r->out, 0, &je);
    ck_assert_msg(j != NULL, "perflab %s: not JSON (%s)", args, je.text);
    return j;
}

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

START_TEST(hw_reports_every_gpu_and_pair)
{
    pl_cmd_result r;
    json_t *inv = run_json(NULL, "hw --json", 0, &r);
    json_t *gpus = json_object_get(inv, "gpus");
    size_t n = json_array_size(gpus);
    ck_assert(n >= 1);
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(gpus, i);
        ck_assert(num(g, "sm_count") > 0);
        ck_assert(num(json_object_get(g, "memory"), "total_bytes") > 0);
        ck_assert(num(json_object_get(g, "memory"), "theoretical_gbps") > 100);
        ck_assert(num(json_object_get(g, "l2"), "bytes") > 0);
        ck_assert_ptr_nonnull(json_object_get(g, "missing"));
    }
    ck_assert_int_eq((int)json_array_size(json_object_get(json_object_get(inv, "topology"), "pairs")),
                     (int)(n * (n - 1)));
    json_decref(inv);
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "hw");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_msg(strstr(r.out, "compute capability") && strstr(r.out, "topology"), "hw table");
    printf("%s", r.out);
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(hw_without_nvml_says_what_is_missing)
{
    pl_cmd_result r;
    json_t *inv = run_json("PERFLAB_NVML_DISABLE=1", "hw --json", 0, &r);
    ck_assert(json_is_false(json_object_get(json_object_get(inv, "nvml"), "available")));
    json_t *g = json_array_get(json_object_get(inv, "gpus"), 0);
    ck_assert(num(g, "sm_count") > 0);
    ck_assert(json_array_size(json_object_get(g, "missing")) > 0);
    json_decref(inv);
    pl_cmd_result_free(&r);
    r = pl_run_perflab("PERFLAB_NVML_DISABLE=1", "hw");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_msg(strstr(r.out, "not known for GPU 0") && strstr(r.out, "PERFLAB_NVML_DISABLE"), "hw without NVML");
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(probe_writes_capabilities_that_decide_requirements)
{
    char *dir = pl_test_tmpdir("probe");
    char *args = pl_strfmt("probe --json --artifacts-dir '%s'", dir);
    pl_cmd_result r;
    json_t *caps = run_json(NULL, args, 0, &r);
    printf("%s", r.out);
    json_t *g = json_array_get(json_object_get(caps, "gpus"), 0);
    json_t *probes = json_object_get(g, "probes");
    ck_assert_int_eq((int)json_array_size(probes), 6);
    int cc_major = 0, cc_minor = 0;
    sscanf(json_string_value(json_object_get(g, "compute_capability")), "%d.%d", &cc_major, &cc_minor);
    for (size_t k = 0; k < json_array_size(probes); k++) {
        json_t *p = json_array_get(probes, k);
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *status = json_string_value(json_object_get(p, "status"));
        if (cc_major == 9 && cc_minor == 0) /* Hopper: everything but tcgen05 */
            ck_assert_str_eq(status, strcmp(name, "tcgen05") == 0 ? "not_available" : "passed");
    }
    /* the file holds this GPU; a failure planted in it makes a requirement fail with the probe's reason */
    char *path = pl_path_join(dir, PL_CAPABILITIES_FILE), err[512], why[512];
    pl_capabilities c;
    ck_assert_int_eq(pl_capabilities_load(path, &c, err, sizeof err), 0);
    pl_gpu_inventory inv;
    ck_assert_int_eq(pl_gpu_inventory_probe(&inv, 60), 0);
    const pl_device_info *dev = &inv.devices[0];
    pl_gpu_capabilities *mine = (pl_gpu_capabilities *)pl_capabilities_for_gpu(&c, dev->name, dev->pci_bus_id);
    ck_assert_ptr_nonnull(mine);
    pl_requirements req = {.needs_gpu = 1, .features = PL_FEAT_TMA};
    ck_assert_int_eq(pl_requirements_met(&req, dev, inv.device_count, &c, why, sizeof why), dev->cc_major >= 9);
    pl_probe_result *tma = (pl_probe_result *)pl_capabilities_probe(mine, "tma");
    tma->status = PL_PROBE_FAILED;
    free(tma->detail);
    tma->detail = pl_strdup("planted failure");
    ck_assert_int_eq(pl_capabilities_save(&c, path, err, sizeof err), 0);
    pl_capabilities reread = {0};
    pl_capabilities_load_for_run(dir, &reread);
    ck_assert_int_eq(pl_requirements_met(&req, dev, inv.device_count, &reread, why, sizeof why), 0);
    pl_capabilities_free(&reread);
    ck_assert_msg(strstr(why, "planted failure"), "%s", why);
    pl_gpu_inventory_free(&inv);
    pl_capabilities_free(&c);
    json_decref(caps);
    pl_cmd_result_free(&r);
    free(path);
    free(args);
    free(dir);
}
END_TEST

static json_t *figure(json_t *doc, const char *id)
{
    json_t *figs = json_object_get(doc, "figures");
    for (size_t i = 0; i < json_array_size(figs); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(figs, i), "id")), id) == 0)
            return json_array_get(figs, i);
    return NULL;
}

START_TEST(peak_measures_checks_and_stores_ceilings)
{
    char *dir = pl_test_tmpdir("peak");
    char *args = pl_strfmt("peak --json --quiet --artifacts-dir '%s'", dir);
    pl_cmd_result r;
    json_t *doc = run_json(NULL, args, 0, &r);
    static const char *const ids[] = {"hbm_read",     "hbm_write",        "hbm_copy",     "hbm_memcpy",
                                      "hbm_latency",  "l2_read",          "smem_read",    "fp32_fma",
                                      "fp64_fma",     "mma_sync_bf16",    "lt_bf16",      "lt_fp16",
                                      "lt_tf32",      "cublas_bf16",      "h2d_pinned",   "d2h_pinned",
                                      "h2d_pageable", "d2h_pageable",     "bidir_pinned", "launch_back_to_back",
                                      "launch_graph", "launch_round_trip"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        json_t *f = figure(doc, ids[i]);
        ck_assert_msg(f != NULL, "no figure %s", ids[i]);
        ck_assert_msg(strcmp(json_string_value(json_object_get(f, "status")), "ok") == 0, "%s: %s", ids[i],
                      json_string_value(json_object_get(f, "reason")));
        ck_assert_msg(num(f, "value") > 0 && isfinite(num(f, "value")), "%s", ids[i]);
        ck_assert_ptr_nonnull(json_object_get(f, "method"));
    }
    /* the same-run checks */
    json_t *checks = json_object_get(doc, "checks");
    ck_assert_int_eq((int)json_array_size(checks), 4);
    for (size_t i = 0; i < 4; i++) {
        json_t *c = json_array_get(checks, i);
        ck_assert_msg(!json_is_false(json_object_get(c, "passed")), "%s: %.3f (%s)",
                      json_string_value(json_object_get(c, "name")), num(c, "ratio"),
                      json_string_value(json_object_get(c, "rule")));
    }
    /* with one GPU the matrix says why it is empty; with more, every ordered pair is there */
    pl_gpu_inventory inv;
    ck_assert_int_eq(pl_gpu_inventory_probe(&inv, 60), 0);
    if (inv.device_count < 2) {
        json_t *p = figure(doc, "p2p");
        ck_assert_ptr_nonnull(p);
        ck_assert_msg(strstr(json_string_value(json_object_get(p, "reason")), "needs 2+ GPUs"), "p2p");
    } else {
        for (int a = 0; a < inv.device_count; a++)
            for (int b = 0; b < inv.device_count; b++) {
                char id[64];
                pl_snprintf(id, sizeof id, "p2p_ce_%d_%d", a, b);
                ck_assert_msg(a == b || figure(doc, id), "no %s", id);
            }
    }
    /* peak.json in the run folder, and the ceilings file next to it */
    char *cmd = pl_strfmt("test -f '%s/%s/peak.json' && ls '%s'/ceilings-*.json >/dev/null", dir,
                          json_string_value(json_object_get(doc, "run_id")), dir);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    free(cmd);
    pl_gpu_inventory_free(&inv);
    json_decref(doc);
    pl_cmd_result_free(&r);

    /* a roofline run shows each variant's share of the measured ceilings */
    free(args);
    args = pl_strfmt("run --quiet --targets memory:vectorized_copy --profile roofline --max-time-s 0.5 "
                     "--artifacts-dir '%s' --expectations-dir '%s'",
                     dir, dir);
    r = pl_run_perflab(NULL, args);
    printf("%s%s", r.out, r.err);
    ck_assert_msg(r.exit_code == 0, "roofline run: exit %d", r.exit_code);
    ck_assert_msg(strstr(r.out, "% HBM") && strstr(r.out, "% BF16 TC"), "no roofline columns");
    pl_cmd_result_free(&r);
    free(args);
    free(dir);
}
END_TEST

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    Suite *s = suite_create("hw_verbs");
    TCase *tc = tcase_create("hw_verbs");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, hw_reports_every_gpu_and_pair);
    tcase_add_test(tc, hw_without_nvml_says_what_is_missing);
    tcase_add_test(tc, probe_writes_capabilities_that_decide_requirements);
    tcase_add_test(tc, peak_measures_checks_and_stores_ceilings);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
