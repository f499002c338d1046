/* On a GPU: the engine's dense layer (engine/dense_layer.h), every recipe, against the float64 host reference
 * (labs/common/layer_ref.h: bf16 wherever the layer stores bf16, so the two differ only by summation order and the
 * rare rounding that order flips). Tiny configs tiny-dense (GQA 4, head_dim 64) and tiny-dense-gqa8 (GQA 8, head_dim
 * 128); batch 1 and 3; cache and prompt lengths no multiple of the 16-token page; each sequence's pages scattered
 * through the pool. Weights are the engine's seeded device fill (copied back for the reference); the caches' other
 * tokens and the inputs are random in ±1 (no zeros); the output and the new tokens' cache slots are NaN before each
 * run.
 *   decode: two steps per case, the second attending to the token the first wrote, every recipe, the fused recipe
 *           also in place (out = x) and replayed from a CUDA graph;
 *   prefill: prompts of mixed lengths from an empty cache, every recipe;
 *   the cache: prefill of a prompt then decode of its next token gives the last row of the prefill of the longer
 *           prompt.
 * Each run checks the output and its update (out - x) within relative L2 1e-2 of the reference's and every element
 * within 0.02·|ref| + 0.03·rms(ref), none NaN; the new tokens' K and V rows within (|ref| + their rms) / 64 of the
 * reference's, and every other cache element bit-identical to what was there. The FP8 cache (kv_fp8.h): the same
 * decode and prefill cases over the cache quantized on the device (every row equal to the host's quantization), every
 * recipe against the reference over the FP8 values, each written row the host's quantization of the same recipe's
 * bf16 row bit for bit (scale included) and near the reference's, every other byte and scale unchanged. Refusals: a
 * MoE config's weights, a workspace one byte short, an FP8 cache without scales, an unknown cache dtype. Exits 77
 * without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "attention/kv_fp8.h"
#include "common/layer_ref.h"
#include "engine/dense_layer.h"
#include "engine/layer_ops.h"
#include "engine/kv_pages.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "perflab/verify.h"
#include "engine_check.h"
#include "testutil.h"

#define PAGE     16
#define CK(call) ck_assert_msg((call) == cudaSuccess, "%s failed", #call)
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define RECIPES  PL_LAYER_LADDER_STEPS

static const char *const recipe_names[RECIPES] = {"baseline", "fast_attention", "perflab_gemm", "fused"};

typedef struct layer_case {
    const char *model;
    int seqs;
    int lens[3]; /* decode: tokens cached before the first step; prefill: the prompts' lengths */
} layer_case;

static const layer_case decode_cases[] = {
    {"tiny-dense", 1, {47, 0, 0}},
    {"tiny-dense", 3, {15, 1, 94}},
    {"tiny-dense-gqa8", 1, {33, 0, 0}},
    {"tiny-dense-gqa8", 3, {31, 70, 5}},
};

static const layer_case prefill_cases[] = {
    {"tiny-dense", 1, {37, 0, 0}},
    {"tiny-dense", 3, {17, 1, 50}},
    {"tiny-dense-gqa8", 3, {16, 33, 129}},
};

/* ---- a layer with its pools, weights and recipes ---- */

typedef struct rig {
    const pl_model_config *m;
    pl_dense_weights w;
    uint16_t *wh; /* the weights' block, host copy */
    pl_layer_ref_weights hw;
    pl_kv_pool pool;
    pl_kv_seq seqs[3];
    int nseq, max_pages, sm_count;
    size_t cache_elems, row_elems;
    uint16_t *kc_h, *vc_h; /* the reference's caches: what the device pools hold */
    pl_layer_kv kv;
    void *ws;
    size_t ws_bytes;
    uint16_t *x_d, *out_d;
    int *pos_d, *lens_d, *table_d;
    int64_t *slots_d;
    cublasHandle_t cublas;
    pl_layer_recipe recipes[RECIPES];
    pl_rng rng;
} rig;

/* Pages for need[s] tokens of each sequence, scattered through the pool. */
static void take_pages(rig *r, const int *need)
{
    const int pages = pl_test_scatter_pages(&r->pool, r->seqs, r->nseq, need, PAGE, &r->max_pages);
    r->row_elems = (size_t)r->m->kv_heads * r->m->head_dim;
    r->cache_elems = (size_t)pages * PAGE * r->row_elems;
}

static void rig_init(rig *r, const char *model, int nseq, const int *need, int max_rows, uint64_t seed)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->m = pl_model_find(model, err, sizeof err);
    ck_assert_msg(r->m != NULL, "%s", err);
    r->nseq = nseq;
    pl_rng_seed(&r->rng, seed);
    ck_assert_msg(pl_dense_weights_alloc(r->m, seed, &r->w, err, sizeof err) == 0, "%s", err);
    r->wh = pl_test_dev_copy(r->w.block, r->w.bytes);
#define HOST_OF(t) (const uint16_t *)((const char *)r->wh + ((const char *)r->w.t - (const char *)r->w.block))
    r->hw = (pl_layer_ref_weights){HOST_OF(attn_norm), HOST_OF(qkv),     HOST_OF(o),
                                   HOST_OF(mlp_norm),  HOST_OF(gate_up), HOST_OF(down)};
#undef HOST_OF
    take_pages(r, need);
    pl_test_kv_make(r->cache_elems, &r->rng, &r->kc_h, &r->vc_h, &r->kv.k, &r->kv.v);
    CK(cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, 0));
    r->ws_bytes = pl_dense_workspace_bytes(r->m, max_rows, r->sm_count);
    CK(cudaMalloc(&r->ws, r->ws_bytes));
    pl_test_step_alloc(max_rows, r->m->hidden, 3, r->max_pages, &r->x_d, &r->out_d, &r->pos_d, &r->slots_d, &r->lens_d,
                       &r->table_d);
    ck_assert(cublasCreate(&r->cublas) == CUBLAS_STATUS_SUCCESS);
    pl_layer_recipe_ladder(r->sm_count, r->cublas, r->recipes);
}

static void rig_free(rig *r)
{
    void *dev[] = {r->kv.k, r->kv.v, r->ws, r->x_d, r->out_d, r->pos_d, r->lens_d, r->slots_d, r->table_d};
    for (int i = 0; i < COUNT(dev); i++)
        CK(cudaFree(dev[i]));
    free(r->wh), free(r->kc_h), free(r->vc_h);
    for (int s = 0; s < r->nseq; s++)
        pl_kv_seq_destroy(&r->pool, &r->seqs[s]);
    pl_kv_pool_destroy(&r->pool);
    pl_dense_weights_free(&r->w);
    cublasDestroy(r->cublas);
}

/* ---- a step's rows on the host and the device ---- */

typedef struct rows {
    int n;
    int pos[512], seq[512];
    int64_t slots[512];
    const int *tables[512];
    int *table; /* [nseq][max_pages] */
} rows;

/* Rows for positions [first[s], first[s] + count[s]) of each sequence; the block table and lengths uploaded; the
 * rows' cache slots poisoned (NaN) on the device. */
static void rows_upload(rig *r, const int *first, const int *count, rows *w)
{
    int lens[3];
    w->table = malloc(3 * (size_t)r->max_pages * sizeof(int));
    ck_assert(w->table != NULL);
    ck_assert_int_eq(pl_kv_block_table(r->seqs, r->nseq, r->max_pages, w->table, lens), 0);
    w->n = 0;
    for (int s = 0; s < r->nseq; s++) {
        lens[s] = first[s] + count[s];
        for (int t = first[s]; t < first[s] + count[s]; t++, w->n++) {
            ck_assert(w->n < 512);
            w->pos[w->n] = t;
            w->seq[w->n] = s;
            w->slots[w->n] = pl_kv_slot(&r->seqs[s], t, PAGE);
            w->tables[w->n] = w->table + (size_t)s * r->max_pages;
            CK(cudaMemset(r->kv.k + w->slots[w->n] * r->row_elems, 0xff, r->row_elems * 2));
            CK(cudaMemset(r->kv.v + w->slots[w->n] * r->row_elems, 0xff, r->row_elems * 2));
        }
    }
    CK(cudaMemcpy(r->pos_d, w->pos, (size_t)w->n * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->slots_d, w->slots, (size_t)w->n * sizeof(int64_t), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->lens_d, lens, (size_t)r->nseq * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->table_d, w->table, (size_t)r->nseq * r->max_pages * sizeof(int), cudaMemcpyHostToDevice));
}

/* ---- comparisons ---- */

static void compare_cache(const char *tag, const rig *r, const rows *w, const uint16_t *before, const uint16_t *dev,
                          const uint16_t *ref)
{
    uint16_t *after = pl_test_dev_copy(dev, r->cache_elems * 2);
    pl_test_check_cache(tag, before, after, ref, r->cache_elems, r->row_elems, w->slots, w->n);
    free(after);
}

static void compare_output(const char *tag, const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n)
{
    char why[256];
    ck_assert_msg(pl_layer_ref_accept(got, ref, x, n, why, sizeof why), "%s: %s", tag, why);
}

/* ---- running the layer ---- */

typedef struct run_args {
    rig *r;
    const rows *w;
    int prefill, recipe;
    const uint16_t *x;
    uint16_t *out;
    const pl_layer_kv *kv; /* NULL: the rig's bf16 pools */
} run_args;

/* The layer's step from input x (pl_test_step_fn). */
static cudaError_t run_layer(void *arg, const uint16_t *x, cudaStream_t stream)
{
    const run_args *a = arg;
    rig *r = a->r;
    const pl_layer_recipe *rc = &r->recipes[a->recipe];
    if (a->prefill) {
        int starts[4] = {0, 0, 0, 0};
        for (int i = 0; i < a->w->n; i++)
            starts[a->w->seq[i] + 1]++;
        for (int s = 0; s < r->nseq; s++)
            starts[s + 1] += starts[s];
        const pl_prefill_step ps = {r->nseq, starts, r->pos_d, r->slots_d};
        return pl_dense_layer_prefill(&r->w, rc, &ps, a->kv ? a->kv : &r->kv, x, a->out, r->ws, r->ws_bytes, stream);
    }
    const pl_decode_step ds = {r->nseq, PAGE, r->max_pages, r->pos_d, r->slots_d, r->table_d, r->lens_d};
    return pl_dense_layer_decode(&r->w, rc, &ds, a->kv ? a->kv : &r->kv, x, a->out, r->ws, r->ws_bytes, stream);
}

/* 0: straight; 1: in place (out = x); 2: captured in a graph and replayed */
static void run_mode(const run_args *a, int mode)
{
    pl_test_run_step(run_layer, (void *)a, mode, a->x, a->out, (size_t)a->w->n * a->r->m->hidden * 2);
}

/* The recipes whose residual adds happen in the GEMMs' epilogue (one rounding): the fused one with perflab's GEMMs. */
static int recipe_epilogue(const pl_layer_recipe *rc)
{
    return rc->fused && rc->gemm == PL_LAYER_GEMM_PERFLAB;
}

/* Runs the rows through every recipe (and the fused one in place and from a graph), each against the reference. */
static void check_rows(rig *r, const rows *w, int prefill, const char *what)
{
    const size_t xn = (size_t)w->n * r->m->hidden;
    uint16_t *x = malloc(xn * 2), *ref = malloc(xn * 2), *ref_epi = malloc(xn * 2);
    ck_assert(x && ref && ref_epi);
    pl_test_fill_pm1_bf16(x, xn, &r->rng);
    CK(cudaMemcpy(r->x_d, x, xn * 2, cudaMemcpyHostToDevice));
    uint16_t *k_before = pl_test_dev_copy(r->kv.k, r->cache_elems * 2),
             *v_before = pl_test_dev_copy(r->kv.v, r->cache_elems * 2);
    const pl_layer_ref_rows rr = {w->n, PAGE, w->pos, w->slots, w->tables, 0, 0};
    ck_assert_int_eq(pl_layer_ref(r->m, &r->hw, &rr, 1, r->kc_h, r->vc_h, x, ref_epi), 0);
    ck_assert_int_eq(pl_layer_ref(r->m, &r->hw, &rr, 0, r->kc_h, r->vc_h, x, ref), 0);
    for (int run = 0; run < RECIPES + 2; run++) {
        const int recipe = run < RECIPES ? run : RECIPES - 1, mode = run < RECIPES ? 0 : run - RECIPES + 1;
        char tag[160];
        snprintf(tag, sizeof tag, "%s %s, %s%s", r->m->name, what, recipe_names[recipe],
                 mode == 1   ? " in place"
                 : mode == 2 ? " from a graph"
                             : "");
        pl_test_poison_slots(r->kv.k, r->kv.v, w->slots, w->n, r->row_elems);
        CK(cudaMemset(r->out_d, 0xff, xn * 2));
        CK(cudaMemset(r->ws, 0xff, r->ws_bytes));
        const run_args a = {r, w, prefill, recipe, r->x_d, r->out_d, NULL};
        run_mode(&a, mode);
        uint16_t *out = pl_test_dev_copy(r->out_d, xn * 2);
        compare_output(tag, out, recipe_epilogue(&r->recipes[recipe]) ? ref_epi : ref, x, xn);
        free(out);
        compare_cache(tag, r, w, k_before, r->kv.k, r->kc_h);
        compare_cache(tag, r, w, v_before, r->kv.v, r->vc_h);
    }
    /* leave the device caches as the reference's (the next step reads them) */
    CK(cudaMemcpy(r->kv.k, r->kc_h, r->cache_elems * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->kv.v, r->vc_h, r->cache_elems * 2, cudaMemcpyHostToDevice));
    free(x), free(ref), free(ref_epi), free(k_before), free(v_before);
}

/* Prefill of L tokens, then decode of token L, against the last row of a prefill of L + 1 tokens (the same x rows,
 * the same weights): the cache the prefill wrote is the cache the decode reads. Fused recipe. */
START_TEST(prefill_then_decode)
{
    const int L = 45, need[1] = {L + 1}, fused = RECIPES - 1;
    rig r;
    rig_init(&r, "tiny-dense-gqa8", 1, need, L + 1, 77);
    const size_t D = r.m->hidden;
    uint16_t *x = malloc((L + 1) * D * 2);
    ck_assert(x != NULL);
    pl_test_fill_pm1_bf16(x, (L + 1) * D, &r.rng);
    CK(cudaMemcpy(r.x_d, x, (L + 1) * D * 2, cudaMemcpyHostToDevice));
    int first[1] = {0}, count[1] = {L + 1};
    rows w;
    rows_upload(&r, first, count, &w);
    run_args a = {&r, &w, 1, fused, r.x_d, r.out_d, NULL};
    run_mode(&a, 0);
    uint16_t *whole = pl_test_dev_copy(r.out_d + L * D, (D)*2);
    free(w.table);
    count[0] = L; /* the first L tokens, then the last one as a decode step */
    rows_upload(&r, first, count, &w);
    a.w = &w;
    run_mode(&a, 0);
    free(w.table);
    first[0] = L, count[0] = 1;
    rows_upload(&r, first, count, &w);
    CK(cudaMemcpy(r.x_d, x + L * D, D * 2, cudaMemcpyHostToDevice));
    a.prefill = 0;
    a.w = &w;
    run_mode(&a, 0);
    uint16_t *step = pl_test_dev_copy(r.out_d, (D)*2);
    compare_output("prefill then decode against one prefill", step, whole, x + L * D, D);
    free(w.table), free(x), free(whole), free(step);
    rig_free(&r);
}
END_TEST

/* ---- the FP8 cache (kernels/attention/kv_fp8.h): every recipe over the same cache quantized ---- */

typedef struct fp8_cache {
    pl_layer_kv kv;    /* device: the e4m3 pools and their rows' scales */
    size_t rows;       /* cache rows: slots · kv_heads */
    uint8_t *k8, *v8;  /* host copies of the pools, as the device holds them */
    float *ks, *vs;    /* ... and of the scales */
    uint16_t *kc, *vc; /* the dequantized cache: what the reference reads */
} fp8_cache;

static void fp8_dequantize(const fp8_cache *f, int hd)
{
    for (size_t i = 0; i < f->rows * hd; i++) {
        f->kc[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(f->k8[i]) * f->ks[i / hd]);
        f->vc[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(f->v8[i]) * f->vs[i / hd]);
    }
}

/* Row `row` of the bf16 `src` quantized on the host equals the device's bytes q and scale s (bit for bit). */
static void check_row_quantized(const char *tag, const uint16_t *src, const uint8_t *q, const float *s, size_t row,
                                int hd)
{
    uint8_t want[256];
    float scale;
    pl_layer_ref_fp8_row(src + row * hd, hd, want, &scale, NULL);
    ck_assert_msg(memcmp(&scale, s + row, sizeof scale) == 0, "%s: row %zu's scale is %g, the host's %g", tag, row,
                  (double)s[row], (double)scale);
    for (int e = 0; e < hd; e++)
        ck_assert_msg(q[row * hd + e] == want[e], "%s: row %zu element %d is 0x%02x, the host's 0x%02x", tag, row, e,
                      q[row * hd + e], want[e]);
}

/* The rig's bf16 pools quantized on the device (pl_engine_kv_quantize_fp8), every row equal to the host's
 * quantization of it. */
static void fp8_init(fp8_cache *f, const rig *r)
{
    const int hd = r->m->head_dim;
    memset(f, 0, sizeof *f);
    f->rows = r->cache_elems / hd;
    f->kv.dtype = PL_KV_FP8_E4M3;
    CK(cudaMalloc((void **)&f->kv.k8, r->cache_elems));
    CK(cudaMalloc((void **)&f->kv.v8, r->cache_elems));
    CK(cudaMalloc((void **)&f->kv.k_scale, f->rows * sizeof(float)));
    CK(cudaMalloc((void **)&f->kv.v_scale, f->rows * sizeof(float)));
    const size_t slots = f->rows / r->m->kv_heads;
    CK(pl_engine_kv_quantize_fp8(r->kv.k, slots, r->m->kv_heads, hd, f->kv.k8, f->kv.k_scale, 0));
    CK(pl_engine_kv_quantize_fp8(r->kv.v, slots, r->m->kv_heads, hd, f->kv.v8, f->kv.v_scale, 0));
    CK(cudaDeviceSynchronize());
    f->k8 = pl_test_dev_copy(f->kv.k8, r->cache_elems);
    f->v8 = pl_test_dev_copy(f->kv.v8, r->cache_elems);
    f->ks = pl_test_dev_copy(f->kv.k_scale, f->rows * sizeof(float));
    f->vs = pl_test_dev_copy(f->kv.v_scale, f->rows * sizeof(float));
    f->kc = malloc(r->cache_elems * 2);
    f->vc = malloc(r->cache_elems * 2);
    ck_assert(f->kc && f->vc);
    for (size_t row = 0; row < f->rows; row++) {
        check_row_quantized("the quantized pool K", r->kc_h, f->k8, f->ks, row, hd);
        check_row_quantized("the quantized pool V", r->vc_h, f->v8, f->vs, row, hd);
    }
    fp8_dequantize(f, hd);
}

static void fp8_free(fp8_cache *f)
{
    CK(cudaFree(f->kv.k8)), CK(cudaFree(f->kv.v8)), CK(cudaFree(f->kv.k_scale)), CK(cudaFree(f->kv.v_scale));
    free(f->k8), free(f->v8), free(f->ks), free(f->vs), free(f->kc), free(f->vc);
}

/* After an FP8 step that wrote the rows at w's slots: every other byte of the pool and every other scale unchanged
 * (before: the host copies); each written row the host's quantization of the device's bf16 row src16 (the bf16
 * recipe's KV write of the same rows: the same RoPE code, so the same bf16 values), bit for bit; and its values
 * within (|ref| + rms) / 8 of the reference's dequantized row (a bf16 flip can move an element one e4m3 step). */
static void check_fp8_pool(const char *tag, const rig *r, const rows *w, const uint8_t *before_q, const float *before_s,
                           const uint8_t *dev_q, const float *dev_s, const uint16_t *src16, const uint16_t *ref)
{
    const int hd = r->m->head_dim, kvh = r->m->kv_heads;
    const size_t nrows = r->cache_elems / hd;
    uint8_t *q = pl_test_dev_copy(dev_q, r->cache_elems);
    float *sc = pl_test_dev_copy(dev_s, nrows * sizeof(float));
    char *written = calloc(nrows, 1);
    ck_assert(written != NULL);
    double r2 = 0;
    for (int i = 0; i < w->n; i++)
        for (int g = 0; g < kvh; g++) {
            const size_t row = (size_t)w->slots[i] * kvh + g;
            written[row] = 1;
            check_row_quantized(tag, src16, q, sc, row, hd);
            for (int e = 0; e < hd; e++)
                r2 += pl_bf16_to_double(ref[row * hd + e]) * pl_bf16_to_double(ref[row * hd + e]);
        }
    const double rms = sqrt(r2 / ((double)(w->n > 0 ? w->n : 1) * kvh * hd));
    for (size_t row = 0; row < nrows; row++) {
        if (!written[row]) {
            ck_assert_msg(memcmp(q + row * hd, before_q + row * hd, hd) == 0 &&
                              memcmp(sc + row, before_s + row, sizeof *sc) == 0,
                          "%s: cache row %zu changed outside the step's slots", tag, row);
            continue;
        }
        for (int e = 0; e < hd; e++) {
            const double got = pl_kv_e4m3_to_float(q[row * hd + e]) * (double)sc[row];
            const double want = pl_bf16_to_double(ref[row * hd + e]);
            ck_assert_msg(fabs(got - want) <= (fabs(want) + rms) / 8,
                          "%s: row %zu element %d is %.6g, the reference %.6g", tag, row, e, got, want);
        }
    }
    free(q), free(sc), free(written);
}

/* The device's FP8 pools set to the reference's written rows (quantized again: the same values) for the next step. */
static void fp8_sync_to_reference(fp8_cache *f, const rig *r, const rows *w)
{
    const int hd = r->m->head_dim, kvh = r->m->kv_heads;
    for (int i = 0; i < w->n; i++)
        for (int g = 0; g < kvh; g++) {
            const size_t row = (size_t)w->slots[i] * kvh + g;
            pl_layer_ref_fp8_row(f->kc + row * hd, hd, f->k8 + row * hd, f->ks + row, NULL);
            pl_layer_ref_fp8_row(f->vc + row * hd, hd, f->v8 + row * hd, f->vs + row, NULL);
        }
    CK(cudaMemcpy(f->kv.k8, f->k8, r->cache_elems, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(f->kv.v8, f->v8, r->cache_elems, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(f->kv.k_scale, f->ks, f->rows * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(f->kv.v_scale, f->vs, f->rows * sizeof(float), cudaMemcpyHostToDevice));
}

/* NaN (0xff) into the FP8 rows and scales at w's slots. */
static void fp8_poison_slots(const fp8_cache *f, const rig *r, const rows *w)
{
    const int hd = r->m->head_dim, kvh = r->m->kv_heads;
    for (int i = 0; i < w->n; i++) {
        const size_t row = (size_t)w->slots[i] * kvh;
        CK(cudaMemset(f->kv.k8 + row * hd, 0xff, (size_t)kvh * hd));
        CK(cudaMemset(f->kv.v8 + row * hd, 0xff, (size_t)kvh * hd));
        CK(cudaMemset(f->kv.k_scale + row, 0xff, (size_t)kvh * sizeof(float)));
        CK(cudaMemset(f->kv.v_scale + row, 0xff, (size_t)kvh * sizeof(float)));
    }
}

/* Every recipe (and the fused one in place and from a graph) over the FP8 cache against the reference over its
 * values; each run's written rows checked against the same recipe's bf16 rows, quantized on the host. */
static void check_rows_fp8(rig *r, fp8_cache *f, const rows *w, int prefill, const char *what)
{
    const size_t xn = (size_t)w->n * r->m->hidden;
    uint16_t *x = malloc(xn * 2), *ref = malloc(xn * 2), *ref_epi = malloc(xn * 2);
    ck_assert(x && ref && ref_epi);
    pl_test_fill_pm1_bf16(x, xn, &r->rng);
    CK(cudaMemcpy(r->x_d, x, xn * 2, cudaMemcpyHostToDevice));
    const pl_layer_ref_rows rr = {w->n, PAGE, w->pos, w->slots, w->tables, 1, 0};
    ck_assert_int_eq(pl_layer_ref(r->m, &r->hw, &rr, 1, f->kc, f->vc, x, ref_epi), 0);
    ck_assert_int_eq(pl_layer_ref(r->m, &r->hw, &rr, 0, f->kc, f->vc, x, ref), 0);
    for (int run = 0; run < RECIPES + 2; run++) {
        const int recipe = run < RECIPES ? run : RECIPES - 1, mode = run < RECIPES ? 0 : run - RECIPES + 1;
        char tag[160];
        snprintf(tag, sizeof tag, "%s %s, FP8 cache, %s%s", r->m->name, what, recipe_names[recipe],
                 mode == 1   ? " in place"
                 : mode == 2 ? " from a graph"
                             : "");
        const run_args a16 = {r, w, prefill, recipe, r->x_d, r->out_d, NULL};
        run_mode(&a16, 0); /* the bf16 rows this recipe writes */
        uint16_t *k16 = pl_test_dev_copy(r->kv.k, r->cache_elems * 2),
                 *v16 = pl_test_dev_copy(r->kv.v, r->cache_elems * 2);
        fp8_poison_slots(f, r, w);
        CK(cudaMemset(r->out_d, 0xff, xn * 2));
        CK(cudaMemset(r->ws, 0xff, r->ws_bytes));
        const run_args a = {r, w, prefill, recipe, r->x_d, r->out_d, &f->kv};
        run_mode(&a, mode);
        uint16_t *out = pl_test_dev_copy(r->out_d, xn * 2);
        compare_output(tag, out, recipe_epilogue(&r->recipes[recipe]) ? ref_epi : ref, x, xn);
        check_fp8_pool(tag, r, w, f->k8, f->ks, f->kv.k8, f->kv.k_scale, k16, f->kc);
        check_fp8_pool(tag, r, w, f->v8, f->vs, f->kv.v8, f->kv.v_scale, v16, f->vc);
        free(out), free(k16), free(v16);
    }
    fp8_sync_to_reference(f, r, w);
    free(x), free(ref), free(ref_epi);
}

/* A decode case's two steps (the second attending to the token the first wrote) or a prefill case, over the bf16
 * cache or (fp8) the same cache quantized. */
static void run_case(const layer_case *c, int prefill, int fp8, uint64_t seed)
{
    int need[3], first[3] = {0, 0, 0}, count[3] = {1, 1, 1}, rows_total = 0;
    for (int s = 0; s < c->seqs; s++) {
        need[s] = prefill ? c->lens[s] : c->lens[s] + 2;
        rows_total += prefill ? c->lens[s] : 1;
    }
    rig r;
    rig_init(&r, c->model, c->seqs, need, rows_total, seed);
    fp8_cache f;
    if (fp8)
        fp8_init(&f, &r);
    for (int step = 0; step < (prefill ? 1 : 2); step++) {
        for (int s = 0; s < c->seqs; s++)
            first[s] = prefill ? 0 : c->lens[s] + step;
        rows w;
        rows_upload(&r, first, prefill ? c->lens : count, &w);
        char what[64];
        if (prefill)
            snprintf(what, sizeof what, "prefill of %d prompts", c->seqs);
        else
            snprintf(what, sizeof what, "decode batch %d step %d", c->seqs, step);
        if (fp8)
            check_rows_fp8(&r, &f, &w, prefill, what);
        else
            check_rows(&r, &w, prefill, what);
        free(w.table);
    }
    if (fp8)
        fp8_free(&f);
    rig_free(&r);
}

START_TEST(layer_decode)
{
    run_case(&decode_cases[_i], 0, 0, 20261128u + (uint64_t)_i);
}
END_TEST

START_TEST(layer_prefill)
{
    run_case(&prefill_cases[_i], 1, 0, 20261129u + (uint64_t)_i);
}
END_TEST

START_TEST(layer_decode_fp8)
{
    run_case(&decode_cases[_i], 0, 1, 20261130u + (uint64_t)_i);
}
END_TEST

START_TEST(layer_prefill_fp8)
{
    run_case(&prefill_cases[_i], 1, 1, 20261131u + (uint64_t)_i);
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

    const pl_model_config *m = pl_model_find("tiny-dense", err, sizeof err);
    ck_assert_msg(pl_dense_weights_alloc(m, 2, &w, err, sizeof err) == 0, "%s", err);
    const size_t need = pl_dense_workspace_bytes(m, 3, 132);
    void *buf;
    CK(cudaMalloc(&buf, need));
    const pl_decode_step ds = {3, PAGE, 1, buf, buf, buf, buf};
    const pl_layer_kv kv = {.k = buf, .v = buf};
    const pl_layer_recipe rc = {PL_LAYER_GEMM_PERFLAB, PL_LAYER_ATTN_FAST, 1, 132, NULL, PL_LAYER_WEIGHTS_BF16};
    ck_assert_int_eq(pl_dense_layer_decode(&w, &rc, &ds, &kv, buf, buf, buf, need - 1, 0), cudaErrorInvalidValue);
    const pl_layer_recipe cublas_without_handle = {PL_LAYER_GEMM_CUBLAS, PL_LAYER_ATTN_FAST, 0, 132, NULL,
                                                   PL_LAYER_WEIGHTS_BF16};
    ck_assert_int_eq(pl_dense_layer_decode(&w, &cublas_without_handle, &ds, &kv, buf, buf, buf, need, 0),
                     cudaErrorInvalidValue);
    /* an FP8 cache without its scales, and a cache dtype the engine does not know */
    const pl_layer_kv no_scales = {.dtype = PL_KV_FP8_E4M3, .k8 = buf, .v8 = buf};
    ck_assert_int_eq(pl_dense_layer_decode(&w, &rc, &ds, &no_scales, buf, buf, buf, need, 0), cudaErrorInvalidValue);
    const pl_prefill_step ps = {1, (const int[]){0, 3}, buf, buf};
    ck_assert_int_eq(pl_dense_layer_prefill(&w, &rc, &ps, &no_scales, buf, buf, buf, need, 0), cudaErrorInvalidValue);
    const pl_layer_kv unknown = {.k = buf, .v = buf, .dtype = (pl_kv_dtype)7};
    ck_assert_int_eq(pl_dense_layer_decode(&w, &rc, &ds, &unknown, buf, buf, buf, need, 0), cudaErrorInvalidValue);
    CK(cudaGetLastError());
    CK(cudaFree(buf));
    pl_dense_weights_free(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("engine_layer");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, layer_decode, 0, COUNT(decode_cases));
    tcase_add_loop_test(tc, layer_prefill, 0, COUNT(prefill_cases));
    tcase_add_test(tc, prefill_then_decode);
    tcase_add_loop_test(tc, layer_decode_fp8, 0, COUNT(decode_cases));
    tcase_add_loop_test(tc, layer_prefill_fp8, 0, COUNT(prefill_cases));
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
