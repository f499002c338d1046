/* The phases the dense and the MoE layer share (layer_parts.h). */
#include <math.h>
#include <string.h>

#include "attention/attention.h"
#include "common/device_cc.h"
#include "engine/layer_ops.h"
#include "engine/cuda_step.h"
#include "engine/layer_parts.h"
#include "gemm/cublas/gemm_cublas.h"
#include "gemm/fp8.h"
#include "gemm/gemm.h"
#include "norm/norm_kernels.h"

#define FAST_DECODE_WARPS 4 /* rows_deep in CTAs of 4 warps, two an SM (the attention:decode_paged default) */

/* ---- the workspace ---- */

enum { B_XN, B_QKV, B_Q, B_K, B_V, B_ATTN, B_PROJ, B_GU, B_ACT, B_RINV, B_LSE, B_ATTN_WS, B_COUNT };

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
        const int ctas8 = pl_decode_rows_fp8_ctas(&p, sm_count > 0 ? sm_count : 1); /* an FP8 cache's kernel */
        const size_t b8 = pl_decode_rows_fp8_workspace_bytes(&p, ctas8);
        most = b > most ? b : most;
        most = b8 > most ? b8 : most;
    }
    return most;
}

size_t pl_layer_carve(const pl_model_config *m, int rows, int mlp_rows, int width, int sm_count, char *base,
                      pl_layer_buffers *b)
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
        [B_GU] = (size_t)mlp_rows * 2 * (size_t)width * 2,
        [B_ACT] = (size_t)mlp_rows * (size_t)width * 2,
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
    b->a8 = NULL, b->a8_scale = NULL, b->a8_amax = NULL;
    return at;
}

size_t pl_layer_carve_fp8(const pl_model_config *m, int rows, int width, char *base, pl_layer_buffers *b)
{
    int k = m->hidden > m->heads * m->head_dim ? m->hidden : m->heads * m->head_dim;
    k = width > k ? width : k;
    const size_t q = align256((size_t)rows * (size_t)k);
    /* the 1×128 scales of a rows×k input; a per-tensor scale takes the first float */
    const size_t scales = align256(pl_fp8_scale_a_count(rows, k) * sizeof(float));
    if (base) {
        b->a8 = (uint8_t *)base;
        b->a8_scale = (float *)(base + q);
        b->a8_amax = (unsigned *)(base + q + scales);
    }
    return q + scales + 256;
}

const pl_fp8_weights *pl_layer_fp8_of(const pl_dense_weights *w, const pl_layer_recipe *r)
{
    const pl_fp8_weights *f = r->weights == PL_LAYER_WEIGHTS_FP8_TENSOR  ? &w->fp8[PL_FP8_SCALING_TENSOR]
                              : r->weights == PL_LAYER_WEIGHTS_FP8_BLOCK ? &w->fp8[PL_FP8_SCALING_BLOCK]
                                                                         : NULL;
    return f && f->block ? f : NULL;
}

/* ---- the operations, in the recipe's forms ---- */

cudaError_t pl_layer_rmsnorm(const pl_layer_recipe *r, const pl_model_config *m, const uint16_t *x, const uint16_t *w,
                             int rows, const pl_layer_buffers *b, cudaStream_t stream)
{
    if (r->fused)
        return pl_rmsnorm_fused(x, w, b->xn, rows, m->hidden, (float)m->rms_eps, 0, stream);
    return pl_rmsnorm_naive(x, w, b->xn, b->rinv, rows, m->hidden, (float)m->rms_eps, stream);
}

/* prod [rows][n] = a · wᵀ with w's FP8 form: a quantized into b->a8 (one scale, or 1×128 scales), then the FP8
 * GEMM with the scales applied on its fp32 accumulator, rounded to bf16 once. */
static cudaError_t linear_fp8(const pl_layer_recipe *r, const uint16_t *a, const pl_fp8_linear *w, uint16_t *prod,
                              int rows, int n, int k, const pl_layer_buffers *b, cudaStream_t stream)
{
    const int block = r->weights == PL_LAYER_WEIGHTS_FP8_BLOCK;
    pl_gemm_fp8_problem p;
    memset(&p, 0, sizeof p);
    p.m = rows;
    p.n = n;
    p.k = k;
    p.a = b->a8;
    p.b = w->q;
    p.d = prod;
    p.scaling = block ? PL_FP8_SCALING_BLOCK : PL_FP8_SCALING_TENSOR;
    p.scale_a = b->a8_scale;
    p.scale_b = w->scale;
    p.promote = 1; /* every 128 K, as the block scaling does: the two scalings differ only in their scales */
    char why[160];
    if (!pl_gemm_fp8_supports(&p, why, sizeof why))
        return cudaErrorInvalidValue;
    if (block)
        PL_STEP(pl_fp8_quantize_rows(a, rows, k, b->a8, b->a8_scale, pl_fp8_scale_a_ld(rows), stream));
    else
        PL_STEP(pl_fp8_quantize_tensor(a, (size_t)rows * k, b->a8, b->a8_scale, b->a8_amax, stream));
    return pl_gemm_fp8(&p, stream);
}

cudaError_t pl_layer_linear(const pl_layer_recipe *r, const uint16_t *a, pl_layer_weight w, uint16_t *d, int rows,
                            int n, int k, const uint16_t *residual, uint16_t *scratch, const pl_layer_buffers *b,
                            cudaStream_t stream)
{
    const int fp8 = r->weights != PL_LAYER_WEIGHTS_BF16;
    if (fp8 && (!w.fp8 || !w.fp8->q || !b->a8 || r->gemm != PL_LAYER_GEMM_PERFLAB))
        return cudaErrorInvalidValue;
    const int epilogue = residual && r->fused && r->gemm == PL_LAYER_GEMM_PERFLAB && !fp8;
    uint16_t *prod = residual && !epilogue ? scratch : d;
    if (fp8) {
        PL_STEP(linear_fp8(r, a, w.fp8, prod, rows, n, k, b, stream));
    } else if (r->gemm == PL_LAYER_GEMM_CUBLAS) {
        if (cublasSetStream(r->cublas, stream) != CUBLAS_STATUS_SUCCESS ||
            pl_gemm_cublas(r->cublas, rows, n, k, PL_GEMM_B_NK, a, w.bf16, CUDA_R_16BF, prod, CUDA_R_16BF) !=
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
        p.b = w.bf16;
        p.d = prod;
        p.epi.residual = epilogue ? residual : NULL;
        PL_STEP(pl_gemm_bf16(&p, stream));
    }
    if (residual && !epilogue)
        PL_STEP(pl_engine_residual_add(residual, prod, d, (size_t)rows * n, stream));
    return cudaGetLastError();
}

/* The FP8 cache's form of rope_kv: the rows quantized into the e4m3 pools with their scales; a prefill's contiguous
 * k and v get the dequantized rows (the unfused form dequantizes b->k in place). */
static cudaError_t rope_kv_fp8(const pl_layer_recipe *r, const pl_model_config *m, int rows, const int *positions,
                               const int64_t *slots, const pl_layer_kv *kv, const pl_layer_buffers *b, int contiguous,
                               cudaStream_t stream)
{
    uint16_t *k_out = contiguous ? b->k : NULL, *v_out = contiguous ? b->v : NULL;
    if (r->fused)
        return pl_engine_rope_kv_write_fp8(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions,
                                           slots, b->q, kv->k8, kv->v8, kv->k_scale, kv->v_scale, k_out, v_out, stream);
    PL_STEP(
        pl_engine_rope(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions, b->q, b->k, stream));
    return pl_engine_kv_write_fp8(b->k, b->qkv, rows, m->heads, m->kv_heads, m->head_dim, slots, kv->k8, kv->v8,
                                  kv->k_scale, kv->v_scale, k_out, v_out, stream);
}

/* q into b->q, k and v into the cache at slots (and, for a prefill, contiguous into b->k, b->v). */
static cudaError_t rope_kv(const pl_layer_recipe *r, const pl_model_config *m, int rows, const int *positions,
                           const int64_t *slots, const pl_layer_kv *kv, const pl_layer_buffers *b, int contiguous,
                           cudaStream_t stream)
{
    if (kv->dtype == PL_KV_FP8_E4M3)
        return rope_kv_fp8(r, m, rows, positions, slots, kv, b, contiguous, stream);
    if (r->fused)
        return pl_engine_rope_kv_write(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions,
                                       slots, b->q, kv->k, kv->v, contiguous ? b->k : NULL, contiguous ? b->v : NULL,
                                       stream);
    PL_STEP(
        pl_engine_rope(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, m->rope_theta, positions, b->q, b->k, stream));
    return pl_engine_kv_write(b->k, b->qkv, rows, m->heads, m->kv_heads, m->head_dim, slots, kv->k, kv->v,
                              contiguous ? b->v : NULL, stream);
}

cudaError_t pl_layer_mlp(const pl_layer_recipe *r, const pl_model_config *m, const uint16_t *mlp_norm,
                         pl_layer_weight gate_up, pl_layer_weight down, int rows, const uint16_t *h, uint16_t *d,
                         const uint16_t *residual, const pl_layer_buffers *b, cudaStream_t stream)
{
    PL_STEP(pl_layer_rmsnorm(r, m, h, mlp_norm, rows, b, stream));
    PL_STEP(pl_layer_linear(r, b->xn, gate_up, b->gu, rows, 2 * m->intermediate, m->hidden, NULL, NULL, b, stream));
    PL_STEP(pl_engine_swiglu(b->gu, b->act, rows, m->intermediate, stream));
    PL_STEP(pl_layer_linear(r, b->act, down, d, rows, m->hidden, m->intermediate, residual, b->proj, b, stream));
    return cudaSuccess;
}

/* ---- a decode step's attention half ---- */

static cudaError_t decode_attention(const pl_layer_recipe *r, const pl_decode_problem *dp, const pl_layer_buffers *b,
                                    cudaStream_t stream)
{
    if (r->attention == PL_LAYER_ATTN_SIMPLE)
        return pl_decode_baseline(dp, stream); /* either cache */
    if (dp->kv_dtype == PL_KV_FP8_E4M3) {
        const int ctas = pl_decode_rows_fp8_ctas(dp, r->sm_count > 0 ? r->sm_count : 1);
        if (pl_decode_rows_fp8_workspace_bytes(dp, ctas) > b->attn_ws_bytes)
            return cudaErrorInvalidValue;
        return pl_decode_rows_deep_fp8(dp, ctas, 0, b->attn_ws, stream);
    }
    const int ctas = pl_decode_rows_ctas(dp, FAST_DECODE_WARPS, r->sm_count > 0 ? r->sm_count : 1);
    if (pl_decode_rows_workspace_bytes(dp, FAST_DECODE_WARPS, ctas) > b->attn_ws_bytes)
        return cudaErrorInvalidValue;
    return pl_decode_rows_deep(dp, FAST_DECODE_WARPS, ctas, 0, b->attn_ws, stream);
}

/* The attention half's first phases over `rows` rows: RMSNorm of x, the QKV GEMM, the qk-norm where the model has it,
 * RoPE with the KV write (contiguous: k and v also into b->k, b->v). */
static cudaError_t qkv_rope(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r, int rows,
                            const int *positions, const int64_t *slots, const pl_layer_kv *kv, const uint16_t *x,
                            const pl_layer_buffers *b, int contiguous, cudaStream_t stream)
{
    const int qkvw = (m->heads + 2 * m->kv_heads) * m->head_dim;
    PL_STEP(pl_layer_rmsnorm(r, m, x, w->attn_norm, rows, b, stream));
    const pl_layer_weight qkv = {w->qkv, w->fp8 ? &w->fp8->qkv : NULL};
    PL_STEP(pl_layer_linear(r, b->xn, qkv, b->qkv, rows, qkvw, m->hidden, NULL, NULL, b, stream));
    if (m->qk_norm)
        PL_STEP(pl_engine_qk_norm(b->qkv, rows, m->heads, m->kv_heads, m->head_dim, w->q_norm, w->k_norm, m->rms_eps,
                                  stream));
    return rope_kv(r, m, rows, positions, slots, kv, b, contiguous, stream);
}

cudaError_t pl_layer_attention_heads(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                     const pl_decode_step *step, const pl_layer_kv *kv, const uint16_t *x,
                                     const pl_layer_buffers *b, cudaStream_t stream)
{
    const int B = step->batch;
    if (m->qk_norm && (!w->q_norm || !w->k_norm))
        return cudaErrorInvalidValue;
    pl_decode_problem dp;
    memset(&dp, 0, sizeof dp);
    dp.batch = B;
    dp.heads = m->heads;
    dp.kv_heads = m->kv_heads;
    dp.head_dim = m->head_dim;
    dp.page_size = step->page_size;
    dp.max_pages = step->max_pages;
    dp.scale = (float)(1.0 / sqrt((double)m->head_dim));
    dp.q = b->q;
    dp.k_cache = kv->k;
    dp.v_cache = kv->v;
    dp.kv_dtype = kv->dtype;
    dp.k_fp8 = kv->k8;
    dp.v_fp8 = kv->v8;
    dp.k_scale = kv->k_scale;
    dp.v_scale = kv->v_scale;
    dp.block_table = step->block_table;
    dp.seq_lens = step->seq_lens;
    dp.o = b->attn;
    char why[256];
    if (!pl_decode_problem_valid_any(&dp, why, sizeof why))
        return cudaErrorInvalidValue;
    PL_STEP(qkv_rope(m, w, r, B, step->positions, step->slots, kv, x, b, 0, stream));
    PL_STEP(decode_attention(r, &dp, b, stream));
    return cudaSuccess;
}

cudaError_t pl_layer_attention_decode(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                      const pl_decode_step *step, const pl_layer_kv *kv, const uint16_t *x, uint16_t *h,
                                      const pl_layer_buffers *b, cudaStream_t stream)
{
    const pl_layer_weight o = {w->o, w->fp8 ? &w->fp8->o : NULL};
    PL_STEP(pl_layer_attention_heads(m, w, r, step, kv, x, b, stream));
    PL_STEP(pl_layer_linear(r, b->attn, o, h, step->batch, m->hidden, m->heads * m->head_dim, x, b->proj, b, stream));
    return cudaSuccess;
}

/* ---- prefill ---- */

int pl_prefill_rows(const pl_prefill_step *s)
{
    if (!s || s->prompts < 1 || !s->starts || s->starts[0] != 0)
        return 0;
    for (int p = 0; p < s->prompts; p++)
        if (s->starts[p + 1] <= s->starts[p])
            return 0;
    return s->starts[s->prompts];
}

/* The cache a prefill writes: bf16 pools, or an FP8 cache's pools and scales (a decode step's are checked with its
 * attention problem). */
static int kv_valid(const pl_layer_kv *kv)
{
    if (kv->dtype == PL_KV_BF16)
        return kv->k && kv->v;
    return kv->dtype == PL_KV_FP8_E4M3 && kv->k8 && kv->v8 && kv->k_scale && kv->v_scale;
}

/* Prompt p's causal attention over its own tokens (q, k, v contiguous [tokens][heads][head_dim]). */
static pl_attn_problem prompt_attention(const pl_model_config *m, const pl_prefill_step *s, int p,
                                        const pl_layer_buffers *b)
{
    const size_t qrow = (size_t)m->heads * m->head_dim, krow = (size_t)m->kv_heads * m->head_dim;
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
    return a;
}

cudaError_t pl_layer_attention_prefill(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                       const pl_prefill_step *step, const pl_layer_kv *kv, const uint16_t *x,
                                       uint16_t *h, const pl_layer_buffers *b, cudaStream_t stream)
{
    const int T = pl_prefill_rows(step);
    const int qw = m->heads * m->head_dim;
    if (T < 1 || (m->qk_norm && (!w->q_norm || !w->k_norm)) || !kv_valid(kv))
        return cudaErrorInvalidValue;
    /* every prompt's attention problem checked before the first launch */
    char why[256];
    for (int p = 0; p < step->prompts; p++) {
        const pl_attn_problem a = prompt_attention(m, step, p, b);
        if (!pl_attn_problem_valid(&a, why, sizeof why))
            return cudaErrorInvalidValue;
    }
    int cc = 0;
    PL_STEP(pl_current_cc(&cc));
    const int wgmma = r->attention == PL_LAYER_ATTN_FAST && cc == 90;
    PL_STEP(qkv_rope(m, w, r, T, step->positions, step->slots, kv, x, b, 1, stream));
    for (int p = 0; p < step->prompts; p++) {
        const pl_attn_problem a = prompt_attention(m, step, p, b);
        PL_STEP(wgmma ? pl_attn_flash_wgmma_schedule(&a, 0, stream) : pl_attn_flash_mma(&a, stream));
    }
    const pl_layer_weight o = {w->o, w->fp8 ? &w->fp8->o : NULL};
    return pl_layer_linear(r, b->attn, o, h, T, m->hidden, qw, x, b->proj, b, stream);
}
