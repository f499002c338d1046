/* On a GPU: the whole model (engine/model.h) on tiny-dense (3 layers, vocabulary 1000, tied head) against a float64
 * host reference (labs/common/layer_ref.h per layer, bf16 wherever the engine stores bf16; the final norm and the
 * LM head in float64, rounded to bf16 as the engine stores them):
 *   - greedy: three prompts (37, 5 and 20 tokens, prefilled in one step), then 32 decode steps fed with the GPU's
 *     own tokens, every recipe: each step's logits within relative L2 2e-2 of the reference's (the reference fed the
 *     same tokens), and each sampled token the reference's argmax or, on a near-tie, within 4x the step's largest
 *     logit error of its maximum;
 *   - the cache: prefill of a prompt then a decode of its next token gives the logits of the prefill of the longer
 *     prompt;
 *   - a mixed step: a prompt continued by a chunk of 10 tokens (decode rows over its pages) beside a new prompt,
 *     against the reference.
 * And an MoE model (tiny-moe): a prefill and two decode steps, each bit-identical to the embedding and the layers'
 * MoE steps run one by one on the same weights (its layers' own test checks them against the reference).
 * Over an FP8 (e4m3) cache (pl_model_options.kv_dtype): the greedy case, every recipe, against the reference over the
 * FP8 cache's values (pl_layer_ref_rows.kv_fp8: each new row quantized and dequantized as the cache holds it);
 * prefill then decode against the longer prefill; and tiny-dense and tiny-moe's steps bit-identical to their layers'
 * steps run one by one over the same FP8 cache (residual stream, e4m3 pools and scales).
 * Pages of the sequences are scattered through the pool. Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/layer_ref.h"
#include "engine/kv_pages.h"
#include "engine/model.h"
#include "perflab/device.h"
#include "perflab/verify.h"
#include "engine_check.h"
#include "testutil.h"

#define PAGE     16
#define MAXR     128
#define CK(call) ck_assert_msg((call) == cudaSuccess, "%s failed", #call)

typedef struct rig {
    pl_model M;
    const pl_model_config *c;
    cublasHandle_t cublas;
    pl_layer_recipe recipe;
    int kv_fp8;    /* the model's cache is FP8 (the reference then quantizes each new row as the cache holds it) */
    uint16_t **wh; /* each layer's weight block, host */
    pl_layer_ref_weights *hw;      /* per layer */
    uint16_t *embed, *norm, *head; /* host */
    uint16_t **kc, **vc;           /* host caches per layer */
    pl_kv_pool pool;
    pl_kv_seq seqs[4];
    int *d_ints; /* device scratch for the step's int arrays */
    int64_t *d_slots;
} rig;

static uint16_t *host_copy(const void *dev, size_t n)
{
    return pl_test_dev_copy(dev, n * 2);
}

/* The model `name` with a ladder recipe and a cache in kv_dtype; for a dense model also the host copies the reference
 * reads. */
static void rig_init_model(rig *r, const char *name, int recipe, pl_kv_dtype kv_dtype)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->kv_fp8 = kv_dtype == PL_KV_FP8_E4M3;
    r->c = pl_model_find(name, err, sizeof err);
    ck_assert(r->c != NULL);
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const pl_model_options o = {.model = r->c,
                                .kv_dtype = kv_dtype,
                                .page_size = PAGE,
                                .pages = 64,
                                .max_rows = MAXR,
                                .max_out = 8,
                                .max_context = 128,
                                .max_seqs = 4,
                                .seed = 5,
                                .sm_count = sms};
    ck_assert_msg(pl_model_create(&o, &r->M, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(r->M.cache.dtype, kv_dtype);
    ck_assert(r->kv_fp8 ? r->M.cache.k8 && r->M.cache.k_scale && !r->M.cache.k : r->M.cache.k && !r->M.cache.k8);
    ck_assert(cublasCreate(&r->cublas) == CUBLAS_STATUS_SUCCESS);
    pl_layer_recipe recipes[PL_LAYER_LADDER_STEPS];
    pl_layer_recipe_ladder(sms, r->cublas, recipes);
    r->recipe = recipes[recipe];
    const int L = r->M.layers;
    r->wh = calloc((size_t)L, sizeof *r->wh);
    r->hw = calloc((size_t)L, sizeof *r->hw);
    r->kc = calloc((size_t)L, sizeof *r->kc);
    r->vc = calloc((size_t)L, sizeof *r->vc);
    ck_assert(r->wh && r->hw && r->kc && r->vc);
    for (int l = 0; l < L && !pl_model_is_moe(r->c); l++) {
        const pl_dense_weights *w = &r->M.layer[l];
        r->wh[l] = host_copy(w->block, w->bytes / 2);
#define HOST_OF(t) (const uint16_t *)((const char *)r->wh[l] + ((const char *)w->t - (const char *)w->block))
        r->hw[l] = (pl_layer_ref_weights){HOST_OF(attn_norm), HOST_OF(qkv),     HOST_OF(o),
                                          HOST_OF(mlp_norm),  HOST_OF(gate_up), HOST_OF(down)};
#undef HOST_OF
        r->kc[l] = calloc(r->M.cache.pool_elems, 2); /* FP8: the dequantized values, exact in bf16 */
        r->vc[l] = calloc(r->M.cache.pool_elems, 2);
        ck_assert(r->kc[l] && r->vc[l]);
    }
    r->embed = host_copy(r->M.embed, (size_t)r->c->vocab * r->c->hidden);
    r->norm = host_copy(r->M.final_norm, r->c->hidden);
    r->head = host_copy(r->M.lm_head, (size_t)r->c->vocab * r->c->hidden);
    ck_assert_int_eq(pl_kv_pool_init(&r->pool, r->M.pages, PAGE), 0);
    /* scatter: take a few pages and give back every other one */
    int held[20];
    for (int i = 0; i < 20; i++)
        held[i] = pl_kv_page_alloc(&r->pool);
    for (int i = 0; i < 20; i += 2)
        pl_kv_page_free(&r->pool, held[i]);
    CK(cudaMalloc((void **)&r->d_ints, 8 * MAXR * 64 * sizeof(int)));
    CK(cudaMalloc((void **)&r->d_slots, MAXR * sizeof(int64_t)));
}

static void rig_init(rig *r, int recipe)
{
    rig_init_model(r, "tiny-dense", recipe, PL_KV_BF16);
}

static void rig_free(rig *r)
{
    for (int l = 0; l < r->M.layers; l++)
        free(r->wh[l]), free(r->kc[l]), free(r->vc[l]);
    free(r->wh), free(r->hw), free(r->kc), free(r->vc), free(r->embed), free(r->norm), free(r->head);
    for (int s = 0; s < 4; s++)
        pl_kv_seq_destroy(&r->pool, &r->seqs[s]);
    pl_kv_pool_destroy(&r->pool);
    CK(cudaFree(r->d_ints));
    CK(cudaFree(r->d_slots));
    cublasDestroy(r->cublas);
    pl_model_destroy(&r->M);
}

/* ---- a step described on the host ---- */

typedef struct host_rows {
    int n, n_decode, prompts, n_out;
    int tokens[MAXR], positions[MAXR], seq[MAXR], out_rows[8], starts[8];
    int64_t slots[MAXR];
    const int *tables[MAXR];
    int table[MAXR * 8]; /* decode rows' tables, [n_decode][8] */
} host_rows;

/* rows for tokens [first, first + count) of sequence s (its pages appended first); decode rows carry its table */
static void add_rows(rig *r, host_rows *h, int s, int first, int count, const int *tokens, int decode)
{
    const int need = first + count - r->seqs[s].len;
    if (need > 0)
        ck_assert_int_eq(pl_kv_seq_append(&r->pool, &r->seqs[s], need), PL_KV_OK);
    ck_assert(r->seqs[s].npages <= 8 && h->n + count <= MAXR);
    if (!decode)
        h->starts[h->prompts++] = h->n - h->n_decode, h->starts[h->prompts] = h->n - h->n_decode + count;
    for (int i = 0; i < count; i++) {
        const int row = h->n++;
        h->tokens[row] = tokens[i];
        h->positions[row] = first + i;
        h->seq[row] = s;
        h->slots[row] = pl_kv_slot(&r->seqs[s], first + i, PAGE);
        if (decode) {
            for (int p = 0; p < 8; p++)
                h->table[row * 8 + p] = p < r->seqs[s].npages ? r->seqs[s].pages[p] : -1;
            h->n_decode = h->n;
        }
    }
}

/* Runs the step on the GPU: its logits [n_out][vocab] (host) and tokens. */
static void gpu_step(rig *r, const host_rows *h, uint16_t *logits, int *tokens)
{
    int *d = r->d_ints;
    int *tok = d, *pos = d + MAXR, *table = d + 2 * MAXR, *lens = d + 2 * MAXR + MAXR * 8;
    int *outr = lens + MAXR, *outt = outr + MAXR;
    int lens_h[MAXR];
    for (int i = 0; i < h->n_decode; i++)
        lens_h[i] = h->positions[i] + 1;
    CK(cudaMemcpy(tok, h->tokens, (size_t)h->n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(pos, h->positions, (size_t)h->n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->d_slots, h->slots, (size_t)h->n * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(table, h->table, (size_t)MAXR * 8 * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(lens, lens_h, (size_t)MAXR * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(outr, h->out_rows, (size_t)h->n_out * 4, cudaMemcpyHostToDevice));
    const pl_model_rows mr = {.n = h->n,
                              .tokens = tok,
                              .positions = pos,
                              .slots = r->d_slots,
                              .n_decode = h->n_decode,
                              .max_pages = 8,
                              .block_table = table,
                              .seq_lens = lens,
                              .prompts = h->prompts,
                              .starts = h->starts,
                              .n_out = h->n_out,
                              .out_rows = outr,
                              .out_tokens = outt};
    CK(pl_model_step(&r->M, &r->recipe, &mr, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(logits, r->M.logits, (size_t)h->n_out * r->c->vocab * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(tokens, outt, (size_t)h->n_out * 4, cudaMemcpyDeviceToHost));
}

/* The float64 reference of the step: logits [n_out][vocab] (double, of the bf16 the engine stores). */
static void ref_step(rig *r, const host_rows *h, double *logits)
{
    const pl_model_config *c = r->c;
    const size_t D = c->hidden;
    uint16_t *x = malloc(h->n * D * 2), *y = malloc(h->n * D * 2);
    ck_assert(x && y);
    for (int i = 0; i < h->n; i++)
        memcpy(x + i * D, r->embed + (size_t)h->tokens[i] * D, D * 2);
    const int *tables[MAXR];
    for (int i = 0; i < h->n; i++)
        tables[i] = r->seqs[h->seq[i]].pages;
    const pl_layer_ref_rows rows = {h->n, PAGE, h->positions, h->slots, tables, r->kv_fp8, 0};
    for (int l = 0; l < r->M.layers; l++) {
        const int epi = r->recipe.fused && r->recipe.gemm == PL_LAYER_GEMM_PERFLAB;
        ck_assert_int_eq(pl_layer_ref(c, &r->hw[l], &rows, epi, r->kc[l], r->vc[l], x, y), 0);
        uint16_t *t = x;
        x = y, y = t;
    }
    for (int o = 0; o < h->n_out; o++) {
        const uint16_t *row = x + (size_t)h->out_rows[o] * D;
        double ss = 0;
        for (size_t e = 0; e < D; e++)
            ss += pl_bf16_to_double(row[e]) * pl_bf16_to_double(row[e]);
        const double inv = 1.0 / sqrt(ss / (double)D + c->rms_eps);
        for (size_t e = 0; e < D; e++)
            y[e] = pl_bf16_round_host((float)(pl_bf16_to_double(row[e]) * inv * pl_bf16_to_double(r->norm[e])));
        for (int v = 0; v < c->vocab; v++) {
            double s = 0;
            for (size_t e = 0; e < D; e++)
                s += pl_bf16_to_double(y[e]) * pl_bf16_to_double(r->head[(size_t)v * D + e]);
            logits[(size_t)o * c->vocab + v] = pl_bf16_to_double(pl_bf16_round_host((float)s));
        }
    }
    free(x), free(y);
}

/* logits within relative L2 2e-2; each token the reference's argmax or within 4x the largest error of its max */
static void compare(const char *tag, const rig *r, const host_rows *h, const uint16_t *got, const int *tokens,
                    const double *ref)
{
    const int V = r->c->vocab;
    for (int o = 0; o < h->n_out; o++) {
        double e2 = 0, r2 = 0, worst = 0, best = -INFINITY;
        for (int v = 0; v < V; v++) {
            const double g = pl_bf16_to_double(got[(size_t)o * V + v]), f = ref[(size_t)o * V + v];
            ck_assert_msg(!isnan(g), "%s: logit %d of sample %d is NaN", tag, v, o);
            e2 += (g - f) * (g - f), r2 += f * f;
            worst = fabs(g - f) > worst ? fabs(g - f) : worst;
            best = f > best ? f : best;
        }
        ck_assert_msg(sqrt(e2 / r2) <= 2e-2, "%s: sample %d's logits relative L2 %.3g > 2e-2", tag, o, sqrt(e2 / r2));
        const double picked = ref[(size_t)o * V + tokens[o]];
        ck_assert_msg(picked >= best - 4 * worst,
                      "%s: sample %d took token %d (reference logit %.5g), the "
                      "reference's best is %.5g (largest logit error %.3g)",
                      tag, o, tokens[o], picked, best, worst);
    }
}

static void check_step(rig *r, host_rows *h, const char *tag, int *tokens)
{
    uint16_t *got = malloc((size_t)h->n_out * r->c->vocab * 2);
    double *ref = malloc((size_t)h->n_out * r->c->vocab * sizeof *ref);
    ck_assert(got && ref);
    gpu_step(r, h, got, tokens);
    ref_step(r, h, ref);
    compare(tag, r, h, got, tokens, ref);
    free(got), free(ref);
}

static void prompt_tokens(int *t, int n, int salt)
{
    for (int i = 0; i < n; i++)
        t[i] = (i * 7919 + salt * 104729 + 13) % 1000;
}

static void greedy_run(int recipe, pl_kv_dtype kv_dtype)
{
    rig r;
    rig_init_model(&r, "tiny-dense", recipe, kv_dtype);
    const char *kv = pl_kv_dtype_name(kv_dtype);
    const int lens[3] = {37, 5, 20};
    host_rows h;
    memset(&h, 0, sizeof h);
    for (int s = 0; s < 3; s++) {
        int t[64];
        prompt_tokens(t, lens[s], s);
        add_rows(&r, &h, s, 0, lens[s], t, 0);
        h.out_rows[h.n_out++] = h.n - 1;
    }
    int next[3];
    char tag[96];
    snprintf(tag, sizeof tag, "%s cache, recipe %d prefill", kv, recipe);
    check_step(&r, &h, tag, next);
    for (int step = 0; step < 32; step++) {
        memset(&h, 0, sizeof h);
        for (int s = 0; s < 3; s++) {
            add_rows(&r, &h, s, lens[s] + step, 1, &next[s], 1);
            h.out_rows[h.n_out++] = s;
        }
        snprintf(tag, sizeof tag, "%s cache, recipe %d decode step %d", kv, recipe, step);
        check_step(&r, &h, tag, next);
    }
    rig_free(&r);
}

START_TEST(greedy)
{
    greedy_run(_i, PL_KV_BF16);
}
END_TEST

START_TEST(greedy_fp8)
{
    greedy_run(_i, PL_KV_FP8_E4M3);
}
END_TEST

/* prefill 45 then decode the 46th, against prefill of 46 (fused recipe; two sequences of the same tokens); _i 0: a
 * bf16 cache, 1: FP8 (the prefill's attention reads the dequantized rows, what the decode reads from the cache) */
START_TEST(prefill_then_decode)
{
    rig r;
    rig_init_model(&r, "tiny-dense", PL_LAYER_LADDER_FUSED, _i ? PL_KV_FP8_E4M3 : PL_KV_BF16);
    int t[64], tok[2];
    prompt_tokens(t, 46, 9);
    host_rows h;
    memset(&h, 0, sizeof h);
    add_rows(&r, &h, 0, 0, 46, t, 0);
    h.out_rows[h.n_out++] = h.n - 1;
    uint16_t *whole = malloc((size_t)r.c->vocab * 2), *step = malloc((size_t)r.c->vocab * 2);
    ck_assert(whole && step);
    gpu_step(&r, &h, whole, tok);
    memset(&h, 0, sizeof h);
    add_rows(&r, &h, 1, 0, 45, t, 0);
    h.out_rows[h.n_out++] = h.n - 1;
    gpu_step(&r, &h, step, tok);
    memset(&h, 0, sizeof h);
    add_rows(&r, &h, 1, 45, 1, t + 45, 1);
    h.out_rows[h.n_out++] = 0;
    gpu_step(&r, &h, step, tok);
    double e2 = 0, r2 = 0;
    for (int v = 0; v < r.c->vocab; v++) {
        const double a = pl_bf16_to_double(step[v]), b = pl_bf16_to_double(whole[v]);
        e2 += (a - b) * (a - b), r2 += b * b;
    }
    ck_assert_msg(sqrt(e2 / r2) <= 2e-2, "%s cache: prefill then decode: logits relative L2 %.3g from one prefill",
                  pl_kv_dtype_name(r.M.cache.dtype), sqrt(e2 / r2));
    free(whole), free(step);
    rig_free(&r);
}
END_TEST

/* a prompt of 30, then in one step its next 10 tokens (decode rows over its pages) beside a new prompt of 12 */
START_TEST(mixed_step)
{
    rig r;
    rig_init(&r, 3);
    int t[64], u[16], tok[2];
    prompt_tokens(t, 40, 3);
    prompt_tokens(u, 12, 4);
    host_rows h;
    memset(&h, 0, sizeof h);
    add_rows(&r, &h, 0, 0, 30, t, 0);
    h.out_rows[h.n_out++] = h.n - 1;
    check_step(&r, &h, "mixed: the first prompt", tok);
    memset(&h, 0, sizeof h);
    add_rows(&r, &h, 0, 30, 10, t + 30, 1);
    add_rows(&r, &h, 1, 0, 12, u, 0);
    h.out_rows[h.n_out++] = 9;
    h.out_rows[h.n_out++] = h.n - 1;
    check_step(&r, &h, "mixed: a continued prompt beside a new one", tok);
    rig_free(&r);
}
END_TEST

/* ---- the model against its layers run one by one ---- */

/* Layer l's step of the rows gpu_step left on the device, in place on M->x, as the model runs it. */
static void layer_by_hand(rig *r, const host_rows *h, int l)
{
    pl_model *M = &r->M;
    int *pos = r->d_ints + MAXR, *table = r->d_ints + 2 * MAXR, *lens = table + MAXR * 8;
    const pl_layer_kv kv = pl_model_kv(M, l);
    const pl_moe_recipe mr = {r->recipe, M->experts};
    if (h->n_decode > 0) {
        const pl_decode_step ds = {h->n_decode, PAGE, 8, pos, r->d_slots, table, lens};
        CK(M->moe ? pl_moe_layer_decode(&M->moe[l], &mr, &ds, &kv, M->x, M->x, M->ws, M->ws_bytes, 0)
                  : pl_dense_layer_decode(&M->layer[l], &r->recipe, &ds, &kv, M->x, M->x, M->ws, M->ws_bytes, 0));
    }
    if (h->n_decode < h->n) {
        uint16_t *x = M->x + (size_t)h->n_decode * r->c->hidden;
        const pl_prefill_step ps = {h->prompts, h->starts, pos + h->n_decode, r->d_slots + h->n_decode};
        CK(M->moe ? pl_moe_layer_prefill(&M->moe[l], &mr, &ps, &kv, x, x, M->ws, M->ws_bytes, 0)
                  : pl_dense_layer_prefill(&M->layer[l], &r->recipe, &ps, &kv, x, x, M->ws, M->ws_bytes, 0));
    }
}

/* Runs the step through the model, then again from the same cache as the embedding and each layer's step (dense or
 * MoE) one by one (the model's weights, expert GEMMs and workspace): the residual stream after the last layer and the
 * whole cache (bf16 pools, or e4m3 pools and their scales) bit-identical; the sampled tokens ids of the vocabulary. */
static void step_matches_layers(rig *r, const host_rows *h, const char *tag)
{
    pl_model *M = &r->M;
    const size_t D = r->c->hidden, cache = M->cache.bytes;
    uint8_t *c0 = pl_test_dev_copy(M->cache.base, cache);
    uint16_t *logits = malloc((size_t)h->n_out * r->c->vocab * 2);
    int tokens[8];
    ck_assert(logits != NULL);
    gpu_step(r, h, logits, tokens);
    for (int i = 0; i < h->n_out; i++)
        ck_assert_msg(tokens[i] >= 0 && tokens[i] < r->c->vocab, "%s: token %d is %d", tag, i, tokens[i]);
    uint16_t *x_model = host_copy(M->x, (size_t)h->n * D);
    uint8_t *c_model = pl_test_dev_copy(M->cache.base, cache);
    ck_assert_msg(memcmp(c0, c_model, cache) != 0, "%s: the step wrote nothing into the cache", tag);
    /* the same step by hand, from the cache as it was (gpu_step left the rows' arrays on the device) */
    CK(cudaMemcpy(M->cache.base, c0, cache, cudaMemcpyHostToDevice));
    CK(pl_engine_embed(M->embed, r->d_ints, h->n, r->c->hidden, r->c->vocab, M->x, 0));
    for (int l = 0; l < M->layers; l++)
        layer_by_hand(r, h, l);
    CK(cudaDeviceSynchronize());
    uint16_t *x_layers = host_copy(M->x, (size_t)h->n * D);
    uint8_t *c_layers = pl_test_dev_copy(M->cache.base, cache);
    ck_assert_msg(memcmp(x_model, x_layers, (size_t)h->n * D * 2) == 0, "%s: the residual stream differs", tag);
    ck_assert_msg(memcmp(c_model, c_layers, cache) == 0, "%s: the caches differ", tag);
    free(c0), free(logits), free(x_model), free(c_model), free(x_layers), free(c_layers);
}

/* A prefill of prompts of 17 and 30 tokens, then two decode steps, each against the layers run one by one. */
static void model_runs_its_layers(const char *name, pl_kv_dtype kv_dtype)
{
    rig r;
    rig_init_model(&r, name, PL_LAYER_LADDER_FUSED, kv_dtype);
    ck_assert(pl_model_is_moe(r.c) ? r.M.moe && !r.M.layer : r.M.layer && !r.M.moe);
    const int lens[2] = {17, 30};
    char tag[96];
    host_rows h;
    memset(&h, 0, sizeof h);
    for (int s = 0; s < 2; s++) {
        int t[64];
        prompt_tokens(t, lens[s], s + 20);
        add_rows(&r, &h, s, 0, lens[s], t, 0);
        h.out_rows[h.n_out++] = h.n - 1;
    }
    snprintf(tag, sizeof tag, "%s, %s cache, prefill", name, pl_kv_dtype_name(kv_dtype));
    step_matches_layers(&r, &h, tag);
    for (int step = 0; step < 2; step++) {
        memset(&h, 0, sizeof h);
        for (int s = 0; s < 2; s++) {
            int t = (step * 31 + s * 17 + 5) % r.c->vocab;
            add_rows(&r, &h, s, lens[s] + step, 1, &t, 1);
            h.out_rows[h.n_out++] = s;
        }
        snprintf(tag, sizeof tag, "%s, %s cache, decode %d", name, pl_kv_dtype_name(kv_dtype), step);
        step_matches_layers(&r, &h, tag);
    }
    rig_free(&r);
}

/* tiny-moe (2 MoE layers, qk-norm) over a bf16 cache. */
START_TEST(moe_model_runs_its_layers)
{
    model_runs_its_layers("tiny-moe", PL_KV_BF16);
}
END_TEST

/* Over an FP8 cache: tiny-dense (_i 0) and tiny-moe (_i 1). */
START_TEST(fp8_model_runs_its_layers)
{
    model_runs_its_layers(_i ? "tiny-moe" : "tiny-dense", PL_KV_FP8_E4M3);
}
END_TEST

/* An unknown cache dtype is refused with one line, nothing allocated. */
START_TEST(unknown_kv_dtype_refused)
{
    char err[512] = "";
    const pl_model_options o = {.model = pl_model_find("tiny-dense", err, sizeof err),
                                .kv_dtype = (pl_kv_dtype)7,
                                .page_size = PAGE,
                                .pages = 8,
                                .max_rows = 8,
                                .max_out = 1,
                                .max_context = 16,
                                .seed = 1,
                                .sm_count = 1};
    pl_model M;
    ck_assert_int_eq(pl_model_create(&o, &M, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "bf16 or fp8") && !strchr(err, '\n'), "%s", err);
    ck_assert_ptr_null(M.block);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_model");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, greedy, 0, 4);
    tcase_add_loop_test(tc, greedy_fp8, 0, 4);
    tcase_add_loop_test(tc, prefill_then_decode, 0, 2);
    tcase_add_test(tc, mixed_step);
    tcase_add_test(tc, moe_model_runs_its_layers);
    tcase_add_loop_test(tc, fp8_model_runs_its_layers, 0, 2);
    tcase_add_test(tc, unknown_kv_dtype_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
