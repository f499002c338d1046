/* The registry: registration rules, selection of the quick suite, all, groups and names, and suggestions. */
#include <stdlib.h>
#include <string.h>

#include "labs.h"
#include "perflab/target_registry.h"
#include "testutil.h"

static char err[512];

static int select_names(const char *spec, char *out, size_t len)
{
    const pl_target **sel;
    size_t n;
    err[0] = '\0';
    if (pl_registry_select(spec, &sel, &n, err, sizeof err) != 0)
        return -1;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char name[128];
        strncat(out, pl_target_full_name(sel[i], name, sizeof name), len - strlen(out) - 2);
        strncat(out, " ", len - strlen(out) - 1);
    }
    free(sel);
    return (int)n;
}

static void setup(void)
{
    pl_labs_register_all();
}

START_TEST(default_is_the_quick_suite)
{
    char names[2048];
    int n = select_names(NULL, names, sizeof names);
    ck_assert_int_gt(n, 2);
    ck_assert_ptr_nonnull(strstr(names, "memory:coalescing "));
    ck_assert_ptr_nonnull(strstr(names, "memory:vectorized_copy "));
    ck_assert_ptr_nonnull(strstr(names, "launch:cuda_graphs "));
    ck_assert_ptr_nonnull(strstr(names, "selftest:gpu_spin "));
    ck_assert_ptr_null(strstr(names, "selftest:crash"));
}
END_TEST

START_TEST(all_leaves_out_the_selftests)
{
    char names[2048];
    ck_assert_int_gt(select_names("all", names, sizeof names), 2);
    ck_assert_ptr_null(strstr(names, "selftest:"));
}
END_TEST

START_TEST(groups_and_names_without_duplicates)
{
    char names[2048];
    /* a group selects every target of it, however many the families add */
    int in_memory = 0, in_selftest = 0;
    for (size_t i = 0; i < pl_registry_count(); i++) {
        in_memory += strcmp(pl_registry_at(i)->group, "memory") == 0;
        in_selftest += strcmp(pl_registry_at(i)->group, "selftest") == 0;
    }
    ck_assert_int_ge(in_memory, 2);
    ck_assert_int_eq(select_names("memory", names, sizeof names), in_memory);
    ck_assert_int_eq(select_names("memory,memory:coalescing", names, sizeof names), in_memory);
    ck_assert_int_eq(select_names("selftest:sleep, selftest:crash", names, sizeof names), 2);
    ck_assert_int_ge(in_selftest, 8);
    ck_assert_int_eq(select_names("selftest", names, sizeof names), in_selftest);
}
END_TEST

START_TEST(unknown_names_get_suggestions)
{
    char names[2048];
    ck_assert_int_eq(select_names("memory:coalesing", names, sizeof names), -1);
    ck_assert_str_eq(err, "unknown target 'memory:coalesing' (did you mean 'memory:coalescing'?); 'perflab list' shows "
                          "them all");
    ck_assert_int_eq(select_names("launch,nothing_like_it_at_all", names, sizeof names), -1);
    ck_assert_str_eq(err, "unknown target 'nothing_like_it_at_all'; 'perflab list' shows them all");
    ck_assert_int_eq(select_names(",", names, sizeof names), -1);
    ck_assert_ptr_nonnull(strstr(err, "names no target"));
}
END_TEST

START_TEST(every_target_is_well_formed)
{
    for (size_t i = 0; i < pl_registry_count(); i++) {
        const pl_target *t = pl_registry_at(i);
        ck_assert_str_eq(t->variants[0].name, "baseline");
        ck_assert_int_ge((int)pl_target_variant_count(t), 2);
        /* every declared default parses */
        pl_params p;
        ck_assert_int_eq(pl_params_init(&p, t->params, t->name, NULL, 0, err, sizeof err), 0);
        pl_params_free(&p);
        ck_assert_int_eq(pl_params_init(&p, t->params, t->name, NULL, 1, err, sizeof err), 0);
        if (t->counters) {
            pl_counters c = {0};
            t->counters(&p, &c);
            ck_assert(c.bytes_read + c.bytes_written + c.flops > 0);
        }
        pl_params_free(&p);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, default_is_the_quick_suite);
    tcase_add_test(tc, all_leaves_out_the_selftests);
    tcase_add_test(tc, groups_and_names_without_duplicates);
    tcase_add_test(tc, unknown_names_get_suggestions);
    tcase_add_test(tc, every_target_is_well_formed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
