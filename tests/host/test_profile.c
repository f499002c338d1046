/* The Nsight Compute plumbing without a GPU: ncu's CSV read back (sums, duration-weighted percentages, units row,
 * thousands separators), one replay under a stand-in ncu (the options perflab passes, a metric it lacks dropped
 * and retried, failures named), the findings, run.json's ncu members, the roofline table's measured/counted
 * column, and the verbs' errors where there is no ncu or no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ncu.h"
#include "core/results_json.h"
#include "core/util.h"
#include "core/run_report.h"
#include "testutil.h"

#define NEAR(a, b)                                                                                                     \
    ck_assert_msg(fabs((double)(a) - (double)(b)) <= 1e-9 * fmax(1.0, fabs((double)(b))), "%.17g != %.17g",            \
                  (double)(a), (double)(b))

static const char *const sample_csv =
    "==PROF== Connected to process 4242\n"
    "\"ID\",\"Process ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\","
    "\"dram__bytes_write.sum\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\","
    "\"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\","
    "\"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum\"\n"
    "\"\",\"\",\"\",\"nsecond\",\"byte\",\"byte\",\"%\",\"%\",\"%\",\"\",\"\"\n"
    "\"0\",\"4242\",\"affine(const float *, float "
    "*)\",\"3000\",\"1,000,000\",\"500000\",\"90\",\"0\",\"10\",\"4\",\"1\"\n"
    "\"1\",\"4242\",\"tail, \"\"quoted\"\" name\",\"1000\",\"250000\",\"n/a\",\"50\",\"0\",\"30\",\"0\",\"0\"\n";

START_TEST(csv_sums_and_weights)
{
    pl_ncu_metrics m;
    pl_ncu_metrics_init(&m);
    char err[256];
    ck_assert_int_eq(pl_ncu_parse_csv(sample_csv, &m, err, sizeof err), 0);
    ck_assert_int_eq(m.kernels, 2);
    NEAR(m.duration_ms, 4000e-6);                         /* ns summed, then ms */
    NEAR(m.dram_bytes_read, 1250000);                     /* "1,000,000" + 250000 */
    NEAR(m.dram_bytes_write, 500000);                     /* "n/a" is no value, not zero */
    NEAR(m.dram_pct, (3000 * 90 + 1000 * 50) / 4000.0);   /* weighted by duration: 80 */
    NEAR(m.tensor_pct, (3000 * 10 + 1000 * 30) / 4000.0); /* the busier of mma.sync and wgmma: 15 */
    NEAR(m.bank_conflicts, 5);                            /* loads and stores */
    ck_assert(isnan(m.l2_pct));                           /* not in the CSV: not collected */
    NEAR(pl_ncu_dram_ratio(&m, 1750000), 1.0);
    ck_assert(isnan(pl_ncu_dram_ratio(&m, NAN)));

    ck_assert_int_eq(pl_ncu_parse_csv("==PROF== nothing\n", &m, err, sizeof err), -1);
    ck_assert(strstr(err, "no metric table"));
    const char *header_only = "\"ID\",\"gpu__time_duration.sum\"\n\"\",\"nsecond\"\n";
    ck_assert_int_eq(pl_ncu_parse_csv(header_only, &m, err, sizeof err), -1);
    ck_assert(strstr(err, "no kernel was profiled"));
}
END_TEST

START_TEST(findings_name_the_problem)
{
    pl_ncu_metrics m;
    pl_ncu_metrics_init(&m);
    m.kernels = 1;
    m.duration_ms = 2;
    m.dram_bytes_read = 3e9;
    m.dram_bytes_write = 1e9;
    m.dram_pct = 35;
    m.sm_pct = 20;
    m.occupancy_pct = 12;
    m.shared_wavefronts = 1000;
    m.bank_conflicts = 400;
    pl_buf b = {0};
    pl_ncu_findings(&m, 1e9, &b);
    ck_assert_msg(strstr(b.data, "DRAM traffic is 4.00x"), "%s", b.data);
    ck_assert(strstr(b.data, "latency-bound") && strstr(b.data, "DRAM, at 35.0%"));
    ck_assert(strstr(b.data, "low achieved occupancy: 12.0%"));
    ck_assert(strstr(b.data, "bank conflicts: 400 of 1000 wavefronts (40%)"));
    pl_buf_free(&b);

    m.dram_bytes_read = 0.5e9;
    m.dram_bytes_write = 0.5e9;
    m.dram_pct = 93;
    m.occupancy_pct = 80;
    m.bank_conflicts = 0;
    pl_ncu_findings(&m, 1e9, &b);
    ck_assert_msg(strstr(b.data, "matches the counted bytes: 1.00x"), "%s", b.data);
    ck_assert(strstr(b.data, "bound by DRAM: 93.0%"));
    ck_assert(!strstr(b.data, "occupancy") && !strstr(b.data, "bank"));
    pl_buf_free(&b);

    m.error = pl_strdup("ncu exited with code 1: ==ERROR== ERR_NVGPUCTRPERM");
    pl_ncu_findings(&m, 1e9, &b);
    ck_assert(strstr(b.data, "no counters: ncu exited with code 1"));
    pl_buf_free(&b);
    free(m.error);
}
END_TEST

/* A stand-in for ncu: records its arguments, writes the report it was asked for and, on --import, a CSV. With
 * FAKE_NCU_LACKS set, it refuses that metric the way ncu does. */
static char *fake_ncu(const char *dir)
{
    char *path = pl_path_join(dir, "ncu");
    char *args = pl_path_join(dir, "args.txt");
    char *script = pl_strfmt(
        "#!/bin/sh\n"
        "echo \"$@\" >> '%s'\n"
        "if [ \"$1\" = --version ]; then echo 'NVIDIA (R) Nsight Compute Command Line Profiler'; "
        "echo 'Version 2099.1.0.0 (build 1) (public-release)'; exit 0; fi\n"
        "if [ \"$1\" = --import ]; then\n"
        "  echo '\"ID\",\"Kernel "
        "Name\",\"gpu__time_duration.sum\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\"'\n"
        "  echo '\"\",\"\",\"nsecond\",\"byte\",\"byte\"'\n"
        "  echo '\"0\",\"k\",\"2000000\",\"400000000\",\"400000000\"'\n"
        "  exit 0\n"
        "fi\n"
        "out=''; log=''; metrics=''\n"
        "while [ $# -gt 0 ]; do case \"$1\" in --export) out=$2; shift;; --log-file) log=$2; shift;; "
        "--metrics) metrics=$2; shift;; __ncu-replay) break;; esac; shift; done\n"
        "if [ -n \"$FAKE_NCU_LACKS\" ] && echo \"$metrics\" | grep -q \"$FAKE_NCU_LACKS\"; then\n"
        "  echo \"==ERROR== Failed to find metric $FAKE_NCU_LACKS\" > \"$log\"; exit 1; fi\n"
        "if [ -n \"$FAKE_NCU_NOKERNEL\" ]; then echo '==WARNING== No kernels were profiled.' > \"$log\"; exit 0; fi\n"
        "if [ -n \"$FAKE_NCU_FAIL\" ]; then echo '==PROF== Connected' > \"$log\"; "
        "echo '==ERROR== ERR_NVGPUCTRPERM - no permission' >> \"$log\"; exit 1; fi\n"
        "echo '==PROF== Report: x' > \"$log\"; echo report > \"$out.ncu-rep\"\n",
        args);
    char err[256];
    ck_assert_int_eq(pl_write_file_atomic(path, script, strlen(script), err, sizeof err), 0);
    chmod(path, 0755);
    free(script);
    free(args);
    return path;
}

START_TEST(replay_under_a_stand_in)
{
    char *dir = pl_test_tmpdir("ncu-fake");
    char *ncu = fake_ncu(dir);
    char *base = pl_path_join(dir, "memory_coalescing_baseline");
    pl_ncu_job job = {.ncu = ncu,
                      .exe = "/bin/true",
                      .target = "memory:coalescing",
                      .variant = "baseline",
                      .params = "--n 1000 --stride 32",
                      .device = 1,
                      .seed = 7,
                      .out_base = base,
                      .timeout_s = 30};
    pl_ncu_metrics m;
    pl_ncu_metrics_init(&m);
    char err[512];
    setenv("FAKE_NCU_LACKS", "sm__pipe_tensor_op_gmma_cycles_active", 1);
    ck_assert_msg(pl_ncu_profile(&job, &m, err, sizeof err) == 0, "%s", err);
    unsetenv("FAKE_NCU_LACKS");
    ck_assert_int_eq(m.kernels, 1);
    NEAR(m.dram_bytes_read + m.dram_bytes_write, 8e8);
    NEAR(m.duration_ms, 2.0);
    ck_assert_ptr_null(m.error);

    char *args_path = pl_path_join(dir, "args.txt");
    char *args = pl_read_file(args_path, NULL, NULL, 0);
    ck_assert_ptr_nonnull(args);
    /* the first try asked for the whole set, the second without the metric the stand-in lacks, then the import */
    char *second = strchr(args, '\n') + 1;
    ck_assert(strstr(args, "sm__pipe_tensor_op_gmma_cycles_active"));
    ck_assert(!strstr(second, "sm__pipe_tensor_op_gmma_cycles_active"));
    ck_assert(strstr(second, "--clock-control none --profile-from-start off"));
    ck_assert(strstr(second, "dram__bytes_read.sum,dram__bytes_write.sum"));
    ck_assert(strstr(second, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"));
    ck_assert(strstr(second, "sm__warps_active.avg.pct_of_peak_sustained_active"));
    ck_assert(strstr(second, "/bin/true __ncu-replay --target memory:coalescing --variant baseline --device 1 "
                             "--seed 7 --params --n 1000 --stride 32"));
    ck_assert(strstr(args, "--import") && strstr(args, "--csv --page raw --print-units base"));
    free(args);

    /* a failure names ncu's error */
    setenv("FAKE_NCU_FAIL", "1", 1);
    pl_ncu_metrics_free(&m);
    pl_ncu_metrics_init(&m);
    ck_assert_int_eq(pl_ncu_profile(&job, &m, err, sizeof err), -1);
    unsetenv("FAKE_NCU_FAIL");
    ck_assert_msg(strstr(err, "code 1: ==ERROR== ERR_NVGPUCTRPERM"), "%s", err);
    ck_assert_str_eq(m.error, err);
    pl_ncu_metrics_free(&m);

    /* work outside kernels (cudaMemcpy on a copy engine): ncu exits 0 with no report */
    setenv("FAKE_NCU_NOKERNEL", "1", 1);
    pl_ncu_metrics_init(&m);
    ck_assert_int_eq(pl_ncu_profile(&job, &m, err, sizeof err), 1); /* no counters, but no failure either */
    unsetenv("FAKE_NCU_NOKERNEL");
    ck_assert_msg(strstr(err, "no kernel was profiled") && m.kernels == 0, "%s", err);
    pl_ncu_metrics_free(&m);

    /* PERFLAB_NCU names the tool; its version goes into run.json's "profiler" */
    setenv("PERFLAB_NCU", ncu, 1);
    char *d = pl_ncu_describe();
    ck_assert_msg(strstr(d, "ncu 2099.1.0.0") && strstr(d, ncu), "%s", d);
    free(d);
    setenv("PERFLAB_NCU", "", 1);
    d = pl_ncu_describe();
    ck_assert(strstr(d, "no measured counters"));
    free(d);
    unsetenv("PERFLAB_NCU");
    free(args_path);
    free(base);
    free(ncu);
    free(dir);
}
END_TEST

/* run.json keeps the counters, and the roofline table shows measured / counted DRAM bytes. */
START_TEST(run_json_and_table)
{
    pl_run r;
    memset(&r, 0, sizeof r);
    r.schema_version = PL_SCHEMA_VERSION;
    r.run_id = pl_strdup("x");
    r.complete = 1;
    r.settings.profile = pl_strdup("roofline");
    r.settings.mode = pl_strdup("hot");
    r.profiler = pl_strdup("ncu 2099.1 (/opt/ncu)");
    r.n_targets = 1;
    r.targets = pl_xcalloc(1, sizeof *r.targets);
    pl_target_result *t = &r.targets[0];
    t->name = pl_strdup("memory:coalescing");
    t->counters.bytes_read = 4e8;
    t->counters.bytes_written = 4e8;
    t->n_variants = 2;
    t->variants = pl_xcalloc(2, sizeof *t->variants);
    const char *names[] = {"baseline", "coalesced"};
    for (int i = 0; i < 2; i++) {
        pl_variant_result *v = &t->variants[i];
        v->name = pl_strdup(names[i]);
        v->status = PL_STATUS_OK;
        v->n_samples = 3;
        v->samples_ms = pl_xcalloc(3, sizeof(double));
        for (int k = 0; k < 3; k++)
            v->samples_ms[k] = 1.0 + i + 0.01 * k;
        v->has_stats = 1;
        v->tflops = v->gbps = v->arithmetic_intensity = v->pct_of_reference = NAN;
        v->has_ncu = 1;
        pl_ncu_metrics_init(&v->ncu);
        v->ncu.kernels = 1;
        v->ncu.dram_bytes_read = i ? 4e8 : 2.5e9;
        v->ncu.dram_bytes_write = i ? 3.6e8 : 0.7e9;
        v->ncu.report = pl_strfmt("ncu/memory_coalescing_%s.ncu-rep", names[i]);
    }
    json_t *j = pl_run_to_json(&r);
    pl_run back;
    char err[512];
    ck_assert_msg(pl_run_from_json(j, &back, err, sizeof err) == 0, "%s", err);
    json_decref(j);
    ck_assert_str_eq(back.profiler, "ncu 2099.1 (/opt/ncu)");
    const pl_variant_result *b = &back.targets[0].variants[1];
    ck_assert(b->has_ncu);
    NEAR(b->ncu.dram_bytes_write, 3.6e8);
    ck_assert(isnan(b->ncu.l2_pct));
    ck_assert_str_eq(b->ncu.report, "ncu/memory_coalescing_coalesced.ncu-rep");

    char *path = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&path, &len);
    pl_run_print(&back, mem);
    fclose(mem);
    ck_assert_msg(strstr(path, "DRAM meas/cnt") && strstr(path, "4.00") && strstr(path, "0.95"), "%s", path);
    ck_assert(strstr(path, "counters: ncu 2099.1"));
    free(path);
    pl_run_free(&back);
    pl_run_free(&r);
}
END_TEST

START_TEST(verbs_without_ncu_or_gpu)
{
    pl_cmd_result r = pl_run_perflab("PERFLAB_NCU=", "profile memory:coalescing");
    ck_assert_int_eq(r.exit_code, 3);
    ck_assert_msg(strstr(r.err, "ncu (Nsight Compute) is not on the PATH"), "%s", r.err);
    pl_cmd_result_free(&r);
    r = pl_run_perflab("PERFLAB_NCU=", "profile memory:coalescing --variant nope");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert_msg(strstr(r.err, "has no such variant (it has baseline, coalesced)"), "%s", r.err);
    pl_cmd_result_free(&r);
    r = pl_run_perflab("PERFLAB_NCU=", "profile selftest:sleep");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert(strstr(r.err, "no GPU kernel to profile"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab("PERFLAB_NCU=", "profile memory:coalescing --target-extra-arg 'memory:vectorized_copy=--n 5'");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert(strstr(r.err, "names another target"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "__ncu-replay --target memory:coalescing");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert(strstr(r.err, "needs --target and --variant"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "__ncu-replay --target memory:coalescing --variant x");
    ck_assert_int_eq(r.exit_code, 2);
    ck_assert(strstr(r.err, "no variant 'x'"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "--help");
    ck_assert(strstr(r.out, "profile") && !strstr(r.out, "__ncu-replay"));
    pl_cmd_result_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("profile");
    TCase *t = tcase_create("host");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, csv_sums_and_weights);
    tcase_add_test(t, findings_name_the_problem);
    tcase_add_test(t, replay_under_a_stand_in);
    tcase_add_test(t, run_json_and_table);
    tcase_add_test(t, verbs_without_ncu_or_gpu);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
