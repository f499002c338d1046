/* The hardware verbs without a GPU: the datasheet table, the capabilities file and how it decides requirements,
 * the ceilings file and the roofline columns, the peak report's judging, option parsing, and each verb's answer
 * on a machine with no usable GPU (exit 3, one line). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/capabilities.h"
#include "core/ceilings.h"
#include "hw/datasheet.h"
#include "hw/peak_report.h"
#include "core/run_report.h"
#include "testutil.h"

static int near(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b);
}

/* An entry is complete, and its dense tensor rates agree as they do on one GPU: FP16 = BF16, TF32 = BF16 / 2,
 * FP8 = 2 x BF16 (within the datasheets' rounding, 3%). */
static void check_datasheet_entry(const pl_datasheet *d)
{
    ck_assert_msg(d->key && d->name && d->source && d->note, "%s", d->key);
    ck_assert_msg(strstr(d->source, "https://www.nvidia.com/") != NULL, "%s: source %s", d->name, d->source);
    ck_assert_msg(d->memory_gbps > 100, "%s", d->name);
    if (isnan(d->bf16_tflops))
        return;
    ck_assert_msg(d->fp16_tflops == d->bf16_tflops, "%s", d->name);
    ck_assert_msg(near(d->tf32_tflops, d->bf16_tflops / 2, 0.03), "%s: tf32 %g", d->name, d->tf32_tflops);
    if (!isnan(d->fp8_tflops))
        ck_assert_msg(near(d->fp8_tflops, 2 * d->bf16_tflops, 0.03), "%s: fp8 %g", d->name, d->fp8_tflops);
    ck_assert_msg(d->bf16_tflops > 2 * d->fp32_tflops, "%s: bf16 %g", d->name, d->bf16_tflops);
}

/* Every row of the datasheet table is reached by one of these names (as CUDA reports them) and checked. */
START_TEST(datasheet_lookup_by_name_and_memory)
{
    static const struct {
        const char *name;
        double gib;
        const char *key;
        double gbps;
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", 79.1, "h100_sxm", 3350},
        {"NVIDIA H100 PCIe", 79.1, "h100_pcie", 2000},
        {"NVIDIA H100 NVL", 93.0, "h100_nvl", 3900},
        {"NVIDIA H200", 139.8, "h200", 4800},
        {"NVIDIA H200 NVL", 139.8, "h200_nvl", 4800},
        {"NVIDIA A100-SXM4-80GB", 79.2, "a100_sxm", 2039},
        {"NVIDIA A100-SXM4-40GB", 39.4, "a100_sxm", 1555},
        {"NVIDIA A100 80GB PCIe", 79.2, "a100_pcie", 1935},
        {"NVIDIA A100-PCIE-40GB", 39.4, "a100_pcie", 1555},
        {"NVIDIA L40S", 44.5, "l40s", 864},
        {"NVIDIA B200", 178.4, "b200", 7700},
        {"NVIDIA GB200", 184.0, "gb200", 8000},
        {"NVIDIA GB10", 119.0, "gb10", 273},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pl_datasheet *d = pl_datasheet_find(cases[i].name, cases[i].gib);
        ck_assert_msg(d != NULL, "%s not found", cases[i].name);
        ck_assert_str_eq(d->key, cases[i].key);
        ck_assert_msg(d->memory_gbps == cases[i].gbps, "%s: %g", cases[i].name, d->memory_gbps);
        check_datasheet_entry(d);
    }
    ck_assert_ptr_null(pl_datasheet_find("NVIDIA GeForce RTX 4090", 24));
    ck_assert_ptr_null(pl_datasheet_find("", 1));
    /* how peak judges a figure: NVLink is published for both directions, the host link per direction here */
    const pl_datasheet *h = pl_datasheet_find("NVIDIA H100 80GB HBM3", 79.1);
    ck_assert(pl_peak_datasheet_value(h, "nvlink") == 450);
    ck_assert(pl_peak_datasheet_value(h, "nvlink_both") == 900);
    ck_assert(pl_peak_datasheet_value(h, "host_both") == 128);
    ck_assert(pl_peak_datasheet_value(h, "bf16") == h->bf16_tflops);
    ck_assert(isnan(pl_peak_datasheet_value(h, "l2")));
    ck_assert(isnan(pl_peak_datasheet_value(NULL, "memory")));
}
END_TEST

static pl_gpu_capabilities gpu_caps(const char *name, const char *bus, const char *tma_status, const char *detail)
{
    pl_gpu_capabilities g;
    memset(&g, 0, sizeof g);
    g.name = pl_strdup(name);
    g.pci_bus_id = pl_strdup(bus);
    g.cc_major = 9;
    g.n_probes = 2;
    g.probes = pl_xcalloc(2, sizeof *g.probes);
    g.probes[0] = (pl_probe_result){pl_strdup("tma"), pl_probe_status_from_name(tma_status), pl_strdup(detail), NAN, 1};
    g.probes[1] = (pl_probe_result){pl_strdup("wgmma"), PL_PROBE_PASSED, pl_strdup("exact"), NAN, 1};
    return g;
}

START_TEST(capabilities_round_trip_merge_and_errors)
{
    pl_capabilities c = {.schema_version = PL_CAPABILITIES_SCHEMA_VERSION};
    pl_gpu_capabilities a = gpu_caps("NVIDIA H100 80GB HBM3", "0000:18:00.0", "passed", "ok");
    pl_gpu_capabilities b = gpu_caps("NVIDIA H100 80GB HBM3", "0000:2A:00.0", "failed", "wrong bytes");
    pl_capabilities_merge(&c, &a);
    pl_capabilities_merge(&c, &b);
    ck_assert_int_eq((int)c.n_gpus, 2);
    /* the same GPU again (bus ids compared without case) replaces its entry */
    pl_gpu_capabilities a2 = gpu_caps("NVIDIA H100 80GB HBM3", "0000:18:00.0", "not_available", "gone");
    pl_capabilities_merge(&c, &a2);
    ck_assert_int_eq((int)c.n_gpus, 2);
    const pl_gpu_capabilities *g = pl_capabilities_for_gpu(&c, "NVIDIA H100 80GB HBM3", "0000:18:00.0");
    ck_assert_int_eq(pl_capabilities_probe(g, "tma")->status, PL_PROBE_NOT_AVAILABLE);

    char err[512];
    json_t *j = pl_capabilities_to_json(&c);
    pl_capabilities back;
    ck_assert_int_eq(pl_capabilities_from_json(j, &back, err, sizeof err), 0);
    ck_assert_int_eq((int)back.n_gpus, 2);
    ck_assert_str_eq(pl_capabilities_probe(&back.gpus[1], "tma")->detail, "wrong bytes");
    pl_capabilities_free(&back);

    json_t *probes = json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "probes");
    json_object_set_new(json_array_get(probes, 1), "status", json_string("ok"));
    ck_assert_int_eq(pl_capabilities_from_json(j, &back, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "gpus[0].probes[1].status: expected passed, failed or not_available, found 'ok'"), "%s",
                  err);
    json_object_set_new(j, "schema_version", json_integer(7));
    ck_assert_int_eq(pl_capabilities_from_json(j, &back, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "schema_version"), "%s", err);
    json_decref(j);
    pl_capabilities_free(&c);

    /* a file with a syntax error is named with its position; an absent file is not an error */
    char *dir = pl_test_tmpdir("caps-files");
    char *bad = pl_path_join(dir, "bad.json");
    ck_assert_int_eq(pl_write_file_atomic(bad, "{\"schema_version\": 1,", 21, err, sizeof err), 0);
    ck_assert_int_eq(pl_capabilities_load(bad, &back, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "bad.json:1:"), "%s", err);
    char *none = pl_path_join(dir, "none.json");
    ck_assert_int_eq(pl_capabilities_load(none, &back, err, sizeof err), 1);
    free(bad);
    free(none);
    free(dir);
}
END_TEST

static pl_device_info h100(const char *bus)
{
    pl_device_info d;
    memset(&d, 0, sizeof d);
    pl_snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3");
    pl_snprintf(d.pci_bus_id, sizeof d.pci_bus_id, "%s", bus);
    d.cc_major = 9;
    d.cluster_launch = 1;
    return d;
}

START_TEST(measured_capabilities_decide_requirements)
{
    char *dir = pl_test_tmpdir("caps-req");
    char *path = pl_path_join(dir, PL_CAPABILITIES_FILE);
    pl_capabilities c = {.schema_version = PL_CAPABILITIES_SCHEMA_VERSION};
    pl_gpu_capabilities g = gpu_caps("NVIDIA H100 80GB HBM3", "0000:18:00.0", "failed", "planted: box was wrong");
    pl_capabilities_merge(&c, &g);
    char err[512], why[512];
    ck_assert_int_eq(pl_capabilities_save(&c, path, err, sizeof err), 0);
    pl_capabilities_free(&c);
    pl_capabilities caps = {0};
    pl_capabilities_load_for_run(dir, &caps);

    pl_device_info probed = h100("0000:18:00.0"), other = h100("0000:99:00.0");
    pl_requirements tma = {.needs_gpu = 1, .min_cc = 90, .features = PL_FEAT_TMA};
    pl_requirements wgmma = {.needs_gpu = 1, .features = PL_FEAT_WGMMA};
    pl_requirements clusters = {.needs_gpu = 1, .features = PL_FEAT_CLUSTERS};
    /* the probe failed on this GPU: skipped with the probe's reason, though sm_90 would have it */
    ck_assert_int_eq(pl_requirements_met(&tma, &probed, 1, &caps, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "needs TMA") && strstr(why, "planted: box was wrong"), "%s", why);
    ck_assert_int_eq(pl_requirements_met(&wgmma, &probed, 1, &caps, why, sizeof why), 1);
    /* no probe of that feature in the file: the compute capability decides */
    ck_assert_int_eq(pl_requirements_met(&clusters, &probed, 1, &caps, why, sizeof why), 1);
    /* another GPU (another bus id) is not in the file: the compute capability decides */
    ck_assert_int_eq(pl_requirements_met(&tma, &other, 1, &caps, why, sizeof why), 1);
    /* measured success decides too: the derivation alone would refuse wgmma on an sm_80 part */
    pl_device_info old = probed;
    old.cc_major = 8;
    ck_assert_int_eq(pl_requirements_met(&wgmma, &old, 1, &caps, why, sizeof why), 1);
    pl_capabilities_free(&caps);
    pl_capabilities_load_for_run("artifacts-of-nobody", &caps);
    ck_assert_int_eq(pl_requirements_met(&wgmma, &old, 1, &caps, why, sizeof why), 0);
    ck_assert_int_eq(pl_requirements_met(&wgmma, &old, 1, NULL, why, sizeof why), 0);
    pl_capabilities_free(&caps);
    free(path);
    free(dir);
}
END_TEST

START_TEST(ceilings_round_trip_and_roofline_columns)
{
    char *dir = pl_test_tmpdir("ceilings");
    pl_ceilings c;
    pl_ceilings_init(&c);
    c.hardware_key = pl_strdup("h100_sxm");
    c.value[PL_CEIL_HBM_GBPS] = 3000;
    c.source[PL_CEIL_HBM_GBPS] = pl_strdup("hbm_copy (run x)");
    c.value[PL_CEIL_BF16_TFLOPS] = 800;
    char *path = pl_ceilings_path(dir, "h100_sxm");
    ck_assert_msg(strstr(path, "ceilings-h100_sxm.json"), "%s", path);
    char err[512];
    ck_assert_int_eq(pl_ceilings_save(&c, path, err, sizeof err), 0);
    pl_ceilings *back = pl_xcalloc(1, sizeof *back);
    ck_assert_int_eq(pl_ceilings_load(path, back, err, sizeof err), 0);
    ck_assert(back->value[PL_CEIL_HBM_GBPS] == 3000 && back->value[PL_CEIL_BF16_TFLOPS] == 800);
    ck_assert(isnan(back->value[PL_CEIL_L2_GBPS]));
    pl_ceilings_free(&c);

    /* a roofline run that recorded the ceilings shows each variant's share of them */
    pl_run r;
    memset(&r, 0, sizeof r);
    r.run_dir = pl_path_join(dir, "20261121-000000-abcd");
    r.settings.profile = pl_strdup("roofline");
    r.settings.mode = pl_strdup("hot");
    r.prov.n_gpus = 1;
    r.prov.gpus = pl_xcalloc(1, sizeof *r.prov.gpus);
    r.prov.gpus[0].name = pl_strdup("NVIDIA H100 80GB HBM3");
    r.n_targets = 1;
    r.targets = pl_xcalloc(1, sizeof *r.targets);
    r.targets[0].name = pl_strdup("memory:copy");
    r.targets[0].n_variants = 1;
    r.targets[0].variants = pl_xcalloc(1, sizeof *r.targets[0].variants);
    pl_variant_result *v = &r.targets[0].variants[0];
    v->name = pl_strdup("baseline");
    v->has_stats = 1;
    v->stats.median = 1.0;
    v->stats.n = 10;
    v->gbps = 1500;
    v->tflops = 400;
    v->arithmetic_intensity = 0.25;
    v->pct_of_reference = NAN;
    r.ceilings = back;
    unlink(path); /* the run carries its ceilings: the file is not read again */
    pl_table *t = pl_run_table(&r);
    pl_buf md = {0};
    pl_table_markdown(t, &md);
    ck_assert_msg(strstr(md.data, "% HBM") && strstr(md.data, "50.0%"), "%s", md.data);
    ck_assert_msg(strstr(md.data, "% BF16 TC"), "%s", md.data);
    pl_buf_free(&md);
    pl_table_free(t);
    /* ... and they survive run.json: written, read back, the same columns */
    json_t *j = pl_run_to_json(&r);
    pl_run again;
    ck_assert_int_eq(pl_run_from_json(j, &again, err, sizeof err), 0);
    json_decref(j);
    ck_assert_ptr_nonnull(again.ceilings);
    ck_assert(again.ceilings->value[PL_CEIL_HBM_GBPS] == 3000);
    pl_run_free(&again);
    /* a run without ceilings has no such columns */
    pl_ceilings_free(r.ceilings);
    free(r.ceilings);
    r.ceilings = NULL;
    t = pl_run_table(&r);
    pl_table_markdown(t, &md);
    ck_assert_msg(!strstr(md.data, "% HBM"), "%s", md.data);
    pl_buf_free(&md);
    pl_table_free(t);
    pl_run_free(&r);
    free(path);
    free(dir);
}
END_TEST

static json_t *fig(const char *id, const char *key, double value)
{
    json_t *f = pl_peak_figure(id, "g", id, "GB/s", "read+write", "m", key);
    pl_peak_set_value(f, value, NULL, NAN);
    return f;
}

START_TEST(peak_report_judges_checks_and_ceilings)
{
    pl_provenance prov;
    memset(&prov, 0, sizeof prov);
    pl_peak_options o;
    pl_peak_options_default(&o, 0);
    pl_device_info dev = h100("0000:18:00.0");
    json_t *doc = pl_peak_doc_new("run1", &prov, &o, &dev);
    pl_peak_doc_add(doc, fig("hbm_copy", "memory", 3015));
    pl_peak_doc_add(doc, fig("hbm_memcpy", "memory", 3100));
    pl_peak_doc_add(doc, fig("lt_bf16", "bf16", 790));
    pl_peak_doc_add(doc, fig("lt_bf16_heuristic", "bf16", 700));
    pl_peak_doc_add(doc, fig("cublas_bf16", "bf16", 760));
    pl_peak_doc_add(doc, fig("h2d_pinned", "host", 55));
    pl_peak_doc_add(doc, fig("h2d_pageable", "host", 20));
    json_t *failed = pl_peak_figure("l2_read", "cache", "L2", "GB/s", "read", "m", NULL);
    pl_peak_set_status(failed, "failed", "sum off");
    pl_peak_doc_add(doc, failed);
    pl_peak_doc_judge(doc, pl_datasheet_find(dev.name, 79.1));
    json_t *copy = json_array_get(json_object_get(doc, "figures"), 0);
    ck_assert(near(pl_json_get_real(copy, "pct_of_datasheet"), 100.0 * 3015 / 3350, 1e-9));
    json_t *checks = json_object_get(doc, "checks");
    ck_assert_int_eq((int)json_array_size(checks), 4);
    ck_assert(json_is_true(json_object_get(json_array_get(checks, 0), "passed")));  /* 0.973 >= 0.90 */
    ck_assert(json_is_false(json_object_get(json_array_get(checks, 1), "passed"))); /* 0.921: not within 5% */
    ck_assert(json_is_true(json_object_get(json_array_get(checks, 3), "passed")));  /* 2.75 >= 1.5 */
    ck_assert_int_eq(pl_peak_doc_failed(doc), 1);

    pl_ceilings c;
    pl_ceilings_init(&c);
    c.value[PL_CEIL_L2_GBPS] = 9000; /* from an earlier run: a failed figure must not erase it */
    pl_peak_fill_ceilings(doc, &c);
    ck_assert(c.value[PL_CEIL_HBM_GBPS] == 3100);   /* the better of kernel and memcpy */
    ck_assert(c.value[PL_CEIL_BF16_TFLOPS] == 790); /* the better of cuBLASLt and cuBLAS */
    ck_assert(c.value[PL_CEIL_L2_GBPS] == 9000);
    ck_assert_msg(strstr(c.source[PL_CEIL_HBM_GBPS], "hbm_memcpy"), "%s", c.source[PL_CEIL_HBM_GBPS]);
    pl_ceilings_free(&c);
    json_decref(doc);
}
END_TEST

START_TEST(peak_groups_parse)
{
    unsigned g = 0;
    char err[256];
    ck_assert_int_eq(pl_peak_parse_groups("memory,tensor", &g, err, sizeof err), 0);
    ck_assert_uint_eq(g, PL_PEAK_MEMORY | PL_PEAK_TENSOR);
    ck_assert_int_eq(pl_peak_parse_groups("p2p", &g, err, sizeof err), 0);
    ck_assert_uint_eq(g, PL_PEAK_P2P);
    ck_assert_int_eq(pl_peak_parse_groups("memroy", &g, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "unknown group 'memroy' (did you mean 'memory'?)"), "%s", err);
    ck_assert_int_eq(pl_peak_parse_groups(",", &g, err, sizeof err), -1);
}
END_TEST

static void expect_exit(const char *env, const char *args, int code, const char *fragment)
{
    pl_cmd_result r = pl_run_perflab(env, args);
    ck_assert_msg(r.exit_code == code, "perflab %s: exit %d, expected %d; stderr: %s", args, r.exit_code, code, r.err);
    if (fragment) {
        ck_assert_msg(strstr(r.err, fragment), "perflab %s: '%s' not in: %s", args, fragment, r.err);
        char *nl = strchr(r.err, '\n');
        ck_assert_msg(nl && nl[1] == '\0', "perflab %s: not one line: %s", args, r.err);
    }
    pl_cmd_result_free(&r);
}

START_TEST(verbs_help_usage_and_no_gpu)
{
    const char *verbs[] = {"hw", "probe", "peak"};
    for (size_t i = 0; i < 3; i++) {
        char *a = pl_strfmt("%s --help", verbs[i]);
        pl_cmd_result r = pl_run_perflab(NULL, a);
        ck_assert_msg(r.exit_code == 0 && strstr(r.out, "usage: perflab"), "%s", a);
        pl_cmd_result_free(&r);
        free(a);
        /* no visible GPU (or no driver at all): exit 3 with one line */
        char *dir = pl_test_tmpdir("nogpu");
        a = pl_strfmt("%s --artifacts-dir '%s'", verbs[i], dir);
        expect_exit("CUDA_VISIBLE_DEVICES=-1", i == 0 ? verbs[i] : a, 3, "no usable GPU");
        char *ls = pl_strfmt("test -z \"$(ls -A '%s')\"", dir);
        ck_assert_msg(system(ls) == 0, "%s left files behind in %s", verbs[i], dir);
        free(ls);
        free(a);
        free(dir);
    }
    expect_exit(NULL, "hw --bogus", 2, "unknown option '--bogus'");
    expect_exit(NULL, "hw extra", 2, "unexpected argument 'extra'");
    expect_exit(NULL, "probe --devcie 1", 2, "did you mean --device?");
    expect_exit(NULL, "peak --only memroy", 2, "(did you mean 'memory'?)");
    expect_exit(NULL, "peak --gemm-n 7", 2, "--gemm-n must be between 256 and");
    char *dir = pl_test_tmpdir("afile"), *file = pl_path_join(dir, "f"), err[256];
    ck_assert_int_eq(pl_write_file_atomic(file, "x", 1, err, sizeof err), 0);
    char *a = pl_strfmt("peak --artifacts-dir '%s'", file);
    expect_exit(NULL, a, 2, "is a file: pass a directory with --artifacts-dir");
    free(a);
    free(file);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hw");
    TCase *tc = tcase_create("hw");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, datasheet_lookup_by_name_and_memory);
    tcase_add_test(tc, capabilities_round_trip_merge_and_errors);
    tcase_add_test(tc, measured_capabilities_decide_requirements);
    tcase_add_test(tc, ceilings_round_trip_and_roofline_columns);
    tcase_add_test(tc, peak_report_judges_checks_and_ceilings);
    tcase_add_test(tc, peak_groups_parse);
    tcase_add_test(tc, verbs_help_usage_and_no_gpu);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
