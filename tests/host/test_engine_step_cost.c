/* The step counters: FLOPs and bytes of prefill and decode steps for the tiny dense and MoE configs worked by hand,
 * the expected and exact counts of experts touched, the whole model with its LM head, the floor on either side of
 * the ridge, and the Llama-3-8B layer decode step (64 x 2048) against the ~226 µs floor it was measured beside. */
#include <math.h>

#include "engine/step_cost.h"
#include "testutil.h"

#define NEAR(a, b)                                                                                                     \
    ck_assert_msg(fabs((double)(a) - (double)(b)) <= 1e-9 * fabs((double)(b)) + 1e-12, "%.17g != %.17g", (double)(a),  \
                  (double)(b))

static const pl_model_config *model(const char *name)
{
    char err[512];
    const pl_model_config *m = pl_model_find(name, err, sizeof err);
    ck_assert_msg(m, "%s", err);
    return m;
}

static const int lens3[3] = {5, 17, 33};

/* tiny-dense (hidden 320, 8 heads / 2 kv of 64, MLP 864): 1,239,040 GEMM weights, 2,479,360 bytes in bf16; a K/V
 * row of a token is 2 x 2 x 64 x 2 = 512 bytes. */
START_TEST(tiny_dense_layer)
{
    const pl_model_config *m = model("tiny-dense");
    const pl_step_batch b = {3, lens3, NULL, PL_KV_BF16};
    pl_step_cost c;
    ck_assert_int_eq(pl_layer_decode_cost(m, PL_WEIGHTS_BF16, &b, &c), 0);
    /* 3 tokens; attention over 5 + 17 + 33 = 55 keys: 4 x 64 x 8 FLOPs each */
    NEAR(c.flops, 2.0 * 3 * 1239040 + 4.0 * 64 * 8 * 55);
    NEAR(c.weight_bytes, 2479360);
    NEAR(c.kv_read_bytes, 55 * 512);
    NEAR(c.kv_write_bytes, 3 * 512);
    NEAR(c.act_bytes, 2 * 3 * 320 * 2);
    NEAR(c.bytes, 2479360 + 28160 + 1536 + 3840);
    ck_assert(c.experts_touched == 0.0);

    ck_assert_int_eq(pl_layer_prefill_cost(m, PL_WEIGHTS_BF16, &b, &c), 0);
    /* 55 tokens; causal pairs 5·6/2 + 17·18/2 + 33·34/2 = 729 */
    NEAR(c.flops, 2.0 * 55 * 1239040 + 4.0 * 64 * 8 * 729);
    NEAR(c.kv_read_bytes, 0);
    NEAR(c.kv_write_bytes, 55 * 512);
    NEAR(c.bytes, 2479360 + 55 * 512 + 2 * 55 * 320 * 2);

    /* fp8 weights: the GEMM weights' bytes halve, the rest stays */
    ck_assert_int_eq(pl_layer_decode_cost(m, PL_WEIGHTS_FP8, &b, &c), 0);
    NEAR(c.weight_bytes, 1239040 + 4 * 4 + 2 * 640);

    const int bad_lens[2] = {4, 0};
    const pl_step_batch bad = {2, bad_lens, NULL, PL_KV_BF16};
    ck_assert_int_eq(pl_layer_decode_cost(m, PL_WEIGHTS_BF16, &bad, &c), -1);
}
END_TEST

/* tiny-moe: attention GEMMs 245,760 + 163,840; router 6 x 320; experts of 3 x 320 x 200 weights (384,000 bytes);
 * the fixed part 824,576 bytes. */
START_TEST(tiny_moe_layer)
{
    const pl_model_config *m = model("tiny-moe");
    const int routing[6] = {0, 1, 1, 2, 0, 5}; /* 3 tokens x top 2: experts 0, 1, 2, 5 */
    pl_step_batch b = {3, lens3, routing, PL_KV_BF16};
    pl_step_cost c;
    ck_assert_int_eq(pl_layer_decode_cost(m, PL_WEIGHTS_BF16, &b, &c), 0);
    ck_assert(c.experts_touched == 4.0);
    NEAR(c.weight_bytes, 824576 + 4 * 384000);
    NEAR(c.flops, 2.0 * 3 * (245760 + 163840) + 2.0 * 3 * 320 * 6 + 2.0 * 3 * 2 * 3 * 320 * 200 + 4.0 * 64 * 8 * 55);
    NEAR(c.bytes, 824576 + 4 * 384000 + 55 * 512 + 3 * 512 + 2 * 3 * 320 * 2);
    /* uniform routing: 6 (1 - (1 - 2/6)^3) = 6 x 19/27 */
    b.routing = NULL;
    ck_assert_int_eq(pl_layer_decode_cost(m, PL_WEIGHTS_BF16, &b, &c), 0);
    NEAR(c.experts_touched, 6.0 * 19.0 / 27.0);
    NEAR(c.weight_bytes, 824576 + 6.0 * 19.0 / 27.0 * 384000);
    /* a large batch touches them all; one token touches top_k */
    NEAR(pl_expected_experts(128, 8, 1), 8.0);
    ck_assert(pl_expected_experts(128, 8, 4096) > 127.99);
    NEAR(pl_expected_experts(128, 8, 64), 128.0 * (1.0 - pow(15.0 / 16.0, 64)));
    ck_assert_int_eq(pl_distinct_experts(routing, 6, 6), 4);
}
END_TEST

/* The whole tiny-dense model (3 layers, tied head of vocab 1000), decode: 3 layers + the LM head over 3 rows. */
START_TEST(tiny_dense_model)
{
    const pl_model_config *m = model("tiny-dense");
    const pl_step_batch b = {3, lens3, NULL, PL_KV_BF16};
    pl_step_cost c;
    ck_assert_int_eq(pl_model_decode_cost(m, PL_WEIGHTS_BF16, 0, &b, &c), 0);
    NEAR(c.flops, 3 * (2.0 * 3 * 1239040 + 4.0 * 64 * 8 * 55) + 2.0 * 3 * 320 * 1000);
    NEAR(c.weight_bytes, 3 * 2479360 + 640 + 640000); /* the tied embedding table is the head */
    NEAR(c.kv_read_bytes, 3 * 55 * 512);
    NEAR(c.kv_write_bytes, 3 * 3 * 512);
    NEAR(c.act_bytes, 3 * 3840 + 3 * 320 * 2 + 3 * 1000 * 4);
    ck_assert_int_eq(pl_model_prefill_cost(m, PL_WEIGHTS_BF16, 1, &b, &c), 0); /* --layers 1 */
    NEAR(c.flops, 2.0 * 55 * 1239040 + 4.0 * 64 * 8 * 729 + 2.0 * 3 * 320 * 1000);
}
END_TEST

START_TEST(floor_both_sides)
{
    pl_step_cost c = {0};
    c.flops = 7.0e9;
    c.bytes = 2.0e6;
    const pl_ceilings fast_math = {1e15, 1e9}, slow_math = {1e9, 1e12};
    NEAR(pl_step_floor_s(&c, &fast_math), 2.0e-3); /* memory-bound */
    NEAR(pl_step_floor_s(&c, &slow_math), 7.0);    /* compute-bound */
}
END_TEST

/* Llama-3-8B layer, decode, 64 sequences x 2048 tokens, bf16: the ~226 µs floor of weights and KV read once at an
 * H200's copy rate (4.3 TB/s). */
START_TEST(llama3_8b_decode_floor)
{
    int lens[64];
    for (int i = 0; i < 64; i++)
        lens[i] = 2048;
    const pl_step_batch b = {64, lens, NULL, PL_KV_BF16};
    pl_step_cost c;
    ck_assert_int_eq(pl_layer_decode_cost(model("llama3-8b"), PL_WEIGHTS_BF16, &b, &c), 0);
    NEAR(c.weight_bytes, 436224000);
    NEAR(c.kv_read_bytes, 536870912);
    NEAR(c.bytes, 974405632);
    NEAR(c.flops, 2.0 * 64 * 218103808 + 4.0 * 128 * 32 * 64 * 2048);
    const pl_ceilings h200 = {989e12, 4.3e12};
    const double floor_us = pl_step_floor_s(&c, &h200) * 1e6;
    ck_assert_msg(floor_us > 226.0 && floor_us < 227.0, "%.2f us", floor_us);
    /* fp8 weights: the floor falls by the weights' half */
    ck_assert_int_eq(pl_layer_decode_cost(model("llama3-8b"), PL_WEIGHTS_FP8, &b, &c), 0);
    NEAR(c.weight_bytes, 218103808 + 4 * 4 + 2 * 8192);
    /* an FP8 cache: K and V at a byte an element plus a 4-byte scale a (token, kv head) row, read and written; 714.2
     * MB with bf16 weights (1.364x fewer bytes than bf16's 974.4), 496.1 MB with FP8 weights too (1.964x) */
    const pl_step_batch b8 = {64, lens, NULL, PL_KV_FP8_E4M3};
    ck_assert_int_eq(pl_layer_decode_cost(model("llama3-8b"), PL_WEIGHTS_BF16, &b8, &c), 0);
    NEAR(c.kv_read_bytes, 64.0 * 2048 * 2 * 8 * (128 + 4));
    NEAR(c.kv_write_bytes, 64.0 * 2 * 8 * (128 + 4));
    NEAR(c.bytes, 714231808);
    ck_assert_int_eq(pl_layer_decode_cost(model("llama3-8b"), PL_WEIGHTS_FP8, &b8, &c), 0);
    NEAR(c.bytes, 218103808 + 4 * 4 + 2 * 8192 + 276824064 + 135168 + 1048576);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_step_cost");
    TCase *tc = tcase_create("step_cost");
    tcase_add_test(tc, tiny_dense_layer);
    tcase_add_test(tc, tiny_moe_layer);
    tcase_add_test(tc, tiny_dense_model);
    tcase_add_test(tc, floor_both_sides);
    tcase_add_test(tc, llama3_8b_decode_floor);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
