/* The baseline decode step of one dense layer (dense_layer.h): the library's RMSNorm, GEMM and paged decode
 * attention, and three element-wise kernels the library has no equivalent of (RoPE with the KV write, SwiGLU, the
 * residual add), launched one by one, each launch checked. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

#include "attention/attention.h"
#include "engine/dense_layer.h"
#include "gemm/gemm.h"
#include "norm/norm_kernels.h"

__device__ static float bf16_f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

__device__ static uint16_t f_bf16(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/* grid (batch, heads + 2·kv_heads), head_dim / 2 threads: a query head (RoPE into q), a key head (RoPE into the K
 * pool) or a value head (copied into the V pool). The rotation in double, rounded once through fp32 to bf16. */
__global__ void rope_kv_write_kernel(const uint16_t *qkv, int heads, int kv_heads, int head_dim, double log_theta,
                                     const int *positions, const int64_t *slots, uint16_t *q, uint16_t *k_cache,
                                     uint16_t *v_cache)
{
    const int b = blockIdx.x, y = blockIdx.y, i = threadIdx.x, half = head_dim / 2;
    const uint16_t *src = qkv + ((size_t)b * (heads + 2 * kv_heads) + y) * head_dim;
    if (y >= heads + kv_heads) { /* value head: copied */
        uint16_t *dst = v_cache + ((size_t)slots[b] * kv_heads + (y - heads - kv_heads)) * head_dim;
        dst[i] = src[i];
        dst[i + half] = src[i + half];
        return;
    }
    uint16_t *dst = y < heads ? q + ((size_t)b * heads + y) * head_dim
                              : k_cache + ((size_t)slots[b] * kv_heads + (y - heads)) * head_dim;
    const double angle = (double)positions[b] * exp(-(2.0 * i / head_dim) * log_theta);
    const double c = cos(angle), s = sin(angle), x1 = bf16_f(src[i]), x2 = bf16_f(src[i + half]);
    dst[i] = f_bf16((float)(x1 * c - x2 * s));
    dst[i + half] = f_bf16((float)(x2 * c + x1 * s));
}

__global__ void swiglu_kernel(const uint16_t *gu, uint16_t *out, int rows, int width)
{
    const size_t n = (size_t)rows * width;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / width, c = i % width;
        const float g = bf16_f(gu[r * 2 * width + c]), u = bf16_f(gu[r * 2 * width + width + c]);
        out[i] = f_bf16(g / (1.0f + expf(-g)) * u);
    }
}

__global__ void residual_add_kernel(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = f_bf16(bf16_f(x[i]) + bf16_f(y[i]));
}

static unsigned grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return (unsigned)(blocks < 4096 ? (blocks ? blocks : 1) : 4096);
}

extern "C" cudaError_t pl_engine_rope_kv_write(const uint16_t *qkv, int batch, int heads, int kv_heads, int head_dim,
                                               double theta, const int *positions, const int64_t *slots, uint16_t *q,
                                               uint16_t *k_cache, uint16_t *v_cache, cudaStream_t stream)
{
    if (batch < 1 || heads < 1 || kv_heads < 1 || head_dim < 2 || head_dim % 2 || head_dim > 2048 || theta <= 1.0)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)batch, (unsigned)(heads + 2 * kv_heads));
    rope_kv_write_kernel<<<grid, head_dim / 2, 0, stream>>>(qkv, heads, kv_heads, head_dim, log(theta), positions,
                                                            slots, q, k_cache, v_cache);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_swiglu(const uint16_t *gu, uint16_t *out, int rows, int width, cudaStream_t stream)
{
    if (rows < 1 || width < 1)
        return cudaErrorInvalidValue;
    swiglu_kernel<<<grid_for((size_t)rows * width), 256, 0, stream>>>(gu, out, rows, width);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_engine_residual_add(const uint16_t *x, const uint16_t *y, uint16_t *out, size_t n,
                                              cudaStream_t stream)
{
    if (n == 0)
        return cudaErrorInvalidValue;
    residual_add_kernel<<<grid_for(n), 256, 0, stream>>>(x, y, out, n);
    return cudaGetLastError();
}

/* ---- the step ---- */

typedef struct decode_buffers {
    uint16_t *xn, *qkv, *q, *attn, *proj, *gu, *act;
} decode_buffers;

static size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* Carves the workspace (base may be NULL: only the size is computed); returns its bytes. */
static size_t carve(const pl_model_config *m, int batch, char *base, decode_buffers *b)
{
    const size_t B = (size_t)batch, qw = (size_t)m->heads * m->head_dim;
    const size_t sizes[7] = {B * m->hidden,
                             B * (qw + 2 * (size_t)m->kv_heads * m->head_dim),
                             B * qw,
                             B * qw,
                             B * m->hidden,
                             B * 2 * (size_t)m->intermediate,
                             B * (size_t)m->intermediate};
    uint16_t **const slots[7] = {&b->xn, &b->qkv, &b->q, &b->attn, &b->proj, &b->gu, &b->act};
    size_t at = 0;
    for (int i = 0; i < 7; i++) {
        *slots[i] = base ? (uint16_t *)(base + at) : NULL;
        at += align256(sizes[i] * sizeof(uint16_t));
    }
    return at;
}

extern "C" size_t pl_dense_decode_workspace_bytes(const pl_model_config *m, int max_batch)
{
    decode_buffers b;
    return carve(m, max_batch, NULL, &b);
}

/* D [m][n] = A [m][k] · Wᵀ (W [n][k], a linear layer's weight) */
static cudaError_t linear(const uint16_t *a, const uint16_t *w, uint16_t *d, int m, int n, int k, cudaStream_t stream)
{
    pl_gemm_problem p = {};
    p.m = m;
    p.n = n;
    p.k = k;
    p.b_layout = PL_GEMM_B_NK;
    p.a = a;
    p.b = w;
    p.d = d;
    const cudaError_t e = pl_gemm_bf16(&p, stream);
    return e != cudaSuccess ? e : cudaGetLastError();
}

#define STEP(call)                                                                                                     \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ == cudaSuccess)                                                                                         \
            e_ = cudaGetLastError();                                                                                   \
        if (e_ != cudaSuccess)                                                                                         \
            return e_;                                                                                                 \
    } while (0)

static cudaError_t attention_half(const pl_dense_weights *w, const pl_decode_step *s, const pl_layer_kv *kv,
                                  const uint16_t *x, uint16_t *h, const decode_buffers *b, const pl_decode_problem *dp,
                                  cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    const int B = s->batch, qw = m->heads * m->head_dim, qkvw = qw + 2 * m->kv_heads * m->head_dim;
    STEP(pl_rmsnorm_fused(x, w->attn_norm, b->xn, B, m->hidden, (float)m->rms_eps, 0, stream));
    STEP(linear(b->xn, w->qkv, b->qkv, B, qkvw, m->hidden, stream));
    STEP(pl_engine_rope_kv_write(b->qkv, B, m->heads, m->kv_heads, m->head_dim, m->rope_theta, s->positions, s->slots,
                                 b->q, kv->k, kv->v, stream));
    STEP(pl_decode_baseline(dp, stream));
    STEP(linear(b->attn, w->o, b->proj, B, m->hidden, qw, stream));
    STEP(pl_engine_residual_add(x, b->proj, h, (size_t)B * m->hidden, stream));
    return cudaSuccess;
}

/* h is the residual stream after the attention, in out; out = h + MLP(h) */
static cudaError_t mlp_half(const pl_dense_weights *w, int B, uint16_t *h, const decode_buffers *b, cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    STEP(pl_rmsnorm_fused(h, w->mlp_norm, b->xn, B, m->hidden, (float)m->rms_eps, 0, stream));
    STEP(linear(b->xn, w->gate_up, b->gu, B, 2 * m->intermediate, m->hidden, stream));
    STEP(pl_engine_swiglu(b->gu, b->act, B, m->intermediate, stream));
    STEP(linear(b->act, w->down, b->proj, B, m->hidden, m->intermediate, stream));
    STEP(pl_engine_residual_add(h, b->proj, h, (size_t)B * m->hidden, stream));
    return cudaSuccess;
}

extern "C" cudaError_t pl_dense_layer_decode(const pl_dense_weights *w, const pl_decode_step *step,
                                             const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                             size_t workspace_bytes, cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    if (!m || !w->block || step->batch < 1 || pl_model_is_moe(m) || m->qk_norm || !x || !out || !workspace ||
        workspace_bytes < pl_dense_decode_workspace_bytes(m, step->batch))
        return cudaErrorInvalidValue;
    decode_buffers b;
    carve(m, step->batch, (char *)workspace, &b);
    pl_decode_problem dp = {};
    dp.batch = step->batch;
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
    STEP(attention_half(w, step, kv, x, out, &b, &dp, stream));
    STEP(mlp_half(w, step->batch, out, &b, stream));
    return cudaSuccess;
}
