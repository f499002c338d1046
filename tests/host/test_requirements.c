/* Requirements: a target (or variant) the GPU cannot run is skipped, with a reason that names what is missing. */
#include <string.h>

#include "core/devprobe.h"
#include "testutil.h"

static pl_device_info gpu(int major, int minor, int clusters)
{
    pl_device_info d;
    memset(&d, 0, sizeof d);
    strcpy(d.name, "Test GPU");
    d.cc_major = major;
    d.cc_minor = minor;
    d.cluster_launch = clusters;
    return d;
}

START_TEST(compute_capability_bounds)
{
    char why[256];
    pl_device_info h100 = gpu(9, 0, 1), a100 = gpu(8, 0, 0), b200 = gpu(10, 0, 1);
    pl_requirements r = {.needs_gpu = 1, .min_cc = 90};
    ck_assert(pl_requirements_met(&r, &h100, 1, NULL, why, sizeof why));
    ck_assert(!pl_requirements_met(&r, &a100, 1, NULL, why, sizeof why));
    ck_assert_str_eq(why, "needs compute capability 9.0 or newer; Test GPU is 8.0");
    r.max_cc = 90;
    ck_assert(!pl_requirements_met(&r, &b200, 1, NULL, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "architecture-specific"));
}
END_TEST

START_TEST(features_and_gpu_count)
{
    char why[256];
    pl_device_info h100 = gpu(9, 0, 1), h100_no_clusters = gpu(9, 0, 0), b200 = gpu(10, 0, 1), l40s = gpu(8, 9, 0);
    pl_requirements wgmma = {.needs_gpu = 1, .features = PL_FEAT_WGMMA};
    ck_assert(pl_requirements_met(&wgmma, &h100, 1, NULL, why, sizeof why));
    ck_assert(!pl_requirements_met(&wgmma, &b200, 1, NULL, why, sizeof why));
    ck_assert_str_eq(why, "needs wgmma (sm_90a), which Test GPU (compute capability 10.0) lacks");
    pl_requirements tc = {.needs_gpu = 1, .features = PL_FEAT_TCGEN05};
    ck_assert(!pl_requirements_met(&tc, &h100, 1, NULL, why, sizeof why));
    ck_assert(pl_requirements_met(&tc, &b200, 1, NULL, why, sizeof why));
    pl_requirements cl = {.needs_gpu = 1, .features = PL_FEAT_CLUSTERS};
    ck_assert(!pl_requirements_met(&cl, &h100_no_clusters, 1, NULL, why, sizeof why));
    pl_requirements fp8 = {.needs_gpu = 1, .features = PL_FEAT_FP8};
    ck_assert(pl_requirements_met(&fp8, &l40s, 1, NULL, why, sizeof why));
    pl_requirements two = {.needs_gpu = 1, .min_gpus = 2};
    ck_assert(!pl_requirements_met(&two, &h100, 1, NULL, why, sizeof why));
    ck_assert_str_eq(why, "needs 2 GPUs; this machine has 1");
    ck_assert(pl_requirements_met(&two, &h100, 4, NULL, why, sizeof why));
}
END_TEST

START_TEST(host_targets_need_nothing)
{
    char why[256] = "";
    pl_requirements host = {0};
    ck_assert(pl_requirements_met(&host, NULL, 0, NULL, why, sizeof why));
    pl_requirements gpu_needed = {.needs_gpu = 1};
    ck_assert(!pl_requirements_met(&gpu_needed, NULL, 0, NULL, why, sizeof why));
    ck_assert_str_eq(why, "needs a GPU");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("requirements");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, compute_capability_bounds);
    tcase_add_test(tc, features_and_gpu_count);
    tcase_add_test(tc, host_targets_need_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
