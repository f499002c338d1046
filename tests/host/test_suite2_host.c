/* Technique suite II on the host: the transfer labs' random bytes and exact byte check, the closed form of the
 * streams lab's compute stage, the targets' registration (the two-GPU one says so) and their parameter errors. */
#include <stdlib.h>
#include <string.h>

#include "common/host_bytes.h"
#include "labs.h"
#include "perflab/target_registry.h"
#include "streams/streams_kernels.h"
#include "testutil.h"

START_TEST(random_bytes_are_seeded_and_fill_every_byte)
{
    enum { N = 4099 }; /* not a multiple of the 8-byte step: the tail is filled too */
    uint8_t *a = malloc(N + 1), *b = malloc(N + 1), *c = malloc(N + 1);
    a[N] = b[N] = c[N] = 0xA5;
    pl_fill_random_bytes(a, N, 42, 1);
    pl_fill_random_bytes(b, N, 42, 1);
    ck_assert(memcmp(a, b, N) == 0);
    ck_assert_int_eq(a[N], 0xA5); /* nothing past the end */
    pl_fill_random_bytes(c, N, 42, 2);
    ck_assert(memcmp(a, c, N) != 0);
    pl_fill_random_bytes(c, N, 43, 1);
    ck_assert(memcmp(a, c, N) != 0);
    /* no runs of zeros: the longest is short */
    int run = 0, longest = 0;
    for (int i = 0; i < N; i++) {
        run = a[i] ? 0 : run + 1;
        longest = run > longest ? run : longest;
    }
    ck_assert_int_le(longest, 3);
    ck_assert(a[N - 1] != 0 || a[N - 2] != 0 || a[N - 3] != 0);
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(byte_check_finds_every_difference)
{
    enum { N = 1000 };
    uint8_t ref[N], out[N];
    pl_fill_random_bytes(ref, N, 7, 1);
    for (int i = 0; i < N; i++)
        ref[i] = ref[i] == 0xFF ? 0x7F : ref[i]; /* so that 0xFF below is always the poison */
    memcpy(out, ref, N);
    pl_verification v;
    pl_verify_bytes(out, ref, N, &v);
    ck_assert(v.checked && v.passed);
    ck_assert_uint_eq(v.elements, N);
    out[613] ^= 0x10;
    pl_verify_bytes(out, ref, N, &v);
    ck_assert(v.checked && !v.passed);
    ck_assert_uint_eq(v.max_error_index, 613);
    ck_assert_ptr_nonnull(strstr(v.message, "1 of 1000 bytes differ"));
    memset(out + 900, 0xFF, 100); /* an unwritten tail */
    pl_verify_bytes(out, ref, N, &v);
    ck_assert(!v.passed);
    ck_assert_uint_eq(v.unwritten, 100);
    ck_assert_uint_eq(v.max_error_index, 613); /* still the first */
}
END_TEST

START_TEST(lcg_closed_form_matches_the_steps)
{
    const int iters[] = {1, 2, 37, 1536};
    for (size_t t = 0; t < sizeof iters / sizeof iters[0]; t++) {
        uint32_t mul, add;
        pl_lcg_jump(iters[t], 1664525u, 1013904223u, &mul, &add);
        for (uint32_t x0 = 1; x0 < 2000000000u; x0 = x0 * 7u + 12345u) {
            uint32_t x = x0;
            for (int k = 0; k < iters[t]; k++)
                x = x * 1664525u + 1013904223u;
            ck_assert_uint_eq(x, mul * x0 + add);
        }
    }
}
END_TEST

static const pl_target *find(const char *name)
{
    const pl_target **sel;
    size_t n;
    char err[256];
    if (pl_registry_select(name, &sel, &n, err, sizeof err) != 0 || n != 1)
        return NULL;
    const pl_target *t = sel[0];
    free(sel);
    return t;
}

START_TEST(suite_targets_are_registered)
{
    pl_labs_register_all();
    const char *names[] = {"transfer:pinned",   "streams:overlap",          "alloc:stream_ordered", "gemm:batched",
                           "launch:persistent", "launch:graph_conditional", "memory:unified",       "nvlink:peer_copy"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const pl_target *t = find(names[i]);
        ck_assert_msg(t != NULL, "%s is not registered", names[i]);
        ck_assert_msg(t->req.needs_gpu, "%s", names[i]);
        /* the timing region is stated in the summary */
        ck_assert_msg(strstr(t->summary, "timed") || strstr(t->summary, "GPU time"), "%s: %s", names[i], t->summary);
        /* every size parameter has a small value */
        for (const pl_param_def *d = t->params; d && d->name; d++)
            if (d->type == PL_PARAM_INT && strcmp(d->name, "blocks") && strcmp(d->name, "max-iterations"))
                ck_assert_msg(d->small_value != NULL, "%s --%s has no small value", names[i], d->name);
    }
    ck_assert_int_eq(find("nvlink:peer_copy")->req.min_gpus, 2);
    /* the strided-batched cuBLAS call is the reference the native kernel is judged against */
    const pl_target *g = find("gemm:batched");
    ck_assert_str_eq(g->variants[1].name, "cublas_strided");
    ck_assert(g->variants[1].flags & PL_VARIANT_REFERENCE);
}
END_TEST

static void expect_usage_error(const char *args, const char *fragment)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 2, "perflab %s: exit %d; %s", args, r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, fragment) != NULL, "perflab %s: expected '%s' in: %s", args, fragment, r.err);
    pl_cmd_result_free(&r);
}

START_TEST(bad_parameters_are_refused_before_any_work)
{
    expect_usage_error("run --targets transfer:pinned --target-extra-arg 'transfer:pinned=--direction up'", "h2d");
    expect_usage_error("run --targets streams:overlap --target-extra-arg 'streams:overlap=--streams 17'",
                       "'--streams' must be between 1 and 16");
    expect_usage_error("run --targets launch:persistent --target-extra-arg 'launch:persistent=--steps 0'",
                       "'--steps' must be between 1 and 1024");
    expect_usage_error("run --targets gemm:batched --target-extra-arg 'gemm:batched=--count 70000'",
                       "'--count' must be between 1 and 65535");
}
END_TEST

START_TEST(list_says_what_needs_two_gpus)
{
    pl_cmd_result r = pl_run_perflab(NULL, "list");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "nvlink:peer_copy  (GPU, 2 GPUs)"));
    ck_assert_ptr_nonnull(strstr(r.out, "launch:graph_conditional"));
    pl_cmd_result_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suite2");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, random_bytes_are_seeded_and_fill_every_byte);
    tcase_add_test(tc, byte_check_finds_every_difference);
    tcase_add_test(tc, lcg_closed_form_matches_the_steps);
    tcase_add_test(tc, suite_targets_are_registered);
    tcase_add_test(tc, bad_parameters_are_refused_before_any_work);
    tcase_add_test(tc, list_says_what_needs_two_gpus);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
