/* The grouped GEMMs in libperflab.so (for scripts/torch_moe_bench.py --perflab-lib and python/perflab): it loads
 * with every symbol resolved, exports each entry point of gemm/grouped.h, and its argument checks and measured cluster
 * choice answer as the kernel library's do. No GPU needed: nothing here launches. */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "gemm/grouped.h"
#include "testutil.h"

typedef int (*supports_fn)(const pl_grouped_gemm_problem *, int, char *, size_t);
typedef int (*cluster_fn)(const pl_grouped_gemm_problem *, int);

static void *open_lib(void)
{
    void *lib = dlopen(PERFLAB_LIB, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "dlopen %s: %s", PERFLAB_LIB, dlerror());
    return lib;
}

/* A problem of 8 groups whose device pointers are aligned but never dereferenced. */
static pl_grouped_gemm_problem problem(int rows)
{
    pl_grouped_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.groups = 8;
    p.n = 4096;
    p.k = 1024;
    p.rows = rows;
    p.offsets = (const int *)(uintptr_t)0x100000;
    p.a = (const void *)(uintptr_t)0x200000;
    p.b = (const void *)(uintptr_t)0x300000;
    p.d = (uint16_t *)(uintptr_t)0x400000;
    return p;
}

START_TEST(exports_every_entry_point)
{
    void *lib = open_lib();
    static const char *const names[] = {"pl_grouped_gemm_supports", "pl_grouped_gemm_cluster_of",
                                        "pl_grouped_gemm_bf16",     "pl_grouped_gemm_bf16_t",
                                        "pl_grouped_gemm_fp8",      "pl_grouped_gemm_fp8_halves"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(dlsym(lib, names[i]) != NULL, "%s not exported: %s", names[i], dlerror());
    ck_assert_int_eq(dlclose(lib), 0);
}
END_TEST

START_TEST(checks_as_the_kernel_library)
{
    void *lib = open_lib();
    const supports_fn supports = (supports_fn)(uintptr_t)dlsym(lib, "pl_grouped_gemm_supports");
    const cluster_fn cluster_of = (cluster_fn)(uintptr_t)dlsym(lib, "pl_grouped_gemm_cluster_of");
    ck_assert(supports && cluster_of);
    char why[256], why_static[256];
    pl_grouped_gemm_problem p = problem(8 * 2048);
    ck_assert_msg(supports(&p, 0, why, sizeof why), "%s", why);
    p.k = 1000; /* bf16 takes K % 8 == 0, fp8 K % 16 == 0 */
    ck_assert(supports(&p, 0, why, sizeof why));
    ck_assert(!supports(&p, 1, why, sizeof why));
    ck_assert(!pl_grouped_gemm_supports(&p, 1, why_static, sizeof why_static));
    ck_assert_str_eq(why, why_static);
    ck_assert_msg(strstr(why, "K % 16 == 0") != NULL, "%s", why);
    p = problem(8 * 2048);
    p.cluster = 3;
    ck_assert(!supports(&p, 0, why, sizeof why));
    ck_assert_msg(strstr(why, "cluster must be") != NULL, "%s", why);
    /* the measured choice: pairs for bf16 from PL_GROUPED_PAIR_ROWS rows a group, one CTA a tile below and for fp8 */
    p = problem(8 * PL_GROUPED_PAIR_ROWS);
    ck_assert_int_eq(cluster_of(&p, 0), 2);
    ck_assert_int_eq(cluster_of(&p, 1), 1);
    p.rows--;
    ck_assert_int_eq(cluster_of(&p, 0), 1);
    ck_assert_int_eq(cluster_of(&p, 0), pl_grouped_gemm_cluster_of(&p, 0));
    ck_assert_int_eq(dlclose(lib), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("grouped_shared_lib");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, exports_every_entry_point);
    tcase_add_test(tc, checks_as_the_kernel_library);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
