/* perflab gemm without a GPU: shape parsing, shapes files (errors with line numbers), the record schema and the
 * json: provider's reader, CUTLASS's CSV (by header names) and the profiler run through a stand-in script, the
 * comparison's winners and exit code, and the verb end to end on json providers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/results_json.h"
#include "core/measure.h"
#include "core/util.h"
#include "selector/gemm_report.h"
#include "gemm/gemm.h"
#include "selector/provider_comparison.h"
#include "selector/cutlass.h"
#include "selector/records.h"
#include "selector/shapes.h"
#include "testutil.h"

static char *write_tmp(const char *tag, const char *name, const char *text)
{
    char *dir = pl_test_tmpdir(tag), err[256];
    char *path = pl_path_join(dir, name);
    ck_assert_msg(pl_write_file_atomic(path, text, strlen(text), err, sizeof err) == 0, "%s", err);
    free(dir);
    return path;
}

static void expect_parse_error(const char *spec, const char *fragment)
{
    pl_gemm_shape_list l = {0};
    char err[512];
    ck_assert_msg(pl_gemm_shapes_parse(spec, &l, err, sizeof err) != 0, "'%s' parsed", spec);
    ck_assert_msg(strstr(err, fragment) != NULL, "'%s': expected '%s' in: %s", spec, fragment, err);
    pl_gemm_shape_list_free(&l);
}

START_TEST(shapes_parse)
{
    pl_gemm_shape_list l = {0};
    char err[512];
    ck_assert_msg(pl_gemm_shapes_parse("kv_proj_m4096_n4096_k4096, 1000x3000x520,17X33X65", &l, err, sizeof err) == 0,
                  "%s", err);
    ck_assert_int_eq((int)l.n, 3);
    ck_assert_str_eq(l.items[0].name, "kv_proj_m4096_n4096_k4096");
    ck_assert(l.items[0].m == 4096 && l.items[0].n == 4096 && l.items[0].k == 4096);
    ck_assert_str_eq(l.items[1].name, "m1000_n3000_k520");
    ck_assert(l.items[1].m == 1000 && l.items[1].n == 3000 && l.items[1].k == 520);
    ck_assert(l.items[2].m == 17 && l.items[2].n == 33 && l.items[2].k == 65);
    /* groups expand to the built-ins; a shape named twice is kept once */
    ck_assert(pl_gemm_shapes_parse("prefill,kv_proj_m4096_n4096_k4096", &l, err, sizeof err) == 0);
    ck_assert_int_eq((int)l.n, 3 + 5);
    pl_gemm_shape_list_free(&l);
    ck_assert(pl_gemm_shapes_parse("default", &l, err, sizeof err) == 0);
    ck_assert_int_eq((int)l.n, 12); /* prefill + decode, as before the wide group */
    int decode16 = 0, wide = 0;
    for (size_t i = 0; i < l.n; i++) {
        decode16 |= l.items[i].m == 16;
        wide |= l.items[i].n == 28672 || l.items[i].k == 28672;
    }
    ck_assert(decode16 && wide);
    ck_assert(pl_gemm_shape_flops(&l.items[0]) == 2.0 * 8192 * 16384 * 4096);
    pl_gemm_shape_list_free(&l);

    expect_parse_error("kv_proj", "unknown shape 'kv_proj' (did you mean");
    expect_parse_error("4096x4096", "'4096x4096' is not a shape: write MxNxK");
    expect_parse_error("0x4x4", "is not a shape");
    expect_parse_error("4x4x4x4", "is not a shape");
    expect_parse_error("4096x4096x99999999", "is not a shape");
    expect_parse_error("1048576x1048576x8", "exceeds 2^32 output elements");
    expect_parse_error(" , ,", "--shapes is empty");
}
END_TEST

static int has_suffix_dims(const pl_gemm_shape *s)
{
    char want[96];
    snprintf(want, sizeof want, "_m%lld_n%lld_k%lld", s->m, s->n, s->k);
    const size_t n = strlen(s->name), w = strlen(want);
    return n > w && strcmp(s->name + n - w, want) == 0;
}

/* The wide group covers every class of shape inference and training meet, each shape's origin stated; default stays as
 * it was. */
START_TEST(wide_group)
{
    size_t n, ng;
    const pl_gemm_builtin *b = pl_gemm_builtins(&n);
    const char *const *groups = pl_gemm_shape_groups(&ng);
    int has_wide = 0;
    for (size_t i = 0; i < ng; i++)
        has_wide |= strcmp(groups[i], "wide") == 0;
    ck_assert(has_wide);
    int decode_m[129] = {0}, small_prefill = 0, odd_m = 0, odd_n = 0, odd_k = 0, short_k = 0, long_k = 0, narrow = 0,
        vocab = 0, wide = 0;
    const char *models[] = {"llama3_8b", "llama3_70b", "mixtral", "qwen2", "deepseek_v3"};
    int model_seen[5] = {0};
    for (size_t i = 0; i < n; i++) {
        const pl_gemm_shape *s = &b[i].shape;
        ck_assert_msg(b[i].origin && strlen(b[i].origin) > 10, "%s: no origin", s->name);
        ck_assert_msg(has_suffix_dims(s), "%s: the name does not end in its dimensions", s->name);
        ck_assert((double)s->m * s->n <= 4294967295.0);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(b[j].shape.name, s->name) != 0, "%s twice", s->name);
        if (!pl_gemm_group_has("wide", &b[i])) {
            ck_assert(pl_gemm_group_has("default", &b[i]));
            continue;
        }
        ck_assert(!pl_gemm_group_has("default", &b[i]));
        wide++;
        if (s->m <= 128)
            decode_m[s->m] = 1;
        small_prefill += s->m >= 256 && s->m <= 2048;
        odd_m += s->m % 64 != 0 && s->m > 128;
        odd_n += s->n % 64 != 0;
        odd_k += s->k % 64 != 0;
        short_k += s->k <= 1024;
        long_k += s->k >= 16384;
        narrow += s->n <= 512;
        vocab += s->n >= 32000 && s->n <= 152064 && s->k <= 8192;
        for (int j = 0; j < 5; j++)
            model_seen[j] |= strncmp(s->name, models[j], strlen(models[j])) == 0;
    }
    ck_assert_int_ge(wide, 30);
    ck_assert(decode_m[1] && decode_m[16] && decode_m[32] && decode_m[64] && decode_m[128]);
    ck_assert_int_ge(small_prefill, 4);
    ck_assert(odd_m >= 2 && odd_n >= 2 && odd_k >= 2);
    ck_assert(short_k >= 3 && long_k >= 3 && narrow >= 3 && vocab >= 4);
    for (int j = 0; j < 5; j++)
        ck_assert_msg(model_seen[j], "no %s projection", models[j]);

    /* --shapes wide expands to the group, next to other items */
    pl_gemm_shape_list l = {0};
    char err[512];
    ck_assert_msg(pl_gemm_shapes_parse("wide,17x33x65", &l, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq((int)l.n, wide + 1);
    ck_assert_str_eq(l.items[0].name, "llama3_8b_qkv_m1_n6144_k4096");
    pl_gemm_shape_list_free(&l);
    expect_parse_error("wid", "did you mean 'wide'");

    pl_cmd_result r = pl_run_perflab(NULL, "gemm --list-shapes");
    ck_assert_int_eq(r.exit_code, 0);
    char want[64];
    snprintf(want, sizeof want, "wide (%d)", wide);
    ck_assert_msg(strstr(r.out, want) && strstr(r.out, "default (12)"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "DeepSeek-V3 MLA kv_b_proj"), "no origin column: %s", r.out);
    pl_cmd_result_free(&r);
}
END_TEST

static void expect_file_error(const char *text, const char *fragment)
{
    char *path = write_tmp("shapes-file", "shapes.txt", text);
    pl_gemm_shape_list l = {0};
    char err[1024];
    ck_assert_msg(pl_gemm_shapes_load_file(path, &l, err, sizeof err) != 0, "loaded: %s", text);
    char *want = pl_strfmt("%s:%s", path, fragment);
    ck_assert_msg(strstr(err, want) != NULL, "expected '%s' in: %s", want, err);
    free(want);
    free(path);
    pl_gemm_shape_list_free(&l);
}

START_TEST(shapes_file)
{
    char *path = write_tmp("shapes-file", "ok.txt",
                           "# my model\n\nqkv 4096 12288 4096   # fused projection\nout_proj 4096x4096x4096\n"
                           "17x33x65\nattention_qk_m8192_n4096_k4096\n");
    pl_gemm_shape_list l = {0};
    char err[1024];
    ck_assert_msg(pl_gemm_shapes_load_file(path, &l, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq((int)l.n, 4);
    ck_assert_str_eq(l.items[0].name, "qkv");
    ck_assert(l.items[0].m == 4096 && l.items[0].n == 12288 && l.items[0].k == 4096);
    ck_assert_str_eq(l.items[1].name, "out_proj");
    ck_assert_str_eq(l.items[2].name, "m17_n33_k65");
    ck_assert(l.items[3].m == 8192);
    pl_gemm_shape_list_free(&l);
    free(path);

    expect_file_error("a 1 2 3\nb 4 5\n", "2: expected 'MxNxK', 'NAME MxNxK' or 'NAME M N K'");
    expect_file_error("# c\n\n\nqkv 4096 x 4096\n", "4: expected");
    expect_file_error("ok 1x2x3\nbad name! 1x2x3\n", "2: expected");
    expect_file_error("ok 1x2x3\nbad/name 1x2x3\n", "2: shape name 'bad/name' must be");
    expect_file_error("1x1x1\nnot_a_shape\n", "2: unknown shape 'not_a_shape'");
    expect_file_error("kv_proj_m4096_n4096_k4096 1x2x3\n", "1: 'kv_proj_m4096_n4096_k4096' is a built-in shape");
    expect_file_error("a b c d e f\n", "1: expected");
    char *empty = write_tmp("shapes-file", "empty.txt", "# nothing\n\n");
    ck_assert(pl_gemm_shapes_load_file(empty, &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "no shapes in the file") != NULL, "%s", err);
    free(empty);
    ck_assert(pl_gemm_shapes_load_file("/nonexistent/shapes.txt", &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "/nonexistent/shapes.txt") != NULL, "%s", err);
}
END_TEST

static void sample_record(pl_gemm_record *r)
{
    memset(r, 0, sizeof *r);
    r->provider = pl_strdup("perflab");
    r->shape = pl_strdup("kv_proj_m4096_n4096_k4096");
    r->m = r->n = r->k = 4096;
    r->dtype = pl_strdup("bf16");
    r->layout = pl_strdup("nk");
    r->kernel = pl_strdup("wgmma_ws_128x256x64_s4");
    r->config = json_pack("{s:s, s:i}", "tile", "128x256x64", "stages", 4);
    r->median_ms = 0.2;
    r->tflops = 687.2;
    r->noise = 0.004;
    r->samples = 57;
    r->verified = 1;
    r->rel_l2_error = 2.1e-3;
    r->status = PL_GEMM_OK;
}

START_TEST(record_schema_round_trip)
{
    pl_gemm_record r, back;
    sample_record(&r);
    json_t *j = pl_gemm_record_to_json(&r);
    /* every field of the schema is there */
    const char *keys[] = {"provider",     "shape",  "m",         "n",      "k",     "dtype",   "layout",
                          "kernel",       "config", "median_ms", "tflops", "noise", "samples", "verified",
                          "rel_l2_error", "status", "reason"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(json_object_get(j, keys[i]) != NULL, "no '%s'", keys[i]);
    char err[512];
    ck_assert_msg(pl_gemm_record_from_json(j, "r", &back, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(back.kernel, r.kernel);
    ck_assert(back.m == 4096 && back.samples == 57 && back.verified && back.status == PL_GEMM_OK);
    ck_assert(fabs(back.median_ms - 0.2) < 1e-12 && fabs(back.tflops - 687.2) < 1e-9);
    ck_assert_int_eq((int)json_integer_value(json_object_get(back.config, "stages")), 4);
    json_decref(j);
    pl_gemm_record_free(&back);

    /* what a reader must refuse, naming the key */
    struct {
        const char *text, *fragment;
    } bad[] = {
        {"{\"m\": 1, \"n\": 1, \"k\": 1, \"dtype\": \"bf16\", \"median_ms\": 1, \"verified\": true}",
         "r.provider: expected a string, found nothing"},
        {"{\"provider\": \"t\", \"m\": 0, \"n\": 1, \"k\": 1, \"dtype\": \"bf16\", \"median_ms\": 1, \"verified\": "
         "true}",
         "r.m: expected a positive integer"},
        {"{\"provider\": \"t\", \"m\": 1, \"n\": 1, \"k\": 1, \"dtype\": \"bf16\", \"median_ms\": -1, \"verified\": "
         "true}",
         "r.median_ms: expected a positive number, found a number"},
        {"{\"provider\": \"t\", \"m\": 1, \"n\": 1, \"k\": 1, \"dtype\": \"bf16\", \"median_ms\": 1, \"verified\": 1}",
         "r.verified: expected true or false, found a number"},
        {"{\"provider\": \"t\", \"m\": 1, \"n\": 1, \"k\": 1, \"dtype\": \"bf16\", \"median_ms\": 1, \"verified\": "
         "true, "
         "\"status\": \"great\"}",
         "r.status: expected ok, failed, unsupported or missing, found 'great'"},
        {"[1]", "r: expected an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *b = json_loads(bad[i].text, 0, NULL);
        ck_assert_ptr_nonnull(b);
        ck_assert_msg(pl_gemm_record_from_json(b, "r", &back, err, sizeof err) != 0, "accepted %s", bad[i].text);
        ck_assert_msg(strstr(err, bad[i].fragment) != NULL, "expected '%s' in: %s", bad[i].fragment, err);
        json_decref(b);
    }
    /* a failed record needs no time; tflops is derived when absent */
    json_t *f = json_loads("{\"provider\": \"t\", \"m\": 1000, \"n\": 1000, \"k\": 1000, \"dtype\": \"bf16\", "
                           "\"median_ms\": 0.002, \"verified\": true}",
                           0, NULL);
    ck_assert(pl_gemm_record_from_json(f, "r", &back, err, sizeof err) == 0);
    ck_assert(fabs(back.tflops - 1000.0) < 1e-6);
    ck_assert_str_eq(back.layout, "nk");
    pl_gemm_record_free(&back);
    json_decref(f);
    pl_gemm_record_free(&r);
}
END_TEST

START_TEST(records_file_reader)
{
    char *path = write_tmp("records", "triton.json",
                           "{\"schema\": \"perflab.gemm.records/1\", \"provider\": \"triton\", \"records\": [\n"
                           " {\"provider\": \"triton\", \"m\": 64, \"n\": 64, \"k\": 64, \"dtype\": \"bf16\", "
                           "\"median_ms\": 0.5, \"verified\": true},\n"
                           " {\"provider\": \"triton\", \"m\": 64, \"n\": 64, \"k\": 64, \"dtype\": \"bf16\", "
                           "\"median_ms\": 0.25, \"verified\": true},\n"
                           " {\"provider\": \"triton\", \"m\": 64, \"n\": 64, \"k\": 64, \"dtype\": \"bf16\", "
                           "\"median_ms\": 0.1, \"verified\": false}\n]}\n");
    pl_gemm_record_list l = {0};
    char err[1024];
    ck_assert_msg(pl_gemm_records_load(path, &l, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq((int)l.n, 3);
    const pl_gemm_record *best = pl_gemm_records_fastest(&l);
    ck_assert(best && best->median_ms == 0.25); /* the unverified 0.1 does not count */
    pl_gemm_record_list_free(&l);
    free(path);

    /* a bare array works too */
    path = write_tmp("records", "bare.json",
                     "[{\"provider\": \"x\", \"m\": 1, \"n\": 2, \"k\": 3, \"dtype\": \"fp16\", \"median_ms\": 1, "
                     "\"verified\": true}]");
    ck_assert(pl_gemm_records_load(path, &l, err, sizeof err) == 0 && l.n == 1);
    pl_gemm_record_list_free(&l);
    free(path);

    /* syntax errors carry FILE:LINE:COLUMN, schema errors the record and key */
    path = write_tmp("records", "broken.json", "{\"records\": [\n  {\"provider\": \"x\",,}\n]}");
    ck_assert(pl_gemm_records_load(path, &l, err, sizeof err) != 0);
    char *want = pl_strfmt("%s:2:", path);
    ck_assert_msg(strstr(err, want) != NULL, "expected '%s' in: %s", want, err);
    free(want);
    free(path);
    path = write_tmp("records", "schema.json",
                     "{\"records\": [{\"provider\": \"x\", \"m\": 1, \"n\": 2, \"k\": 3, \"dtype\": \"bf16\", "
                     "\"median_ms\": 1, \"verified\": true}, {\"provider\": \"x\", \"m\": 1}]}");
    ck_assert(pl_gemm_records_load(path, &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "records[1].n: expected a positive integer") != NULL, "%s", err);
    free(path);
    path = write_tmp("records", "other.json", "{\"schema\": \"perflab.run/1\", \"records\": []}");
    ck_assert(pl_gemm_records_load(path, &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "not a perflab gemm records file") != NULL, "%s", err);
    free(path);
    pl_gemm_record_list_free(&l);
}
END_TEST

/* Columns in another order than the profiler's, extra columns, two sections, a failed row. */
static const char *cutlass_csv =
    "Problem,Provider,OperationKind,Operation,Disposition,Status,gemm_kind,m,n,k,A,B,C,D,alpha,beta,cta_m,cta_n,cta_k,"
    "cluster_m,cluster_n,cluster_k,stages,Bytes,Flops,Flops/Byte,Runtime,GB/s,GFLOPs\n"
    "1,CUTLASS,gemm,cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_2x1x1_0_tnn_align8_warpspecialized_"
    "cooperative_epi_tma,passed,success,universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,bf16:row,1,0,128,256,64,"
    "2,1,1,4,100663296,137438953472,1365,0.1802,558.8,762710\n"
    "1,CUTLASS,gemm,cutlass3x_sm90_slow,incorrect,success,universal,4096,4096,4096,bf16:row,bf16:column,bf16:row,"
    "bf16:row,1,0,64,64,64,1,1,1,7,100663296,137438953472,1365,0.1,558.8,999999\n"
    "\n"
    "Runtime,GFLOPs,Disposition,Status,Operation,Problem,Provider,m,n,k\n"
    "0.1760,780917,passed,success,cutlass3x_other_kernel,1,CUTLASS,4096,4096,4096\n";

START_TEST(cutlass_csv_by_header_names)
{
    pl_gemm_record_list l = {0};
    char err[512];
    const pl_gemm_shape kv = {"kv", 4096, 4096, 4096}, one = {"s", 1, 1, 1};
    /* the second section's header does not start with Problem: it is a data row of the first -> error */
    ck_assert(pl_cutlass_csv_parse(cutlass_csv, "c.csv", &kv, "bf16", "nk", &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "c.csv:5:") != NULL, "%s", err);
    pl_gemm_record_list_free(&l);

    char *fixed = pl_strdup(cutlass_csv);
    char *second = strstr(fixed, "Runtime,GFLOPs,Disposition,Status,Operation,Problem,Provider,m,n,k");
    memcpy(second, "Problem,Provider,Disposition,Status,Operation,Runtime,GFLOPs,m,n,k",
           strlen("Problem,Provider,Disposition,Status,Operation,Runtime,GFLOPs,m,n,k"));
    char *row = strstr(fixed, "0.1760,780917,passed,success,cutlass3x_other_kernel,1,CUTLASS");
    const char *reordered = "1,CUTLASS,passed,success,cutlass3x_other_kernel,0.1760,780917";
    memcpy(row, reordered, strlen(reordered));
    ck_assert_msg(pl_cutlass_csv_parse(fixed, "c.csv", &kv, "bf16", "nk", &l, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq((int)l.n, 3);
    const pl_gemm_record *r = &l.items[0];
    ck_assert_str_eq(r->provider, "cutlass");
    ck_assert_str_eq(r->shape, "kv");
    ck_assert(r->m == 4096 && r->status == PL_GEMM_OK && r->verified);
    ck_assert(fabs(r->median_ms - 0.1802) < 1e-12);
    ck_assert(fabs(r->tflops - 2.0 * 4096.0 * 4096 * 4096 / (0.1802 * 1e9)) < 1e-6);
    ck_assert_str_eq(json_string_value(json_object_get(r->config, "cta")), "128x256x64");
    ck_assert_str_eq(json_string_value(json_object_get(r->config, "cluster")), "2x1x1");
    ck_assert_str_eq(json_string_value(json_object_get(r->config, "stages")), "4");
    ck_assert(l.items[1].status == PL_GEMM_FAILED && !l.items[1].verified);
    ck_assert_msg(strstr(l.items[1].reason, "disposition incorrect") != NULL, "%s", l.items[1].reason);
    ck_assert(l.items[2].status == PL_GEMM_OK && fabs(l.items[2].median_ms - 0.176) < 1e-12);
    ck_assert_str_eq(l.items[2].kernel, "cutlass3x_other_kernel");
    pl_gemm_record_list_free(&l);
    free(fixed);

    ck_assert(pl_cutlass_csv_parse("Problem,Provider,Operation,m,n,k\n1,CUTLASS,x,1,1,1\n", "d.csv", &one, "bf16", "nk",
                                   &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "d.csv:1: the CSV header has no 'Disposition' column") != NULL, "%s", err);
    ck_assert(
        pl_cutlass_csv_parse("Problem,Operation,Disposition,Status,m,n,k,Runtime\n1,x,passed,success,1,1,1,fast\n",
                             "e.csv", &one, "bf16", "nk", &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "e.csv:2: Runtime 'fast' is not a number") != NULL, "%s", err);
    ck_assert(pl_cutlass_csv_parse("Problem,Operation,Disposition,Status,m,n,k,Runtime\n1,x,passed\n", "f.csv", &one,
                                   "bf16", "nk", &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "f.csv:2: 3 fields where the header has 8") != NULL, "%s", err);
    ck_assert(pl_cutlass_csv_parse("", "g.csv", &one, "bf16", "nk", &l, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "no result rows") != NULL, "%s", err);
    pl_gemm_record_list_free(&l);

    /* the profiler's command line: layouts and types as CUTLASS names them */
    pl_gemm_shape s = {"kv", 4096, 2048, 1024};
    char **argv = pl_cutlass_argv("/opt/cutlass_profiler", &s, "bf16", "nk", "/tmp/x");
    pl_buf line = {0};
    for (char **a = argv; *a; a++)
        pl_buf_printf(&line, "%s ", *a);
    ck_assert_msg(strstr(line.data, "--operation=Gemm --m=4096 --n=2048 --k=1024 --A=bf16:row --B=bf16:column") != NULL,
                  "%s", line.data);
    ck_assert_msg(strstr(line.data, "--output=/tmp/x") && strstr(line.data, "--accumulator-type=f32"), "%s", line.data);
    pl_cutlass_argv_free(argv);
    pl_buf_free(&line);
    argv = pl_cutlass_argv("p", &s, "fp8", "kn", "/tmp/x");
    ck_assert_str_eq(argv[5], "--A=fe4m3:row");
    ck_assert_str_eq(argv[6], "--B=fe4m3:row");
    pl_cutlass_argv_free(argv);
}
END_TEST

static pl_gemm_record ok_record(const char *provider, double tflops)
{
    pl_gemm_record r;
    sample_record(&r);
    free(r.provider);
    r.provider = pl_strdup(provider);
    r.tflops = tflops;
    r.median_ms = 2.0 * 4096.0 * 4096 * 4096 / (tflops * 1e9);
    return r;
}

START_TEST(comparison_winners_and_exit_code)
{
    pl_gemm_provider *provs;
    size_t np;
    char err[512];
    ck_assert(pl_gemm_providers_parse("cublas,cublaslt,perflab,cutlass", &provs, &np, err, sizeof err) == 0);
    pl_gemm_shape shapes[2] = {{"a", 4096, 4096, 4096}, {"b", 4096, 4096, 4096}};
    pl_gemm_comparison c;
    pl_gemm_comparison_init(&c, shapes, 2, provs, np, "bf16", "nk");
    ck_assert_int_eq(pl_gemm_comparison_exit_code(&c), 1); /* nothing yet: all missing */
    ck_assert_int_eq((int)pl_gemm_comparison_missing(&c, NULL), 8);

    const double tf[2][3] = {{700, 760, 730}, {650, 640, 700}};
    for (size_t s = 0; s < 2; s++)
        for (size_t p = 0; p < 3; p++) {
            pl_gemm_record_list tried = {0};
            pl_gemm_record r = ok_record(provs[p].label, tf[s][p]);
            pl_gemm_record_list_push(&tried, &r);
            pl_gemm_record slow = ok_record(provs[p].label, tf[s][p] / 2);
            pl_gemm_record_list_push(&tried, &slow);
            pl_gemm_record bad = ok_record(provs[p].label, tf[s][p] * 2); /* fast but unverified: never the best */
            bad.verified = 0;
            bad.status = PL_GEMM_FAILED;
            pl_gemm_record_list_push(&tried, &bad);
            pl_gemm_cell_settle(pl_gemm_cell_at(&c, s, p), &tried, PL_GEMM_FAILED, NULL);
            pl_gemm_record_list_free(&tried);
        }
    pl_gemm_cell_set(pl_gemm_cell_at(&c, 0, 3), PL_GEMM_UNSUPPORTED, "CUTLASS_PROFILER_BIN is not set");
    pl_gemm_cell_set(pl_gemm_cell_at(&c, 1, 3), PL_GEMM_FAILED, "cutlass_profiler exited with code 1");
    int winner, best_cublas;
    pl_gemm_comparison_leaders(&c, 0, &winner, &best_cublas);
    ck_assert_int_eq(winner, 1);
    ck_assert_int_eq(best_cublas, 1);
    pl_gemm_comparison_leaders(&c, 1, &winner, &best_cublas);
    ck_assert_int_eq(winner, 2);
    ck_assert_int_eq(best_cublas, 0);
    ck_assert(fabs(pl_gemm_cell_at(&c, 0, 0)->best.tflops - 700) < 1e-9);
    ck_assert_int_eq((int)pl_gemm_cell_at(&c, 0, 0)->candidates.n, 3);

    pl_buf missing = {0};
    ck_assert_int_eq((int)pl_gemm_comparison_missing(&c, &missing), 2);
    ck_assert_msg(strstr(missing.data, "a  cutlass  unsupported: CUTLASS_PROFILER_BIN is not set") != NULL, "%s",
                  missing.data);
    ck_assert_msg(strstr(missing.data, "b  cutlass  failed: cutlass_profiler exited with code 1") != NULL, "%s",
                  missing.data);
    pl_buf_free(&missing);
    ck_assert_int_eq(pl_gemm_comparison_exit_code(&c), 1);

    json_t *j = pl_gemm_comparison_to_json(&c, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "schema")), PL_GEMM_COMPARISON_SCHEMA);
    json_t *s1 = json_array_get(json_object_get(j, "shapes"), 1);
    ck_assert_str_eq(json_string_value(json_object_get(s1, "winner")), "perflab");
    ck_assert(fabs(json_real_value(json_object_get(s1, "winner_speedup_vs_best_cublas")) - 700.0 / 650) < 1e-9);
    double geo = json_real_value(json_object_get(json_object_get(j, "geomean_vs_best_cublas"), "perflab"));
    ck_assert(fabs(geo - sqrt(730.0 / 760 * 700.0 / 650)) < 1e-9);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "missing")), 2);
    ck_assert_int_eq((int)json_integer_value(json_object_get(j, "exit_code")), 1);
    json_decref(j);

    pl_table *t = pl_gemm_comparison_table(&c);
    pl_buf md = {0};
    pl_table_markdown(t, &md);
    ck_assert_msg(
        strstr(md.data, "| a | 4096 | 4096 | 4096 | 700.0 | 760.0 | 730.0 | n/a | cublaslt | 1.000 | 0.961 | - |") !=
            NULL,
        "%s", md.data);
    ck_assert_msg(strstr(md.data, "failed") && strstr(md.data, "geometric mean"), "%s", md.data);
    pl_buf_free(&md);
    pl_table_free(t);

    /* with the cutlass cells filled, nothing is missing */
    for (size_t s = 0; s < 2; s++) {
        pl_gemm_record_list tried = {0};
        pl_gemm_record r = ok_record("cutlass", 600);
        pl_gemm_record_list_push(&tried, &r);
        pl_gemm_cell_settle(pl_gemm_cell_at(&c, s, 3), &tried, PL_GEMM_FAILED, NULL);
    }
    ck_assert_int_eq(pl_gemm_comparison_exit_code(&c), 0);
    json_t *pf = pl_gemm_comparison_provider_json(&c, 2);
    ck_assert_int_eq((int)json_array_size(json_object_get(pf, "records")), 6);
    json_decref(pf);
    pl_gemm_comparison_free(&c);
    pl_gemm_providers_free(provs, np);

    ck_assert(pl_gemm_providers_parse("cublas,cublas", &provs, &np, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "'cublas' is named twice") != NULL, "%s", err);
    ck_assert(pl_gemm_providers_parse("cutlas", &provs, &np, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "unknown provider 'cutlas' (did you mean") != NULL, "%s", err);
    ck_assert(pl_gemm_providers_parse("json:", &provs, &np, err, sizeof err) != 0);
    ck_assert(pl_gemm_providers_parse("json:/nonexistent.json", &provs, &np, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "/nonexistent.json") != NULL, "%s", err);
    ck_assert_str_eq(pl_gemm_default_providers("bf16"), "cublas,cublaslt,perflab");
    ck_assert_str_eq(pl_gemm_default_providers("fp8"), "cublaslt,perflab");
}
END_TEST

/* Every round times each configuration once, round r starting with r mod n; the quotas add up. */
START_TEST(round_schedule)
{
    for (size_t n = 1; n <= 7; n++)
        for (int round = 0; round <= 10; round++) {
            int seen[7] = {0};
            for (size_t j = 0; j < n; j++) {
                const size_t i = pl_round_slot(n, round, j);
                ck_assert(i < n);
                ck_assert_msg(!seen[i], "n %zu round %d: configuration %zu twice", n, round, i);
                seen[i] = 1;
            }
            ck_assert_int_eq((int)pl_round_slot(n, round, 0), round % (int)n);
        }
    /* any n consecutive rounds start with n different configurations */
    for (size_t n = 1; n <= 7; n++) {
        int first[7] = {0};
        for (int round = 3; round < 3 + (int)n; round++)
            first[pl_round_slot(n, round, 0)]++;
        for (size_t i = 0; i < n; i++)
            ck_assert_int_eq(first[i], 1);
    }
    ck_assert_int_eq((int)pl_round_slot(0, 2, 0), 0);

    pl_run_settings st;
    memset(&st, 0, sizeof st);
    st.min_time_s = 0.1;
    st.max_time_s = 1.0;
    st.min_samples = 10;
    pl_round_quota q = pl_round_quota_for(&st, 5, 0); /* the round at load keeps nothing */
    ck_assert(!q.keep && q.min_samples == 2 && fabs(q.max_s - 0.2) < 1e-12 && fabs(q.min_s - 0.1) < 1e-12);
    q = pl_round_quota_for(&st, 5, 3);
    ck_assert(q.keep && q.samples == 0 && q.min_samples == 2 && fabs(q.max_s - 0.2) < 1e-12);
    q = pl_round_quota_for(&st, 1, 1);
    ck_assert(q.keep && q.min_samples == 10 && fabs(q.max_s - 1.0) < 1e-12);
    st.iterations = 12; /* exactly 12 kept samples over 5 rounds: 3 3 2 2 2 */
    size_t total = 0;
    for (int round = 1; round <= 5; round++) {
        q = pl_round_quota_for(&st, 5, round);
        ck_assert(q.keep && q.samples == (round <= 2 ? 3u : 2u));
        total += q.samples;
    }
    ck_assert_int_eq((int)total, 12);
}
END_TEST

static void push_native(pl_gemm_record_list *l, const char *kernel, double ms, int ok)
{
    pl_gemm_record r = ok_record("perflab", 2.0 * 4096.0 * 4096 * 4096 / (ms * 1e9));
    free(r.kernel);
    r.kernel = pl_strdup(kernel);
    r.median_ms = ms;
    if (!ok) {
        r.status = PL_GEMM_FAILED;
        r.verified = 0;
        r.reason = pl_strdup("failed verification");
    }
    pl_gemm_record_list_push(l, &r);
}

/* Whether the heuristic's pick was the best native configuration, and within 3% of it: per shape in
 * comparison.json and summary.md, and over the shapes. */
START_TEST(heuristic_verdict)
{
    pl_gemm_provider *provs;
    size_t np;
    char err[512];
    ck_assert(pl_gemm_providers_parse("cublas,perflab", &provs, &np, err, sizeof err) == 0);
    pl_gemm_shape shapes[4] = {{"best", 4096, 4096, 4096},
                               {"close", 4096, 4096, 4096},
                               {"far", 4096, 4096, 4096},
                               {"broken", 4096, 4096, 4096}};
    pl_gemm_comparison c;
    pl_gemm_comparison_init(&c, shapes, 4, provs, np, "bf16", "nk");
    const char *picks[4] = {"a", "a", "a", "a"};
    const double a_ms[4] = {0.100, 0.1029, 0.1031, 0.05};
    for (size_t s = 0; s < 4; s++) {
        pl_gemm_record_list tried = {0};
        push_native(&tried, "a", a_ms[s], s != 3); /* the pick failed verification on "broken" */
        push_native(&tried, "b", s == 0 ? 0.2 : 0.1, 1);
        pl_gemm_cell *cell = pl_gemm_cell_at(&c, s, 1);
        pl_gemm_cell_settle(cell, &tried, PL_GEMM_FAILED, NULL);
        pl_gemm_cell_set_pick(cell, picks[s]);
        pl_gemm_record_list tb = {0};
        pl_gemm_record r = ok_record("cublas", 700);
        pl_gemm_record_list_push(&tb, &r);
        pl_gemm_cell_settle(pl_gemm_cell_at(&c, s, 0), &tb, PL_GEMM_FAILED, NULL);
    }
    pl_gemm_pick_verdict v;
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 0, 1), &v) == 0);
    ck_assert(v.is_best && v.within && v.pick_timed && fabs(v.ratio - 1.0) < 1e-12);
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 1, 1), &v) == 0);
    ck_assert(!v.is_best && v.within && fabs(v.ratio - 1.029) < 1e-9);
    ck_assert_str_eq(v.best, "b");
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 2, 1), &v) == 0);
    ck_assert(!v.is_best && !v.within && v.confirm_rounds == 0 && isnan(v.confirmed_ratio));
    /* a head-to-head re-timing against another kernel than the cell's best is not this verdict's */
    pl_gemm_cell_set_confirm(pl_gemm_cell_at(&c, 2, 1), "c", 0.1010, 0.1000, 3);
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 2, 1), &v) == 0);
    ck_assert(!v.within && v.confirm_rounds == 0);
    /* against the best: "far" (1.031 in the sweep) is judged on the head-to-head 1.010 */
    pl_gemm_cell_set_confirm(pl_gemm_cell_at(&c, 2, 1), "b", 0.1010, 0.1000, 3);
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 2, 1), &v) == 0);
    ck_assert(!v.is_best && v.within && v.confirm_rounds == 3 && fabs(v.confirmed_ratio - 1.010) < 1e-9 &&
              fabs(v.ratio - 1.031) < 1e-9);
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 3, 1), &v) == 0);
    ck_assert(!v.pick_timed && !v.within && isnan(v.ratio));                   /* a pick that failed never counts */
    ck_assert(pl_gemm_cell_pick_verdict(pl_gemm_cell_get(&c, 0, 0), &v) != 0); /* cuBLAS has no pick */

    json_t *j = pl_gemm_comparison_to_json(&c, NULL);
    json_t *h = json_object_get(j, "heuristic");
    ck_assert_int_eq((int)json_integer_value(json_object_get(h, "shapes")), 4);
    ck_assert_int_eq((int)json_integer_value(json_object_get(h, "pick_is_best")), 1);
    ck_assert_int_eq((int)json_integer_value(json_object_get(h, "within_3pct")), 3);
    ck_assert(fabs(json_real_value(json_object_get(h, "fraction_within_3pct")) - 0.75) < 1e-12);
    json_t *far = json_object_get(json_array_get(json_object_get(j, "shapes"), 2), "heuristic");
    ck_assert(fabs(json_real_value(json_object_get(far, "confirmed_pick_over_best")) - 1.010) < 1e-9 &&
              json_integer_value(json_object_get(far, "confirm_rounds")) == 3 &&
              json_is_true(json_object_get(far, "within_3pct")));
    json_t *close = json_object_get(json_array_get(json_object_get(j, "shapes"), 1), "heuristic");
    ck_assert_str_eq(json_string_value(json_object_get(close, "pick")), "a");
    ck_assert_str_eq(json_string_value(json_object_get(close, "best")), "b");
    ck_assert(json_is_true(json_object_get(close, "within_3pct")) &&
              json_is_false(json_object_get(close, "pick_is_best")));
    json_decref(j);

    char *dir = pl_test_tmpdir("gemm-heuristic-report");
    ck_assert_msg(pl_gemm_report_write(&c, dir, NULL, err, sizeof err) == 0, "%s", err);
    char *path = pl_path_join(dir, "summary.md"), rerr[256];
    char *md = pl_read_file(path, NULL, rerr, sizeof rerr);
    ck_assert_msg(md && strstr(md, "## The heuristic's pick") && strstr(md, "| close | a | b | 1.029 | - | yes |") &&
                      strstr(md, "| far | a | b | 1.031 | 1.010 (3 rounds) | yes |") &&
                      strstr(md, "| broken | a | b | not timed | - | no |"),
                  "%s", md ? md : rerr);
    free(md);
    free(path);
    free(dir);
    pl_gemm_comparison_free(&c);
    pl_gemm_providers_free(provs, np);
}
END_TEST

/* The source tree the perflab binary was built from (its build folder's CMakeCache.txt says), malloc'd. */
static char *source_dir(void)
{
    char *bin = pl_strdup(PERFLAB_BIN), err[256];
    char *slash = strrchr(bin, '/');
    ck_assert_ptr_nonnull(slash);
    *slash = '\0';
    char *cache = pl_path_join(bin, "CMakeCache.txt");
    char *text = pl_read_file(cache, NULL, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    const char *key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    char *at = strstr(text, key);
    ck_assert_ptr_nonnull(at);
    at += strlen(key);
    at[strcspn(at, "\r\n")] = '\0';
    char *dir = pl_strdup(at);
    free(text);
    free(cache);
    free(bin);
    return dir;
}

/* Run a shell command (taken and freed) that must exit 0. */
static void system_ok(char *cmd)
{
    const int rc = system(cmd);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, cmd);
    free(cmd);
}

/* scripts/gemm_heuristic_table.py and gemm_wide_table.py on a comparison.json written by the report code: the
 * table's C source (entries, SM count, the terminator), --min-gain, refusals, and the bars' table. */
START_TEST(sweep_scripts)
{
    if (system("python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1") != 0) {
        printf("skip: no python3 >= 3.8 to run the sweep scripts\n");
        return;
    }
    pl_gemm_provider *provs;
    size_t np;
    char err[512];
    ck_assert(pl_gemm_providers_parse("cublas,cublaslt,perflab", &provs, &np, err, sizeof err) == 0);
    pl_gemm_shape shapes[3] = {{"pick_best_m16_n4096_k4096", 16, 4096, 4096},
                               {"pick_slow_m256_n4096_k4096", 256, 4096, 4096},
                               {"no_native_m8_n8_k8", 8, 8, 8}};
    pl_gemm_comparison c;
    pl_gemm_comparison_init(&c, shapes, 3, provs, np, "bf16", "nk");
    for (size_t s = 0; s < 3; s++) {
        for (size_t p = 0; p < 2; p++) {
            pl_gemm_record_list tb = {0};
            pl_gemm_record r = ok_record(p ? "cublaslt" : "cublas", 100.0 + 10 * p);
            pl_gemm_record_list_push(&tb, &r);
            pl_gemm_cell_settle(pl_gemm_cell_at(&c, s, p), &tb, PL_GEMM_FAILED, NULL);
        }
        if (s == 2) {
            pl_gemm_cell_set(pl_gemm_cell_at(&c, s, 2), PL_GEMM_FAILED, "no native record");
            continue;
        }
        pl_gemm_record_list tried = {0};
        push_native(&tried, "wgmma_ws_128x128x64_s6", s == 0 ? 1.0 : 1.2, 1);
        push_native(&tried, "wgmma_sk_64x128x64", 1.1, 1);
        for (size_t i = 0; i < tried.n; i++) { /* the shape's own sizes (perflab.json keys --robust by them) */
            tried.items[i].m = shapes[s].m;
            tried.items[i].n = shapes[s].n;
            tried.items[i].k = shapes[s].k;
        }
        pl_gemm_cell_settle(pl_gemm_cell_at(&c, s, 2), &tried, PL_GEMM_FAILED, NULL);
        pl_gemm_cell_set_pick(pl_gemm_cell_at(&c, s, 2), "wgmma_ws_128x128x64_s6");
    }
    json_t *about = json_pack("{s:s, s:s, s:{s:s, s:i}, s:{s:i}}", "started_at", "2026-11-24T00:00:00Z", "git_commit",
                              "abc123", "gpu", "name", "NVIDIA H200", "sm_count", 132, "settings", "rounds", 5);
    char *dir = pl_test_tmpdir("gemm-sweep-scripts");
    ck_assert_msg(pl_gemm_report_write(&c, dir, about, err, sizeof err) == 0, "%s", err);
    json_decref(about);
    char *src = source_dir(), *cmp = pl_path_join(dir, "comparison.json"), *out = pl_path_join(dir, "table.c");

    /* the table: both native shapes, the GPU's SM count, the terminator */
    char *cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --out %s 2>/dev/null", src, cmp, out);
    system_ok(cmd);
    char *text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text, "%s", err);
    ck_assert_msg(strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"wgmma_ws_128x128x64_s6\", 0}") &&
                      strstr(text, "{\"nk\", 132, 256, 4096, 4096, \"wgmma_sk_64x128x64\", 0}") &&
                      !strstr(text, "no_native") && strstr(text, "{NULL, 0, 0, 0, 0, NULL, 0}") &&
                      strstr(text, "NVIDIA H200"),
                  "%s", text);
    free(text);
    /* --min-gain 0.05: only the shape where the pick was over 5% slower (1.2 / 1.1); --any-gpu: SM count 0 */
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --out %s --min-gain 0.05 --any-gpu 2>/dev/null", src,
                    cmp, out);
    system_ok(cmd);
    text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "{\"nk\", 0, 256, 4096, 4096, \"wgmma_sk_64x128x64\", 0}") &&
                      !strstr(text, ", 16, 4096, 4096,"),
                  "%s", text ? text : err);
    free(text);
    /* --keep-from: an earlier table's entry for a shape these runs did not measure stays (marked), one for a measured
     * shape gives way; a file the script did not write is refused (2) */
    char *earlier = pl_path_join(dir, "earlier.c");
    FILE *ef = fopen(earlier, "w");
    ck_assert(ef);
    fputs("/* Generated by scripts/gemm_heuristic_table.py: do not edit by hand. */\n"
          "    /* m99_n104_k128: 0.0010 ms */\n    {\"nk\", 132, 99, 104, 128, \"wgmma_sk_swap_16x64x64\"},\n"
          "    /* m16_n4096_k4096: 0.0100 ms */\n    {\"nk\", 132, 16, 4096, 4096, \"gemv_mma_t16\"},\n",
          ef);
    fclose(ef);
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --keep-from %s --out %s 2>/dev/null", src, cmp,
                    earlier, out);
    system_ok(cmd);
    text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "/* kept from the earlier table: m99_n104_k128: 0.0010 ms */") &&
                      strstr(text, "{\"nk\", 132, 99, 104, 128, \"wgmma_sk_swap_16x64x64\", 0}") &&
                      strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"wgmma_ws_128x128x64_s6\", 0}") &&
                      !strstr(text, "gemv_mma_t16") && strstr(text, "did not measure: 99x104x128 (nk, 132 SMs)"),
                  "%s", text ? text : err);
    free(text);
    /* a run that recorded its GPU's L2 size (60 MiB): its entries name it, and the earlier table's entry for the
     * same shape, of any L2 size, stays beside it (another GPU of 132 SMs still runs it); --any-l2 leaves it out */
    char *cmp60 = pl_path_join(dir, "comparison60.json");
    cmd = pl_strfmt("python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d[\"gpu\"][\"l2_mib\"]=60.0; "
                    "json.dump(d, open(sys.argv[2], \"w\"))' %s %s && python3 %s/scripts/gemm_heuristic_table.py %s "
                    "--keep-from %s --out %s 2>/dev/null",
                    cmp, cmp60, src, cmp60, earlier, out);
    system_ok(cmd);
    text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"wgmma_ws_128x128x64_s6\", 60}") &&
                      strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"gemv_mma_t16\", 0}") &&
                      strstr(text, "16x4096x4096 (nk, 132 SMs)"),
                  "%s", text ? text : err);
    free(text);
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --any-l2 --out %s 2>/dev/null", src, cmp60, out);
    system_ok(cmd);
    text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"wgmma_ws_128x128x64_s6\", 0}") &&
                      !strstr(text, ", 60},"),
                  "%s", text ? text : err);
    free(text);
    free(cmp60);
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --keep-from %s --out %s/bad.c 2>/dev/null; "
                    "test $? = 2 && test ! -e %s/bad.c",
                    src, cmp, cmp, dir, dir);
    system_ok(cmd);
    free(earlier);
    /* --robust with --kernels (only the split-K kernel kept), --rename (read under another name) and --min-runs */
    char *reg = pl_path_join(dir, "kernels.json");
    FILE *f = fopen(reg, "w");
    ck_assert(f);
    fputs("[{\"name\": \"wgmma_renamed\"}]\n", f);
    fclose(f);
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s %s --out %s --robust --min-runs 1 --kernels %s "
                    "--rename wgmma_sk_64x128x64=wgmma_renamed 2>/dev/null",
                    src, cmp, cmp, out, reg);
    system_ok(cmd);
    text = pl_read_file(out, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "{\"nk\", 132, 16, 4096, 4096, \"wgmma_renamed\", 0}") &&
                      strstr(text, "{\"nk\", 132, 256, 4096, 4096, \"wgmma_renamed\", 0}") &&
                      !strstr(text, "wgmma_ws_128x128x64_s6") && strstr(text, "over 2 run(s)"),
                  "%s", text ? text : err);
    free(text);
    /* --rename without --robust, or not OLD=NEW: usage (2) */
    cmd =
        pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s --out %s/bad.c --rename a=b 2>/dev/null; test $? = 2 "
                  "&& python3 %s/scripts/gemm_heuristic_table.py %s --out %s/bad.c --robust --rename ab 2>/dev/null; "
                  "test $? = 2 && test ! -e %s/bad.c",
                  src, cmp, dir, src, cmp, dir, dir);
    system_ok(cmd);
    free(reg);
    /* not a comparison: exit 2, nothing written over the table */
    cmd = pl_strfmt("python3 %s/scripts/gemm_heuristic_table.py %s/summary.md --out %s/bad.c 2>/dev/null; test $? = 2 "
                    "&& test ! -e %s/bad.c",
                    src, dir, dir, dir);
    system_ok(cmd);

    /* the bars' table: one shape at 0.909 of cuBLAS (110 TFLOP/s against 100), the pick within 3% on 1 of 2 */
    char *md = pl_path_join(dir, "bars.md");
    cmd = pl_strfmt("python3 %s/scripts/gemm_wide_table.py %s >%s; test $? = 0 && python3 "
                    "%s/scripts/gemm_wide_table.py --strict %s >/dev/null; test $? = 1",
                    src, cmp, md, src, cmp);
    system_ok(cmd);
    text = pl_read_file(md, NULL, err, sizeof err);
    ck_assert_msg(text && strstr(text, "### NVIDIA H200, bf16, B nk") &&
                      strstr(text, "| pick_slow_m256_n4096_k4096 |") && strstr(text, "1/2 = 50%") &&
                      strstr(text, "NOT met") && strstr(text, "5 round(s)"),
                  "%s", text ? text : err);
    free(text);
    /* --merge takes parts of one sweep: the same file twice names its shapes twice, refused (2) */
    cmd = pl_strfmt("python3 %s/scripts/gemm_wide_table.py --merge %s %s >/dev/null 2>&1; test $? = 2 && python3 "
                    "%s/scripts/gemm_wide_table.py --merge %s | grep -q '1/2 = 50%%'",
                    src, cmp, cmp, src, cmp);
    system_ok(cmd);
    free(md);
    free(out);
    free(cmp);
    free(src);
    free(dir);
    pl_gemm_comparison_free(&c);
    pl_gemm_providers_free(provs, np);
}
END_TEST

static void expect_cli(const char *args, int code, const char *fragment)
{
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == code, "perflab %s: exit %d, expected %d; stderr: %s", args, r.exit_code, code, r.err);
    ck_assert_msg(strstr(r.err, fragment) != NULL, "perflab %s: expected '%s' in: %s", args, fragment, r.err);
    char *nl = strchr(r.err, '\n');
    ck_assert_msg(nl && nl[1] == '\0', "perflab %s: more than one line: %s", args, r.err);
    pl_cmd_result_free(&r);
}

START_TEST(cli_usage_errors)
{
    pl_cmd_result r = pl_run_perflab(NULL, "gemm --help");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "usage: perflab gemm"));
    ck_assert_ptr_nonnull(strstr(r.out, "exit codes:"));
    ck_assert_ptr_nonnull(strstr(r.out, "--rounds"));
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "gemm --list-shapes");
    ck_assert_int_eq(r.exit_code, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "prefill_mlp_expand_m16384_n16384_k8192"));
    pl_cmd_result_free(&r);
    /* the kernels, from the kernel table itself: every one named, and the JSON form one object per kernel */
    r = pl_run_perflab(NULL, "gemm --list-kernels");
    ck_assert_int_eq(r.exit_code, 0);
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++)
        ck_assert_msg(strstr(r.out, pl_gemm_kernel_at(i)->name), "%s missing from:\n%s", pl_gemm_kernel_at(i)->name,
                      r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "teaching"));
    ck_assert_ptr_nonnull(strstr(r.out, "b_kn")); /* the kernels that read B K×N say so */
    pl_cmd_result_free(&r);
    r = pl_run_perflab(NULL, "gemm --list-kernels --dtype fp8 --json");
    ck_assert_int_eq(r.exit_code, 0);
    json_error_t kje;
    json_t *kl = json_loads(r.out, 0, &kje);
    ck_assert_msg(json_is_array(kl) && json_array_size(kl) == pl_gemm_fp8_kernel_count(), "%s", r.out);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(kl, 0), "name")), pl_gemm_fp8_kernel_at(0)->name);
    /* the FP8 kernel promoting every 512 K is listed but not searched: less accurate than cuBLASLt's default */
    int less_accurate = 0;
    for (size_t i = 0; i < json_array_size(kl); i++) {
        const json_t *e = json_array_get(kl, i);
        if (strstr(json_string_value(json_object_get(e, "name")), "_p4")) {
            less_accurate++;
            ck_assert(json_is_false(json_object_get(e, "searched")));
            ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "flags"), 0)), "less_accurate");
        } else {
            ck_assert(json_is_true(json_object_get(e, "searched")));
        }
    }
    ck_assert_int_eq(less_accurate, 1);
    json_decref(kl);
    pl_cmd_result_free(&r);
    expect_cli("gemm --list-kernels --dtype fp16", 2, "--list-kernels takes --dtype bf16 or fp8");
    expect_cli("gemm --shapes kv_proj", 2, "unknown shape 'kv_proj' (did you mean 'kv_proj_m4096_n4096_k4096'");
    expect_cli("gemm --dtype fp32", 2, "--dtype must be bf16, fp16 or fp8");
    expect_cli("gemm --layout tn", 2, "--layout must be nk");
    expect_cli("gemm --providers triton", 2, "unknown provider 'triton'");
    expect_cli("gemm --max-algos 0", 2, "--max-algos");
    expect_cli("gemm --rounds 0", 2, "--rounds");
    expect_cli("gemm --rounds 3 --iterations 2", 2, "--rounds 3 needs at least as many --iterations");
    expect_cli("gemm --shapes-file /nonexistent/s.txt", 2, "/nonexistent/s.txt");
    expect_cli("gemm 4096x4096x4096", 2, "name shapes with --shapes 4096x4096x4096");
    expect_cli("gemm --providers json:/nonexistent.json", 2, "/nonexistent.json");
    expect_cli("gemm --budget-s -1", 2, "--budget-s must be between 0 and 3600");
    expect_cli("gemm --budget-s 2x", 2, "--budget-s");
}
END_TEST

/* --budget-s: the time a shape's configurations share, stated in the summary perflab gemm prints and in
 * comparison.json's settings; the default is 2 s. */
START_TEST(cli_budget_is_parsed_and_stated)
{
    char *dir = pl_test_tmpdir("gemm-budget");
    char *file = pl_path_join(dir, "lt.json"), err[256];
    const char *lt = "[{\"provider\": \"cublaslt\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\", "
                     "\"median_ms\": 0.18, \"verified\": true}]";
    ck_assert(pl_write_file_atomic(file, lt, strlen(lt), err, sizeof err) == 0);
    static const struct {
        const char *option;
        double budget_s;
        const char *says;
    } cases[] = {
        {"", 2.0,
         "timing: a budget of 2 s a shape (--budget-s), shared by its configurations over up to 5 "
         "interleaved rounds"},
        {"--budget-s 0.5", 0.5, "timing: a budget of 0.5 s a shape (--budget-s)"},
        {"--budget-s 7 --rounds 3", 7.0,
         "a budget of 7 s a shape (--budget-s), shared by its configurations over up "
         "to 3 interleaved rounds"},
        {"--budget-s 0", 0.0, "no budget (--budget-s 0)"},
        {"--rounds 1", 2.0, "no budget with --rounds 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int as_json = 0; as_json < 2; as_json++) {
            char *args = pl_strfmt("gemm --shapes kv_proj_m4096_n4096_k4096 --providers json:%s %s --artifacts-dir "
                                   "%s/a -q%s",
                                   file, cases[i].option, dir, as_json ? " --json" : "");
            pl_cmd_result r = pl_run_perflab(NULL, args);
            ck_assert_msg(r.exit_code == 0, "%s: exit %d: %s", args, r.exit_code, r.err);
            if (as_json) {
                json_error_t je;
                json_t *j = json_loads(r.out, 0, &je);
                ck_assert_msg(j != NULL, "--json printed no JSON: %s", je.text);
                json_t *b = json_object_get(json_object_get(j, "settings"), "budget_s");
                ck_assert_msg(json_is_number(b), "%s: no settings.budget_s", args);
                ck_assert_double_eq_tol(json_number_value(b), cases[i].budget_s, 1e-12);
                json_decref(j);
            } else {
                ck_assert_msg(strstr(r.out, cases[i].says) != NULL, "%s: no '%s' in\n%s", args, cases[i].says, r.out);
            }
            pl_cmd_result_free(&r);
            free(args);
        }
    }
    free(file);
    free(dir);
}
END_TEST

/* The whole verb on json providers and a stand-in cutlass_profiler: no GPU needed. */
START_TEST(cli_end_to_end_without_gpu)
{
    char *dir = pl_test_tmpdir("gemm-cli");
    char *mine = pl_path_join(dir, "triton.json"), *theirs = pl_path_join(dir, "lt.json"), err[256];
    const char *triton = "{\"records\": [{\"provider\": \"triton\", \"shape\": \"kv\", \"m\": 4096, \"n\": 4096, "
                         "\"k\": 4096, \"dtype\": \"bf16\", \"median_ms\": 0.19, \"verified\": true, \"kernel\": "
                         "\"matmul 128x256x64\"}]}";
    const char *lt = "[{\"provider\": \"cublaslt\", \"m\": 4096, \"n\": 4096, \"k\": 4096, \"dtype\": \"bf16\", "
                     "\"median_ms\": 0.18, \"verified\": true}, {\"provider\": \"cublaslt\", \"m\": 512, \"n\": 512, "
                     "\"k\": 512, \"dtype\": \"bf16\", \"median_ms\": 0.01, \"verified\": true}]";
    ck_assert(pl_write_file_atomic(mine, triton, strlen(triton), err, sizeof err) == 0);
    ck_assert(pl_write_file_atomic(theirs, lt, strlen(lt), err, sizeof err) == 0);

    /* every record present: exit 0, the files written */
    char *args = pl_strfmt("gemm --shapes kv_proj_m4096_n4096_k4096 --providers json:%s,json:%s --artifacts-dir %s/a "
                           "-q",
                           theirs, mine, dir);
    pl_cmd_result r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s %s", r.exit_code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "triton/cuBLAS") && strstr(r.out, "0.947"), "%s", r.out);
    pl_cmd_result_free(&r);
    free(args);
    char *cmd = pl_strfmt("test -s %s/a/gemm-*/comparison.json && test -s %s/a/gemm-*/triton.json && "
                          "test -s %s/a/gemm-*/json_lt.json && test -s %s/a/gemm-*/summary.md",
                          dir, dir, dir, dir);
    ck_assert_msg(system(cmd) == 0, "files missing: %s", cmd);
    free(cmd);

    /* a shape the files lack, and cutlass without its profiler: exit 1, each listed with its kind */
    args = pl_strfmt("gemm --shapes kv_proj_m4096_n4096_k4096,512x512x512 --providers json:%s,json:%s,cutlass "
                     "--artifacts-dir %s/b -q --json",
                     theirs, mine, dir);
    r = pl_run_perflab("CUTLASS_PROFILER_BIN=", args);
    ck_assert_msg(r.exit_code == 1, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "m512_n512_k512  triton  missing:"), "%s", r.err);
    ck_assert_msg(strstr(r.err, "kv_proj_m4096_n4096_k4096  cutlass  unsupported: CUTLASS_PROFILER_BIN is not set"),
                  "%s", r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "--json printed no JSON: %s", je.text);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "missing")), 3);
    ck_assert_int_eq((int)json_integer_value(json_object_get(j, "exit_code")), 1);
    json_t *settings = json_object_get(j, "settings");
    ck_assert_int_eq((int)json_integer_value(json_object_get(settings, "rounds")), 5); /* the default */
    ck_assert_ptr_null(json_object_get(j, "heuristic"));                               /* no perflab column */
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);

    /* --rounds is stated in comparison.json's settings */
    args = pl_strfmt("gemm --shapes kv_proj_m4096_n4096_k4096 --providers json:%s --rounds 4 --artifacts-dir %s/d -q "
                     "--json",
                     theirs, dir);
    r = pl_run_perflab(NULL, args);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "--json printed no JSON: %s", je.text);
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_object_get(j, "settings"), "rounds")), 4);
    json_decref(j);
    pl_cmd_result_free(&r);
    free(args);

    /* a stand-in profiler: writes the CSV CUTLASS would, for the shape it was asked */
    char *fake = pl_path_join(dir, "fake_profiler.sh");
    const char *script =
        "#!/bin/sh\nfor a in \"$@\"; do case $a in --output=*) out=${a#--output=};; --m=*) m=${a#--m=};; "
        "--n=*) n=${a#--n=};; --k=*) k=${a#--k=};; esac; done\n"
        "printf 'Problem,Provider,OperationKind,Operation,Disposition,Status,m,n,k,cta_m,cta_n,cta_k,Runtime,GFLOPs\\n"
        "1,CUTLASS,gemm,fake_128x128,passed,success,%s,%s,%s,128,128,64,0.2,1\\n' $m $n $k > $out.gemm.csv\n";
    ck_assert(pl_write_file_atomic(fake, script, strlen(script), err, sizeof err) == 0);
    chmod(fake, 0755);
    char *env = pl_strfmt("CUTLASS_PROFILER_BIN=%s", fake);
    args = pl_strfmt("gemm --shapes kv_proj_m4096_n4096_k4096 --providers json:%s,cutlass --artifacts-dir %s/c -q",
                     theirs, dir);
    r = pl_run_perflab(env, args);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s %s", r.exit_code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "cutlass/cuBLAS"), "%s", r.out);
    pl_cmd_result_free(&r);
    free(args);
    free(env);
    free(fake);
    free(mine);
    free(theirs);
    free(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_selector");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shapes_parse);
    tcase_add_test(tc, shapes_file);
    tcase_add_test(tc, wide_group);
    tcase_add_test(tc, record_schema_round_trip);
    tcase_add_test(tc, records_file_reader);
    tcase_add_test(tc, cutlass_csv_by_header_names);
    tcase_add_test(tc, comparison_winners_and_exit_code);
    tcase_add_test(tc, round_schedule);
    tcase_add_test(tc, heuristic_verdict);
    tcase_add_test(tc, sweep_scripts);
    tcase_add_test(tc, cli_usage_errors);
    tcase_add_test(tc, cli_end_to_end_without_gpu);
    tcase_add_test(tc, cli_budget_is_parsed_and_stated);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
