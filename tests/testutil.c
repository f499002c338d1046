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

int pl_test_run_and_load(const char *tag, const char *verb_and_args, pl_run *out, pl_cmd_result *r)
{
    char *dir = pl_test_tmpdir(tag);
    char *full = pl_strfmt("%s --quiet --artifacts-dir '%s' --expectations-dir '%s'", verb_and_args, dir, dir);
    *r = pl_run_perflab(NULL, full);
    free(full);
    char *cmd = pl_strfmt("ls -d '%s'/*/run.json 2>/dev/null", dir);
    FILE *f = popen(cmd, "r");
    char path[1024] = "";
    if (!fgets(path, sizeof path, f))
        path[0] = '\0';
    pclose(f);
    free(cmd);
    free(dir);
    path[strcspn(path, "\n")] = '\0';
    char err[512];
    ck_assert_msg(path[0], "no run.json written; stdout: %s stderr: %s", r->out, r->err);
    ck_assert_msg(pl_run_load(path, out, err, sizeof err) == 0, "%s", err);
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
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

int pl_test_have_gpu(void)
{
    pl_gpu_inventory inv;
    if (pl_gpu_inventory_probe(&inv, 60) != 0 || !inv.usable) {
        printf("SKIP: no usable GPU: %s\n", inv.error[0] ? inv.error : "the probe failed");
        pl_gpu_inventory_free(&inv);
        return 0;
    }
    pl_gpu_inventory_free(&inv);
    return 1;
}
