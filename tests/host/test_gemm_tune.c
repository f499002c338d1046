/* On the host: the parts of on-device tuning (gemm/tune.h) that need no GPU. The model's ranking is the pick's
 * order; a tune file's entry decides the pick of its problem class on its GPU and no other; save and load round-trip;
 * malformed files are refused naming the line, with nothing added; entries of kernels this build lacks are skipped
 * and counted; perflab gemm refuses --tune and --tune-file it cannot honour before any work. The timing itself runs on
 * a GPU (tests/gpu/test_gemm_verb.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "gemm/gemm.h"
#include "gemm/host/heuristic.h"
#include "gemm/tune.h"
#include "testutil.h"

static const pl_gemm_gpu h200 = {90, 132, 1, 0, 0, 60};

static pl_gemm_problem problem(int m, int n, int k)
{
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = m, p.n = n, p.k = k, p.b_layout = PL_GEMM_B_NK;
    p.a = (const uint16_t *)(uintptr_t)0x100000;
    p.b = (const uint16_t *)(uintptr_t)0x200000;
    p.d = (uint16_t *)(uintptr_t)0x300000;
    return p;
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    char *path = pl_path_join(dir, name);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

/* The ranking is sorted by the model's time, holds eligible kernels only, and starts with the model's fastest. */
START_TEST(rank_is_the_models_order)
{
    const pl_gemm_problem p = problem(333, 4100, 1032);
    const pl_gemm_kernel *ks[PL_GEMM_TUNE_MAX_CANDIDATES];
    double us[PL_GEMM_TUNE_MAX_CANDIDATES];
    const size_t n = pl_gemm_bf16_rank(&p, &h200, NULL, 0, ks, us, PL_GEMM_TUNE_MAX_CANDIDATES);
    ck_assert_uint_eq(n, PL_GEMM_TUNE_MAX_CANDIDATES); /* the table holds more eligible kernels than that */
    char why[160];
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(i == 0 || us[i - 1] <= us[i], "rank %zu: %.2f us after %.2f us", i, us[i], us[i - 1]);
        ck_assert_msg(ks[i]->supports(&p, why, sizeof why) && pl_gemm_kernel_runs_on(ks[i], &h200), "%s", ks[i]->name);
        ck_assert_msg(fabs(us[i] - pl_gemm_model_us(ks[i], &p, &h200)) <= 1e-9 * us[i], "%s", ks[i]->name);
    }
    /* nothing faster was left out */
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++) {
        const pl_gemm_kernel *k = pl_gemm_kernel_at(i);
        if ((k->flags & PL_GEMM_KERNEL_UNSEARCHED) || !pl_gemm_kernel_runs_on(k, &h200) ||
            !k->supports(&p, why, sizeof why))
            continue;
        int listed = 0;
        for (size_t j = 0; j < n; j++)
            listed |= ks[j] == k;
        ck_assert_msg(listed || pl_gemm_model_us(k, &p, &h200) >= us[n - 1], "%s left out, faster than the last",
                      k->name);
    }
    /* a shorter list is the longer one's head */
    const pl_gemm_kernel *two[2];
    double two_us[2];
    ck_assert_uint_eq(pl_gemm_bf16_rank(&p, &h200, NULL, 0, two, two_us, 2), 2);
    ck_assert(two[0] == ks[0] && two_us[1] == us[1]);
}
END_TEST

/* A loaded entry decides its class's pick on its GPU; other shapes, GPUs and alignments are not touched. */
START_TEST(tuned_entry_decides_its_class)
{
    pl_gemm_tune_clear();
    char *dir = pl_test_tmpdir("gemm_tune_load");
    const pl_gemm_problem p = problem(777, 1537, 2056);
    pl_gemm_pick before;
    ck_assert_int_eq(pl_gemm_bf16_pick(&p, &h200, &before), 0);
    ck_assert_int_eq(before.tuned, 0);
    /* tune it to another eligible kernel than the pick's */
    const pl_gemm_kernel *ks[4];
    double us[4];
    ck_assert_uint_ge(pl_gemm_bf16_rank(&p, &h200, NULL, 0, ks, us, 4), 2);
    const pl_gemm_kernel *other = ks[0] == before.kernel ? ks[1] : ks[0];
    char text[512];
    snprintf(text, sizeof text, "# perflab gemm tune/1\n# a comment\n\n90 132 60 nk 777 1537 2056 0 1 %s 41.5\n",
             other->name);
    char *path = write_file(dir, "h200.tune", text), err[512];
    int skipped = -1;
    ck_assert_int_eq(pl_gemm_tune_load(path, &skipped, err, sizeof err), 1);
    ck_assert_int_eq(skipped, 0);
    pl_gemm_pick after;
    ck_assert_int_eq(pl_gemm_bf16_pick(&p, &h200, &after), 0);
    ck_assert_msg(after.tuned && after.kernel == other, "%s: %s", after.kernel->name, after.why);
    ck_assert_msg(strstr(after.why, "41.5") != NULL, "%s", after.why);
    /* another GPU (the H100 SXM's L2), another shape, a misaligned operand: not this entry */
    const pl_gemm_gpu h100 = {90, 132, 1, 0, 0, 50};
    pl_gemm_pick x;
    ck_assert_int_eq(pl_gemm_bf16_pick(&p, &h100, &x), 0);
    ck_assert_int_eq(x.tuned, 0);
    const pl_gemm_problem q = problem(778, 1537, 2056);
    ck_assert_int_eq(pl_gemm_bf16_pick(&q, &h200, &x), 0);
    ck_assert_int_eq(x.tuned, 0);
    pl_gemm_problem r = p;
    r.d = (uint16_t *)(uintptr_t)0x300002;
    ck_assert_int_eq(pl_gemm_bf16_pick(&r, &h200, &x), 0);
    ck_assert_int_eq(x.tuned, 0);
    /* cleared: the model again */
    pl_gemm_tune_clear();
    ck_assert_int_eq(pl_gemm_bf16_pick(&p, &h200, &x), 0);
    ck_assert(!x.tuned && x.kernel == before.kernel);
    free(path);
    free(dir);
}
END_TEST

/* Save then load gives the same entries; kernels this build lacks are skipped and counted. */
START_TEST(save_and_load_round_trip)
{
    pl_gemm_tune_clear();
    char *dir = pl_test_tmpdir("gemm_tune_save");
    const char *name = pl_gemm_kernel_at(pl_gemm_kernel_count() - 1)->name;
    char text[1024];
    snprintf(text, sizeof text,
             "# perflab gemm tune/1\n90 132 60 nk 64 4096 4096 2 1 %s 12.25\n90 132 50 kn 5 7 9 7 0 %s 3\n"
             "90 132 60 nk 1 2 3 0 1 a_kernel_of_another_build 5\n",
             name, name);
    char *in = write_file(dir, "in.tune", text), *out = pl_path_join(dir, "out.tune"), err[512];
    int skipped = 0;
    ck_assert_int_eq(pl_gemm_tune_load(in, &skipped, err, sizeof err), 2);
    ck_assert_int_eq(skipped, 1);
    ck_assert_msg(pl_gemm_tune_save(out, err, sizeof err) == 0, "%s", err);
    pl_gemm_tune_clear();
    ck_assert_int_eq(pl_gemm_tune_load(out, &skipped, err, sizeof err), 2);
    ck_assert_int_eq(skipped, 0);
    char *saved = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_ptr_nonnull(saved);
    char want[256];
    snprintf(want, sizeof want, "90 132 60 nk 64 4096 4096 2 1 %s 12.25\n", name);
    ck_assert_msg(strstr(saved, want) != NULL, "%s", saved);
    snprintf(want, sizeof want, "90 132 50 kn 5 7 9 7 0 %s 3\n", name);
    ck_assert_msg(strstr(saved, want) != NULL, "%s", saved);
    pl_gemm_tune_clear();
    free(saved), free(in), free(out), free(dir);
}
END_TEST

/* Malformed files: -1, one line naming the file and line, nothing added. */
START_TEST(malformed_files_refused)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"", "empty"},
        {"90 132 60 nk 1 2 3 0 1 x 5\n", "not a perflab tune file"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 0 1\n", "line 2: expected 11 fields"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 0 1 x 5 extra\n", "line 2: expected 11 fields"},
        {"# perflab gemm tune/1\n90 132 60 mk 1 2 3 0 1 x 5\n", "line 2: a field out of range"},
        {"# perflab gemm tune/1\n90 132 60 nk 0 2 3 0 1 x 5\n", "line 2: a field out of range"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 9 1 x 5\n", "line 2: a field out of range"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 0 1 ../x 5\n", "line 2: a field out of range"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 0 1 x -1\n", "line 2: a field out of range"},
        {"# perflab gemm tune/1\n90 132 60 nk 1 2 3 0 1 x nan\n", "line 2: a field out of range"},
    };
    pl_gemm_tune_clear();
    char *dir = pl_test_tmpdir("gemm_tune_bad");
    const char *good = pl_gemm_kernel_at(0)->name;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512], err[512] = "";
        /* a good line first: a refused file adds nothing, not even what came before the bad line */
        if (strncmp(bad[i].text, "# perflab", 9) == 0)
            snprintf(text, sizeof text, "# perflab gemm tune/1\n90 132 60 nk 11 22 33 0 1 %s 5\n%s", good,
                     bad[i].text + strlen("# perflab gemm tune/1\n"));
        else
            snprintf(text, sizeof text, "%s", bad[i].text);
        char *path = write_file(dir, "bad.tune", text);
        ck_assert_int_eq(pl_gemm_tune_load(path, NULL, err, sizeof err), -1);
        /* with the good line first, the bad one is line 3 */
        const char *tail = strncmp(bad[i].says, "line 2: ", 8) == 0 ? bad[i].says + 8 : bad[i].says;
        ck_assert_msg(strstr(err, path) && strstr(err, tail) && (tail == bad[i].says || strstr(err, "line 3: ")) &&
                          !strchr(err, '\n'),
                      "case %zu: %s", i, err);
        const pl_gemm_problem p = problem(11, 22, 33);
        ck_assert(pl_gemm_tuned_kernel(&p, &h200, NULL) == NULL);
        free(path);
    }
    /* a line past 511 characters */
    char *longline = malloc(2048);
    snprintf(longline, 2048, "# perflab gemm tune/1\n%0900d\n", 7);
    char *path = write_file(dir, "long.tune", longline), err[512];
    ck_assert_int_eq(pl_gemm_tune_load(path, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 2: longer than 511 characters"), "%s", err);
    char *missing = pl_path_join(dir, "missing.tune");
    ck_assert_int_eq(pl_gemm_tune_load(missing, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, missing) != NULL, "%s", err);
    free(missing), free(path), free(longline), free(dir);
}
END_TEST

/* perflab gemm refuses --tune and --tune-file it cannot honour before any work: exit 2, one line, no folder. */
START_TEST(cli_refusals)
{
    char *dir = pl_test_tmpdir("gemm_tune_cli");
    char *bad = write_file(dir, "bad.tune", "# perflab gemm tune/1\n90 132 60 nk 1 2 3\n");
    char *art = pl_path_join(dir, "art");
    static const struct {
        const char *args, *says;
    } cases[] = {
        {"--dtype fp8 --tune", "are for --dtype bf16"},
        {"--tune-file %s/missing.tune", "does not exist: add --tune to write it"},
        {"--tune-file %s/bad.tune", "line 2: expected 11 fields"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[1024], extra[512];
        snprintf(extra, sizeof extra, cases[i].args, dir);
        snprintf(args, sizeof args, "gemm --shapes 64x64x64 --providers perflab --artifacts-dir %s %s", art, extra);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == 2 && strstr(r.err, cases[i].says) &&
                          strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
                      "%s: exit %d, %s", extra, r.exit_code, r.err);
        ck_assert_msg(access(art, F_OK) != 0, "%s: %s was written", extra, art);
        pl_cmd_result_free(&r);
    }
    free(art), free(bad), free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_tune");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, rank_is_the_models_order);
    tcase_add_test(tc, tuned_entry_decides_its_class);
    tcase_add_test(tc, save_and_load_round_trip);
    tcase_add_test(tc, malformed_files_refused);
    tcase_add_test(tc, cli_refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
