/* The attention targets' host logic: FLOP counts, parameter checks, the lengths and block tables of the paged
 * cache, and the float64 references, which must agree with each other (the decode of the last token equals the
 * last row of a causal forward pass), with the layouts, and with cases whose answer is known in closed form. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "perflab/device.h"
#include "perflab/verify.h"
#include "testutil.h"

static uint16_t rand_bf16(uint64_t stream, size_t i, float lo, float hi)
{
    return pl_bf16_round_host(pl_uniform_host(99, stream, i, lo, hi));
}

START_TEST(flop_counts)
{
    ck_assert_double_eq(pl_attn_fwd_flops(4, 16, 4096, 128, 0), 4.0 * 4 * 16 * 4096.0 * 4096 * 128);
    ck_assert_double_eq(pl_attn_fwd_flops(4, 16, 4096, 128, 1), 2.0 * 4 * 16 * 4096.0 * 4096 * 128);
}
END_TEST

START_TEST(parameter_checks_name_the_fix)
{
    char err[256];
    ck_assert_int_eq(pl_attn_fwd_params_check(4, 16, 16, 4096, 128, 1, err, sizeof err), 0);
    ck_assert_int_eq(pl_attn_fwd_params_check(4, 16, 5, 4096, 128, 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--kv-heads 5"));
    ck_assert_int_eq(pl_attn_fwd_params_check(4, 16, 16, 4096, 96, 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "use 64, 128 or 256"));
    /* 256: the forward's kernels take it, the backward's do not */
    ck_assert_int_eq(pl_attn_fwd_params_check(4, 16, 16, 4096, 256, 1, err, sizeof err), 0);
    ck_assert_int_eq(pl_attn_fwd_params_check(4, 16, 16, 4096, 256, 0, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--head-dim 256 is not supported: use 64 or 128"));

    pl_attn_problem p;
    memset(&p, 0, sizeof p);
    static uint16_t buf[64] __attribute__((aligned(16)));
    static float lse[4];
    p.batch = 1, p.heads = 4, p.kv_heads = 2, p.seq = 3, p.head_dim = 64, p.scale = 0.125f;
    p.q = p.k = p.v = buf;
    p.o = buf;
    p.lse = lse;
    ck_assert(pl_attn_problem_valid(&p, err, sizeof err));
    p.head_dim = 256;
    ck_assert(pl_attn_problem_valid(&p, err, sizeof err));
    pl_attn_bwd_problem bp;
    memset(&bp, 0, sizeof bp);
    bp.f = p;
    bp.dout = bp.dq = bp.dk = bp.dv = buf;
    ck_assert(!pl_attn_bwd_problem_valid(&bp, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "use 64 or 128"));
    bp.f.head_dim = 128;
    ck_assert(pl_attn_bwd_problem_valid(&bp, err, sizeof err));
    p.head_dim = 96;
    ck_assert(!pl_attn_problem_valid(&p, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "use 64, 128 or 256"));
    p.head_dim = 64;
    p.kv_heads = 3;
    ck_assert(!pl_attn_problem_valid(&p, err, sizeof err));
    p.kv_heads = 2;
    p.q = buf + 1; /* misaligned */
    ck_assert(!pl_attn_problem_valid(&p, err, sizeof err));
    ck_assert_int_eq(pl_attn_layout_from_name("bshd"), PL_ATTN_BSHD);
    ck_assert_int_eq(pl_attn_layout_from_name("nhwc"), -1);
}
END_TEST

START_TEST(strides_of_both_layouts)
{
    pl_attn_problem p;
    memset(&p, 0, sizeof p);
    p.seq = 7, p.head_dim = 64, p.layout = PL_ATTN_BHSD;
    pl_attn_strides s = pl_attn_strides_of(&p, 3);
    ck_assert(s.b == 3 * 7 * 64 && s.h == 7 * 64 && s.s == 64);
    p.layout = PL_ATTN_BSHD;
    s = pl_attn_strides_of(&p, 3);
    ck_assert(s.b == 7 * 3 * 64 && s.h == 64 && s.s == 3 * 64);
}
END_TEST

START_TEST(lengths_and_block_tables)
{
    int lens[50];
    pl_decode_lengths(50, 1000, 0.5, 3, lens);
    long long sum = 0;
    int distinct = 0;
    for (int b = 0; b < 50; b++) {
        ck_assert(lens[b] >= 500 && lens[b] <= 1000);
        sum += lens[b];
        distinct += b > 0 && lens[b] != lens[b - 1];
    }
    ck_assert(distinct > 10); /* really drawn, not constant */
    ck_assert_int_eq(pl_decode_total_tokens(50, 1000, 0.5, 3), sum);
    pl_decode_lengths(50, 1000, 0.0, 3, lens);
    for (int b = 0; b < 50; b++)
        ck_assert_int_eq(lens[b], 1000);
    pl_decode_lengths(50, 77, 1.0, 4, lens);
    for (int b = 0; b < 50; b++)
        ck_assert(lens[b] >= 1 && lens[b] <= 77);

    /* every page of the pool used exactly once, -1 past each sequence's last page, pages shuffled */
    const int ps = 16, max_pages = (77 + ps - 1) / ps;
    int *table = malloc(sizeof(int) * 50 * max_pages);
    const int pages = pl_decode_block_table(50, lens, ps, max_pages, 11, table);
    int expect = 0;
    for (int b = 0; b < 50; b++)
        expect += (lens[b] + ps - 1) / ps;
    ck_assert_int_eq(pages, expect);
    char *seen = calloc((size_t)pages, 1);
    int in_order = 0;
    for (int b = 0; b < 50; b++)
        for (int i = 0; i < max_pages; i++) {
            const int pg = table[b * max_pages + i];
            if (i < (lens[b] + ps - 1) / ps) {
                ck_assert(pg >= 0 && pg < pages && !seen[pg]);
                seen[pg] = 1;
                in_order += i > 0 && pg == table[b * max_pages + i - 1] + 1;
            } else {
                ck_assert_int_eq(pg, -1);
            }
        }
    ck_assert(in_order < pages / 4);
    free(seen);
    free(table);
}
END_TEST

/* seq 1: the output is the one V row, the LSE the one scaled score */
START_TEST(forward_reference_closed_forms)
{
    pl_attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1, p.heads = 2, p.kv_heads = 1, p.seq = 1, p.head_dim = 64, p.scale = 0.3f;
    uint16_t q[128], k[64], v[64];
    for (int i = 0; i < 128; i++)
        q[i] = rand_bf16(1, i, -2, 2);
    for (int i = 0; i < 64; i++) {
        k[i] = rand_bf16(2, i, -2, 2);
        v[i] = rand_bf16(3, i, -1, 1);
    }
    float out[128];
    double lse[2];
    pl_attn_fwd_reference_host(&p, q, k, v, out, lse);
    for (int h = 0; h < 2; h++) {
        double s = 0;
        for (int e = 0; e < 64; e++) {
            ck_assert(fabs(out[h * 64 + e] - pl_bf16_to_double(v[e])) < 1e-7);
            s += pl_bf16_to_double(q[h * 64 + e]) * pl_bf16_to_double(k[e]);
        }
        ck_assert(fabs(lse[h] - (double)0.3f * s) < 1e-9);
    }
}
END_TEST

/* Random problem in bhsd, the same tensors transposed to bshd: the same outputs. The decode of the last token of a
 * paged copy of K/V equals the last row of the causal forward pass. */
START_TEST(references_agree)
{
    enum { B = 2, H = 4, KV = 2, S = 37, D = 64 };
    pl_attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = B, p.heads = H, p.kv_heads = KV, p.seq = S, p.head_dim = D, p.causal = 1, p.scale = 0.125f;
    const size_t nq = (size_t)B * H * S * D, nk = (size_t)B * KV * S * D;
    uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
    uint16_t *q2 = malloc(nq * 2), *k2 = malloc(nk * 2), *v2 = malloc(nk * 2);
    float *o = malloc(nq * 4), *o2 = malloc(nq * 4);
    double *lse = malloc(sizeof(double) * B * H * S), *lse2 = malloc(sizeof(double) * B * H * S);
    for (size_t i = 0; i < nq; i++)
        q[i] = rand_bf16(4, i, -2, 2);
    for (size_t i = 0; i < nk; i++) {
        k[i] = rand_bf16(5, i, -2, 2);
        v[i] = rand_bf16(6, i, -1, 1);
    }
    pl_attn_fwd_reference_host(&p, q, k, v, o, lse);
    /* transpose to bshd */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < S; s++)
            for (int e = 0; e < D; e++) {
                for (int h = 0; h < H; h++)
                    q2[(((size_t)b * S + s) * H + h) * D + e] = q[(((size_t)b * H + h) * S + s) * D + e];
                for (int h = 0; h < KV; h++) {
                    k2[(((size_t)b * S + s) * KV + h) * D + e] = k[(((size_t)b * KV + h) * S + s) * D + e];
                    v2[(((size_t)b * S + s) * KV + h) * D + e] = v[(((size_t)b * KV + h) * S + s) * D + e];
                }
            }
    p.layout = PL_ATTN_BSHD;
    pl_attn_fwd_reference_host(&p, q2, k2, v2, o2, lse2);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int s = 0; s < S; s++) {
                ck_assert(fabs(lse[((size_t)b * H + h) * S + s] - lse2[((size_t)b * H + h) * S + s]) < 1e-12);
                for (int e = 0; e < D; e++)
                    ck_assert(o[(((size_t)b * H + h) * S + s) * D + e] == o2[(((size_t)b * S + s) * H + h) * D + e]);
            }
    /* causal: row 0 sees key 0 only */
    for (int e = 0; e < D; e++)
        ck_assert(fabs(o[e] - pl_bf16_to_double(v[e])) < 1e-7);

    /* decode: K/V of each sequence (length S) into shuffled pages of 8 tokens, q = the last query row */
    pl_decode_problem d;
    memset(&d, 0, sizeof d);
    d.batch = B, d.heads = H, d.kv_heads = KV, d.head_dim = D, d.page_size = 8, d.scale = p.scale;
    d.max_pages = (S + 7) / 8;
    int lens[B] = {S, S}, table[B * ((S + 7) / 8)];
    const int pages = pl_decode_block_table(B, lens, 8, d.max_pages, 5, table);
    uint16_t *kc = calloc((size_t)pages * 8 * KV * D, 2), *vc = calloc((size_t)pages * 8 * KV * D, 2);
    uint16_t qd[B * H * D];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < S; t++) {
            const size_t page = (size_t)table[b * d.max_pages + t / 8];
            for (int h = 0; h < KV; h++)
                for (int e = 0; e < D; e++) {
                    const size_t dst = ((page * 8 + t % 8) * KV + h) * D + e;
                    kc[dst] = k[(((size_t)b * KV + h) * S + t) * D + e];
                    vc[dst] = v[(((size_t)b * KV + h) * S + t) * D + e];
                }
        }
        for (int h = 0; h < H; h++)
            for (int e = 0; e < D; e++)
                qd[((size_t)b * H + h) * D + e] = q[(((size_t)b * H + h) * S + S - 1) * D + e];
    }
    double od[B * H * D];
    pl_decode_reference_host(&d, qd, kc, vc, table, lens, od);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int e = 0; e < D; e++)
                ck_assert(fabs(od[((size_t)b * H + h) * D + e] - o[(((size_t)b * H + h) * S + S - 1) * D + e]) < 1e-6);
    free(q), free(k), free(v), free(q2), free(k2), free(v2), free(o), free(o2), free(lse), free(lse2);
    free(kc), free(vc);
}
END_TEST

/* The backward reference against the definition: the loss L = Σ dO ∘ O of a small float64 forward, differentiated
 * by central differences at every element of Q, K, V (GQA group of 2, causal and not), and the identities that hold
 * whatever the inputs: Σⱼ dKⱼ = 0 (every row of dS sums to 0) and Σⱼ dVⱼ = Σᵢ dOᵢ over a group (rows of P sum to 1). */
enum { BW_H = 2, BW_S = 7, BW_D = 64 };

static double bw_loss(const pl_attn_problem *p, const double *q, const double *k, const double *v, const double *dout)
{
    double loss = 0;
    for (int h = 0; h < BW_H; h++)
        for (int i = 0; i < BW_S; i++) {
            const int visible = p->causal ? i + 1 : BW_S;
            double sc[BW_S], mx = -INFINITY, l = 0;
            for (int j = 0; j < visible; j++) {
                double t = 0;
                for (int e = 0; e < BW_D; e++)
                    t += q[(h * BW_S + i) * BW_D + e] * k[j * BW_D + e];
                sc[j] = t * (double)p->scale;
                mx = sc[j] > mx ? sc[j] : mx;
            }
            for (int j = 0; j < visible; j++)
                l += exp(sc[j] - mx);
            for (int j = 0; j < visible; j++)
                for (int e = 0; e < BW_D; e++)
                    loss += exp(sc[j] - mx) / l * v[j * BW_D + e] * dout[(h * BW_S + i) * BW_D + e];
        }
    return loss;
}

/* d loss / d x[at] by central differences (x one of the three inputs, perturbed in place) */
static double bw_fd(const pl_attn_problem *p, double *q, double *k, double *v, const double *dout, double *x, int at)
{
    const double eps = 1e-5, x0 = x[at];
    x[at] = x0 + eps;
    const double up = bw_loss(p, q, k, v, dout);
    x[at] = x0 - eps;
    const double down = bw_loss(p, q, k, v, dout);
    x[at] = x0;
    return (up - down) / (2 * eps);
}

START_TEST(backward_reference_matches_the_definition)
{
    pl_attn_problem p;
    memset(&p, 0, sizeof p);
    p.batch = 1, p.heads = BW_H, p.kv_heads = 1, p.seq = BW_S, p.head_dim = BW_D, p.scale = 0.2f;
    p.causal = _i;
    enum { NQ = BW_H * BW_S * BW_D, NK = BW_S * BW_D };
    uint16_t q[NQ], dout[NQ], k[NK], v[NK];
    double qd[NQ], dod[NQ], kd[NK], vd[NK];
    for (int i = 0; i < NQ; i++) {
        q[i] = rand_bf16(7, i, -2, 2), qd[i] = pl_bf16_to_double(q[i]);
        dout[i] = rand_bf16(8, i, -1, 1), dod[i] = pl_bf16_to_double(dout[i]);
    }
    for (int i = 0; i < NK; i++) {
        k[i] = rand_bf16(9, i, -2, 2), kd[i] = pl_bf16_to_double(k[i]);
        v[i] = rand_bf16(10, i, -1, 1), vd[i] = pl_bf16_to_double(v[i]);
    }
    float dq[NQ], dk[NK], dv[NK];
    pl_attn_bwd_reference_host(&p, q, k, v, NULL, dout, dq, dk, dv);
    for (int i = 0; i < NQ; i++)
        ck_assert_msg(fabs(bw_fd(&p, qd, kd, vd, dod, qd, i) - dq[i]) < 1e-6 * (1 + fabs(dq[i])), "dQ[%d]", i);
    for (int i = 0; i < NK; i++) {
        ck_assert_msg(fabs(bw_fd(&p, qd, kd, vd, dod, kd, i) - dk[i]) < 1e-6 * (1 + fabs(dk[i])), "dK[%d]", i);
        ck_assert_msg(fabs(bw_fd(&p, qd, kd, vd, dod, vd, i) - dv[i]) < 1e-6 * (1 + fabs(dv[i])), "dV[%d]", i);
    }
    for (int e = 0; e < BW_D; e++) {
        double sk = 0, sv = 0, sdo = 0;
        for (int j = 0; j < BW_S; j++)
            sk += dk[j * BW_D + e], sv += dv[j * BW_D + e];
        for (int r = 0; r < BW_H * BW_S; r++)
            sdo += dod[r * BW_D + e];
        ck_assert(fabs(sk) < 1e-5);
        ck_assert(fabs(sv - sdo) < 1e-5);
    }
    ck_assert_double_eq(pl_attn_bwd_flops(4, 16, 4096, 128, 0), 10.0 * 4 * 16 * 4096.0 * 4096 * 128);
    ck_assert_double_eq(pl_attn_bwd_flops(4, 16, 4096, 128, 1), 5.0 * 4 * 16 * 4096.0 * 4096 * 128);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("host");
    tcase_add_test(tc, flop_counts);
    tcase_add_test(tc, parameter_checks_name_the_fix);
    tcase_add_test(tc, strides_of_both_layouts);
    tcase_add_test(tc, lengths_and_block_tables);
    tcase_add_test(tc, forward_reference_closed_forms);
    tcase_add_test(tc, references_agree);
    tcase_add_loop_test(tc, backward_reference_matches_the_definition, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return pl_run_suite(suite());
}
