/* One dense layer's decode and prefill steps (dense_layer.h): the library's norms, GEMMs and attention kernels and
 * the engine's element-wise kernels (layer_ops.h), in the order and the forms the recipe names. */
#include <math.h>
#include <string.h>

#include "attention/attention.h"
#include "common/device_cc.h"
#include "engine/cuda_step.h"
#include "engine/dense_layer.h"
#include "engine/layer_ops.h"
#include "gemm/cublas/gemm_cublas.h"
#include "gemm/gemm.h"
#include "norm/norm_kernels.h"

#define FAST_DECODE_WARPS 4 /* rows_deep in CTAs of 4 warps, two an SM (the attention:decode_paged default) */

/* ---- the workspace ---- */

enum { B_XN, B_QKV, B_Q, B_K, B_V, B_ATTN, B_PROJ, B_GU, B_ACT, B_RINV, B_LSE, B_ATTN_WS, B_COUNT };

typedef struct layer_buffers {
    uint16_t *xn, *qkv, *q, *k, *v, *attn, *proj, *gu, *act;
    float *rinv, *lse;
    void *attn_ws;
    size_t attn_ws_bytes;
} layer_buffers;

static size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* The fast decode kernel's partial results for `rows` sequences (its grid is sized by the SMs, its bookkeeping by
 * the batch): the larger of a one-sequence and a rows-sequence batch. */
static size_t decode_ws_bytes(const pl_model_config *m, int rows, int sm_count)
{
    size_t most = 0;
    const int batches[2] = {1, rows};
    for (int i = 0; i < 2; i++) {
        pl_decode_problem p;
        memset(&p, 0, sizeof p);
        p.batch = batches[i];
        p.heads = m->heads;
        p.kv_heads = m->kv_heads;
        p.head_dim = m->head_dim;
        p.page_size = 16;
        p.max_pages = 1;
        const int ctas = pl_decode_rows_ctas(&p, FAST_DECODE_WARPS, sm_count > 0 ? sm_count : 1);
        const size_t b = pl_decode_rows_workspace_bytes(&p, FAST_DECODE_WARPS, ctas);
        most = b > most ? b : most;
    }
    return most;
}

/* Carves the workspace for `rows` rows (base may be NULL: only the size is computed); returns its bytes. */
static size_t carve(const pl_model_config *m, int rows, int sm_count, char *base, layer_buffers *b)
{
    const size_t R = (size_t)rows, qw = (size_t)m->heads * m->head_dim, kw = (size_t)m->kv_heads * m->head_dim;
    const size_t bytes[B_COUNT] = {
        [B_XN] = R * m->hidden * 2,
        [B_QKV] = R * (qw + 2 * kw) * 2,
        [B_Q] = R * qw * 2,
        [B_K] = R * kw * 2,
        [B_V] = R * kw * 2,
        [B_ATTN] = R * qw * 2,
        [B_PROJ] = R * m->hidden * 2,
        [B_GU] = R * 2 * (size_t)m->intermediate * 2,
        [B_ACT] = R * (size_t)m->intermediate * 2,
        [B_RINV] = R * sizeof(float),
        [B_LSE] = R * (size_t)m->heads * sizeof(float),
        [B_ATTN_WS] = decode_ws_bytes(m, rows, sm_count),
    };
    void **const slots[B_COUNT] = {(void **)&b->xn,  (void **)&b->qkv,  (void **)&b->q,    (void **)&b->k,
                                   (void **)&b->v,   (void **)&b->attn, (void **)&b->proj, (void **)&b->gu,
                                   (void **)&b->act, (void **)&b->rinv, (void **)&b->lse,  &b->attn_ws};
    size_t at = 0;
    for (int i = 0; i < B_COUNT; i++) {
        *slots[i] = base ? base + at : NULL;
        at += align256(bytes[i]);
    }
    b->attn_ws_bytes = bytes[B_ATTN_WS];
    return at;
}

size_t pl_dense_workspace_bytes(const pl_model_config *m, int max_rows, int sm_count)
{
    layer_buffers b;
    return carve(m, max_rows, sm_count, NULL, &b);
}

/* ---- the operations, in the recipe's forms ---- */

static cudaError_t rmsnorm(const pl_layer_recipe *r, const pl_model_config *m, const uint16_t *x, const uint16_t *w,
                           int rows, const layer_buffers *b, cudaStream_t stream)
{
    if (r->fused)
        return pl_rmsnorm_fused(x, w, b->xn, rows, m->hidden, (float)m->rms_eps, 0, stream);
    return pl_rmsnorm_naive(x, w, b->xn, b->rinv, rows, m->hidden, (float)m->rms_eps, stream);
}

/* d [rows][n] = a [rows][k] · wᵀ (w [n][k], a linear layer's weight), plus residual [rows][n] when not NULL (d may
 * be the residual itself): in the GEMM's epilogue with perflab's GEMMs and the fused recipe, else by a kernel of
 * its own on d (then `scratch` holds the product first). */
static cudaError_t linear(const pl_layer_recipe *r, const uint16_t *a, const uint16_t *w, uint16_t *d, int rows, int n,
                          int k, const uint16_t *residual, uint16_t *scratch, cudaStream_t stream)
{
    const int epilogue = residual && r->fused && r->gemm == PL_LAYER_GEMM_PERFLAB;
    uint16_t *prod = residual && !epilogue ? scratch : d;
    if (r->gemm == PL_LAYER_GEMM_CUBLAS) {
        if (cublasSetStream(r->cublas, stream) != CUBLAS_STATUS_SUCCESS ||
            pl_gemm_cublas(r->cublas, rows, n, k, PL_GEMM_B_NK, a, w, CUDA_R_16BF, prod, CUDA_R_16BF) !=
                CUBLAS_STATUS_SUCCESS)
            return cudaErrorNotSupported;
    } else {
        pl_gemm_problem p;
        memset(&p, 0, sizeof p);
        p.m = rows;
        p.n = n;
        p.k = k;
        p.b_layout = PL_GEMM_B_NK;
        p.a = a;
        p.b = w;
        p.d = prod;
        p.epi.residual = epilogue ? residual : NULL;
        PL_STEP(pl_gemm_bf16(&p, stream));
    }
    if (residual && !epilogue)
        PL_STEP(pl_engine_residual_add(residual, prod, d, (size_t)rows * n, stream));
    return cudaGetLastError();
}

/* q into b->q, k and v into the cache at slots (and, for a prefill, contiguous into b->k, b->v) */
static cudaError_t rope_kv(const pl_layer_recipe *r, const pl_model_config *m, int rows, const int *positions,
                           const int64_t *slots, const pl_layer_kv *kv, const layer_buffers *b, int contiguous,
                           cudaStream_t stream)
{
    if (r->fused)
        return pl_engine_rope_kv_write(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions,
                                       slots, b->q, kv->k, kv->v, contiguous ? b->k : NULL, contiguous ? b->v : NULL,
                                       stream);
    PL_STEP(
        pl_engine_rope(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions, b->q, b->k, stream));
    return pl_engine_kv_write(b->k, b->qkv, rows, m->heads, m->kv_heads, m->head_dim, slots, kv->k, kv->v,
                              contiguous ? b->v : NULL, stream);
}

/* The MLP half: out = h + down(SwiGLU(gate_up(RMSNorm(h)))), h in out. */
static cudaError_t mlp_half(const pl_dense_weights *w, const pl_layer_recipe *r, int rows, uint16_t *out,
                            const layer_buffers *b, cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    PL_STEP(rmsnorm(r, m, out, w->mlp_norm, rows, b, stream));
    PL_STEP(linear(r, b->xn, w->gate_up, b->gu, rows, 2 * m->intermediate, m->hidden, NULL, NULL, stream));
    PL_STEP(pl_engine_swiglu(b->gu, b->act, rows, m->intermediate, stream));
    PL_STEP(linear(r, b->act, w->down, out, rows, m->hidden, m->intermediate, out, b->proj, stream));
    return cudaSuccess;
}

static int layer_ok(const pl_dense_weights *w, const pl_layer_recipe *r, int rows, const uint16_t *x,
                    const uint16_t *out, const void *workspace, size_t workspace_bytes)
{
    const pl_model_config *m = w ? w->model : NULL;
    return m && w->block && r && rows >= 1 && !pl_model_is_moe(m) && !m->qk_norm && x && out && workspace &&
           (r->gemm != PL_LAYER_GEMM_CUBLAS || r->cublas) &&
           workspace_bytes >= pl_dense_workspace_bytes(m, rows, r->sm_count);
}

/* ---- decode ---- */

static cudaError_t decode_attention(const pl_layer_recipe *r, const pl_decode_problem *dp, const layer_buffers *b,
                                    cudaStream_t stream)
{
    if (r->attention == PL_LAYER_ATTN_SIMPLE)
        return pl_decode_baseline(dp, stream);
    const int ctas = pl_decode_rows_ctas(dp, FAST_DECODE_WARPS, r->sm_count > 0 ? r->sm_count : 1);
    if (pl_decode_rows_workspace_bytes(dp, FAST_DECODE_WARPS, ctas) > b->attn_ws_bytes)
        return cudaErrorInvalidValue;
    return pl_decode_rows_deep(dp, FAST_DECODE_WARPS, ctas, 0, b->attn_ws, stream);
}

cudaError_t pl_dense_layer_decode(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_decode_step *step,
                                  const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                  size_t workspace_bytes, cudaStream_t stream)
{
    if (!step || !layer_ok(w, r, step->batch, x, out, workspace, workspace_bytes))
        return cudaErrorInvalidValue;
    const pl_model_config *m = w->model;
    const int B = step->batch, qw = m->heads * m->head_dim, qkvw = qw + 2 * m->kv_heads * m->head_dim;
    layer_buffers b;
    carve(m, B, r->sm_count, (char *)workspace, &b);
    pl_decode_problem dp;
    memset(&dp, 0, sizeof dp);
    dp.batch = B;
    dp.heads = m->heads;
    dp.kv_heads = m->kv_heads;
    dp.head_dim = m->head_dim;
    dp.page_size = step->page_size;
    dp.max_pages = step->max_pages;
    dp.scale = (float)(1.0 / sqrt((double)m->head_dim));
    dp.q = b.q;
    dp.k_cache = kv->k;
    dp.v_cache = kv->v;
    dp.block_table = step->block_table;
    dp.seq_lens = step->seq_lens;
    dp.o = b.attn;
    char why[256];
    if (!pl_decode_problem_valid(&dp, why, sizeof why))
        return cudaErrorInvalidValue;
    PL_STEP(rmsnorm(r, m, x, w->attn_norm, B, &b, stream));
    PL_STEP(linear(r, b.xn, w->qkv, b.qkv, B, qkvw, m->hidden, NULL, NULL, stream));
    PL_STEP(rope_kv(r, m, B, step->positions, step->slots, kv, &b, 0, stream));
    PL_STEP(decode_attention(r, &dp, &b, stream));
    PL_STEP(linear(r, b.attn, w->o, out, B, m->hidden, qw, x, b.proj, stream));
    return mlp_half(w, r, B, out, &b, stream);
}

/* ---- prefill ---- */

/* Each prompt's causal attention over its own tokens (q, k, v contiguous [tokens][heads][head_dim]). */
static cudaError_t prefill_attention(const pl_layer_recipe *r, const pl_model_config *m, const pl_prefill_step *s,
                                     const layer_buffers *b, cudaStream_t stream)
{
    int cc = 0;
    PL_STEP(pl_current_cc(&cc));
    const int wgmma = r->attention == PL_LAYER_ATTN_FAST && cc == 90;
    const size_t qrow = (size_t)m->heads * m->head_dim, krow = (size_t)m->kv_heads * m->head_dim;
    for (int p = 0; p < s->prompts; p++) {
        const int start = s->starts[p], len = s->starts[p + 1] - s->starts[p];
        pl_attn_problem a;
        memset(&a, 0, sizeof a);
        a.batch = 1;
        a.heads = m->heads;
        a.kv_heads = m->kv_heads;
        a.seq = len;
        a.head_dim = m->head_dim;
        a.causal = 1;
        a.layout = PL_ATTN_BSHD;
        a.scale = (float)(1.0 / sqrt((double)m->head_dim));
        a.q = b->q + start * qrow;
        a.k = b->k + start * krow;
        a.v = b->v + start * krow;
        a.o = b->attn + start * qrow;
        a.lse = b->lse + (size_t)start * m->heads;
        char why[256];
        if (!pl_attn_problem_valid(&a, why, sizeof why))
            return cudaErrorInvalidValue;
        PL_STEP(wgmma ? pl_attn_flash_wgmma_schedule(&a, 0, stream) : pl_attn_flash_mma(&a, stream));
    }
    return cudaSuccess;
}

static int prefill_rows(const pl_prefill_step *s)
{
    if (!s || s->prompts < 1 || !s->starts || s->starts[0] != 0)
        return 0;
    for (int p = 0; p < s->prompts; p++)
        if (s->starts[p + 1] <= s->starts[p])
            return 0;
    return s->starts[s->prompts];
}

cudaError_t pl_dense_layer_prefill(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_prefill_step *step,
                                   const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                   size_t workspace_bytes, cudaStream_t stream)
{
    const int T = prefill_rows(step);
    if (T < 1 || !layer_ok(w, r, T, x, out, workspace, workspace_bytes))
        return cudaErrorInvalidValue;
    const pl_model_config *m = w->model;
    const int qw = m->heads * m->head_dim, qkvw = qw + 2 * m->kv_heads * m->head_dim;
    layer_buffers b;
    carve(m, T, r->sm_count, (char *)workspace, &b);
    PL_STEP(rmsnorm(r, m, x, w->attn_norm, T, &b, stream));
    PL_STEP(linear(r, b.xn, w->qkv, b.qkv, T, qkvw, m->hidden, NULL, NULL, stream));
    PL_STEP(rope_kv(r, m, T, step->positions, step->slots, kv, &b, 1, stream));
    PL_STEP(prefill_attention(r, m, step, &b, stream));
    PL_STEP(linear(r, b.attn, w->o, out, T, m->hidden, qw, x, b.proj, stream));
    return mlp_half(w, r, T, out, &b, stream);
}
