/* On a GPU: the engine's dense layer (engine/dense_layer.h, the baseline decode step) against a float64 host
 * reference that stores every intermediate in bf16 where the layer does (so the two differ only by summation order
 * and the rare bf16 rounding that order flips). Tiny configs tiny-dense (GQA 4, head_dim 64) and tiny-dense-gqa8
 * (GQA 8, head_dim 128), batch 1 and 3, cache lengths no multiple of the 16-token page, pages of the sequences
 * interleaved in the pool. Weights are the engine's seeded device fill (copied back for the reference); the caches'
 * earlier tokens and the inputs are random in ±1 (no zeros), the output and the new tokens' cache slots are NaN
 * before each run. Two decode steps per case: the second attends to the token the first wrote (one sequence's
 * second token starts a new page), so a wrong slot, page or RoPE in the KV write shows in its output.
 * Each step checks:
 *   - the layer's output and its update (out - x) within relative L2 1e-2 of the reference's, and every element
 *     within |out - ref| <= 0.02·|ref| + 0.03·rms(ref), none NaN;
 *   - the new tokens' K and V rows equal the reference's within (|ref| + their rms) / 64 (room for a bf16 rounding
 *     flip of the projection, not for a wrong angle or slot), and every other cache element bit-identical to what was
 *     there (no stray writes);
 * and the refusals: a MoE config's weights and a workspace one byte short are refused, and the workspace the layer
 * needs fits the memory plan's activation bytes. Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/attention_host.h"
#include "engine/dense_layer.h"
#include "engine/kv_pages.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "testutil.h"

#define PAGE     16
#define STEPS    2
#define CK(call) ck_assert_msg((call) == cudaSuccess, "%s failed", #call)

typedef struct layer_case {
    const char *model;
    int batch;
    int lens[3]; /* tokens in each sequence's cache before the first step */
} layer_case;

static const layer_case cases[] = {
    {"tiny-dense", 1, {47, 0, 0}},
    {"tiny-dense", 3, {15, 1, 94}},
    {"tiny-dense-gqa8", 1, {33, 0, 0}},
    {"tiny-dense-gqa8", 3, {31, 70, 5}},
};

static double bf(uint16_t b)
{
    const uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t rb(double d)
{
    return pl_bf16_round_host((float)d);
}

static void fill_random(uint16_t *p, size_t n, pl_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        double v = 2.0 * pl_rng_uniform(r) - 1.0;
        p[i] = rb(fabs(v) < 1e-3 ? 0.5 : v);
    }
}

static uint16_t *host_copy(const uint16_t *dev, size_t n)
{
    uint16_t *h = malloc(n * 2);
    ck_assert(h != NULL);
    CK(cudaMemcpy(h, dev, n * 2, cudaMemcpyDeviceToHost));
    return h;
}

/* ---- the float64 reference, bf16 at the layer's storage points ---- */

typedef struct host_weights {
    uint16_t *attn_norm, *qkv, *o, *mlp_norm, *gate_up, *down;
} host_weights;

static void ref_rmsnorm(const uint16_t *x, const uint16_t *w, int rows, int cols, double eps, uint16_t *y)
{
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++)
            ss += bf(x[(size_t)r * cols + c]) * bf(x[(size_t)r * cols + c]);
        const double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++)
            y[(size_t)r * cols + c] = rb(bf(x[(size_t)r * cols + c]) * inv * bf(w[c]));
    }
}

/* d [m][n] = a [m][k] · wᵀ, w [n][k] */
static void ref_linear(const uint16_t *a, const uint16_t *w, int m, int n, int k, uint16_t *d)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int e = 0; e < k; e++)
                s += bf(a[(size_t)i * k + e]) * bf(w[(size_t)j * k + e]);
            d[(size_t)i * n + j] = rb(s);
        }
}

static void ref_rope_row(const uint16_t *src, int hd, int pos, double theta, uint16_t *dst)
{
    for (int i = 0; i < hd / 2; i++) {
        const double angle = (double)pos * exp(-(2.0 * i / hd) * log(theta));
        const double x1 = bf(src[i]), x2 = bf(src[i + hd / 2]);
        dst[i] = rb(x1 * cos(angle) - x2 * sin(angle));
        dst[i + hd / 2] = rb(x2 * cos(angle) + x1 * sin(angle));
    }
}

typedef struct host_step {
    int batch, max_pages;
    int *positions, *seq_lens, *table;
    int64_t *slots;
} host_step;

/* q [B][H][hd] and the new tokens' K/V rows written into the host caches */
static void ref_rope_kv(const pl_model_config *m, const uint16_t *qkv, const host_step *s, uint16_t *q, uint16_t *kc,
                        uint16_t *vc)
{
    const int hd = m->head_dim, H = m->heads, KV = m->kv_heads, row = (H + 2 * KV) * hd;
    for (int b = 0; b < s->batch; b++) {
        const uint16_t *r = qkv + (size_t)b * row;
        for (int h = 0; h < H; h++)
            ref_rope_row(r + h * hd, hd, s->positions[b], m->rope_theta, q + ((size_t)b * H + h) * hd);
        for (int g = 0; g < KV; g++) {
            const size_t at = ((size_t)s->slots[b] * KV + g) * hd;
            ref_rope_row(r + (H + g) * hd, hd, s->positions[b], m->rope_theta, kc + at);
            memcpy(vc + at, r + (H + KV + g) * hd, (size_t)hd * 2);
        }
    }
}

static void ref_residual(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = rb(bf(x[i]) + bf(y[i]));
}

static void ref_attention(const pl_model_config *m, const host_step *s, const uint16_t *q, const uint16_t *kc,
                          const uint16_t *vc, uint16_t *attn)
{
    pl_decode_problem p = {.batch = s->batch,
                           .heads = m->heads,
                           .kv_heads = m->kv_heads,
                           .head_dim = m->head_dim,
                           .page_size = PAGE,
                           .max_pages = s->max_pages,
                           .scale = (float)(1.0 / sqrt((double)m->head_dim))};
    const size_t n = (size_t)s->batch * m->heads * m->head_dim;
    double *o = malloc(n * sizeof *o);
    ck_assert(o != NULL);
    pl_decode_reference_host(&p, q, kc, vc, s->table, s->seq_lens, o);
    for (size_t i = 0; i < n; i++)
        attn[i] = rb(o[i]);
    free(o);
}

/* out = the layer of x; the new tokens' K/V written into kc, vc */
static void ref_layer(const pl_model_config *m, const host_weights *w, const host_step *s, uint16_t *kc, uint16_t *vc,
                      const uint16_t *x, uint16_t *out)
{
    const int B = s->batch, D = m->hidden, I = m->intermediate, qw = m->heads * m->head_dim;
    const int qkvw = qw + 2 * m->kv_heads * m->head_dim;
    uint16_t *xn = malloc((size_t)B * D * 2), *qkv = malloc((size_t)B * qkvw * 2), *q = malloc((size_t)B * qw * 2);
    uint16_t *attn = malloc((size_t)B * qw * 2), *proj = malloc((size_t)B * D * 2);
    uint16_t *gu = malloc((size_t)B * 2 * I * 2), *act = malloc((size_t)B * I * 2);
    ck_assert(xn && qkv && q && attn && proj && gu && act);
    ref_rmsnorm(x, w->attn_norm, B, D, m->rms_eps, xn);
    ref_linear(xn, w->qkv, B, qkvw, D, qkv);
    ref_rope_kv(m, qkv, s, q, kc, vc);
    ref_attention(m, s, q, kc, vc, attn);
    ref_linear(attn, w->o, B, D, qw, proj);
    ref_residual(x, proj, out, (size_t)B * D);
    ref_rmsnorm(out, w->mlp_norm, B, D, m->rms_eps, xn);
    ref_linear(xn, w->gate_up, B, 2 * I, D, gu);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < I; i++) {
            const double g = bf(gu[(size_t)b * 2 * I + i]), u = bf(gu[(size_t)b * 2 * I + I + i]);
            act[(size_t)b * I + i] = rb(g / (1.0 + exp(-g)) * u);
        }
    ref_linear(act, w->down, B, D, I, proj);
    ref_residual(out, proj, out, (size_t)B * D);
    free(xn), free(qkv), free(q), free(attn), free(proj), free(gu), free(act);
}

/* ---- the device side of one case ---- */

typedef struct rig {
    const pl_model_config *m;
    const layer_case *c;
    pl_dense_weights w;
    host_weights hw;
    pl_kv_pool pool;
    pl_kv_seq seqs[3];
    int max_pages;
    size_t cache_elems, row_elems; /* a cache pool's elements; one token's K (or V) row: kv_heads · head_dim */
    uint16_t *kc_h, *vc_h;         /* the reference's caches */
    pl_layer_kv kv;
    void *ws;
    size_t ws_bytes;
    uint16_t *x_d, *out_d;
    int *pos_d, *lens_d, *table_d;
    int64_t *slots_d;
    pl_rng rng;
} rig;

static void copy_weights(rig *r)
{
    const pl_model_config *m = r->m;
    const size_t D = m->hidden, qw = (size_t)m->heads * m->head_dim, I = m->intermediate;
    const size_t qkvw = qw + 2 * (size_t)m->kv_heads * m->head_dim;
    r->hw.attn_norm = host_copy(r->w.attn_norm, D);
    r->hw.qkv = host_copy(r->w.qkv, qkvw * D);
    r->hw.o = host_copy(r->w.o, D * qw);
    r->hw.mlp_norm = host_copy(r->w.mlp_norm, D);
    r->hw.gate_up = host_copy(r->w.gate_up, 2 * I * D);
    r->hw.down = host_copy(r->w.down, D * I);
}

/* Pages for every sequence's tokens and the steps' new ones, handed out a page per sequence in turn so that each
 * sequence's pages are scattered through the pool. */
static void take_pages(rig *r)
{
    const layer_case *c = r->c;
    int pages = 2, left[3] = {0, 0, 0}, any = 1;
    for (int b = 0; b < c->batch; b++)
        pages += pl_kv_pages_for(c->lens[b] + STEPS, PAGE);
    ck_assert_int_eq(pl_kv_pool_init(&r->pool, pages, PAGE), 0);
    for (int b = 0; b < c->batch; b++)
        left[b] = c->lens[b] + STEPS;
    while (any) {
        any = 0;
        for (int b = 0; b < c->batch; b++)
            if (left[b] > 0) {
                const int n = left[b] < PAGE ? left[b] : PAGE;
                ck_assert_int_eq(pl_kv_seq_append(&r->pool, &r->seqs[b], n), PL_KV_OK);
                left[b] -= n;
                any = 1;
            }
    }
    r->max_pages = 1;
    for (int b = 0; b < c->batch; b++)
        if (r->seqs[b].npages > r->max_pages)
            r->max_pages = r->seqs[b].npages;
    r->row_elems = (size_t)r->m->kv_heads * r->m->head_dim;
    r->cache_elems = (size_t)pages * PAGE * r->row_elems;
}

static void rig_init(rig *r, const layer_case *c, uint64_t seed)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->c = c;
    r->m = pl_model_find(c->model, err, sizeof err);
    ck_assert_msg(r->m != NULL, "%s", err);
    pl_rng_seed(&r->rng, seed);
    ck_assert_msg(pl_dense_weights_alloc(r->m, seed, &r->w, err, sizeof err) == 0, "%s", err);
    copy_weights(r);
    take_pages(r);
    r->kc_h = malloc(r->cache_elems * 2);
    r->vc_h = malloc(r->cache_elems * 2);
    ck_assert(r->kc_h && r->vc_h);
    fill_random(r->kc_h, r->cache_elems, &r->rng);
    fill_random(r->vc_h, r->cache_elems, &r->rng);
    CK(cudaMalloc((void **)&r->kv.k, r->cache_elems * 2));
    CK(cudaMalloc((void **)&r->kv.v, r->cache_elems * 2));
    CK(cudaMemcpy(r->kv.k, r->kc_h, r->cache_elems * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->kv.v, r->vc_h, r->cache_elems * 2, cudaMemcpyHostToDevice));
    r->ws_bytes = pl_dense_decode_workspace_bytes(r->m, c->batch);
    CK(cudaMalloc(&r->ws, r->ws_bytes));
    const size_t xn = (size_t)c->batch * r->m->hidden;
    CK(cudaMalloc((void **)&r->x_d, xn * 2));
    CK(cudaMalloc((void **)&r->out_d, xn * 2));
    CK(cudaMalloc((void **)&r->pos_d, (size_t)c->batch * sizeof(int)));
    CK(cudaMalloc((void **)&r->lens_d, (size_t)c->batch * sizeof(int)));
    CK(cudaMalloc((void **)&r->slots_d, (size_t)c->batch * sizeof(int64_t)));
    CK(cudaMalloc((void **)&r->table_d, (size_t)c->batch * r->max_pages * sizeof(int)));
}

static void rig_free(rig *r)
{
    void *dev[] = {r->kv.k, r->kv.v, r->ws, r->x_d, r->out_d, r->pos_d, r->lens_d, r->slots_d, r->table_d};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        CK(cudaFree(dev[i]));
    uint16_t *host[] = {r->hw.attn_norm, r->hw.qkv,  r->hw.o, r->hw.mlp_norm,
                        r->hw.gate_up,   r->hw.down, r->kc_h, r->vc_h};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    for (int b = 0; b < r->c->batch; b++)
        pl_kv_seq_destroy(&r->pool, &r->seqs[b]);
    pl_kv_pool_destroy(&r->pool);
    pl_dense_weights_free(&r->w);
}

/* The step's batch on the host and the device; the new tokens' cache rows poisoned (NaN) on the device. */
static void step_upload(rig *r, int step, host_step *s)
{
    const int B = r->c->batch;
    int lens_held[3];
    s->batch = B;
    s->max_pages = r->max_pages;
    s->positions = malloc((size_t)B * sizeof(int));
    s->seq_lens = malloc((size_t)B * sizeof(int));
    s->slots = malloc((size_t)B * sizeof(int64_t));
    s->table = malloc((size_t)B * r->max_pages * sizeof(int));
    ck_assert(s->positions && s->seq_lens && s->slots && s->table);
    ck_assert_int_eq(pl_kv_block_table(r->seqs, B, r->max_pages, s->table, lens_held), 0);
    for (int b = 0; b < B; b++) {
        s->positions[b] = r->c->lens[b] + step;
        s->seq_lens[b] = s->positions[b] + 1;
        s->slots[b] = pl_kv_slot(&r->seqs[b], s->positions[b], PAGE);
        CK(cudaMemset(r->kv.k + s->slots[b] * r->row_elems, 0xff, r->row_elems * 2));
        CK(cudaMemset(r->kv.v + s->slots[b] * r->row_elems, 0xff, r->row_elems * 2));
    }
    CK(cudaMemcpy(r->pos_d, s->positions, (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->lens_d, s->seq_lens, (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->slots_d, s->slots, (size_t)B * sizeof(int64_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->table_d, s->table, (size_t)B * r->max_pages * sizeof(int), cudaMemcpyHostToDevice));
}

static void step_free(host_step *s)
{
    free(s->positions), free(s->seq_lens), free(s->slots), free(s->table);
}

/* ---- comparisons ---- */

static void compare_output(const char *tag, const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n)
{
    double e2 = 0, r2 = 0, u2 = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(!isnan(bf(got[i])), "%s: output %zu is NaN (unwritten or a NaN reached it)", tag, i);
        const double d = bf(got[i]) - bf(ref[i]), u = bf(ref[i]) - bf(x[i]);
        e2 += d * d, r2 += bf(ref[i]) * bf(ref[i]), u2 += u * u;
    }
    const double rms = sqrt(r2 / (double)n);
    ck_assert_msg(sqrt(e2 / r2) <= 1e-2, "%s: output relative L2 %.3g > 1e-2", tag, sqrt(e2 / r2));
    ck_assert_msg(u2 > 0 && sqrt(e2 / u2) <= 1e-2, "%s: update (out - x) relative L2 %.3g > 1e-2", tag, sqrt(e2 / u2));
    for (size_t i = 0; i < n; i++) {
        const double d = fabs(bf(got[i]) - bf(ref[i]));
        ck_assert_msg(d <= 0.02 * fabs(bf(ref[i])) + 0.03 * rms, "%s: output %zu is %.6g, the reference %.6g", tag, i,
                      bf(got[i]), bf(ref[i]));
    }
}

static int is_new_slot(const host_step *s, size_t row)
{
    for (int b = 0; b < s->batch; b++)
        if ((size_t)s->slots[b] == row)
            return 1;
    return 0;
}

/* The new tokens' rows against the reference's within (|ref| + rms of the rows) / 64: a bf16 rounding flip of the
 * projection moves a rotated element by an ulp of its pair (at most 1/128 of the pair's size) and its own rounding by
 * another; a wrong angle or slot moves it by about the rms. Every other element bit-identical to before the step. */
static void compare_cache(const char *tag, const rig *r, const host_step *s, const uint16_t *before,
                          const uint16_t *after, const uint16_t *ref)
{
    double r2 = 0;
    for (int b = 0; b < s->batch; b++)
        for (size_t e = 0; e < r->row_elems; e++)
            r2 += bf(ref[s->slots[b] * r->row_elems + e]) * bf(ref[s->slots[b] * r->row_elems + e]);
    const double rms = sqrt(r2 / ((double)s->batch * r->row_elems));
    for (size_t i = 0; i < r->cache_elems; i++) {
        if (!is_new_slot(s, i / r->row_elems)) {
            ck_assert_msg(after[i] == before[i],
                          "%s: cache element %zu changed (0x%04x -> 0x%04x) outside the new "
                          "tokens' slots",
                          tag, i, before[i], after[i]);
            continue;
        }
        const double d = fabs(bf(after[i]) - bf(ref[i]));
        ck_assert_msg(d <= (fabs(bf(ref[i])) + rms) / 64,
                      "%s: new token's cache element %zu (slot %zu) is %.6g, the reference %.6g", tag, i,
                      i / r->row_elems, bf(after[i]), bf(ref[i]));
    }
}

static void run_step(rig *r, int step)
{
    const size_t xn = (size_t)r->c->batch * r->m->hidden;
    char tag[96];
    snprintf(tag, sizeof tag, "%s batch %d step %d", r->m->name, r->c->batch, step);
    host_step s;
    step_upload(r, step, &s);
    uint16_t *x = malloc(xn * 2), *ref = malloc(xn * 2);
    ck_assert(x && ref);
    fill_random(x, xn, &r->rng);
    CK(cudaMemcpy(r->x_d, x, xn * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(r->out_d, 0xff, xn * 2));
    CK(cudaMemset(r->ws, 0xff, r->ws_bytes));
    uint16_t *k_before = host_copy(r->kv.k, r->cache_elems), *v_before = host_copy(r->kv.v, r->cache_elems);

    const pl_decode_step ds = {.batch = r->c->batch,
                               .page_size = PAGE,
                               .max_pages = r->max_pages,
                               .positions = r->pos_d,
                               .slots = r->slots_d,
                               .block_table = r->table_d,
                               .seq_lens = r->lens_d};
    CK(pl_dense_layer_decode(&r->w, &ds, &r->kv, r->x_d, r->out_d, r->ws, r->ws_bytes, 0));
    CK(cudaDeviceSynchronize());
    ref_layer(r->m, &r->hw, &s, r->kc_h, r->vc_h, x, ref);

    uint16_t *out = host_copy(r->out_d, xn);
    compare_output(tag, out, ref, x, xn);
    uint16_t *k_after = host_copy(r->kv.k, r->cache_elems), *v_after = host_copy(r->kv.v, r->cache_elems);
    compare_cache(tag, r, &s, k_before, k_after, r->kc_h);
    compare_cache(tag, r, &s, v_before, v_after, r->vc_h);
    free(x), free(ref), free(out), free(k_before), free(v_before), free(k_after), free(v_after);
    step_free(&s);
}

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(layer_decode)
{
    rig r;
    rig_init(&r, &cases[_i], 20261128u + (uint64_t)_i);
    for (int step = 0; step < STEPS; step++)
        run_step(&r, step);
    rig_free(&r);
}
END_TEST

START_TEST(refusals)
{
    char err[512] = "";
    pl_dense_weights w;
    const pl_model_config *moe = pl_model_find("tiny-moe", err, sizeof err);
    ck_assert(moe != NULL);
    ck_assert_int_eq(pl_dense_weights_alloc(moe, 1, &w, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "tiny-moe") != NULL && w.block == NULL, "%s", err);

    const char *names[] = {"tiny-dense", "tiny-dense-gqa8", "llama3-8b", "llama3-70b"};
    for (int i = 0; i < COUNT(names); i++) {
        const pl_model_config *m = pl_model_find(names[i], err, sizeof err);
        ck_assert(m != NULL);
        ck_assert_msg(pl_dense_decode_workspace_bytes(m, 64) <= pl_activation_bytes(m, 64, 64, 2048),
                      "%s: the layer's workspace exceeds the plan's activations", names[i]);
    }

    const pl_model_config *m = pl_model_find("tiny-dense", err, sizeof err);
    ck_assert_msg(pl_dense_weights_alloc(m, 2, &w, err, sizeof err) == 0, "%s", err);
    const size_t need = pl_dense_decode_workspace_bytes(m, 3);
    void *buf;
    CK(cudaMalloc(&buf, need));
    const pl_decode_step ds = {.batch = 3,
                               .page_size = PAGE,
                               .max_pages = 1,
                               .positions = buf,
                               .slots = buf,
                               .block_table = buf,
                               .seq_lens = buf};
    const pl_layer_kv kv = {buf, buf};
    ck_assert_int_eq(pl_dense_layer_decode(&w, &ds, &kv, buf, buf, buf, need - 1, 0), cudaErrorInvalidValue);
    CK(cudaGetLastError());
    CK(cudaFree(buf));
    pl_dense_weights_free(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_layer");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, layer_decode, 0, COUNT(cases));
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
