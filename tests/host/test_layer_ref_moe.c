/* The float64 reference's MoE half (labs/common/layer_ref.h, pl_layer_ref_moe) on a hand-made 8-wide layer whose
 * attention contributes nothing (qkv and o zero) and whose router reads one input element an expert (router rows
 * are unit vectors), so the routing is known: the top_k experts in decreasing logit order, a tie to the lower id,
 * the margin of the choice, forced experts, the weights the softmax over the chosen logits, the residual alone when
 * the experts' weights are zero, and the one-rounding (epilogue) form against the two-rounding one. */
#include <math.h>
#include <string.h>

#include "common/layer_ref.h"
#include "perflab/device.h"
#include "perflab/verify.h"
#include "testutil.h"

#define H    8
#define E    4
#define K    2
#define I    4
#define HD   8
#define PAGE 16

/* name layers hidden heads kv hd inter experts top_k e_inter vocab tied qkn theta eps source */
static const pl_model_config cfg = {"host-moe", 1, H, 1, 1, HD, 0, E, K, I, 10, 0, 0, 10000.0, 1e-6, "test"};

typedef struct layer {
    uint16_t attn_norm[H], qkv[3 * HD * H], o[H * HD], mlp_norm[H], router[E * H];
    uint16_t gate_up[E * 2 * I * H], down[E * H * I];
    uint16_t kc[PAGE * HD], vc[PAGE * HD];
    pl_layer_ref_moe_weights w;
} layer;

static uint16_t b16(double v)
{
    return pl_bf16_round_host((float)v);
}

static double bf(uint16_t b)
{
    return pl_bf16_to_double(b);
}

/* Zero attention, unit-vector router, expert e's gate and up all 0.5 and its down all (e + 1) / 8 (or zero). */
static void layer_init(layer *L, int zero_experts)
{
    memset(L, 0, sizeof *L);
    for (int c = 0; c < H; c++)
        L->attn_norm[c] = L->mlp_norm[c] = b16(1.0);
    for (int e = 0; e < E; e++)
        L->router[e * H + e] = b16(1.0);
    for (int e = 0; e < E; e++) {
        for (int i = 0; i < 2 * I * H; i++)
            L->gate_up[e * 2 * I * H + i] = b16(zero_experts ? 0.0 : 0.5);
        for (int i = 0; i < H * I; i++)
            L->down[e * H * I + i] = b16(zero_experts ? 0.0 : (e + 1) / 8.0);
    }
    L->w = (pl_layer_ref_moe_weights){
        {L->attn_norm, L->qkv, L->o, L->mlp_norm, L->gate_up, L->down}, NULL, NULL, L->router};
}

static void run(layer *L, const double *xv, int epilogue, const int *force, uint16_t *x, uint16_t *out, int *ids,
                double *margin)
{
    static const int table0[1] = {0};
    const int *tables[1] = {table0}, pos[1] = {0};
    const int64_t slots[1] = {0};
    const pl_layer_ref_rows rows = {1, PAGE, pos, slots, tables, 0, 0};
    const pl_layer_ref_routing routing = {force, ids, margin};
    for (int c = 0; c < H; c++)
        x[c] = b16(xv[c]);
    ck_assert_int_eq(pl_layer_ref_moe(&cfg, &L->w, &rows, epilogue, &routing, L->kc, L->vc, x, out), 0);
}

static double rms_of(const uint16_t *x)
{
    double ss = 0;
    for (int c = 0; c < H; c++)
        ss += bf(x[c]) * bf(x[c]);
    return sqrt(ss / H + cfg.rms_eps);
}

START_TEST(routing_and_residual)
{
    layer L;
    layer_init(&L, 1);
    const double xv[H] = {0.5, 2, 1, 1.5, 0.25, 0.25, 0.25, 0.25};
    uint16_t x[H], out[H];
    int ids[K];
    double margin;
    run(&L, xv, 0, NULL, x, out, ids, &margin);
    ck_assert_int_eq(ids[0], 1);
    ck_assert_int_eq(ids[1], 3);
    const double inv = 1.0 / rms_of(x);
    ck_assert_msg(fabs(margin - (bf(b16(1.5 * inv)) - bf(b16(1.0 * inv)))) < 1e-12, "margin %.17g", margin);
    for (int c = 0; c < H; c++)
        ck_assert_msg(out[c] == x[c], "zero experts: out[%d] = %g, x = %g", c, bf(out[c]), bf(x[c]));
}
END_TEST

START_TEST(tie_to_lower_id)
{
    layer L;
    layer_init(&L, 1);
    const double xv[H] = {1, 1, 1, 0.5, 0.25, 0.25, 0.25, 0.25};
    uint16_t x[H], out[H];
    int ids[K];
    double margin;
    run(&L, xv, 0, NULL, x, out, ids, &margin);
    ck_assert_int_eq(ids[0], 0);
    ck_assert_int_eq(ids[1], 1);
    ck_assert(margin == 0.0);
}
END_TEST

/* out - x against Σ softmax(chosen logits) · y_e, y_e = rb(act · 4 · (e + 1) / 8) with act from the known gate. */
static void expect_mix(const uint16_t *x, const uint16_t *out, const int *ids, int epilogue)
{
    const double inv = 1.0 / rms_of(x);
    double xn[H], s = 0;
    for (int c = 0; c < H; c++)
        xn[c] = bf(b16(bf(x[c]) * inv)), s += xn[c] * 0.5;
    const double g = bf(b16(s)), act = bf(b16(g / (1.0 + exp(-g)) * g));
    const double l0 = xn[ids[0]], l1 = xn[ids[1]], w0 = 1.0 / (1.0 + exp(l1 - l0)), w1 = 1.0 - w0;
    const double y0 = bf(b16(act * 4 * (ids[0] + 1) / 8.0)), y1 = bf(b16(act * 4 * (ids[1] + 1) / 8.0));
    const double mix = w0 * y0 + w1 * y1;
    for (int c = 0; c < H; c++) {
        const double want = bf(b16(bf(x[c]) + (epilogue ? mix : bf(b16(mix)))));
        ck_assert_msg(out[c] == b16(want), "out[%d] = %.9g, expected %.9g (experts %d, %d)", c, bf(out[c]), want,
                      ids[0], ids[1]);
    }
}

START_TEST(weights_and_force)
{
    layer L;
    layer_init(&L, 0);
    const double xv[H] = {0.5, 2, 1, 1.5, -0.25, 0.75, 0.25, -1};
    uint16_t x[H], out[H], forced_out[H];
    int ids[K], fids[K];
    double margin;
    for (int epilogue = 0; epilogue < 2; epilogue++) {
        run(&L, xv, epilogue, NULL, x, out, ids, &margin);
        ck_assert(ids[0] == 1 && ids[1] == 3);
        expect_mix(x, out, ids, epilogue);
        const int force[K] = {0, 2};
        run(&L, xv, epilogue, force, x, forced_out, fids, &margin);
        ck_assert(fids[0] == 0 && fids[1] == 2);
        expect_mix(x, forced_out, fids, epilogue);
        ck_assert(memcmp(out, forced_out, sizeof out) != 0);
        const int no_force[K] = {-1, -1};
        run(&L, xv, epilogue, no_force, x, forced_out, fids, &margin);
        ck_assert(memcmp(out, forced_out, sizeof out) == 0);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layer_ref_moe");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, routing_and_residual);
    tcase_add_test(tc, tie_to_lower_id);
    tcase_add_test(tc, weights_and_force);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
