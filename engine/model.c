/* A whole decoder model on one GPU (model.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/device_cc.h"
#include "engine/cuda_step.h"
#include "engine/model.h"
#include "gemm/cublas/gemm_cublas.h"
#include "gemm/gemm.h"
#include "norm/norm_kernels.h"

#define EMBED_KEY 0x656d626564ull /* the fill keys of the model's own tensors, apart from the layers' */
#define HEAD_KEY  0x6c6d68656164ull
#define NORM_KEY  0x6e6f726dull

static size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* ---- creation ---- */

static int plan(const pl_model_options *o, pl_model *M, char *err, size_t errlen)
{
    size_t free_b = 0, total_b = 0;
    const cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "cudaMemGetInfo: %s", cudaGetErrorString(e));
        return -1;
    }
    const pl_plan_request req = {.model = o->model,
                                 .layers = M->layers,
                                 .dtype = PL_WEIGHTS_BF16,
                                 .kv_dtype = o->kv_dtype,
                                 .page_size = o->page_size,
                                 .pages = o->pages,
                                 .max_batch = o->max_seqs > 0 ? o->max_seqs : 1,
                                 .max_tokens = o->max_rows,
                                 .max_context = o->max_context,
                                 .free_bytes = free_b,
                                 .reserve_bytes = o->reserve_bytes ? o->reserve_bytes : (size_t)1 << 30};
    return pl_plan_make(&req, &M->plan, err, errlen);
}

/* ---- the KV cache ---- */

enum { C_K, C_V, C_KS, C_VS, C_COUNT };

/* The cache's arrays' bytes: K and V pools (bf16 or e4m3), and for FP8 their scales. */
static void cache_sizes(const pl_model_config *c, int layers, int pages, int page_size, pl_kv_dtype dtype,
                        size_t *pool_elems, size_t bytes[C_COUNT])
{
    *pool_elems = (size_t)pages * page_size * c->kv_heads * c->head_dim;
    const size_t all = *pool_elems * (size_t)layers, rows = all / (size_t)c->head_dim;
    const int fp8 = dtype == PL_KV_FP8_E4M3;
    bytes[C_K] = bytes[C_V] = fp8 ? all : 2 * all;
    bytes[C_KS] = bytes[C_VS] = fp8 ? rows * sizeof(float) : 0;
}

size_t pl_model_cache_bytes(const pl_model_config *c, int layers, int pages, int page_size, pl_kv_dtype dtype)
{
    if (dtype != PL_KV_BF16 && dtype != PL_KV_FP8_E4M3)
        return 0;
    size_t pool, bytes[C_COUNT], at = 0;
    cache_sizes(c, layers, pages, page_size, dtype, &pool, bytes);
    for (int i = 0; i < C_COUNT; i++)
        at += align256(bytes[i]);
    return at;
}

void pl_model_cache_place(const pl_model_config *c, int layers, int pages, int page_size, pl_kv_dtype dtype, void *base,
                          pl_model_cache *out)
{
    size_t bytes[C_COUNT], at[C_COUNT], end = 0;
    memset(out, 0, sizeof *out);
    cache_sizes(c, layers, pages, page_size, dtype, &out->pool_elems, bytes);
    for (int i = 0; i < C_COUNT; i++) {
        at[i] = end;
        end += align256(bytes[i]);
    }
    char *b = base;
    out->dtype = dtype;
    out->base = base;
    out->bytes = end;
    if (dtype == PL_KV_FP8_E4M3) {
        out->k8 = (uint8_t *)(b + at[C_K]);
        out->v8 = (uint8_t *)(b + at[C_V]);
        out->k_scale = (float *)(void *)(b + at[C_KS]);
        out->v_scale = (float *)(void *)(b + at[C_VS]);
    } else {
        out->k = (uint16_t *)(void *)(b + at[C_K]);
        out->v = (uint16_t *)(void *)(b + at[C_V]);
    }
}

/* The model's own tensors, the cache and the step's buffers in one allocation; returns its bytes (base NULL: only
 * the size). */
static size_t carve(pl_model *M, pl_kv_dtype kv_dtype, char *base)
{
    const pl_model_config *c = M->config;
    const size_t D = c->hidden, V = c->vocab;
    const size_t bytes[] = {V * D * 2,
                            D * 2,
                            c->tied_embeddings ? 0 : V * D * 2,
                            pl_model_cache_bytes(c, M->layers, M->pages, M->page_size, kv_dtype),
                            (size_t)M->max_rows * D * 2,
                            (size_t)M->max_out * D * 2,
                            (size_t)M->max_out * D * 2,
                            (size_t)M->max_out * V * 2,
                            M->ws_bytes};
    void *cache = NULL;
    void **slots[] = {(void **)&M->embed,  (void **)&M->final_norm, (void **)&M->lm_head, &cache, (void **)&M->x,
                      (void **)&M->picked, (void **)&M->normed,     (void **)&M->logits,  &M->ws};
    size_t at = 0;
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        *slots[i] = base && bytes[i] ? base + at : NULL;
        at += align256(bytes[i]);
    }
    if (c->tied_embeddings)
        M->lm_head = M->embed;
    if (base)
        pl_model_cache_place(c, M->layers, M->pages, M->page_size, kv_dtype, cache, &M->cache);
    return at;
}

static int fill_own(pl_model *M, uint64_t seed, char *err, size_t errlen)
{
    const pl_model_config *c = M->config;
    const size_t D = c->hidden, V = c->vocab;
    const float head = 1.0f / sqrtf((float)D);
    cudaError_t e = pl_engine_fill_uniform(M->embed, V * D, seed ^ EMBED_KEY, -1.0f, 1.0f, 0);
    if (e == cudaSuccess)
        e = pl_engine_fill_uniform(M->final_norm, D, seed ^ NORM_KEY, 0.5f, 1.5f, 0);
    if (e == cudaSuccess && !c->tied_embeddings)
        e = pl_engine_fill_uniform(M->lm_head, V * D, seed ^ HEAD_KEY, -head, head, 0);
    if (e == cudaSuccess) /* the cache's unused rows hold zeros (FP8: bytes and scales), never read */
        e = cudaMemset(M->cache.base, 0, M->cache.bytes);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "filling %s's embedding, norm and head: %s", c->name, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* Every layer's weights (layer l seeded seed + l), the step's workspace size and an MoE model's expert GEMMs. */
static int alloc_layers(const pl_model_options *o, pl_model *M, char *err, size_t errlen)
{
    const pl_model_config *c = M->config;
    const int moe = pl_model_is_moe(c);
    if (moe) {
        int cc = 0;
        const cudaError_t e = pl_current_cc(&cc);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "the device's compute capability: %s", cudaGetErrorString(e));
            return -1;
        }
        M->experts = cc == 90 ? PL_MOE_EXPERTS_GROUPED : PL_MOE_EXPERTS_LOOP;
        M->ws_bytes = pl_moe_workspace_bytes(c, M->max_rows, M->sm_count);
        M->moe = calloc((size_t)M->layers, sizeof *M->moe);
    } else {
        M->ws_bytes = pl_dense_workspace_bytes(c, M->max_rows, M->sm_count);
        M->layer = calloc((size_t)M->layers, sizeof *M->layer);
    }
    if (!M->layer && !M->moe) {
        snprintf(err, errlen, "out of host memory for %d layers", M->layers);
        return -1;
    }
    for (int l = 0; l < M->layers; l++) {
        const uint64_t seed = o->seed + (uint64_t)l;
        if ((moe ? pl_moe_weights_alloc(c, seed, &M->moe[l], err, errlen)
                 : pl_dense_weights_alloc(c, seed, &M->layer[l], err, errlen)) != 0) {
            pl_model_destroy(M);
            return -1;
        }
    }
    return 0;
}

int pl_model_create(const pl_model_options *o, pl_model *M, char *err, size_t errlen)
{
    memset(M, 0, sizeof *M);
    const pl_model_config *c = o->model;
    const int moe = c && pl_model_is_moe(c);
    if (o->kv_dtype != PL_KV_BF16 && o->kv_dtype != PL_KV_FP8_E4M3) {
        snprintf(err, errlen, "%s: KV cache dtype %d: the model takes bf16 or fp8 (e4m3) caches",
                 c ? c->name : "(no model)", (int)o->kv_dtype);
        return -1;
    }
    if (!c || (!moe && c->qk_norm) || o->max_rows < 1 || o->max_out < 1 || o->max_out > o->max_rows ||
        o->page_size < 8 || o->page_size % 8) {
        snprintf(err, errlen,
                 "%s: the model takes a dense config without qk-norm or an MoE config, max_rows >= max_out >= 1 and "
                 "a page size that is a multiple of 8",
                 c ? c->name : "(no model)");
        return -1;
    }
    M->config = c;
    M->layers = o->layers > 0 && o->layers < c->layers ? o->layers : c->layers;
    M->page_size = o->page_size;
    M->max_rows = o->max_rows;
    M->max_out = o->max_out;
    M->sm_count = o->sm_count;
    if (plan(o, M, err, errlen) != 0)
        return -1;
    M->pages = M->plan.pages;
    if (alloc_layers(o, M, err, errlen) != 0)
        return -1;
    const size_t bytes = carve(M, o->kv_dtype, NULL);
    cudaError_t e = cudaMalloc(&M->block, bytes);
    if (e != cudaSuccess) {
        M->block = NULL;
        snprintf(err, errlen, "cudaMalloc of %s's %zu bytes of embedding, caches and buffers: %s", c->name, bytes,
                 cudaGetErrorString(e));
        pl_model_destroy(M);
        return -1;
    }
    carve(M, o->kv_dtype, (char *)M->block);
    if (fill_own(M, o->seed, err, errlen) != 0) {
        pl_model_destroy(M);
        return -1;
    }
    return 0;
}

void pl_model_destroy(pl_model *M)
{
    for (int l = 0; l < M->layers; l++) {
        if (M->layer)
            pl_dense_weights_free(&M->layer[l]);
        if (M->moe)
            pl_moe_weights_free(&M->moe[l]);
    }
    free(M->layer);
    free(M->moe);
    if (M->block)
        cudaFree(M->block);
    memset(M, 0, sizeof *M);
}

pl_layer_kv pl_model_kv(const pl_model *M, int l)
{
    const pl_model_cache *c = &M->cache;
    const size_t at = (size_t)l * c->pool_elems, rows = at / (size_t)M->config->head_dim;
    pl_layer_kv kv = {.dtype = c->dtype};
    if (c->dtype == PL_KV_FP8_E4M3) {
        kv.k8 = c->k8 + at;
        kv.v8 = c->v8 + at;
        kv.k_scale = c->k_scale + rows;
        kv.v_scale = c->v_scale + rows;
    } else {
        kv.k = c->k + at;
        kv.v = c->v + at;
    }
    return kv;
}

/* ---- a step ---- */

static int rows_ok(const pl_model *M, const pl_model_rows *s)
{
    if (!s || s->n < 1 || s->n > M->max_rows || s->n_decode < 0 || s->n_decode > s->n || s->n_out < 0 ||
        s->n_out > M->max_out || !s->tokens || !s->positions || !s->slots)
        return 0;
    if (s->n_decode > 0 && (!s->block_table || !s->seq_lens || s->max_pages < 1))
        return 0;
    if (s->n_decode < s->n &&
        (s->prompts < 1 || !s->starts || s->starts[0] != 0 || s->starts[s->prompts] != s->n - s->n_decode))
        return 0;
    return s->n_out == 0 || (s->out_rows && s->out_tokens);
}

/* The LM head's logits [n][vocab] = normed · lm_headᵀ, through the recipe's GEMM. */
static cudaError_t lm_head(const pl_model *M, const pl_layer_recipe *r, int n, cudaStream_t stream)
{
    const pl_model_config *c = M->config;
    if (r->gemm == PL_LAYER_GEMM_CUBLAS) {
        if (cublasSetStream(r->cublas, stream) != CUBLAS_STATUS_SUCCESS ||
            pl_gemm_cublas(r->cublas, n, c->vocab, c->hidden, PL_GEMM_B_NK, M->normed, M->lm_head, CUDA_R_16BF,
                           M->logits, CUDA_R_16BF) != CUBLAS_STATUS_SUCCESS)
            return cudaErrorNotSupported;
        return cudaSuccess;
    }
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = n;
    p.n = c->vocab;
    p.k = c->hidden;
    p.b_layout = PL_GEMM_B_NK;
    p.a = M->normed;
    p.b = M->lm_head;
    p.d = M->logits;
    return pl_gemm_bf16(&p, stream);
}

static cudaError_t layers(pl_model *M, const pl_layer_recipe *r, const pl_model_rows *s, cudaStream_t stream)
{
    const size_t D = M->config->hidden;
    for (int l = 0; l < M->layers; l++) {
        const pl_layer_kv kv = pl_model_kv(M, l);
        if (s->n_decode > 0) {
            const pl_decode_step ds = {s->n_decode, M->page_size,   s->max_pages, s->positions,
                                       s->slots,    s->block_table, s->seq_lens};
            if (M->moe) {
                const pl_moe_recipe mr = {*r, M->experts};
                PL_STEP(pl_moe_layer_decode(&M->moe[l], &mr, &ds, &kv, M->x, M->x, M->ws, M->ws_bytes, stream));
            } else {
                PL_STEP(pl_dense_layer_decode(&M->layer[l], r, &ds, &kv, M->x, M->x, M->ws, M->ws_bytes, stream));
            }
        }
        if (s->n_decode < s->n) {
            uint16_t *x = M->x + (size_t)s->n_decode * D;
            const pl_prefill_step ps = {s->prompts, s->starts, s->positions + s->n_decode, s->slots + s->n_decode};
            if (M->moe) {
                const pl_moe_recipe mr = {*r, M->experts};
                PL_STEP(pl_moe_layer_prefill(&M->moe[l], &mr, &ps, &kv, x, x, M->ws, M->ws_bytes, stream));
            } else {
                PL_STEP(pl_dense_layer_prefill(&M->layer[l], r, &ps, &kv, x, x, M->ws, M->ws_bytes, stream));
            }
        }
    }
    return cudaSuccess;
}

cudaError_t pl_model_step(pl_model *M, const pl_layer_recipe *r, const pl_model_rows *s, cudaStream_t stream)
{
    if (!M || !M->block || !r || !rows_ok(M, s))
        return cudaErrorInvalidValue;
    const pl_model_config *c = M->config;
    PL_STEP(pl_engine_embed(M->embed, s->tokens, s->n, c->hidden, c->vocab, M->x, stream));
    PL_STEP(layers(M, r, s, stream));
    if (s->n_out == 0)
        return cudaSuccess;
    PL_STEP(pl_engine_gather_rows(M->x, s->out_rows, s->n_out, c->hidden, M->picked, stream));
    PL_STEP(pl_rmsnorm_fused(M->picked, M->final_norm, M->normed, s->n_out, c->hidden, (float)c->rms_eps, 0, stream));
    PL_STEP(lm_head(M, r, s->n_out, stream));
    return pl_engine_argmax(M->logits, s->n_out, c->vocab, s->out_tokens, stream);
}
