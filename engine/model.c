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
                                 .page_size = o->page_size,
                                 .pages = o->pages,
                                 .max_batch = o->max_seqs > 0 ? o->max_seqs : 1,
                                 .max_tokens = o->max_rows,
                                 .max_context = o->max_context,
                                 .free_bytes = free_b,
                                 .reserve_bytes = o->reserve_bytes ? o->reserve_bytes : (size_t)1 << 30};
    return pl_plan_make(&req, &M->plan, err, errlen);
}

/* The model's own tensors, the pools and the step's buffers in one allocation; returns its bytes (base NULL: only
 * the size). */
static size_t carve(pl_model *M, char *base)
{
    const pl_model_config *c = M->config;
    const size_t D = c->hidden, V = c->vocab;
    M->pool_elems = (size_t)M->pages * M->page_size * c->kv_heads * c->head_dim;
    const size_t bytes[] = {V * D * 2,
                            D * 2,
                            c->tied_embeddings ? 0 : V * D * 2,
                            M->pool_elems * 2 * M->layers,
                            M->pool_elems * 2 * M->layers,
                            (size_t)M->max_rows * D * 2,
                            (size_t)M->max_out * D * 2,
                            (size_t)M->max_out * D * 2,
                            (size_t)M->max_out * V * 2,
                            M->ws_bytes};
    void **slots[] = {
        (void **)&M->embed, (void **)&M->final_norm, (void **)&M->lm_head, (void **)&M->k_pools, (void **)&M->v_pools,
        (void **)&M->x,     (void **)&M->picked,     (void **)&M->normed,  (void **)&M->logits,  &M->ws};
    size_t at = 0;
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        *slots[i] = base && bytes[i] ? base + at : NULL;
        at += align256(bytes[i]);
    }
    if (c->tied_embeddings)
        M->lm_head = M->embed;
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
    if (e == cudaSuccess) /* the caches' unused rows hold zeros, never read */
        e = cudaMemset(M->k_pools, 0, M->pool_elems * 2 * M->layers);
    if (e == cudaSuccess)
        e = cudaMemset(M->v_pools, 0, M->pool_elems * 2 * M->layers);
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
    const size_t bytes = carve(M, NULL);
    cudaError_t e = cudaMalloc(&M->block, bytes);
    if (e != cudaSuccess) {
        M->block = NULL;
        snprintf(err, errlen, "cudaMalloc of %s's %zu bytes of embedding, caches and buffers: %s", c->name, bytes,
                 cudaGetErrorString(e));
        pl_model_destroy(M);
        return -1;
    }
    carve(M, (char *)M->block);
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
    const pl_layer_kv kv = {.k = M->k_pools + (size_t)l * M->pool_elems, .v = M->v_pools + (size_t)l * M->pool_elems};
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
