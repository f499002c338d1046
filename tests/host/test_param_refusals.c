/* A parameter value a target refuses is bad input: exit 2 with one line naming the fix, before any GPU work and
 * with nothing written, as for a value outside its declared range. The targets' check_params on the host (a GPU's
 * memory given as a record, as the parent probes it), and the real binary for the checks that need no GPU. */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "labs.h"
#include "perflab/params.h"
#include "perflab/target_registry.h"
#include "perflab/results.h"
#include "testutil.h"

/* target's check_params on `args`, against `gpu` (NULL: before the probe). Returns its result; err gets the line. */
static int check(const char *target, const char *args, const pl_gpu_record *gpu, char *err, size_t errlen)
{
    pl_labs_register_all();
    const pl_target *t = pl_registry_find(target);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(t->check_params != NULL, "%s declares no check_params", target);
    pl_params p;
    ck_assert_msg(pl_params_init(&p, t->params, target, args, 0, err, errlen) == 0, "%s", err);
    err[0] = '\0';
    int rc = t->check_params(&p, gpu, err, errlen);
    pl_params_free(&p);
    return rc;
}

static const pl_gpu_record h200 = {.name = "NVIDIA H200", .memory_gib = 139.8};

START_TEST(setup_refusals_are_checked_before_the_work)
{
    static const struct {
        const char *target, *args;
        int needs_gpu; /* the check needs the GPU's memory: passes while it is unknown */
        const char *says;
    } cases[] = {
        {"attention:flash_fwd", "--head-dim 96", 0, "--head-dim 96 is not supported: use 64, 128 or 256"},
        {"attention:flash_fwd", "--head-dim 192", 0, "--head-dim 192 is not supported: use 64, 128 or 256"},
        {"attention:flash_fwd", "--seq 1m --batch 64", 1, "lower --batch, --heads or --seq"},
        {"attention:flash_bwd", "--head-dim 96", 0, "--head-dim 96 is not supported: use 64 or 128"},
        {"attention:flash_bwd", "--heads 6 --kv-heads 4", 0, "--heads 6 is not a multiple of --kv-heads 4"},
        {"attention:flash_bwd", "--seq 128k --batch 4", 1, "lower --batch, --heads or --seq"},
        {"attention:decode_paged", "--page-size 12", 0, "--page-size 12 is not a multiple of 8"},
        {"attention:decode_paged", "--rows-warps 6", 0, "--rows-warps 6"},
        {"attention:mla_decode", "--chunk 100", 0, "--chunk 100 is not a multiple of 64"},
        {"attention:mla_decode", "--chunk 64 --kv-len 5m", 0, "more than 65535 chunks"},
        {"attention:mla_decode", "--batch 60000 --kv-len 16m", 1, "pass a smaller --batch, --heads or --kv-len"},
        {"moe:grouped_gemm", "--tokens 16000000 --topk 64", 1,
         "GiB of device memory; NVIDIA H200 has 139.8 GiB: lower"},
        {"moe:grouped_gemm", "--k 100", 0, "--k 100 is not a multiple of 16"},
        {"moe:grouped_gemm", "--topk 8 --experts 4", 0, "--topk 8 exceeds --experts 4"},
        {"memory:vectorized_copy", "--n 100g", 1, "needs 800.0 GiB of device memory; NVIDIA H200 has 139.8 GiB"},
        {"memory:transpose", "--rows 1m --cols 1m", 0, "more than 2^34"},
        {"memory:gather", "--vocab 100m --dim 1k", 1, "NVIDIA H200 has 139.8 GiB: pass a smaller --vocab"},
        {"occupancy:ilp", "--ilp 3", 0, "--ilp 3 is not built"},
        {"streams:overlap", "--n 10 --chunks 16", 0, "--chunks 16 is more than the 10 elements"},
        {"memory:unified", "--n 60g", 1, "over a quarter of its memory (139.80 GiB); managed memory"},
        {"norm:rmsnorm", "--rows 1m --cols 1m", 1, "GiB of device memory; NVIDIA H200 has 139.8 GiB: use fewer rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512];
        int before = check(cases[i].target, cases[i].args, NULL, err, sizeof err);
        ck_assert_msg(before == (cases[i].needs_gpu ? 0 : -1), "%s %s: %d before the probe (%s)", cases[i].target,
                      cases[i].args, before, err);
        ck_assert_int_eq(check(cases[i].target, cases[i].args, &h200, err, sizeof err), -1);
        ck_assert_msg(strstr(err, cases[i].says) && !strchr(err, '\n'), "%s %s: '%s'", cases[i].target, cases[i].args,
                      err);
        /* the defaults pass, on the GPU and before it is known */
        ck_assert_msg(check(cases[i].target, "", &h200, err, sizeof err) == 0, "%s defaults: %s", cases[i].target, err);
    }
}
END_TEST

/* Through the binary, for a refusal that needs no GPU: exit 2 on any machine, one line, no run folder. */
START_TEST(the_command_line_exits_2_with_one_line_and_writes_nothing)
{
    pl_test_expect_refusal("run", "attention:flash_fwd", "--head-dim 96", "--head-dim 96 is not supported");
    pl_test_expect_refusal("verify", "attention:flash_fwd", "--head-dim 96", "--head-dim 96 is not supported");
    pl_test_expect_refusal("run", "moe:grouped_gemm", "--k 100", "--k 100 is not a multiple of 16");
    pl_test_expect_refusal("run", "memory:transpose", "--rows 1m --cols 1m", "more than 2^34");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("param_refusals");
    TCase *tc = tcase_create("refusals");
    tcase_add_test(tc, setup_refusals_are_checked_before_the_work);
    tcase_add_test(tc, the_command_line_exits_2_with_one_line_and_writes_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
