/* Host side of the memory-hierarchy chapter: the sum reference and its tolerance, the Zipf law of the
 * histogram input, the targets' declarations (parameters, small sizes, counters, variant requirements). */
#include <math.h>
#include <string.h>

#include "labs.h"
#include "common/kernel_req.h"
#include "common/sum_ref.h"
#include "common/zipf.h"
#include "memory/async_prefetch.h"
#include "memory/transpose_ilp.h"
#include "perflab/perflab.h"
#include "perflab/stats.h"
#include "testutil.h"

static char err[512];

static void setup(void)
{
    pl_labs_register_all();
}

/* a reproducible zero-mean sequence in [-1, 1) */
static void fill(float *x, size_t n, uint64_t seed)
{
    pl_rng r;
    pl_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * pl_rng_uniform(&r) - 1.0);
}

START_TEST(sum_reference_and_tolerance)
{
    const float x[4] = {1.0f, -2.0f, 0.5f, 4.0f};
    pl_sum_reference r;
    pl_sum_reference_f32(x, 4, &r);
    ck_assert(r.sum == 3.5 && r.abs_sum == 7.5 && r.n == 4);
    /* prefix sums 1, -1, -0.5, 3.5: sqrt(1 + 1 + 0.25 + 12.25) */
    ck_assert(fabs(r.tol - 10.0 / 16777216.0 * sqrt(14.5)) < 1e-15);
    pl_verification v;
    pl_sum_verify(3.5f, &r, &v);
    ck_assert(v.checked && v.passed);
    pl_sum_verify(3.5f + 1e-3f, &r, &v);
    ck_assert(v.checked && !v.passed);

    /* bf16: 0x3f80 = 1, 0xc000 = -2 */
    const uint16_t b[2] = {0x3f80, 0xc000};
    pl_sum_reference_bf16(b, 2, &r);
    ck_assert(r.sum == -1.0 && r.abs_sum == 3.0);
}
END_TEST

START_TEST(sum_check_catches_a_missing_element)
{
    /* an fp32 sum in index order passes; the same sum without one element fails (the check can fail at the sizes the
     * GPU test uses) */
    enum { N = 1000003 };
    static float x[N];
    fill(x, N, 7);
    pl_sum_reference r;
    pl_sum_reference_f32(x, N, &r);
    float seq = 0.0f;
    for (size_t i = 0; i < N; i++)
        seq += x[i];
    pl_verification v;
    pl_sum_verify(seq, &r, &v);
    ck_assert_msg(v.passed, "%s", v.message);
    /* the sequential fp32 error sits well inside the tolerance */
    ck_assert(fabs((double)seq - r.sum) < 0.5 * r.tol);
    size_t big = 0; /* leave out an element of magnitude > 0.5 */
    while (fabsf(x[big]) <= 0.5f)
        big++;
    pl_sum_verify(seq - x[big], &r, &v);
    ck_assert_msg(!v.passed, "%s", v.message);
    /* NaN fails; the poison pattern is reported as never written */
    uint32_t ones = 0xffffffffu;
    float poison;
    memcpy(&poison, &ones, sizeof poison);
    pl_sum_verify(poison, &r, &v);
    ck_assert(!v.passed && v.unwritten == 1);
    pl_sum_verify(NAN, &r, &v);
    ck_assert(!v.passed && v.nonfinite == 1);
}
END_TEST

START_TEST(zipf_law)
{
    double cdf[256];
    pl_zipf_cdf(cdf, 256, 1.2);
    /* the --skew help says 25% of the keys land in bin 0 */
    ck_assert(fabs(cdf[0] - 0.2536) < 1e-3);
    ck_assert(cdf[255] == 1.0);
    for (int k = 1; k < 256; k++)
        ck_assert(cdf[k] > cdf[k - 1]);
    pl_zipf_cdf(cdf, 256, 0.0); /* skew 0: uniform */
    ck_assert(fabs(cdf[127] - 0.5) < 1e-12);
    pl_zipf_cdf(cdf, 1, 3.0);
    ck_assert(cdf[0] == 1.0);
}
END_TEST

static const char *const targets[] = {"memory:transpose", "reduce:sum",        "memory:async_prefetch",
                                      "occupancy:ilp",    "atomics:histogram", "memory:l2_persistence"};

START_TEST(targets_declared_with_small_sizes)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        const pl_target *t = pl_registry_find(targets[i]);
        ck_assert_msg(t != NULL, "%s is not registered", targets[i]);
        ck_assert_str_eq(t->variants[0].name, "baseline");
        ck_assert_int_ge((int)pl_target_variant_count(t), 3);
        /* every parameter that sets a size has a small value, and no small value is a multiple of 32 */
        for (const pl_param_def *d = t->params; d->name; d++) {
            if (d->type != PL_PARAM_INT || strcmp(d->name, "blocks_per_sm") == 0 || strcmp(d->name, "stages") == 0 ||
                strcmp(d->name, "low_blocks") == 0 || strcmp(d->name, "ilp") == 0)
                continue;
            ck_assert_msg(d->small_value != NULL, "%s --%s has no small value", targets[i], d->name);
            long long v;
            ck_assert_int_eq(pl_parse_size(d->small_value, &v), 0);
            ck_assert_msg(v % 32 != 0 || v < 32, "%s --%s small value %lld is a multiple of 32", targets[i], d->name,
                          v);
        }
    }
}
END_TEST

static void counters_of(const char *name, const char *args, pl_counters *c)
{
    const pl_target *t = pl_registry_find(name);
    pl_params p;
    ck_assert_msg(pl_params_init(&p, t->params, t->name, args, 0, err, sizeof err) == 0, "%s", err);
    memset(c, 0, sizeof *c);
    t->counters(&p, c);
    pl_params_free(&p);
}

START_TEST(counters_count_the_fewest_bytes)
{
    pl_counters c;
    counters_of("memory:transpose", "--rows 777 --cols 1001", &c);
    ck_assert(c.bytes_read == 4.0 * 777 * 1001 && c.bytes_written == c.bytes_read);
    counters_of("reduce:sum", "--n 1000 --dtype bf16", &c);
    ck_assert(c.bytes_read == 2000.0 && c.bytes_written == 4.0);
    counters_of("reduce:sum", "--n 1000", &c);
    ck_assert(c.bytes_read == 4000.0);
    counters_of("atomics:histogram", "--n 1000 --bins 250", &c);
    ck_assert(c.bytes_read == 4000.0 && c.bytes_written == 1000.0);
    /* the hot buffer counts once: it can stay in L2 */
    counters_of("memory:l2_persistence", "--hot 100 --stream 1000 --kernels 3", &c);
    ck_assert(c.bytes_read == 4.0 * (100 + 3000) && c.bytes_written == 4.0 * 3000);
    counters_of("memory:async_prefetch", "--rows 10 --cols 11", &c);
    ck_assert(c.bytes_read == 440.0 && c.bytes_written == 440.0);
}
END_TEST

START_TEST(bad_parameters_are_refused)
{
    pl_params p;
    const pl_target *t = pl_registry_find("reduce:sum");
    ck_assert_int_eq(pl_params_init(&p, t->params, t->name, "--dtype fp16", 0, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "fp32|bf16"));
    t = pl_registry_find("atomics:histogram");
    ck_assert_int_eq(pl_params_init(&p, t->params, t->name, "--bins 16385", 0, err, sizeof err), -1);
    ck_assert_int_eq(pl_params_init(&p, t->params, t->name, "--dist pareto", 0, err, sizeof err), -1);
    t = pl_registry_find("memory:async_prefetch");
    ck_assert_int_eq(pl_params_init(&p, t->params, t->name, "--stages 5", 0, err, sizeof err), -1);
}
END_TEST

static const pl_variant *variant(const char *target, const char *name)
{
    const pl_target *t = pl_registry_find(target);
    for (const pl_variant *v = t->variants; v->name; v++)
        if (strcmp(v->name, name) == 0)
            return v;
    ck_abort_msg("%s has no variant %s", target, name);
    return NULL;
}

START_TEST(variant_requirements_follow_the_kernels)
{
    /* the lab's static requirements say what the kernels say they need */
    const pl_stencil_version vs[2] = {PL_STENCIL_CP_ASYNC, PL_STENCIL_TMA};
    const char *names[2] = {"cp_async", "tma"};
    for (int i = 0; i < 2; i++) {
        const pl_requirements want = pl_requirements_of_kernel(pl_stencil_needs(vs[i]));
        const pl_requirements *got = &variant("memory:async_prefetch", names[i])->req;
        ck_assert_int_eq(got->min_cc, want.min_cc);
        ck_assert_uint_eq(got->features, want.features);
        ck_assert_int_eq(got->needs_gpu, 1);
    }
    /* the ceilings are flagged as references */
    ck_assert(variant("memory:transpose", "cuda_memcpy")->flags & PL_VARIANT_REFERENCE);
    ck_assert(variant("reduce:sum", "cub")->flags & PL_VARIANT_REFERENCE);
    ck_assert(variant("atomics:histogram", "cub")->flags & PL_VARIANT_REFERENCE);
}
END_TEST

START_TEST(transpose_tile_counts)
{
    unsigned tx = 0, ty = 0;
    ck_assert_int_eq(pl_transpose_tiles(16384, 16384, 32, &tx, &ty), 0);
    ck_assert(tx == 512 && ty == 512);
    ck_assert_int_eq(pl_transpose_tiles(1000, 777, 64, &tx, &ty), 0); /* cols 777 -> 13 tiles, rows 1000 -> 16 */
    ck_assert(tx == 13 && ty == 16);
    ck_assert_int_eq(pl_transpose_tiles(1, 5, 64, &tx, &ty), 0);
    ck_assert(tx == 1 && ty == 1);
    ck_assert_int_eq(pl_transpose_tiles(0, 5, 32, &tx, &ty), -1);
    ck_assert_int_eq(pl_transpose_tiles((size_t)1 << 20, (size_t)1 << 32, 32, &tx, &ty), -1); /* > 2^31 tiles */
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("suite1_memory_host");
    TCase *tc = tcase_create("host");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, sum_reference_and_tolerance);
    tcase_add_test(tc, sum_check_catches_a_missing_element);
    tcase_add_test(tc, zipf_law);
    tcase_add_test(tc, targets_declared_with_small_sizes);
    tcase_add_test(tc, counters_count_the_fewest_bytes);
    tcase_add_test(tc, bad_parameters_are_refused);
    tcase_add_test(tc, variant_requirements_follow_the_kernels);
    tcase_add_test(tc, transpose_tile_counts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
