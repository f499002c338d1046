/* Bad input fed to every parser: each case here overflowed a buffer or an integer, cast an
 * out-of-range float, wrote outside its folder, took minutes, leaked, or echoed raw control bytes before its fix.
 * Unit checks on the parsers, and the real binary for exit codes and messages (under the sanitizer build a report or
 * a leak in it turns exit 2 into 1, so the CLI checks also catch those). */
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "cli/options.h"
#include "comm/job.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"
#include "perflab/params.h"
#include "perflab/target_registry.h"
#include "labs.h"
#include "selector/provider_comparison.h"
#include "selector/cutlass.h"
#include "selector/shapes.h"
#include "testutil.h"

/* `perflab ARGS` exits `code` with one line on stderr that holds `fragment`. Returns that line (malloc'd). */
static char *expect_exit(const char *args, int code, const char *fragment)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == code, "perflab %.300s: exit %d, expected %d; stderr: %.2000s", args, r.exit_code, code,
                  r.err);
    if (fragment)
        ck_assert_msg(strstr(r.err, fragment) != NULL, "perflab %.300s: expected '%s' in stderr: %.2000s", args,
                      fragment, r.err);
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "perflab %.300s: not one line on stderr: %.2000s", args, r.err);
    char *line = r.err;
    free(r.out);
    return line;
}

static void expect_usage(const char *args, const char *fragment)
{
    free(expect_exit(args, PL_EXIT_USAGE, fragment));
}

/* No byte below 0x20 (but the final newline), no DEL, and valid UTF-8. */
static int printable_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p == '\n' && p[1] == '\0')
            return 1;
        if (*p < 0x20 || *p == 0x7f)
            return 0;
        int extra = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
        if (extra < 0 || (extra == 1 && *p < 0xc2))
            return 0;
        for (int i = 1; i <= extra; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += extra + 1;
    }
    return 1;
}

/* ---- defect 1 and 2: an empty directory name ---- */

START_TEST(empty_directory_names_are_refused)
{
    char err[512] = "";
    ck_assert_int_eq(pl_dir_usable("", "artifacts directory", "--artifacts-dir", err, sizeof err), 0);
    ck_assert_msg(strstr(err, "--artifacts-dir") != NULL, "%s", err);
    ck_assert_int_eq(pl_mkdir_p("", err, sizeof err), -1);
    ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);

    char *dir = pl_test_tmpdir("empty-dir");
    ck_assert_int_eq(chdir(dir), 0); /* whatever they did, they did it here */
    expect_usage("run --targets selftest:sleep --artifacts-dir ''", "--artifacts-dir");
    expect_usage("gemm --shapes 1x1x1 --providers cutlass --artifacts-dir ''", "--artifacts-dir");
    expect_usage("comm allreduce --out-dir ''", "--out-dir");
    expect_usage("moe-readiness -o ''", NULL);
    expect_usage("probe --artifacts-dir ''", "--artifacts-dir");
    expect_usage("peak --artifacts-dir ''", "--artifacts-dir");
    free(dir);
}
END_TEST

/* ---- defect 3: a negative size with a suffix ---- */

START_TEST(sizes_never_overflow)
{
    long long v = 0;
    ck_assert_int_eq(pl_parse_size("-18014398509481983k", &v), -1);
    ck_assert_int_eq(pl_parse_size("18014398509481984k", &v), -1);
    ck_assert_int_eq(pl_parse_size("9223372036854775808", &v), -1);
    ck_assert_int_eq(pl_parse_size("-8589934592g", &v), 0); /* exactly -2^63 */
    ck_assert(v == LLONG_MIN);
    ck_assert_int_eq(pl_parse_size("8589934591g", &v), 0);
    ck_assert(v == 8589934591LL << 30);
    ck_assert_int_eq(pl_parse_size("-3k", &v), 0);
    ck_assert(v == -3072);
    expect_usage("run --targets selftest:sleep --target-extra-arg 'selftest:sleep=--n -18014398509481983k'",
                 "'--n' expects an integer");
    expect_usage("comm allreduce --min-bytes -18014398509481983k --max-bytes 1m", "--min-bytes");
    size_t *sizes = NULL, n = 0;
    char err[512];
    ck_assert_int_eq(pl_parse_size_list("1k,-18014398509481983k", "--message-sizes", &sizes, &n, err, sizeof err), -1);
    ck_assert_ptr_null(sizes);
}
END_TEST

/* ---- defect 4: a provider name from a records file must never become a path ---- */

START_TEST(json_provider_names_never_become_paths)
{
    char *dir = pl_test_tmpdir("provider-path");
    char *deep = pl_strfmt("%s/a/b/c", dir), err[1024];
    ck_assert_int_eq(pl_mkdir_p(deep, err, sizeof err), 0);
    char *rec = pl_strfmt("%s/rec.json", deep);
    const char *text =
        "{\"schema\": \"perflab.gemm.records/1\", \"records\": [{\"provider\": \"../../../x\", \"m\": 64, "
        "\"n\": 64, \"k\": 64, \"dtype\": \"bf16\", \"verified\": true, \"median_ms\": 0.01}]}";
    ck_assert_int_eq(pl_write_file_atomic(rec, text, strlen(text), err, sizeof err), 0);

    pl_gemm_provider *p = NULL;
    size_t n = 0;
    char *spec = pl_strfmt("json:%s", rec);
    ck_assert_int_eq(pl_gemm_providers_parse(spec, &p, &n, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "../../../x") != NULL && strstr(err, "provider") != NULL, "%s", err);

    char *args = pl_strfmt("gemm --shapes 64x64x64 --providers 'json:%s' --artifacts-dir '%s/art'", rec, deep);
    expect_usage(args, "provider");
    char *escaped = pl_strfmt("%s/x.json", dir);
    ck_assert_msg(!pl_path_exists(escaped), "%s was written", escaped);
    /* the same records under a plain name are fine */
    const char *good = "{\"records\": [{\"provider\": \"triton-3.1\", \"m\": 64, \"n\": 64, \"k\": 64, \"dtype\": "
                       "\"bf16\", \"verified\": true, \"median_ms\": 0.01}]}";
    ck_assert_int_eq(pl_write_file_atomic(rec, good, strlen(good), err, sizeof err), 0);
    ck_assert_msg(pl_gemm_providers_parse(spec, &p, &n, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(p[0].label, "triton-3.1");
    pl_gemm_providers_free(p, n);
    free(escaped);
    free(args);
    free(spec);
    free(rec);
    free(deep);
    free(dir);
}
END_TEST

/* ---- defect 5: limits before work ---- */

START_TEST(size_series_limits_come_before_the_list)
{
    size_t *s = (size_t *)1;
    /* a billion sizes are counted, not built */
    ck_assert_uint_eq(pl_comm_size_series(1, 1ULL << 30, 2, 1, 4096, &s), 4097);
    ck_assert_ptr_null(s);
    ck_assert_uint_eq(pl_comm_size_series(1, 1ULL << 30, 1.0000001, 0, 4096, &s), 4097);
    ck_assert_ptr_null(s);
    ck_assert_uint_eq(pl_comm_size_series(100, 400, 2, 100, 4096, &s), 4);
    ck_assert(s[3] == 400);
    free(s);
    /* a factor so large that size * factor leaves every integer type */
    ck_assert_uint_eq(pl_comm_size_series(8192, 1 << 20, 1e300, 0, 4096, &s), 1);
    free(s);
    ck_assert_uint_eq(pl_comm_size_series(SIZE_MAX - 1, SIZE_MAX, 2, 0, 4096, &s), 1);
    free(s);
    ck_assert_uint_eq(pl_comm_size_series(SIZE_MAX - 1, SIZE_MAX, 0, 5, 4096, &s), 1);
    free(s);
    const double t0 = pl_now_s();
    expect_usage("comm allreduce --min-bytes 1 --max-bytes 1g --step-bytes 1", "sizes from --min-bytes");
    ck_assert_msg(pl_now_s() - t0 < 10, "took %.1f s", pl_now_s() - t0);
}
END_TEST

START_TEST(suggestions_are_bounded)
{
    char *word = pl_xmalloc(10001);
    memset(word, 'x', 10000);
    word[10000] = '\0';
    const char *names[] = {"memory", "memory:coalescing", "gemm", "xxxxxxxxxxxxx"};
    char out[256];
    const double t0 = pl_now_s();
    ck_assert_int_eq(pl_suggest(word, names, 4, 3, out, sizeof out), 0);
    ck_assert_msg(pl_now_s() - t0 < 1, "took %.1f s", pl_now_s() - t0);
    /* still suggests for ordinary typos */
    ck_assert_int_eq(pl_suggest("memroy", names, 4, 3, out, sizeof out), 1);
    ck_assert_str_eq(out, "'memory'");
    char *args = pl_strfmt("run --targets %s", word);
    char *line = expect_exit(args, PL_EXIT_USAGE, "unknown target 'xxxx");
    ck_assert_msg(strlen(line) < 1000, "%zu bytes", strlen(line));
    ck_assert_msg(pl_now_s() - t0 < 10, "took %.1f s", pl_now_s() - t0);
    free(line);
    free(args);
    free(word);
}
END_TEST

/* ---- defect 6: cutlass_profiler rows ---- */

static int csv_with(const char *m, const char *n, const char *k, const pl_gemm_shape *shape, char *err, size_t errlen)
{
    char *csv = pl_strfmt("Problem,Provider,Operation,Disposition,Status,m,n,k,Runtime\n"
                          "1,CUTLASS,cutlass3x_sm90_k,passed,success,%s,%s,%s,0.18\n",
                          m, n, k);
    pl_gemm_record_list l = {0};
    int rc = pl_cutlass_csv_parse(csv, "c.csv", shape, "bf16", "nk", &l, err, errlen);
    if (rc == 0)
        ck_assert(l.n == 1 && l.items[0].m == shape->m && l.items[0].n == shape->n && l.items[0].k == shape->k);
    pl_gemm_record_list_free(&l);
    free(csv);
    return rc;
}

START_TEST(cutlass_rows_are_exact_integers_of_the_requested_shape)
{
    const pl_gemm_shape s = {"big", 4096, 4096, 4096};
    char err[512];
    static const char *const bad[] = {"nan",   "inf",   "-inf",  "1e300", "4096.7", "4096.0", "0x1000",
                                      " 4096", "4096 ", "+4096", "-4096", "",       "4096e0", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        ck_assert_msg(csv_with(bad[i], "4096", "4096", &s, err, sizeof err) == -1, "m = '%s' was accepted", bad[i]);
        ck_assert_msg(strstr(err, "c.csv:2:") != NULL, "m = '%s': %s", bad[i], err);
        ck_assert_msg(csv_with("4096", "4096", bad[i], &s, err, sizeof err) == -1, "k = '%s' was accepted", bad[i]);
    }
    ck_assert_msg(csv_with("4096", "4096", "4096", &s, err, sizeof err) == 0, "%s", err);
    /* a row for another shape is never this shape's result */
    ck_assert_int_eq(csv_with("16", "16", "16", &s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "16x16x16") && strstr(err, "4096x4096x4096"), "%s", err);
}
END_TEST

/* ---- defect 7: a float parameter's range is checked on the double, before any cast ---- */

START_TEST(float_parameters_are_checked_before_any_cast)
{
    const pl_param_def free_float = {.name = "x", .type = PL_PARAM_FLOAT, .default_value = "1"};
    const pl_param_def bounded = {.name = "ms", .type = PL_PARAM_FLOAT, .default_value = "1", .min = 0.01, .max = 1e4};
    long long i;
    double f;
    char err[256];
    static const char *const huge[] = {"1e300", "-1e300", "9.3e18", "-9.3e18", "1.7976931348623157e308"};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        ck_assert_int_eq(pl_param_parse_value(&free_float, huge[k], &i, &f, err, sizeof err), 0);
        ck_assert(f == strtod(huge[k], NULL));
        ck_assert(i == (f > 0 ? LLONG_MAX : LLONG_MIN));
        ck_assert_int_eq(pl_param_parse_value(&bounded, huge[k], &i, &f, err, sizeof err), -1);
        ck_assert_msg(strstr(err, "between 0.01 and 10000") != NULL, "%s", err);
    }
    ck_assert_int_eq(pl_param_parse_value(&free_float, "2.5", &i, &f, err, sizeof err), 0);
    ck_assert(f == 2.5 && i == 2);
    expect_usage("run --targets selftest:sleep --target-extra-arg 'selftest:sleep=--ms 1e300'", "between");
}
END_TEST

/* ---- defect 9: nothing left behind on an exit-2 path ---- */

START_TEST(a_failed_parse_leaves_nothing_to_free)
{
    int flag = 0, number = 0;
    pl_strlist list = {0}, pos = {0};
    const pl_option opts[] = {
        {"flag", 0, PL_OPT_FLAG, &flag, NULL, "", 0, 0},
        {"number", 0, PL_OPT_INT, &number, "N", "", 0, 0},
        {"item", 0, PL_OPT_LIST, &list, "X", "", 0, 0},
        {0},
    };
    char *argv[] = {"a", "--item", "x", "b", "--bogus"};
    char err[256];
    ck_assert_int_eq(pl_options_parse("t", opts, 5, argv, &pos, err, sizeof err), -1);
    ck_assert_msg(pos.items == NULL && pos.n == 0, "positional arguments left behind");
    ck_assert_msg(list.items == NULL && list.n == 0, "list values left behind");
    /* an integer option without bounds still fits its int */
    char *argv2[] = {"--number", "4294967296"};
    ck_assert_int_eq(pl_options_parse("t", opts, 2, argv2, &pos, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--number") != NULL, "%s", err);
    ck_assert_int_eq(number, 0);
    /* every verb's exit-2 path after positional arguments */
    expect_usage("compare a b --bogus", "unknown option '--bogus'");
    expect_usage("expectations show x --bogus", "unknown option '--bogus'");
    expect_usage("gemm x --bogus", "unknown option '--bogus'");
    expect_usage("list x --bogus", "unknown option '--bogus'");
    expect_usage("run x --bogus", "unknown option '--bogus'");
    expect_usage("comm allreduce --bogus", "unknown option '--bogus'");
}
END_TEST

/* ---- defect 10: what messages echo, provenance, an empty selection ---- */

START_TEST(messages_escape_what_they_echo)
{
    char *line = expect_exit("run --targets \"$(printf 'a\\033[31mb\\001')\"", PL_EXIT_USAGE, "a\\x1b[31mb\\x01");
    ck_assert_msg(printable_utf8(line), "%s", line);
    free(line);
    line = expect_exit("run --targets \"$(printf 'caf\\303\\251\\377')\"", PL_EXIT_USAGE, "café\\xff");
    ck_assert_msg(printable_utf8(line), "%s", line);
    free(line);
    line = expect_exit("run \"--$(printf 'x\\nwarning: y')\"", PL_EXIT_USAGE, "x\\nwarning: y");
    free(line);
    line = expect_exit("run --targets selftest:sleep --target-extra-arg \"selftest:sleep=--ms $(printf '\\033')\"",
                       PL_EXIT_USAGE, "\\x1b");
    free(line);
    /* a 100 KB value is cut to a readable length */
    line = expect_exit("run --targets \"$(head -c 100000 /dev/zero | tr '\\0' y)\"", PL_EXIT_USAGE, "… (100000 bytes)");
    ck_assert_msg(strlen(line) < 600, "%zu bytes", strlen(line));
    free(line);
    line = expect_exit("gemm --shapes \"$(head -c 100000 /dev/zero | tr '\\0' 7)\"", PL_EXIT_USAGE, "… (100000 bytes)");
    ck_assert_msg(strlen(line) < 600, "%zu bytes", strlen(line));
    free(line);
    line = expect_exit("comm \"$(printf 'all\\033reduce')\"", PL_EXIT_USAGE, "all\\x1breduce");
    free(line);
}
END_TEST

START_TEST(escaping_is_complete_and_idempotent)
{
    char out[PL_ESC_BUF];
    ck_assert_str_eq(pl_escape("plain: a-z, 0-9 and café ✓ 🙂", 0, out, sizeof out),
                     "plain: a-z, 0-9 and café ✓ 🙂");
    ck_assert_str_eq(pl_escape("a\nb\tc\rd\x1b[0m\x7f", 0, out, sizeof out), "a\\nb\\tc\\rd\\x1b[0m\\x7f");
    /* not UTF-8: a lone continuation byte, a cut sequence, overlong, a surrogate, past U+10FFFF; C1 controls */
    ck_assert_str_eq(pl_escape("\x80|\xc3|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xc2\x9b", 0, out, sizeof out),
                     "\\x80|\\xc3|\\xc0\\xaf|\\xed\\xa0\\x80|\\xf4\\x90\\x80\\x80|\\xc2\\x9b");
    ck_assert_str_eq(pl_escape(NULL, 0, out, sizeof out), "(null)");
    /* escaping twice changes nothing */
    char twice[PL_ESC_BUF];
    pl_escape("x\x01\xff", 0, out, sizeof out);
    ck_assert_str_eq(pl_escape(out, 0, twice, sizeof twice), out);
    /* long values are cut at a character boundary, with their length */
    char *long_value = pl_xmalloc(100001);
    for (size_t i = 0; i < 100000; i += 2)
        memcpy(long_value + i, "\xc3\xa9", 2); /* é */
    long_value[100000] = '\0';
    const char *e = PL_ESC(long_value);
    ck_assert_msg(strlen(e) <= PL_ESC_MAX + 32, "%zu bytes", strlen(e));
    ck_assert_msg(strstr(e, "éé… (100000 bytes)") != NULL, "%s", e);
    ck_assert_msg(printable_utf8(e), "%s", e);
    free(long_value);
    /* a message cut to fit its buffer never ends inside a character */
    char small[8];
    pl_snprintf(small, sizeof small, "%s", "abcdefé");
    ck_assert_str_eq(small, "abcdef");
    pl_snprintf(small, sizeof small, "%s", "ab✓✓");
    ck_assert_str_eq(small, "ab✓");
}
END_TEST

START_TEST(command_line_survives_non_utf8)
{
    char *argv[] = {"perflab", "run", "--targets", "caf\xc3\xa9\xff", "--x=\x1b"};
    pl_provenance p;
    pl_provenance_collect(&p, 5, argv, NULL);
    json_t *j = pl_provenance_to_json(&p);
    const char *cl = json_string_value(json_object_get(j, "command_line"));
    ck_assert_msg(cl != NULL, "command_line dropped");
    ck_assert_str_eq(cl, "perflab run --targets café\\xff --x=\\x1b");
    json_decref(j);
    pl_provenance_free(&p);
}
END_TEST

START_TEST(an_empty_selection_is_refused)
{
    pl_labs_register_all();
    const pl_target **sel = NULL;
    size_t n = 0;
    char err[512] = "";
    ck_assert_int_eq(pl_registry_select("", &sel, &n, err, sizeof err), -1);
    ck_assert_ptr_null(sel);
    ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);
    ck_assert_int_eq(pl_registry_select(" , ", &sel, &n, err, sizeof err), -1);
    ck_assert_int_eq(pl_registry_select(NULL, &sel, &n, err, sizeof err), 0); /* not given: the quick suite */
    ck_assert(n > 0);
    free(sel);
    expect_usage("run --targets ''", "--targets");
    expect_usage("verify --targets ''", "--targets");
}
END_TEST

/* ---- raw control characters, usage lines, shapes files with NUL bytes ---- */

static void hostile_names(json_t *root)
{
    json_t *t = json_array_get(json_object_get(root, "targets"), 0);
    json_object_set_new(t, "name", json_string("memory:\x1b]0;owned\x07\nx"));
    json_object_set_new(json_array_get(json_object_get(t, "variants"), 1), "name", json_string("co\x1b[2Jalesced"));
    json_object_set_new(root, "run_id", json_string("id\x1b[31m"));
}

/* compare, expectations compare and report printed ESC/OSC sequences from names in run.json (table cells, the
 * header, the label); gemm printed a json: record's reason over several lines. */
START_TEST(names_from_files_reach_the_terminal_escaped)
{
    char *dir = pl_test_tmpdir("raw-names");
    char *run = pl_test_write_run(dir, "run", hostile_names);
    const char *cmds[] = {"compare '%s' '%s'", "expectations compare '%s' --key k --expectations-dir '%s'",
                          "report '%s' --out '%s'"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char *args = pl_strfmt(cmds[i], run, i ? dir : run);
        pl_cmd_result r = pl_run_perflab(NULL, args);
        ck_assert_msg(r.exit_code <= 1, "%s: exit %d: %s", args, r.exit_code, r.err);
        ck_assert_msg(!strchr(r.out, '\x1b') && !strchr(r.err, '\x1b') && !strchr(r.out, '\x07'),
                      "%s printed a raw ESC or BEL: %s", args, r.out);
        ck_assert_msg(strstr(r.out, "\\x1b"), "%s: the names are not shown escaped: %s", args, r.out);
        pl_cmd_result_free(&r);
        free(args);
    }
    /* the gemm comparison's lines for cells without a record */
    pl_gemm_shape shape = {"sh\x1b[1m", 16, 16, 16};
    pl_gemm_provider prov = {.kind = PL_PROV_JSON, .label = "p"};
    pl_gemm_comparison c;
    pl_gemm_comparison_init(&c, &shape, 1, &prov, 1, "bf16", "nk");
    pl_gemm_cell_set(pl_gemm_cell_at(&c, 0, 0), PL_GEMM_FAILED, "cutlass_profiler: status \x1b[31m\nfailed");
    pl_buf b = {0};
    ck_assert_uint_eq(pl_gemm_comparison_missing(&c, &b), 1);
    ck_assert_msg(!strchr(b.data, '\x1b') && strchr(b.data, '\n') == b.data + b.len - 1, "%s", b.data);
    pl_buf_free(&b);
    pl_gemm_comparison_free(&c);
    free(run);
    free(dir);
}
END_TEST

/* `perflab` alone printed the whole usage to stderr; profile --variant and --target-extra-arg echoed raw. */
START_TEST(usage_errors_are_one_escaped_line)
{
    free(expect_exit("", PL_EXIT_USAGE, "perflab --help"));
    free(expect_exit("profile memory:coalescing --variant \"$(printf 'v\\nw')\"", PL_EXIT_USAGE, "v\\nw"));
    free(expect_exit("run --targets selftest:sleep --target-extra-arg \"$(printf 'a\\033b')\"", PL_EXIT_USAGE,
                     "a\\x1bb"));
    free(expect_exit("expectations --expectations-dir \"$(printf 'd\\nx')\" show k", PL_EXIT_USAGE, NULL));
}
END_TEST

/* A shapes file was read up to its first NUL byte, the rest silently ignored; 60,000 shapes took 38 s. */
START_TEST(shapes_files_are_text_and_bounded)
{
    char *dir = pl_test_tmpdir("shapes-nul");
    char *path = pl_path_join(dir, "shapes.txt"), err[512];
    static const char text[] = "a 16 16 16\nb 32 32 32\0\nc 64 64 64\n";
    ck_assert_int_eq(pl_write_file_atomic(path, text, sizeof text - 1, err, sizeof err), 0);
    pl_gemm_shape_list l = {0};
    ck_assert_int_eq(pl_gemm_shapes_load_file(path, &l, err, sizeof err), -1);
    ck_assert_msg(strstr(err, ":2: a NUL byte"), "%s", err);
    pl_gemm_shape_list_free(&l);
    pl_buf many = {0};
    for (int i = 0; i < 60000; i++)
        pl_buf_printf(&many, "s%d %d 16 16\n", i, i + 1);
    ck_assert_int_eq(pl_write_file_atomic(path, many.data, many.len, err, sizeof err), 0);
    pl_buf_free(&many);
    const double t0 = pl_now_s();
    ck_assert_int_eq(pl_gemm_shapes_load_file(path, &l, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "more than 4096 shapes"), "%s", err);
    ck_assert_msg(pl_now_s() - t0 < 5, "%.1f s", pl_now_s() - t0);
    pl_gemm_shape_list_free(&l);
    free(path);
    free(dir);
}
END_TEST

/* A full disk printed the same error twice in run (once for the writes after each target, again for the final
 * write). A file size limit (ulimit -f, SIGXFSZ ignored) fails every write of run.json the same way. */
START_TEST(a_failing_disk_is_reported_once)
{
    char *dir = pl_test_tmpdir("full-disk");
    char *args = pl_strfmt("run --targets selftest:sleep,selftest:gate --quiet --artifacts-dir '%s' --expectations-dir "
                           "'%s' --min-time-s 0.05 --max-time-s 0.1",
                           dir, dir);
    pl_cmd_result r = pl_run_perflab("trap '' XFSZ; ulimit -f 1;", args);
    ck_assert_msg(r.exit_code == 1, "exit %d: %s", r.exit_code, r.err);
    const char *first = strstr(r.err, "cannot write");
    ck_assert_msg(first && !strstr(first + 1, "cannot write"), "not said once: %s", r.err);
    pl_cmd_result_free(&r);
    free(args);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bad_input");
    TCase *tc = tcase_create("defects");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, empty_directory_names_are_refused);
    tcase_add_test(tc, sizes_never_overflow);
    tcase_add_test(tc, json_provider_names_never_become_paths);
    tcase_add_test(tc, size_series_limits_come_before_the_list);
    tcase_add_test(tc, suggestions_are_bounded);
    tcase_add_test(tc, cutlass_rows_are_exact_integers_of_the_requested_shape);
    tcase_add_test(tc, float_parameters_are_checked_before_any_cast);
    tcase_add_test(tc, a_failed_parse_leaves_nothing_to_free);
    tcase_add_test(tc, messages_escape_what_they_echo);
    tcase_add_test(tc, escaping_is_complete_and_idempotent);
    tcase_add_test(tc, command_line_survives_non_utf8);
    tcase_add_test(tc, an_empty_selection_is_refused);
    tcase_add_test(tc, names_from_files_reach_the_terminal_escaped);
    tcase_add_test(tc, usage_errors_are_one_escaped_line);
    tcase_add_test(tc, shapes_files_are_text_and_bounded);
    tcase_add_test(tc, a_failing_disk_is_reported_once);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
