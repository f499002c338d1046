/* The fabric verbs on however many GPUs this machine has (one rank per GPU; one GPU runs a one-rank
 * communicator for the collectives, which still checks every result). What needs two or more GPUs: traffic over
 * the fabric, the all-to-all of moe-readiness (refused on one, with the reason) and the fullstack:moe_readiness target
 * (skipped with the reason on one). Exits 77 without a GPU. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"
#include "testutil.h"

static int gpus;

static json_t *run_json(const char *args, int expect_code)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == expect_code, "'%s': exit %d\n%s", args, r.exit_code, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j, "'%s': stdout is not JSON: %s", args, je.text);
    pl_cmd_result_free(&r);
    return j;
}

/* Every point ran on every rank and verified, and its figures agree with each other. */
static void expect_points_ok(json_t *report, size_t expect_points)
{
    json_t *pts = json_object_get(report, "points");
    ck_assert_uint_eq(json_array_size(pts), expect_points);
    size_t i;
    json_t *p;
    json_array_foreach(pts, i, p)
    {
        const char *status = json_string_value(json_object_get(p, "status"));
        if (strcmp(status, "skipped") == 0)
            continue;
        ck_assert_msg(strcmp(status, "ok") == 0, "point %zu: %s: %s", i, status,
                      json_string_value(json_object_get(p, "reason")));
        ck_assert_int_eq(json_integer_value(json_object_get(p, "ranks_reported")), gpus);
        json_t *lat = json_object_get(p, "latency_ms");
        double p50 = pl_json_get_real(lat, "p50"), p99 = pl_json_get_real(lat, "p99"),
               max = pl_json_get_real(lat, "max");
        ck_assert(p50 > 0 && p50 <= p99 && p99 <= max);
        ck_assert_uint_eq(json_array_size(json_object_get(p, "samples_ms")),
                          (size_t)json_integer_value(json_object_get(lat, "n")));
        json_t *check = json_object_get(p, "check");
        ck_assert(json_is_true(json_object_get(check, "passed")));
        ck_assert_int_eq(json_integer_value(json_object_get(check, "unwritten")), 0);
        if (json_object_get(p, "busbw_gbps")) {
            double alg = pl_json_get_real(p, "algbw_gbps"), bus = pl_json_get_real(p, "busbw_gbps");
            ck_assert(fabs(bus - alg * pl_json_get_real(p, "busbw_factor")) <= 1e-9 * alg + 1e-12);
            double bytes = (double)json_integer_value(json_object_get(p, "bytes"));
            ck_assert(fabs(alg - bytes / (p50 * 1e-3) / 1e9) <= 1e-6 * alg);
        }
    }
}

START_TEST(every_collective_runs_and_verifies)
{
    /* 8 KiB .. 2 MiB by 4: 5 sizes; alltoall and sendrecv out of place only: 5 * (2 + 4 * 2) points */
    json_t *j = run_json("comm all -b 8k -e 2m -f 4 -n 20 -w 2 --json -q", 0);
    expect_points_ok(j, 50);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "settings"), "ranks")), gpus);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "ranks")), (size_t)gpus);
    json_decref(j);
}
END_TEST

START_TEST(dtypes_ops_and_odd_sizes)
{
    /* 1000 bytes: no multiple of the ranks or of 16; max and min reductions; every dtype */
    json_t *j = run_json("comm allreduce,reducescatter,allgather,broadcast -d bf16,fp16,fp64,int32,fp32 -o max "
                         "-b 1000 -e 300000 -f 17 -n 5 -w 1 --json -q",
                         0);
    expect_points_ok(j, 5 * 4 * 2 * 3); /* 1000, 17000, 289000 bytes */
    json_decref(j);
    j = run_json("comm allreduce -o min -d bf16 -b 4096 -e 4096 -n 5 --json -q", 0);
    expect_points_ok(j, 2);
    json_decref(j);
}
END_TEST

/* perflab's all-reduce beside NCCL's, in one process: every point verified, odd sizes included; the p50 of each
 * against NCCL's at the same size and placement printed (the comparison the fabric doc reports). One GPU: refused. */
START_TEST(perflab_allreduce_beside_nccl)
{
    if (gpus < 2) {
        pl_cmd_result r = pl_run_perflab(NULL, "comm allreduce_oneshot -d bf16 -b 64k -e 64k -n 5 --json -q");
        ck_assert_msg(r.exit_code != 0 && strstr(r.err, "2 to 8 ranks"), "exit %d: %s", r.exit_code, r.err);
        pl_cmd_result_free(&r);
        return;
    }
    json_t *j =
        run_json("comm allreduce_oneshot,allreduce_twoshot -d bf16 -b 1000 -e 300000 -f 17 -n 5 -w 1 --json -q", 0);
    expect_points_ok(j, 3 * 2 * 2);
    json_decref(j);
    j = run_json("comm allreduce,allreduce_oneshot,allreduce_twoshot -d bf16 -b 256k -e 2m -f 2 -n 50 -w 5 --json -q",
                 0);
    expect_points_ok(j, 4 * 3 * 2);
    json_t *pts = json_object_get(j, "points");
    for (size_t i = 0; i < json_array_size(pts); i++) {
        json_t *p = json_array_get(pts, i);
        const char *coll = json_string_value(json_object_get(p, "collective"));
        if (!coll || strcmp(coll, "allreduce") != 0)
            continue;
        for (size_t k = 0; k < json_array_size(pts); k++) {
            json_t *q = json_array_get(pts, k);
            const char *other = json_string_value(json_object_get(q, "collective"));
            if (!other || strncmp(other, "allreduce_", 10) != 0 ||
                json_integer_value(json_object_get(q, "bytes")) != json_integer_value(json_object_get(p, "bytes")) ||
                json_is_true(json_object_get(q, "in_place")) != json_is_true(json_object_get(p, "in_place")))
                continue;
            const double nccl = pl_json_get_real(json_object_get(p, "latency_ms"), "p50"),
                         mine = pl_json_get_real(json_object_get(q, "latency_ms"), "p50");
            printf("%d GPUs, %lld B%s: NCCL %.2f us, %s %.2f us (%.2fx)\n", gpus,
                   (long long)json_integer_value(json_object_get(p, "bytes")),
                   json_is_true(json_object_get(p, "in_place")) ? " in place" : "", 1e3 * nccl, other, 1e3 * mine,
                   mine / nccl);
        }
    }
    json_decref(j);
}
END_TEST

START_TEST(registered_buffers_and_native_alltoall)
{
    /* 64 KiB, 512 KiB, 4 MiB: allreduce in and out of place, alltoall out of place */
    json_t *j = run_json("comm allreduce,alltoall --register buffer -b 64k -e 4m -f 8 -n 10 --json -q", 0);
    expect_points_ok(j, 3 * 2 + 3);
    json_decref(j);
    j = run_json("comm allreduce,alltoall --register window -b 64k -e 4m -f 8 -n 10 --json -q", 0);
    expect_points_ok(j, 3 * 2 + 3);
    json_decref(j);
    j = run_json("comm alltoall --alltoall-api group -b 64k -e 4m -f 8 -n 10 --json -q", 0);
    expect_points_ok(j, 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "settings"), "alltoall_api")), "group");
    json_decref(j);
}
END_TEST

START_TEST(moe_readiness_report_and_verdict)
{
    if (gpus < 2) { /* an all-to-all of one rank is refused, not measured */
        char *dir = pl_test_tmpdir("gpu-moe-one");
        char *args = pl_strfmt("moe-readiness -n 10 -q --out-dir '%s/a'", dir);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == 3 && strstr(r.err, "needs 2 or more ranks"), "exit %d: %s", r.exit_code, r.err);
        char *a = pl_strfmt("%s/a", dir);
        ck_assert_msg(!pl_path_exists(a), "a refused sweep wrote %s", a);
        free(a);
        pl_cmd_result_free(&r);
        free(args);
        free(dir);
        return;
    }
    char *dir = pl_test_tmpdir("gpu-moe");
    char *args = pl_strfmt("moe-readiness -n 30 -q --json --out-dir '%s/a'", dir);
    json_t *j = run_json(args, 0);
    free(args);
    expect_points_ok(j, 12);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "verdict"), "overall")), "ungated");
    const char *files[] = {"report.json", "heatmap_p99_latency.svg", "heatmap_bandwidth.svg", "summary.md"};
    for (size_t i = 0; i < 4; i++) {
        char *path = pl_strfmt("%s/a/%s", dir, files[i]);
        ck_assert_msg(pl_path_exists(path), "%s missing", path);
        free(path);
    }
    json_decref(j);
    /* an SLO no fabric meets: every point misses, exit 1 */
    args = pl_strfmt("moe-readiness -n 10 -q --json --out-dir '%s/b' --max-p99-ms 0.000001 --skew-model hotspot "
                     "--dtype fp32",
                     dir);
    j = run_json(args, 1);
    free(args);
    json_t *v = json_object_get(j, "verdict");
    ck_assert_str_eq(json_string_value(json_object_get(v, "overall")), "miss");
    ck_assert_int_eq(json_integer_value(json_object_get(v, "missed")), 12);
    json_decref(j);
    /* a generous one: every point passes, exit 0 */
    args = pl_strfmt("moe-readiness -n 10 -q --json --out-dir '%s/c' --max-p99-ms 1000 --min-bw-gbps 0.001", dir);
    j = run_json(args, 0);
    free(args);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "verdict"), "overall")), "pass");
    json_decref(j);
    free(dir);
}
END_TEST

START_TEST(moe_target_pair)
{
    pl_run run;
    pl_cmd_result r;
    int code = pl_test_run_and_load("gpu-moe-target", "run --targets fullstack:moe_readiness --max-time-s 1", &run, &r);
    ck_assert_msg(code == 0, "exit %d\n%s%s", code, r.out, r.err);
    const pl_target_result *t = pl_run_find_target(&run, "fullstack:moe_readiness");
    ck_assert_ptr_nonnull(t);
    if (gpus < 2) {
        ck_assert_int_eq(t->status, PL_STATUS_SKIPPED);
        const char *why = t->reason ? t->reason : t->n_variants ? t->variants[0].reason : NULL;
        ck_assert_msg(why && strstr(why, "needs 2 GPUs"), "%s", why ? why : "(no reason)");
    } else {
        ck_assert_msg(t->status == PL_STATUS_OK, "%s", t->reason ? t->reason : "");
        for (size_t k = 0; k < t->n_variants; k++)
            ck_assert(t->variants[k].verification.passed && t->variants[k].stats.median > 0);
        printf("%s", r.out);
    }
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(mpi_mode_matches_threads)
{
#ifdef PERFLAB_MPI_BIN
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("SKIP: mpirun is not installed\n");
        return;
    }
    char *cmd = pl_strfmt("mpirun --allow-run-as-root --oversubscribe -np %d %s comm allreduce,alltoall -b 8k -e 1m "
                          "-f 8 -n 10 --json -q > mpi.json",
                          gpus, PERFLAB_MPI_BIN);
    int rc = system(cmd);
    free(cmd);
    ck_assert_msg(rc == 0, "mpirun exit %d", rc);
    char err[256];
    json_t *j = pl_json_load_file("mpi.json", err, sizeof err);
    ck_assert_msg(j, "%s", err);
    expect_points_ok(j, 3 * 2 + 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "settings"), "launch")), "mpi");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "settings"), "ranks")), gpus);
    json_decref(j);
    unlink("mpi.json");
#else
    printf("SKIP: perflab-mpi was not built (no MPI at configure time)\n");
#endif
}
END_TEST

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    pl_gpu_inventory inv;
    pl_gpu_inventory_probe(&inv, 60);
    gpus = inv.device_count;
    pl_gpu_inventory_free(&inv);
    printf("%d GPU%s: one rank each\n", gpus, gpus == 1 ? "" : "s");
    Suite *s = suite_create("comm_gpu");
    TCase *t = tcase_create("gpu");
    tcase_set_timeout(t, 600);
    tcase_add_test(t, every_collective_runs_and_verifies);
    tcase_add_test(t, dtypes_ops_and_odd_sizes);
    tcase_add_test(t, registered_buffers_and_native_alltoall);
    tcase_add_test(t, perflab_allreduce_beside_nccl);
    tcase_add_test(t, moe_readiness_report_and_verdict);
    tcase_add_test(t, moe_target_pair);
    tcase_add_test(t, mpi_mode_matches_threads);
    suite_add_tcase(s, t);
    return pl_run_suite(s);
}
