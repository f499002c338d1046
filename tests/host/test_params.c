/* Target parameters: defaults, typed parsing, overrides, and every error message. */
#include <string.h>

#include "perflab/params.h"
#include "testutil.h"

static const pl_param_def defs[] = {
    {.name = "n", .type = PL_PARAM_INT, .default_value = "64m", .help = "elements", .min = 1},
    {.name = "scale", .type = PL_PARAM_FLOAT, .default_value = "0.5", .help = "factor", .min = 0, .max = 1},
    {.name = "dtype", .type = PL_PARAM_STRING, .default_value = "bf16", .help = "type", .choices = "bf16|fp16|fp32"},
    {.name = "fused", .type = PL_PARAM_BOOL, .default_value = "false", .help = "fuse"},
    {.name = "label", .type = PL_PARAM_STRING, .default_value = "x", .help = "free text"},
    {.name = NULL},
};

static pl_params p;
static char err[512];

static int parse(const char *args)
{
    err[0] = '\0';
    return pl_params_init(&p, defs, "g:t", args, 0, err, sizeof err);
}

START_TEST(defaults_apply)
{
    ck_assert_int_eq(parse(NULL), 0);
    ck_assert_int_eq(pl_param_int(&p, "n"), 64LL << 20);
    ck_assert_double_eq(pl_param_float(&p, "scale"), 0.5);
    ck_assert_str_eq(pl_param_str(&p, "dtype"), "bf16");
    ck_assert_int_eq(pl_param_bool(&p, "fused"), 0);
    ck_assert_int_eq(p.values[0].overridden, 0);
    pl_params_free(&p);
}
END_TEST

START_TEST(overrides_in_both_spellings)
{
    ck_assert_int_eq(parse("--n 4096 --scale=0.25 --dtype fp32 --fused --label 'two words'"), 0);
    ck_assert_int_eq(pl_param_int(&p, "n"), 4096);
    ck_assert_double_eq(pl_param_float(&p, "scale"), 0.25);
    ck_assert_str_eq(pl_param_str(&p, "dtype"), "fp32");
    ck_assert_int_eq(pl_param_bool(&p, "fused"), 1);
    ck_assert_str_eq(pl_param_str(&p, "label"), "two words");
    ck_assert_int_eq(p.values[0].overridden, 1);
    pl_params_free(&p);
}
END_TEST

START_TEST(size_suffixes)
{
    long long v;
    ck_assert_int_eq(pl_parse_size("48k", &v), 0);
    ck_assert_int_eq(v, 48 * 1024);
    ck_assert_int_eq(pl_parse_size("2M", &v), 0);
    ck_assert_int_eq(v, 2 << 20);
    ck_assert_int_eq(pl_parse_size("1g", &v), 0);
    ck_assert_int_eq(v, 1LL << 30);
    ck_assert_int_eq(pl_parse_size("64MiB", &v), 0);
    ck_assert_int_eq(v, 64LL << 20);
    ck_assert_int_eq(pl_parse_size("12", &v), 0);
    ck_assert_int_eq(v, 12);
    ck_assert_int_eq(pl_parse_size("12q", &v), -1);
    ck_assert_int_eq(pl_parse_size("", &v), -1);
    ck_assert_int_eq(pl_parse_size("k", &v), -1);
    ck_assert_int_eq(pl_parse_size("99999999999g", &v), -1);
}
END_TEST

static void expect_error(const char *args, const char *fragment)
{
    ck_assert_int_eq(parse(args), -1);
    ck_assert_msg(strstr(err, fragment) != NULL, "for '%s' expected '%s' in: %s", args, fragment, err);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_int_eq((int)p.count, 0); /* nothing half-built is left */
}

START_TEST(every_error_names_the_problem)
{
    expect_error("--nn 5", "g:t has no parameter '--nn' (did you mean '--n'?); its parameters: --n, --scale");
    expect_error("--bogus 5", "g:t has no parameter '--bogus'; its parameters:");
    expect_error("--n abc", "'--n' expects an integer (e.g. 4096, or 64m for 64*2^20), not 'abc'");
    expect_error("--n 0", "'--n' must be at least 1, not 0");
    expect_error("--scale 2", "'--scale' must be between 0 and 1, not 2");
    expect_error("--scale x", "'--scale' expects a number (e.g. 0.5), not 'x'");
    expect_error("--dtype fp9", "'--dtype' must be one of bf16|fp16|fp32, not 'fp9'");
    expect_error("--fused maybe", "'--fused' expects true or false, not 'maybe'");
    expect_error("--n", "g:t: '--n' needs a value");
    expect_error("n 5", "unexpected 'n' in its arguments: write parameters as '--name value'");
    expect_error("--label 'open", "unbalanced quote");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("params");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, defaults_apply);
    tcase_add_test(tc, overrides_in_both_spellings);
    tcase_add_test(tc, size_suffixes);
    tcase_add_test(tc, every_error_names_the_problem);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
