/* On a GPU, the refusals that need its memory: a parameter value a target's setup could not take exits 2 with one
 * line naming the fix, before any GPU work and with nothing written (the parent checks it against the GPU it
 * probed), instead of a target that fails with exit 1. The host-only refusals: tests/host/test_param_refusals.c. */
#include "testutil.h"

START_TEST(values_the_gpu_cannot_hold_exit_2)
{
    static const char *const cases[][3] = {
        {"attention:flash_fwd", "--head-dim 96", "--head-dim 96 is not supported: use 64, 128 or 256"},
        {"moe:grouped_gemm", "--tokens 16000000 --topk 64", "GiB of device memory"},
        {"memory:vectorized_copy", "--n 100g", "needs 800.0 GiB of device memory"},
        {"memory:unified", "--n 60g", "managed memory beyond what the GPU holds can hang it"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pl_test_expect_refusal("run", cases[i][0], cases[i][1], cases[i][2]);
        pl_test_expect_refusal("verify", cases[i][0], cases[i][1], cases[i][2]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("param_refusals_gpu");
    TCase *tc = tcase_create("refusals");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, values_the_gpu_cannot_hold_exit_2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
