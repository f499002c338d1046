/* `perflab gemm --shapes random:N[:SEED]` without a GPU: the generator against published and independently computed
 * values, the same shapes for a seed, the distribution docs/gemm.md states (ranges, multiples of 8, one in four none
 * of 64, M over its decades) within stated statistical bounds, the seed in comparison.json and summary.md, and the
 * bad inputs refused with one line (exit 2, nothing written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/util.h"
#include "selector/shapes.h"
#include "selector/shapes_random.h"
#include "testutil.h"

static pl_gemm_shape_list parse_ok(const char *spec)
{
    pl_gemm_shape_list l = {0};
    char err[512];
    ck_assert_msg(pl_gemm_shapes_parse(spec, &l, err, sizeof err) == 0, "'%s': %s", spec, err);
    return l;
}

static void expect_parse_error(const char *spec, const char *fragment)
{
    pl_gemm_shape_list l = {0};
    char err[512];
    ck_assert_msg(pl_gemm_shapes_parse(spec, &l, err, sizeof err) != 0, "'%s' parsed", spec);
    ck_assert_msg(strstr(err, fragment) != NULL, "'%s': expected '%s' in: %s", spec, fragment, err);
    ck_assert_msg(!strchr(err, '\n'), "'%s': more than one line: %s", spec, err);
    pl_gemm_shape_list_free(&l);
}

/* splitmix64's published outputs (seed 0: the first value of the reference implementation; seed 1234567: the values
 * Java's SplittableRandom tests hold) and 2^x in Q16 against libm within its rounding. */
START_TEST(generator)
{
    uint64_t st = 0;
    ck_assert_uint_eq(pl_splitmix64_next(&st), 0xE220A8397B1DCDAFull);
    st = 1234567;
    const uint64_t want[3] = {6457827717110365317ull, 3203168211198807973ull, 9817491932198370423ull};
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(pl_splitmix64_next(&st), want[i]);
    for (uint32_t e = 0; e <= 16; e++)
        ck_assert_int_eq(pl_gemm_random_exp2_q16(e << 16), 1LL << e);
    for (uint32_t q = 0; q < (16u << 16); q += 97) {
        const double exact = exp2(q / 65536.0);
        const long long v = pl_gemm_random_exp2_q16(q);
        /* floor of a value within 2^-24 relative of the exact one: off by one only next to an integer */
        ck_assert_msg(v <= (long long)floor(exact * (1 + 0x1p-24)) && v >= (long long)floor(exact * (1 - 0x1p-24)),
                      "2^(%u/65536) = %.9g, got %lld", q, exact, v);
    }
}
END_TEST

/* The shapes of seed 42 and of the largest seed, as an independent Python implementation of docs/gemm.md's text
 * computes them (arbitrary-precision integers): a seed names these shapes on any machine. */
START_TEST(same_seed_same_shapes)
{
    static const long long seed42[12][3] = {
        {6, 4736, 2808},     {420, 2944, 1600},  {693, 10432, 2880},  {17, 21888, 704},
        {37, 24704, 7832},   {9, 14400, 27200},  {32, 48640, 4480},   {1058, 27520, 872},
        {1632, 3264, 6208},  {11, 2152, 3904},   {25, 520, 440},      {1, 21248, 5224},
    };
    static const long long seed_max[4][3] = {{14061, 2176, 28288}, {662, 12416, 26752}, {1055, 21312, 9088},
                                             {1, 2048, 56320}};
    pl_gemm_shape_list a = parse_ok("random:12:42"), b = parse_ok("random:4:9223372036854775807");
    ck_assert_uint_eq(a.n, 12);
    for (size_t i = 0; i < 12; i++) {
        ck_assert_msg(a.items[i].m == seed42[i][0] && a.items[i].n == seed42[i][1] && a.items[i].k == seed42[i][2],
                      "seed 42, shape %zu: %lldx%lldx%lld", i, a.items[i].m, a.items[i].n, a.items[i].k);
        char name[96];
        pl_snprintf(name, sizeof name, "rnd%zu_m%lld_n%lld_k%lld", i + 1, seed42[i][0], seed42[i][1], seed42[i][2]);
        ck_assert_str_eq(a.items[i].name, name);
    }
    for (size_t i = 0; i < 4; i++)
        ck_assert(b.items[i].m == seed_max[i][0] && b.items[i].n == seed_max[i][1] && b.items[i].k == seed_max[i][2]);
    ck_assert_uint_eq(a.n_random, 1);
    ck_assert(a.random[0].count == 12 && a.random[0].seed == 42 && a.random[0].seed_given);
    /* another seed, other shapes */
    pl_gemm_shape_list c = parse_ok("random:12:43");
    size_t same = 0;
    for (size_t i = 0; i < 12; i++)
        same += c.items[i].m == a.items[i].m && c.items[i].n == a.items[i].n && c.items[i].k == a.items[i].k;
    ck_assert_uint_lt(same, 12);
    pl_gemm_shape_list_free(&a);
    pl_gemm_shape_list_free(&b);
    pl_gemm_shape_list_free(&c);
}
END_TEST

/* A fresh seed is recorded, below 2^32, and names the same shapes when given back. */
START_TEST(fresh_seed_is_recorded)
{
    pl_gemm_shape_list a = parse_ok("random:20"), b = parse_ok("random:20");
    ck_assert(a.n_random == 1 && !a.random[0].seed_given && a.random[0].seed <= 0xFFFFFFFFull);
    ck_assert_msg(a.random[0].seed != b.random[0].seed, "two fresh seeds equal: %llu", a.random[0].seed);
    char spec[64];
    pl_snprintf(spec, sizeof spec, "random:20:%llu", a.random[0].seed);
    pl_gemm_shape_list again = parse_ok(spec);
    ck_assert_uint_eq(again.n, 20);
    for (size_t i = 0; i < 20; i++)
        ck_assert_str_eq(again.items[i].name, a.items[i].name);
    pl_gemm_shape_list_free(&a);
    pl_gemm_shape_list_free(&b);
    pl_gemm_shape_list_free(&again);
}
END_TEST

/* 5 seeds of 4096 shapes (20480 draws; 40960 of N and K). Each fraction below is checked within 5 standard
 * deviations of its binomial (sqrt(p(1-p)/n)): a correct generator misses one of them with probability under 1e-5,
 * and the seeds are fixed, so the test gives the same answer on every run. */
START_TEST(distribution)
{
    enum { SEEDS = 5, DRAWS = SEEDS * PL_GEMM_MAX_SHAPES };
    size_t off64 = 0, n_below_4096 = 0, decade[5] = {0};
    long long m_min = 1LL << 40, m_max = 0;
    for (unsigned s = 0; s < SEEDS; s++) {
        pl_gemm_shape_list l = {0};
        pl_gemm_random_shapes(PL_GEMM_MAX_SHAPES, 1000 + s, 1, &l);
        ck_assert_uint_eq(l.n, PL_GEMM_MAX_SHAPES);
        for (size_t i = 0; i < l.n; i++) {
            const pl_gemm_shape *sh = &l.items[i];
            ck_assert_msg(sh->m >= 1 && sh->m <= 16384, "M = %lld", sh->m);
            const long long nk[2] = {sh->n, sh->k};
            for (int d = 0; d < 2; d++) {
                ck_assert_msg(nk[d] >= 256 && nk[d] <= 65536 && nk[d] % 8 == 0, "%s", sh->name);
                off64 += nk[d] % 64 != 0;
            }
            n_below_4096 += sh->n < 4096;
            m_min = sh->m < m_min ? sh->m : m_min;
            m_max = sh->m > m_max ? sh->m : m_max;
            decade[sh->m < 10 ? 0 : sh->m < 100 ? 1 : sh->m < 1000 ? 2 : sh->m < 10000 ? 3 : 4]++;
        }
        pl_gemm_shape_list_free(&l);
    }
#define WITHIN_5SD(count, n, p)                                                                                        \
    ck_assert_msg(fabs((double)(count) / (n) - (p)) <= 5 * sqrt((p) * (1 - (p)) / (n)), "%s: %.4f, expected %.4f",   \
                  #count, (double)(count) / (n), (p))
    WITHIN_5SD(off64, 2.0 * DRAWS, 0.25); /* one in four N or K no multiple of 64 */
    WITHIN_5SD(n_below_4096, (double)DRAWS, 0.5); /* log-uniform over 2^8-2^16: half below 2^12 */
    /* M = floor(2^x), x uniform over [0, 14]: P(M < 10^d) = d·log2(10)/14 */
    const double per_decade = log2(10.0) / 14;
    for (int d = 0; d < 4; d++)
        WITHIN_5SD(decade[d], (double)DRAWS, per_decade);
    WITHIN_5SD(decade[4], (double)DRAWS, 1 - 4 * per_decade);
#undef WITHIN_5SD
    ck_assert_int_eq(m_min, 1);
    ck_assert_msg(m_max > 16000, "largest M %lld", m_max);
}
END_TEST

/* random: is an item like a group: with names, groups and MxNxK in one list, in a shapes file, more than once. */
START_TEST(combines_with_the_spec)
{
    pl_gemm_shape_list l = parse_ok("decode, random:3:7 ,4096x4096x4096,random:2:7");
    ck_assert_uint_eq(l.n, 6 + 3 + 1 + 2);
    ck_assert_str_eq(l.items[0].name, "decode_m16_n4096_k4096");
    ck_assert(strncmp(l.items[6].name, "rnd1_", 5) == 0 && strncmp(l.items[11].name, "rnd5_", 5) == 0);
    ck_assert_str_eq(l.items[9].name, "m4096_n4096_k4096");
    /* the second draw of seed 7 repeats the first one's shapes, numbered on */
    ck_assert(l.items[10].m == l.items[6].m && l.items[10].n == l.items[6].n && l.items[10].k == l.items[6].k);
    ck_assert_uint_eq(l.n_random, 2);
    ck_assert(l.random[1].count == 2 && l.random[1].seed == 7);
    pl_gemm_shape_list_free(&l);

    char *dir = pl_test_tmpdir("gemm-random-file"), err[512];
    char *path = pl_path_join(dir, "shapes.txt");
    const char *text = "# a file may draw too\nrandom:3:5\nmine 64 64 64\n";
    ck_assert(pl_write_file_atomic(path, text, strlen(text), err, sizeof err) == 0);
    pl_gemm_shape_list f = {0};
    ck_assert_msg(pl_gemm_shapes_load_file(path, &f, err, sizeof err) == 0, "%s", err);
    ck_assert(f.n == 4 && f.n_random == 1 && f.random[0].seed == 5 && strcmp(f.items[3].name, "mine") == 0);
    pl_gemm_shape_list_free(&f);
    text = "random:3:5\nmine 64 64 64\n\nrandom:0\n";
    ck_assert(pl_write_file_atomic(path, text, strlen(text), err, sizeof err) == 0);
    ck_assert(pl_gemm_shapes_load_file(path, &f, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "shapes.txt:4: 'random:0': the count"), "%s", err);
    pl_gemm_shape_list_free(&f);
    free(path);
    free(dir);
}
END_TEST

START_TEST(bad_input)
{
    expect_parse_error("random:0", "'random:0': the count of random shapes must be a whole number from 1 to 4096");
    expect_parse_error("random:abc", "'random:abc': the count");
    expect_parse_error("random", "'random': the count");
    expect_parse_error("random:", "the count");
    expect_parse_error("random:-3", "the count");
    expect_parse_error("random:+3", "the count");
    expect_parse_error("random:4097", "the count");
    expect_parse_error("random:99999999999999999999999", "the count");
    expect_parse_error("random:5:xyz", "'random:5:xyz': the seed must be a whole number from 0 to 9223372036854775807");
    expect_parse_error("random:5:", "the seed");
    expect_parse_error("random:5:1:2", "the seed");
    expect_parse_error("random:5:9223372036854775808", "the seed");
    expect_parse_error("random:5:99999999999999999999999999999", "the seed");
    expect_parse_error("random:4096:1,random:1:1", "more than 4096 shapes");
    expect_parse_error("decode,random:4091:1", "more than 4096 shapes");
    expect_parse_error("randomly", "unknown shape 'randomly'");

    /* the verb: exit 2 and one line, nothing written */
    char *dir = pl_test_tmpdir("gemm-random-bad");
    char *args = pl_strfmt("gemm --shapes random:5:xyz --providers json:/dev/null --artifacts-dir %s/a -q", dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 2, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "the seed must be") && strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s", r.err);
    char *a = pl_path_join(dir, "a");
    ck_assert_msg(!pl_path_exists(a), "%s was written", a);
    pl_cmd_result_free(&r);
    free(a);
    free(args);
    free(dir);
}
END_TEST

/* The seed on stderr, in comparison.json's settings and in summary.md: given, and fresh. */
START_TEST(seed_in_the_report)
{
    char *dir = pl_test_tmpdir("gemm-random-report"), err[256];
    char *empty = pl_path_join(dir, "none.json");
    ck_assert(pl_write_file_atomic(empty, "{\"records\": []}", 15, err, sizeof err) == 0);
    for (int fresh = 0; fresh < 2; fresh++) {
        char *args = pl_strfmt("gemm --shapes %s,kv_proj_m4096_n4096_k4096 --providers json:%s --artifacts-dir %s/a "
                               "-q --json",
                               fresh ? "random:6" : "random:6:42", empty, dir);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code == 1, "exit %d: %s", r.exit_code, r.err); /* no records: missing */
        unsigned long long seed = 42;
        const char *line = strstr(r.err, "random shapes: 6 drawn with seed ");
        ck_assert_msg(line && sscanf(line, "random shapes: 6 drawn with seed %llu", &seed) == 1, "%s", r.err);
        ck_assert(fresh || seed == 42);
        char repeat[64];
        pl_snprintf(repeat, sizeof repeat, "random:6:%llu", seed);
        ck_assert_msg(strstr(r.err, repeat), "%s", r.err);

        json_error_t je;
        json_t *j = json_loads(r.out, 0, &je);
        ck_assert_msg(j, "no JSON: %s", je.text);
        json_t *d = json_array_get(json_object_get(json_object_get(j, "settings"), "random_shapes"), 0);
        ck_assert_msg(d, "%s", r.out);
        ck_assert_uint_eq((unsigned long long)json_integer_value(json_object_get(d, "seed")), seed);
        ck_assert_int_eq((int)json_integer_value(json_object_get(d, "count")), 6);
        ck_assert_str_eq(json_string_value(json_object_get(d, "spec")), repeat);
        ck_assert(json_is_true(json_object_get(d, "seed_given")) == !fresh);
        ck_assert_int_eq((int)json_array_size(json_object_get(j, "shapes")), 7);

        char *summary = pl_strfmt("%s/a/%s/summary.md", dir, json_string_value(json_object_get(j, "run_id")));
        char *md = pl_read_file(summary, NULL, err, sizeof err);
        ck_assert_msg(md, "%s", err);
        char *want = pl_strfmt("`%s` (seed %llu, %s)", repeat, seed, fresh ? "drawn for this run" : "given");
        ck_assert_msg(strstr(md, want), "expected '%s' in:\n%s", want, md);
        free(want);
        free(md);
        free(summary);
        json_decref(j);
        pl_cmd_result_free(&r);
        free(args);
    }
    free(empty);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_random_shapes");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, generator);
    tcase_add_test(tc, same_seed_same_shapes);
    tcase_add_test(tc, fresh_seed_is_recorded);
    tcase_add_test(tc, distribution);
    tcase_add_test(tc, combines_with_the_spec);
    tcase_add_test(tc, bad_input);
    tcase_add_test(tc, seed_in_the_report);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
