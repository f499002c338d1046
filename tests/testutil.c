#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"

static char *slurp_and_remove(const char *path)
{
    char err[256];
    char *s = pl_read_file(path, NULL, err, sizeof err);
    unlink(path);
    return s ? s : pl_strdup("");
}

pl_cmd_result pl_run_perflab(const char *env, const char *args)
{
    pl_cmd_result r = {0};
    char out_path[] = "/tmp/perflab_test_out_XXXXXX", err_path[] = "/tmp/perflab_test_err_XXXXXX";
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    close(fo);
    close(fe);
    char *cmd = pl_strfmt("%s %s %s >%s 2>%s", env ? env : "", PERFLAB_BIN, args, out_path, err_path);
    int status = system(cmd);
    free(cmd);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp_and_remove(out_path);
    r.err = slurp_and_remove(err_path);
    return r;
}

void pl_cmd_result_free(pl_cmd_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

char *pl_test_tmpdir(const char *tag)
{
    char err[256];
    char *dir = pl_strfmt("%s/%s-%ld", PERFLAB_TEST_TMP, tag, (long)getpid());
    char *cmd = pl_strfmt("rm -rf '%s'", dir);
    if (system(cmd) != 0) {
    }
    free(cmd);
    if (pl_mkdir_p(dir, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    return dir;
}

char *pl_test_run_json_in(const char *artifacts_dir)
{
    return pl_file_in_subfolder(artifacts_dir, "run.json");
}

int pl_test_run_and_load(const char *tag, const char *verb_and_args, pl_run *out, pl_cmd_result *r)
{
    char *dir = pl_test_tmpdir(tag);
    /* verify takes no expectations: the option would be refused */
    const int verify = strncmp(verb_and_args, "verify", 6) == 0;
    char *full = verify ? pl_strfmt("%s --quiet --artifacts-dir '%s'", verb_and_args, dir)
                        : pl_strfmt("%s --quiet --artifacts-dir '%s' --expectations-dir '%s'", verb_and_args, dir, dir);
    *r = pl_run_perflab(NULL, full);
    free(full);
    char *path = pl_test_run_json_in(dir);
    free(dir);
    char err[512];
    ck_assert_msg(path, "no run.json written; stdout: %s stderr: %s", r->out, r->err);
    ck_assert_msg(pl_run_load(path, out, err, sizeof err) == 0, "%s", err);
    free(path);
    return r->exit_code;
}

int pl_test_expect_all_ok(const pl_run *run, int timed)
{
    int ran = 0;
    for (size_t i = 0; i < run->n_targets; i++) {
        const pl_target_result *t = &run->targets[i];
        /* a target whose requirements this machine lacks (a second GPU, say) is skipped, with the reason */
        if (t->status == PL_STATUS_SKIPPED) {
            ck_assert_msg(t->reason && t->reason[0], "%s: skipped without a reason", t->name);
            printf("skipped %s: %s\n", t->name, t->reason);
            continue;
        }
        ck_assert_msg(t->status == PL_STATUS_OK, "%s: %s: %s", t->name, pl_status_name(t->status),
                      t->reason ? t->reason : "");
        for (size_t k = 0; k < t->n_variants; k++) {
            const pl_variant_result *v = &t->variants[k];
            ck_assert_msg(v->verification.checked && v->verification.passed, "%s/%s: %s", t->name, v->name,
                          v->verification.message);
            if (timed) {
                ck_assert_msg(v->has_stats && v->stats.n > 0 && v->stats.median > 0, "%s/%s untimed", t->name, v->name);
                ck_assert(v->stats.min <= v->stats.median && v->stats.median <= v->stats.max);
            } else {
                ck_assert_int_eq((int)v->n_samples, 0);
            }
        }
        ran++;
    }
    return ran;
}

int pl_run_suite(Suite *s)
{
    /* a failing check prints the whole output of the perflab run it made: Check's 4 KiB default would replace it
       with "Message string too long" and lose the reason */
    check_set_max_msg_size(1u << 20);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

static int probed_cc; /* device 0's major*10+minor, from pl_test_have_gpu's probe */

int pl_test_have_gpu(void)
{
    pl_gpu_inventory inv;
    if (pl_gpu_inventory_probe(&inv, 60) != 0 || !inv.usable) {
        printf("SKIP: no usable GPU: %s\n", inv.error[0] ? inv.error : "the probe failed");
        pl_gpu_inventory_free(&inv);
        return 0;
    }
    probed_cc = inv.device_count > 0 ? inv.devices[0].cc_major * 10 + inv.devices[0].cc_minor : 0;
    pl_gpu_inventory_free(&inv);
    return 1;
}

int pl_test_gpu_cc(void)
{
    return probed_cc;
}

static void make_variant(pl_variant_result *v, const char *name, double base_ms, size_t n, int seed)
{
    memset(v, 0, sizeof *v);
    v->name = pl_strdup(name);
    v->technique = pl_strdup("does things \"quoted\"\nacross lines");
    v->status = PL_STATUS_OK;
    v->reps_per_sample = 3;
    v->warmup_runs = 5;
    v->throttled_discarded = 2;
    v->graph = 1;
    v->latched = 1;
    v->measure_s = 0.75;
    v->stop_reason = pl_strdup("converged");
    v->n_samples = n;
    v->samples_ms = pl_xcalloc(n, sizeof *v->samples_ms);
    pl_rng r;
    pl_rng_seed(&r, (uint64_t)seed);
    for (size_t i = 0; i < n; i++)
        v->samples_ms[i] = base_ms * (1 + 0.01 * pl_rng_uniform(&r));
    pl_verify_set(&v->verification, 1, "relative L2 error 1e-7");
    v->verification.rel_l2_error = 1.25e-7;
    v->verification.tolerance = 1e-5;
    v->verification.elements = 4096;
    v->has_telemetry = 1;
    v->telemetry.sm_clock_mhz = (pl_summary){3, 1700, 1750.5, 1800};
    v->telemetry.power_w = (pl_summary){3, 500, 600, 700};
    /* the counter over the samples' runs at 600 W, the gaps between samples adding 5% of time */
    v->has_energy = 1;
    v->energy.runs = (double)n * v->reps_per_sample;
    v->energy.timed_s = 1.05 * v->energy.runs * base_ms * 1e-3;
    v->energy.energy_j = 600 * v->energy.timed_s;
    v->energy.joules_per_run = v->energy.energy_j / v->energy.runs;
    v->energy.average_power_w = 600;
}

/* A target with one variant, both with this status. */
static void failed_target(pl_target_result *t, const char *name, pl_status status, const char *reason,
                          const char *variant)
{
    t->name = pl_strdup(name);
    t->status = status;
    t->reason = pl_strdup(reason);
    t->n_variants = 1;
    t->variants = pl_xcalloc(1, sizeof *t->variants);
    t->variants[0].name = pl_strdup(variant);
    t->variants[0].status = status;
}

void pl_test_make_run(pl_run *r)
{
    memset(r, 0, sizeof *r);
    r->schema_version = PL_SCHEMA_VERSION;
    r->run_id = pl_strdup("20261121-000000-abcd");
    r->exit_code = 1;
    r->duration_s = 12.5;
    r->prov.perflab_version = pl_strdup("0.1.0");
    r->prov.git_commit = pl_strdup("abcdef");
    r->prov.command_line = pl_strdup("perflab run --targets 'x y'");
    r->prov.hardware_key = pl_strdup("h200");
    r->prov.cuda_runtime_version = 13000;
    r->prov.n_gpus = 1;
    r->prov.gpus = pl_xcalloc(1, sizeof *r->prov.gpus);
    r->prov.gpus[0].name = pl_strdup("NVIDIA H200");
    r->prov.gpus[0].cc_major = 9;
    r->prov.gpus[0].sm_count = 132;
    r->prov.gpus[0].power_limit_w = 700;
    r->settings.profile = pl_strdup("minimal");
    r->settings.mode = pl_strdup("cold");
    r->settings.seed = 1234567890123ull;
    r->settings.max_noise = 0.02;
    r->n_targets = 3;
    r->targets = pl_xcalloc(3, sizeof *r->targets);
    pl_target_result *t = &r->targets[0];
    t->name = pl_strdup("memory:coalescing");
    t->status = PL_STATUS_OK;
    t->counters = (pl_counters){.flops = 2e6, .bytes_read = 4e6, .bytes_written = 4e6, .elements = 1e6};
    t->n_params = 1;
    t->params = pl_xcalloc(1, sizeof *t->params);
    t->params[0].name = pl_strdup("n");
    t->params[0].value = pl_strdup("1m");
    t->n_variants = 2;
    t->variants = pl_xcalloc(2, sizeof *t->variants);
    make_variant(&t->variants[0], "baseline", 2.0, 50, 1);
    make_variant(&t->variants[1], "coalesced", 0.5, 70, 2);
    pl_target_result_derive(t, 7);
    pl_target_result *u = &r->targets[1];
    failed_target(u, "selftest:crash", PL_STATUS_CRASHED, "killed by signal 11", "baseline");
    u->variants[0].reps_per_sample = 1;
    pl_target_result_derive(u, 7);
    pl_target_result *w = &r->targets[2];
    failed_target(w, "selftest:wrong", PL_STATUS_FAILED_VERIFICATION, "a variant failed verification", "wrong");
    pl_verify_set(&w->variants[0].verification, 0, "relative L2 error 0.0265 exceeds 1e-05");
    w->variants[0].verification.rel_l2_error = 0.0265;
    w->variants[0].verification.max_error_index = 512;
    w->variants[0].verification.unwritten = 1;
    pl_expect_report *e = &r->expectations;
    e->present = e->file_found = e->regressions = 1;
    e->key = pl_strdup("h200");
    e->file = pl_strdup("expectations/h200.json");
    e->n_rows = 2;
    e->rows = pl_xcalloc(2, sizeof *e->rows);
    e->rows[0] = (pl_expect_row){
        pl_strdup("memory:coalescing"), pl_strdup("baseline"), PL_EXPECT_MET, 2.0, 2.01, 0.005, 0.1, NULL};
    e->rows[1] = (pl_expect_row){pl_strdup("memory:coalescing"),
                                 pl_strdup("coalesced"),
                                 PL_EXPECT_REGRESSED,
                                 0.3,
                                 0.5,
                                 0.667,
                                 0.1,
                                 pl_strdup("slower beyond the tolerance and the noise")};
}

int pl_test_save_run(const pl_run *r, const char *path, char *err, size_t errlen)
{
    json_t *j = pl_run_to_json(r);
    int rc = pl_json_save_file(j, path, err, errlen);
    json_decref(j);
    return rc;
}

void pl_test_expect_refusal(const char *verb, const char *target, const char *args, const char *says)
{
    char *dir = pl_test_tmpdir("refusal");
    char *cmd = pl_strfmt("%s --targets %s --target-extra-arg '%s=%s' --artifacts-dir '%s/art'", verb, target, target,
                          args, dir);
    pl_cmd_result r = pl_run_perflab(NULL, cmd);
    ck_assert_msg(r.exit_code == 2, "perflab %s: exit %d, expected 2\n%s%s", cmd, r.exit_code, r.out, r.err);
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "perflab %s: not one line on stderr: %s", cmd, r.err);
    ck_assert_msg(strstr(r.err, target) && (!says || strstr(r.err, says)), "perflab %s: expected %s and '%s' in: %s",
                  cmd, target, says ? says : "", r.err);
    char *art = pl_strfmt("%s/art", dir);
    ck_assert_msg(!pl_path_exists(art), "perflab %s wrote %s", cmd, art);
    free(art);
    pl_cmd_result_free(&r);
    free(cmd);
    free(dir);
}

char *pl_test_write_run(const char *dir, const char *name, void (*edit)(json_t *root))
{
    pl_run r;
    pl_test_make_run(&r);
    json_t *j = pl_run_to_json(&r);
    pl_run_free(&r);
    if (edit)
        edit(j);
    char *folder = pl_path_join(dir, name), *path = pl_path_join(folder, "run.json"), err[512];
    ck_assert_msg(pl_mkdir_p(folder, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(pl_json_save_file(j, path, err, sizeof err) == 0, "%s", err);
    json_decref(j);
    free(path);
    return folder;
}
