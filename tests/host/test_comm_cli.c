/* The fabric verbs' command lines: every bad input is one line naming the problem, exit code 2, nothing written;
 * --help works everywhere; without a GPU the verbs say so and exit 3. */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "testutil.h"

static void expect_usage(const char *args, const char *needle)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 2, "'%s': exit %d, stderr: %s", args, r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, needle), "'%s': stderr lacks '%s': %s", args, needle, r.err);
    ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "'%s': more than one line: %s", args, r.err);
    ck_assert_str_eq(r.out, "");
    pl_cmd_result_free(&r);
}

START_TEST(comm_usage_errors)
{
    expect_usage("comm", "name one collective");
    expect_usage("comm allreduce alltoall", "name one collective");
    expect_usage("comm allredcue", "unknown collective 'allredcue'");
    expect_usage("comm allreduce -b 1m -e 1k", "--min-bytes 1048576 exceeds --max-bytes 1024");
    expect_usage("comm allreduce -b 12q", "--min-bytes: '12q' is not a size");
    expect_usage("comm allreduce -f 1", "--step-factor must be above 1");
    expect_usage("comm allreduce -d fp8", "--dtype: 'fp8'");
    expect_usage("comm allreduce -o prod", "--op must be sum, max or min");
    expect_usage("comm allreduce --register pinned", "--register must be none, buffer or window");
    expect_usage("comm alltoall --alltoall-api mpi", "--alltoall-api must be auto, group or native");
    expect_usage("comm alltoall --placement in", "alltoall has no in-place form");
    expect_usage("comm allreduce --placement sideways", "--placement must be out, in or both");
    expect_usage("comm allreduce -n 0", "--iters must be between");
    expect_usage("comm allreduce --nccl-env FOO=1", "--nccl-env: 'FOO=1' is not NCCL_NAME=VALUE");
    /* perflab's all-reduce: bf16, sum, small messages */
    expect_usage("comm allreduce,allreduce_oneshot", "allreduce_oneshot sums bf16 only: pass --dtype bf16");
    expect_usage("comm allreduce_twoshot -d bf16,fp32", "allreduce_twoshot sums bf16 only");
    expect_usage("comm allreduce_oneshot -d bf16 -o max", "allreduce_oneshot sums only: pass --op sum");
    expect_usage("comm allreduce_oneshot -d bf16 -e 1g", "--max-bytes up to 256 MiB");
    char *dir = pl_test_tmpdir("comm-cli");
    char *file = pl_path_join(dir, "a-file");
    char err[256];
    ck_assert_int_eq(pl_write_file_atomic(file, "x", 1, err, sizeof err), 0);
    char *args = pl_strfmt("comm allreduce --out-dir '%s/sub'", file);
    expect_usage(args, "--out-dir");
    free(args);
    free(file);
    free(dir);
    expect_usage("comm allreduce --bogus", "unknown option '--bogus'");
}
END_TEST

START_TEST(moe_usage_errors_write_nothing)
{
    char *dir = pl_test_tmpdir("moe-cli");
    char *out = pl_path_join(dir, "report");
    const char *bad[][2] = {
        {"--skews 1,x", "--skews: 'x' is not a number"},
        {"--skews 9", "between 0 and 8"},
        {"--message-sizes ,", "--message-sizes is empty"},
        {"--message-sizes 1", "less than one bf16 element"},
        {"--message-sizes 4k,huge", "--message-sizes: 'huge'"},
        {"--dtype int32", "--dtype must be bf16, fp16 or fp32"},
        {"--skew-model zipf", "--skew-model must be distance or hotspot"},
        {"--max-p99-ms -1", "--max-p99-ms must be between"},
        {"--min-bw-gbps fast", "--min-bw-gbps expects a number"},
        {"extra", "unexpected argument 'extra'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args = pl_strfmt("moe-readiness --out-dir '%s' %s", out, bad[i][0]);
        expect_usage(args, bad[i][1]);
        free(args);
        ck_assert_msg(!pl_path_exists(out), "'%s' left %s behind", bad[i][0], out);
    }
    free(out);
    free(dir);
}
END_TEST

START_TEST(help_everywhere)
{
    pl_cmd_result r = pl_run_perflab(NULL, "comm --help");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert(strstr(r.out, "busbw") && strstr(r.out, "--min-bytes") && strstr(r.out, "perflab-mpi"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "moe-readiness --help");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert(strstr(r.out, "--max-p99-ms") && strstr(r.out, "Zipf"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "--help");
    ck_assert(strstr(r.out, "comm") && strstr(r.out, "moe-readiness"));
    pl_cmd_result_free(&r);
}
END_TEST

START_TEST(no_gpu_exits_3)
{
    if (pl_test_have_gpu())
        return; /* the GPU tests cover this machine */
    char *dir = pl_test_tmpdir("moe-nogpu");
    char *out = pl_path_join(dir, "report");
    char *args = pl_strfmt("moe-readiness --out-dir '%s'", out);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 3, "exit %d: %s", r.exit_code, r.err);
    ck_assert(strstr(r.err, "no usable GPU"));
    ck_assert(!pl_path_exists(out));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "comm allreduce");
    ck_assert_int_eq(r.exit_code, 3);
    pl_cmd_result_free(&r);
    free(args);
    free(out);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("comm_cli");
    TCase *t = tcase_create("cli");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, comm_usage_errors);
    tcase_add_test(t, moe_usage_errors_write_nothing);
    tcase_add_test(t, help_everywhere);
    tcase_add_test(t, no_gpu_exits_3);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
