/* The engine's model table and memory plan: lookup and its error line, every config valid, exact weight, KV-cache and
 * activation bytes for the tiny configs computed here tensor by tensor, the published parameter counts of the
 * large models, and the plan's verdicts (Llama-3-70B in bf16 refused on an 80 GB H100 and on an H200 with a useful
 * KV cache, accepted in FP8 on the H200; a plan that fits to the byte and one byte short). */
#include <string.h>

#include "engine/memory_plan.h"
#include "engine/model_config.h"
#include "testutil.h"

static const pl_model_config *model(const char *name)
{
    char err[512];
    const pl_model_config *m = pl_model_find(name, err, sizeof err);
    ck_assert_msg(m, "%s", err);
    return m;
}

START_TEST(lookup_and_validity)
{
    char err[512];
    ck_assert_ptr_null(pl_model_find("llama-9b", err, sizeof err));
    ck_assert_msg(strstr(err, "unknown model 'llama-9b': use one of llama3-8b, llama3-70b, qwen3-30b-a3b, "
                              "mixtral-8x7b, tiny-dense") &&
                      !strchr(err, '\n'),
                  "%s", err);
    for (size_t i = 0; i < pl_model_count; i++) {
        ck_assert_msg(pl_model_valid(&pl_models[i], err, sizeof err), "%s", err);
        ck_assert_ptr_eq(model(pl_models[i].name), &pl_models[i]);
    }
    ck_assert_int_eq(model("tiny-dense")->heads / model("tiny-dense")->kv_heads, 4);
    ck_assert_int_eq(model("tiny-dense-gqa8")->heads / model("tiny-dense-gqa8")->kv_heads, 8);
    ck_assert_int_eq(model("tiny-moe")->heads / model("tiny-moe")->kv_heads, 4);
    ck_assert_int_eq(model("tiny-moe-gqa8")->heads / model("tiny-moe-gqa8")->kv_heads, 8);
    /* the tensor-parallel config: every share of 2, 4 and 8 GPUs has whole kv heads and an MLP width % 8 == 0 */
    const pl_model_config *tp = model("tiny-dense-tp");
    ck_assert(!pl_model_is_moe(tp) && !tp->qk_norm);
    for (int n = 2; n <= 8; n *= 2) {
        ck_assert_int_eq(tp->kv_heads % n, 0);
        ck_assert_int_eq(tp->heads % n, 0);
        ck_assert_int_eq(tp->intermediate % n, 0);
        ck_assert_int_eq((tp->intermediate / n) % 8, 0);
    }
    pl_model_config bad = *model("tiny-moe");
    bad.top_k = 7; /* of 6 experts */
    ck_assert(!pl_model_valid(&bad, err, sizeof err));
    ck_assert_msg(strstr(err, "top_k"), "%s", err);
    pl_weight_dtype dt;
    ck_assert_int_eq(pl_weight_dtype_parse("fp8-block", &dt), 0);
    ck_assert_int_eq(dt, PL_WEIGHTS_FP8_BLOCK);
    ck_assert_int_eq(pl_weight_dtype_parse("fp4", &dt), -1);
}
END_TEST

/* tiny-dense: hidden 320, 8 heads and 2 kv heads of 64, MLP 864, vocab 1000 tied, 3 layers. */
START_TEST(tiny_dense_bytes)
{
    const pl_model_config *m = model("tiny-dense");
    const long long norms = 320 + 320, qkv = (8 * 64 + 2 * 2 * 64) * 320LL, o = 320LL * 8 * 64, gu = 2 * 864LL * 320,
                    down = 320LL * 864;
    const long long gemm = qkv + o + gu + down; /* 1,239,040 */
    pl_layer_bytes lb;
    pl_layer_bytes_of(m, PL_WEIGHTS_BF16, &lb);
    ck_assert_int_eq(lb.params, norms + gemm);
    ck_assert_int_eq(lb.total, 2 * (norms + gemm));
    ck_assert_int_eq(lb.fixed, lb.total);
    ck_assert_int_eq(lb.expert, 0);
    ck_assert_int_eq(lb.total, 2479360);

    pl_layer_bytes_of(m, PL_WEIGHTS_FP8, &lb); /* one fp32 scale per GEMM weight */
    ck_assert_int_eq(lb.total, gemm + 4 * 4 + 2 * norms);
    ck_assert_int_eq(lb.scales, 16);
    /* 128x128 blocks: qkv 768x320 -> 6x3, o 320x512 -> 3x4, gate_up 1728x320 -> 14x3, down 320x864 -> 3x7 */
    pl_layer_bytes_of(m, PL_WEIGHTS_FP8_BLOCK, &lb);
    ck_assert_int_eq(lb.scales, 4 * (18 + 12 + 42 + 21));
    ck_assert_int_eq(lb.total, gemm + 4 * 93 + 2 * norms);

    pl_weight_bytes wb;
    pl_weight_bytes_of(m, PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.layers, 3);
    ck_assert_int_eq(wb.embedding, 2 * 1000 * 320);
    ck_assert_int_eq(wb.lm_head, 0); /* tied */
    ck_assert_int_eq(wb.total, 3 * 2479360LL + 640000 + 640);
    ck_assert_int_eq(wb.params, 3 * (norms + gemm) + 1000 * 320 + 320);
    pl_weight_bytes_of(m, PL_WEIGHTS_BF16, 1, &wb); /* --layers 1 */
    ck_assert_int_eq(wb.total, 2479360LL + 640000 + 640);

    /* KV: 3 layers x K,V x 16 tokens x 2 kv heads x 64 x 2 bytes */
    ck_assert_int_eq(pl_kv_page_bytes(m, 0, 16, PL_KV_BF16), 3 * 2 * 16 * 2 * 64 * 2);
    /* activations at batch 3, 37 tokens, contexts of 100 (one 256-token decode chunk) */
    const long long T = 37, bf16 = 2 * T * 320 + T * 768 + T * 512 + T * 3 * 864;
    const long long fp32 = T * 8 + 3 * 8 * 1 * (64 + 2) + 3 * 1000;
    ck_assert_int_eq(pl_activation_bytes(m, 3, 37, 100), 2 * bf16 + 4 * fp32 + 4 * 3);
}
END_TEST

/* tiny-moe: 6 experts of 200, top 2, qk norm, untied head of vocab 1000, 2 layers. */
START_TEST(tiny_moe_bytes)
{
    const pl_model_config *m = model("tiny-moe");
    const long long fixed = 320 + 768 * 320 + 64 + 64 + 320 * 512 + 320 + 6 * 320; /* norms, qkv, qk norms, o, router */
    const long long expert = 2 * 200 * 320 + 320 * 200;
    pl_layer_bytes lb;
    pl_layer_bytes_of(m, PL_WEIGHTS_BF16, &lb);
    ck_assert_int_eq(lb.fixed, 2 * fixed);
    ck_assert_int_eq(lb.expert, 2 * expert);
    ck_assert_int_eq(lb.total, 2 * fixed + 6 * 2 * expert);
    ck_assert_int_eq(lb.params, fixed + 6 * expert);
    /* fp8: qkv and o with a scale each, every expert's two tensors with theirs; norms and router bf16 */
    pl_layer_bytes_of(m, PL_WEIGHTS_FP8, &lb);
    ck_assert_int_eq(lb.expert, expert + 2 * 4);
    ck_assert_int_eq(lb.fixed, 768 * 320 + 320 * 512 + 2 * 4 + 2 * (320 + 64 + 64 + 320 + 6 * 320));
    ck_assert_int_eq(lb.scales, 4 * (2 + 6 * 2));
    pl_weight_bytes wb;
    pl_weight_bytes_of(m, PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.lm_head, 2 * 1000 * 320);
    ck_assert_int_eq(wb.total, 2 * (2 * fixed + 12 * expert) + 2 * 640000 + 640);
}
END_TEST

/* Published totals: Llama-3-8B 8.03e9 parameters, 70B 70.6e9, Qwen3-30B-A3B 30.5e9, Mixtral-8x7B 46.7e9. */
START_TEST(large_model_params)
{
    pl_weight_bytes wb;
    pl_weight_bytes_of(model("llama3-8b"), PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.layer.params, 218112000);
    ck_assert_int_eq(wb.params, 8030261248LL);
    ck_assert_int_eq(wb.total, 2 * 8030261248LL);
    pl_weight_bytes_of(model("llama3-70b"), PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.params, 70553706496LL);
    pl_weight_bytes_of(model("qwen3-30b-a3b"), PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.params, 30532122624LL);
    pl_weight_bytes_of(model("mixtral-8x7b"), PL_WEIGHTS_BF16, 0, &wb);
    ck_assert_int_eq(wb.params, 46702792704LL);
}
END_TEST

static int plan(const char *name, pl_weight_dtype dt, double free_gib, pl_plan *p, char *err, size_t errlen)
{
    const pl_plan_request r = {.model = model(name),
                               .dtype = dt,
                               .page_size = 16,
                               .max_batch = 64,
                               .max_tokens = 4096,
                               .max_context = 2048,
                               .free_bytes = (uint64_t)(free_gib * PL_GIB),
                               .reserve_bytes = 512ULL << 20};
    return pl_plan_make(&r, p, err, errlen);
}

START_TEST(seventy_b_verdicts)
{
    char err[1024];
    pl_plan p;
    /* an 80 GB H100 (about 79 GiB free): the weights alone do not fit */
    ck_assert_int_eq(plan("llama3-70b", PL_WEIGHTS_BF16, 79.0, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "llama3-70b in bf16 needs 131.4 GiB of weights") && strstr(err, "before the KV cache") &&
                      strstr(err, "use --dtype fp8") && !strchr(err, '\n'),
                  "%s", err);
    /* an H200 (139.8 GiB free): the weights fit, 64 sequences of 2048 tokens (40 GiB of KV) do not */
    ck_assert_int_eq(plan("llama3-70b", PL_WEIGHTS_BF16, 139.8, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "131.4 GiB of weights, 40.0 GiB of bf16 KV cache") && strstr(err, "after the KV cache") &&
                      strstr(err, "--dtype fp8"),
                  "%s", err);
    ck_assert_int_eq(p.pages_needed, 64 * 128);
    /* fp8 on the H200: fits, with the rest of the memory as KV pages */
    ck_assert_msg(plan("llama3-70b", PL_WEIGHTS_FP8, 139.8, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_int_ge(p.pages, p.pages_needed);
    ck_assert_uint_le(p.total, p.free_bytes);
    ck_assert_uint_gt(p.total + p.page_bytes, p.free_bytes); /* every whole page that fits was taken */
    ck_assert_msg(plan("llama3-70b", PL_WEIGHTS_FP8_BLOCK, 139.8, &p, err, sizeof err) == 0, "%s", err);
    /* and the 8B in bf16 fits an H100 */
    ck_assert_msg(plan("llama3-8b", PL_WEIGHTS_BF16, 79.0, &p, err, sizeof err) == 0, "%s", err);
}
END_TEST

START_TEST(plan_to_the_byte)
{
    const pl_model_config *m = model("tiny-moe");
    pl_plan_request r = {.model = m,
                         .dtype = PL_WEIGHTS_BF16,
                         .page_size = 16,
                         .pages = 40,
                         .max_batch = 3,
                         .max_tokens = 50,
                         .max_context = 100,
                         .reserve_bytes = 1000};
    pl_weight_bytes wb;
    pl_weight_bytes_of(m, PL_WEIGHTS_BF16, 0, &wb);
    const uint64_t need =
        wb.total + 40 * pl_kv_page_bytes(m, 0, 16, PL_KV_BF16) + pl_activation_bytes(m, 3, 50, 100) + 1000;
    char err[1024];
    pl_plan p;
    r.free_bytes = need;
    ck_assert_msg(pl_plan_make(&r, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(p.total, need);
    r.free_bytes = need - 1;
    ck_assert_int_eq(pl_plan_make(&r, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tiny-moe in bf16") && strstr(err, "0.0 GiB short after the KV cache"), "%s", err);
    r.pages = 20; /* 3 sequences of 100 tokens need 3 x 7 pages */
    r.free_bytes = need;
    ck_assert_int_eq(pl_plan_make(&r, &p, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "at least 21"), "%s", err);
    r.max_batch = 0;
    ck_assert_int_eq(pl_plan_make(&r, &p, err, sizeof err), -1);
}
END_TEST

/* The FP8 cache: e4m3 bytes and a float scale a (token, kv head) row, in the page bytes, the plan and its verdicts. */
START_TEST(fp8_cache_sizing)
{
    pl_kv_dtype dt;
    ck_assert_int_eq(pl_kv_dtype_parse("fp8", &dt), 0);
    ck_assert_int_eq(dt, PL_KV_FP8_E4M3);
    ck_assert_int_eq(pl_kv_dtype_parse("bf16", &dt), 0);
    ck_assert_int_eq(dt, PL_KV_BF16);
    ck_assert_int_eq(pl_kv_dtype_parse("fp8-block", &dt), -1);
    ck_assert_str_eq(pl_kv_dtype_name(PL_KV_FP8_E4M3), "fp8");
    /* tiny-dense: 3 layers x K,V x 16 tokens x 2 kv heads x (64 bytes + a 4-byte scale) */
    const pl_model_config *tiny = model("tiny-dense");
    ck_assert_int_eq(pl_kv_page_bytes(tiny, 0, 16, PL_KV_FP8_E4M3), 3 * 2 * 16 * 2 * (64 + 4));
    ck_assert_int_eq(pl_kv_page_bytes(tiny, 0, 16, (pl_kv_dtype)7), 0);
    /* Llama-3-8B on an H200 (139.8 GiB free), 64 x 2048 planned, the rest as pages: 128 KiB a token in bf16, 66 KiB
     * in FP8 (32 layers x K,V x 8 kv heads x (128 + 4) bytes): 63403 pages (1.01M tokens) against 122964 (1.97M),
     * 1.939x the tokens in the same memory */
    const pl_model_config *m = model("llama3-8b");
    ck_assert_int_eq(pl_kv_page_bytes(m, 0, 1, PL_KV_BF16), 131072);
    ck_assert_int_eq(pl_kv_page_bytes(m, 0, 1, PL_KV_FP8_E4M3), 67584);
    pl_plan_request r = {.model = m,
                         .dtype = PL_WEIGHTS_BF16,
                         .kv_dtype = PL_KV_BF16,
                         .page_size = 16,
                         .max_batch = 64,
                         .max_tokens = 4096,
                         .max_context = 2048,
                         .free_bytes = (uint64_t)(139.8 * PL_GIB),
                         .reserve_bytes = 512ULL << 20};
    char err[1024];
    pl_plan p16, p8;
    ck_assert_msg(pl_plan_make(&r, &p16, err, sizeof err) == 0, "%s", err);
    r.kv_dtype = PL_KV_FP8_E4M3;
    ck_assert_msg(pl_plan_make(&r, &p8, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(p16.pages, 63403);
    ck_assert_int_eq(p8.pages, 122964);
    ck_assert_uint_eq(p8.page_bytes, 16 * 67584);
    ck_assert_uint_le(p8.total, p8.free_bytes);
    ck_assert_uint_gt(p8.total + p8.page_bytes, p8.free_bytes); /* every whole page that fits was taken */
    ck_assert_uint_eq(p8.weights.total + p8.activation_bytes, p16.weights.total + p16.activation_bytes);
    /* 70B in bf16 on the H200: short after an FP8 cache too (40 GiB of bf16 KV, 20.6 GiB in FP8), the fix no longer
     * names --kv-dtype */
    r.model = model("llama3-70b");
    ck_assert_int_eq(pl_plan_make(&r, &p8, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "20.6 GiB of fp8 KV cache") && strstr(err, "after the KV cache") &&
                      strstr(err, "use --dtype fp8") && !strstr(err, "--kv-dtype"),
                  "%s", err);
    r.kv_dtype = PL_KV_BF16;
    ck_assert_int_eq(pl_plan_make(&r, &p16, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "--kv-dtype fp8"), "%s", err);
    r.kv_dtype = (pl_kv_dtype)7;
    ck_assert_int_eq(pl_plan_make(&r, &p16, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "KV cache dtype (bf16 or fp8)"), "%s", err);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, lookup_and_validity);
    tcase_add_test(tc, tiny_dense_bytes);
    tcase_add_test(tc, tiny_moe_bytes);
    tcase_add_test(tc, large_model_params);
    tcase_add_test(tc, seventy_b_verdicts);
    tcase_add_test(tc, plan_to_the_byte);
    tcase_add_test(tc, fp8_cache_sizing);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
