/* attention:flash_bwd — the backward pass of softmax attention: dQ, dK, dV (bf16) from dO and what the forward
 * wrote (O, the LSE). Unfused (S, P, dP, dS through device memory, cuBLAS for the five products) and
 * FlashAttention-2's backward with mma.sync (a CTA per key block, dK and dV in registers, dQ by fp32 atomics, or
 * with --deterministic by a second kernel over query blocks). Causal or not, grouped-query attention (dK and dV
 * summed over each group), both layouts, any seq. PyTorch's SDPA backward on the same shapes:
 * scripts/torch_attention_bench.py --backward. */
#include <stdio.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "attention/attention.h"
#include "common/attention_host.h"
#include "common/gemm_host.h"

#define STREAM_Q  41 /* per-buffer seed streams of the inputs */
#define STREAM_K  42
#define STREAM_V  43
#define STREAM_DO 44
/* Elementwise bounds (pl_gemm_verify with row_len = head_dim: |err| <= RTOL·|ref| + ATOL_RMS·rms(the element's
 * row)). Each gradient is a sum over up to seq·group terms of products with one factor rounded to bf16 (P for dV, dS
 * for dK and dQ), so an element's error scales with the root of its terms' squares, not with its own size: over random
 * inputs that root is the size of its row (a query's dQ row, a key's dK and dV rows). The whole tensor's RMS is not:
 * under the causal mask the first keys gather every query's weight, and on an H200 (2026-11-28) b4 h16 s4096 causal
 * put 2 of 33.5 M elements (key 0's dV, query 25's dQ) 3x past 1/16 of the tensor's RMS, the baseline and flash_mma
 * alike, with the L2 error passing. Scaled by its row, the bound follows each row's terms; an indexing or masking bug
 * moves a gradient row by its own size, far beyond 1/16 of it. The relative L2 error is held to bf16's 1e-2 (2.3e-3
 * to 2.9e-3 measured). */
#define GRAD_RTOL     (1.0 / 64)
#define GRAD_ATOL_RMS (1.0 / 16)

typedef struct bwd_state {
    pl_attn_bwd_problem p;
    size_t q_elems, kv_elems, rows;
    pl_gemm_reference ref[3]; /* dQ, dK, dV in fp32 on the device */
    float *scores;            /* the baseline's S, then dP (fp32) */
    uint16_t *probs;          /* the baseline's P, then dS (bf16) */
    float *dk_acc, *dv_acc;   /* the baseline's fp32 sums over each GQA group */
    float *dsum;              /* the baseline's D */
    void *workspace;          /* flash_mma's */
    uint16_t *first;          /* --deterministic: the checked run's dQ, dK, dV, to compare a second run with */
    unsigned long long *diff; /* [3]: the words of dQ, dK, dV that differ */
    cublasHandle_t cublas;
} bwd_state;

static const pl_param_def bwd_params[] = {
    PL_ATTN_SHAPE_PARAMS("3", "1", 128, "64 or 128", NULL),
    PL_BOOL_PARAM("deterministic", "false",
                  "flash_mma: dQ by a second kernel over query blocks instead of fp32 atomics (the same bits every "
                  "run; checked by running it twice)"),
    PL_PARAMS_END,
};

static void bwd_counters(const pl_params *p, pl_counters *c)
{
    pl_attn_problem sh;
    pl_attn_shape_from_params(p, &sh);
    const double b = sh.batch, h = sh.heads, s = sh.seq, d = sh.head_dim, kv = sh.kv_heads;
    c->flops = pl_attn_bwd_flops(sh.batch, sh.heads, sh.seq, sh.head_dim, sh.causal);
    /* Q, O, dO and K, V once, the LSE; dQ and dK, dV once */
    c->bytes_read = 2.0 * (3.0 * b * h * s * d + 2.0 * b * kv * s * d) + 4.0 * b * h * s;
    c->bytes_written = 2.0 * (b * h * s * d + 2.0 * b * kv * s * d);
    c->elements = b * h * s * d;
}

/* Device bytes: the baseline's S/dP (4) and P/dS (2) per score and the device reference's fp32 dP (4); per query
 * element Q, O, dO, dQ and the deterministic check's copy of dQ (bf16), the fp32 Q, dO and dQ reference, the fp32
 * dQ accumulator; per kv element K, V, dK, dV and their copies (bf16), the baseline's fp32 dK and dV sums, the
 * fp32 K and the dK and dV references. */
static double device_bytes(int batch, int heads, int kv, int seq, int d)
{
    const double scores = (double)batch * heads * seq * (double)seq;
    const double qe = (double)batch * heads * seq * d, ke = (double)batch * kv * seq * d;
    return 10.0 * scores + 26.0 * qe + 32.0 * ke;
}

static int bwd_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    pl_attn_problem sh;
    pl_attn_shape_from_params(params, &sh);
    if (pl_attn_fwd_params_check(sh.batch, sh.heads, sh.kv_heads, sh.seq, sh.head_dim, 0, err, errlen) != 0)
        return -1;
    return pl_check_device_memory(gpu, device_bytes(sh.batch, sh.heads, sh.kv_heads, sh.seq, sh.head_dim),
                                  "lower --batch, --heads or --seq", err, errlen);
}

/* O and the LSE, the backward's inputs, from the unfused forward (cuBLAS, the fp32 softmax's LSE). */
static int make_forward(pl_ctx *ctx, bwd_state *s)
{
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &s->p.f, s->scores));
    PL_CUDA(ctx, pl_attn_unfused_softmax(&s->p.f, s->scores, s->probs, NULL, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_unfused_pv(s->cublas, &s->p.f, s->probs));
    return 0;
}

static int reference_host(pl_ctx *ctx, bwd_state *s)
{
    const pl_attn_bwd_problem *p = &s->p;
    uint16_t *q = pl_host_alloc(ctx, s->q_elems * 2), *k = pl_host_alloc(ctx, s->kv_elems * 2),
             *v = pl_host_alloc(ctx, s->kv_elems * 2), *o = pl_host_alloc(ctx, s->q_elems * 2),
             *dout = pl_host_alloc(ctx, s->q_elems * 2);
    float *dq = pl_host_alloc(ctx, s->q_elems * 4), *dk = pl_host_alloc(ctx, s->kv_elems * 4),
          *dv = pl_host_alloc(ctx, s->kv_elems * 4);
    if (!q || !k || !v || !o || !dout || !dq || !dk || !dv)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(q, p->f.q, s->q_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(k, p->f.k, s->kv_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(v, p->f.v, s->kv_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(o, p->f.o, s->q_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(dout, p->dout, s->q_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_attn_bwd_reference_host(&p->f, q, k, v, o, dout, dq, dk, dv);
    PL_CUDA(ctx, cudaMemcpyAsync(s->ref[0].ref, dq, s->q_elems * 4, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->ref[1].ref, dk, s->kv_elems * 4, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->ref[2].ref, dv, s->kv_elems * 4, cudaMemcpyHostToDevice, ctx->stream));
    return 0;
}

/* The unfused backward in fp32 throughout: P (fp32 softmax of the fp32 S, its own LSE), dP = dO·Vᵀ, D = rowsum(dO ∘
 * O) of the bf16 O the backward is given (as the host reference takes it), dS = P ∘ (dP − D), and the three products
 * over fp32 operands (cuBLAS fp32 GEMMs, no tf32). */
static int reference_device(pl_ctx *ctx, bwd_state *s)
{
    const pl_attn_problem *f = &s->p.f;
    const size_t scores = (size_t)f->batch * f->heads * f->seq * (size_t)f->seq;
    float *dp = pl_device_alloc(ctx, scores * 4), *lse32 = pl_device_alloc(ctx, s->rows * 4);
    float *q32 = pl_device_alloc(ctx, s->q_elems * 4), *do32 = pl_device_alloc(ctx, s->q_elems * 4);
    float *k32 = pl_device_alloc(ctx, s->kv_elems * 4);
    if (!dp || !lse32 || !q32 || !do32 || !k32)
        return -1;
    pl_attn_problem r = *f;
    r.lse = lse32;
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &r, s->scores));
    PL_CUDA(ctx, pl_attn_unfused_softmax(&r, s->scores, NULL, s->scores, ctx->stream));
    pl_attn_problem dov = r; /* dP = dO·Vᵀ: the scores' products with dO for Q and V for K */
    dov.q = s->p.dout;
    dov.k = f->v;
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &dov, dp));
    PL_CUDA(ctx, pl_attn_bwd_rowdot(f, s->p.dout, s->dsum, ctx->stream));
    PL_CUDA(ctx, pl_attn_bwd_ds_f32(&r, s->scores, dp, s->dsum, ctx->stream));
    PL_CUDA(ctx, pl_attn_bf16_to_f32(f->q, q32, s->q_elems, ctx->stream));
    PL_CUDA(ctx, pl_attn_bf16_to_f32(s->p.dout, do32, s->q_elems, ctx->stream));
    PL_CUDA(ctx, pl_attn_bf16_to_f32(f->k, k32, s->kv_elems, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_q(s->cublas, &r, dp, k32, CUDA_R_32F, f->scale, s->ref[0].ref, CUDA_R_32F));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_kv(s->cublas, &r, dp, q32, CUDA_R_32F, f->scale, s->ref[1].ref));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_kv(s->cublas, &r, s->scores, do32, CUDA_R_32F, 1.0f, s->ref[2].ref));
    return 0;
}

static int make_reference(pl_ctx *ctx, bwd_state *s)
{
    const pl_attn_problem *f = &s->p.f;
    const size_t elems[3] = {s->q_elems, s->kv_elems, s->kv_elems};
    const double macs = (double)f->batch * f->heads * f->seq * (double)f->seq * f->head_dim;
    const int host = macs <= PL_ATTN_BWD_HOST_REFERENCE_MACS;
    for (int i = 0; i < 3; i++) {
        s->ref[i].elems = elems[i];
        s->ref[i].ref = pl_device_alloc(ctx, elems[i] * sizeof(float));
        s->ref[i].scratch = pl_device_alloc(ctx, pl_gemm_diff_scratch_bytes());
        if (!s->ref[i].ref || !s->ref[i].scratch)
            return -1;
        snprintf(s->ref[i].how, sizeof s->ref[i].how, "%s",
                 host ? "float64 host reference" : "unfused fp32 reference (cuBLAS fp32 GEMMs)");
    }
    for (int i = 0; i < 3; i++)
        s->ref[i].row_len = f->head_dim;
    PL_TRY(host ? reference_host(ctx, s) : reference_device(ctx, s));
    for (int i = 0; i < 3; i++)
        PL_CUDA(ctx, pl_gemm_rms_f32(s->ref[i].ref, elems[i], s->ref[i].scratch, &s->ref[i].rms, ctx->stream));
    return 0;
}

static int alloc_tensors(pl_ctx *ctx, bwd_state *s)
{
    pl_attn_bwd_problem *p = &s->p;
    const size_t scores = (size_t)p->f.batch * p->f.heads * p->f.seq * (size_t)p->f.seq;
    uint16_t *q = pl_device_alloc(ctx, s->q_elems * 2), *k = pl_device_alloc(ctx, s->kv_elems * 2),
             *v = pl_device_alloc(ctx, s->kv_elems * 2), *dout = pl_device_alloc(ctx, s->q_elems * 2);
    p->f.o = pl_device_alloc(ctx, s->q_elems * 2);
    p->f.lse = pl_device_alloc(ctx, s->rows * sizeof(float));
    p->dq = pl_device_alloc(ctx, s->q_elems * 2);
    p->dk = pl_device_alloc(ctx, s->kv_elems * 2);
    p->dv = pl_device_alloc(ctx, s->kv_elems * 2);
    s->scores = pl_device_alloc(ctx, scores * sizeof(float));
    s->probs = pl_device_alloc(ctx, scores * 2);
    s->dk_acc = pl_device_alloc(ctx, s->kv_elems * sizeof(float));
    s->dv_acc = pl_device_alloc(ctx, s->kv_elems * sizeof(float));
    s->dsum = pl_device_alloc(ctx, s->rows * sizeof(float));
    s->workspace = pl_device_alloc(ctx, pl_attn_flash_bwd_workspace_bytes(p));
    s->first = pl_device_alloc(ctx, (s->q_elems + 2 * s->kv_elems) * 2);
    s->diff = pl_device_alloc(ctx, 3 * sizeof *s->diff);
    if (!q || !k || !v || !dout || !p->f.o || !p->f.lse || !p->dq || !p->dk || !p->dv || !s->scores || !s->probs ||
        !s->dk_acc || !s->dv_acc || !s->dsum || !s->workspace || !s->first || !s->diff)
        return -1;
    /* Q and K in [-2, 2) as in the forward (a peaked softmax), V and dO in [-1, 1) */
    PL_TRY(pl_fill_uniform_bf16(ctx, q, s->q_elems, -2.0f, 2.0f, STREAM_Q));
    PL_TRY(pl_fill_uniform_bf16(ctx, k, s->kv_elems, -2.0f, 2.0f, STREAM_K));
    PL_TRY(pl_fill_uniform_bf16(ctx, v, s->kv_elems, -1.0f, 1.0f, STREAM_V));
    PL_TRY(pl_fill_uniform_bf16(ctx, dout, s->q_elems, -1.0f, 1.0f, STREAM_DO));
    p->f.q = q;
    p->f.k = k;
    p->f.v = v;
    p->dout = dout;
    return 0;
}

static int bwd_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char err[256];
    if (bwd_check_params(params, NULL, err, sizeof err) != 0)
        return pl_fail(ctx, "attention:flash_bwd: %s", err);
    bwd_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    pl_attn_problem *f = &s->p.f;
    pl_attn_shape_from_params(params, f);
    s->p.deterministic = pl_param_bool(params, "deterministic");
    s->q_elems = (size_t)f->batch * f->heads * f->seq * f->head_dim;
    s->kv_elems = (size_t)f->batch * f->kv_heads * f->seq * f->head_dim;
    s->rows = (size_t)f->batch * f->heads * f->seq;
    size_t free_b = 0, total_b = 0;
    PL_CUDA(ctx, cudaMemGetInfo(&free_b, &total_b));
    const double need = device_bytes(f->batch, f->heads, f->kv_heads, f->seq, f->head_dim);
    if (need > 0.8 * (double)free_b)
        return pl_fail(ctx,
                       "attention:flash_bwd: the unfused baseline and its reference need %.1f GB (batch·heads·seq² · "
                       "10 bytes) and %.1f GB are free: lower --batch, --heads or --seq",
                       need / 1e9, free_b / 1e9);
    PL_TRY(alloc_tensors(ctx, s));
    char why[256];
    if (!pl_attn_bwd_problem_valid(&s->p, why, sizeof why))
        return pl_fail(ctx, "attention:flash_bwd: %s", why);
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    if (cublasSetStream(s->cublas, ctx->stream) != CUBLAS_STATUS_SUCCESS || make_forward(ctx, s) != 0 ||
        make_reference(ctx, s) != 0) {
        cublasDestroy(s->cublas);
        return ctx->error[0] ? -1 : pl_fail(ctx, "attention:flash_bwd: cublasSetStream failed");
    }
    *state = s;
    return 0;
}

static int bwd_poison(pl_ctx *ctx, void *state)
{
    bwd_state *s = state;
    PL_TRY(pl_poison(ctx, s->p.dq, s->q_elems * 2));
    PL_TRY(pl_poison(ctx, s->p.dk, s->kv_elems * 2));
    return pl_poison(ctx, s->p.dv, s->kv_elems * 2);
}

/* --deterministic, flash_mma: the checked outputs kept, the variant run again, every 32-bit word compared. Returns
 * the number of words that differ (or -1 on a CUDA error). */
static long long rerun_diff(pl_ctx *ctx, bwd_state *s)
{
    const size_t qb = s->q_elems * 2, kb = s->kv_elems * 2;
    PL_CUDA(ctx, cudaMemcpyAsync(s->first, s->p.dq, qb, cudaMemcpyDeviceToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync((char *)s->first + qb, s->p.dk, kb, cudaMemcpyDeviceToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync((char *)s->first + qb + kb, s->p.dv, kb, cudaMemcpyDeviceToDevice, ctx->stream));
    PL_TRY(bwd_poison(ctx, s));
    PL_CUDA(ctx, pl_attn_flash_bwd_mma(&s->p, s->workspace, ctx->stream));
    const void *out[3] = {s->p.dq, s->p.dk, s->p.dv};
    const size_t off[3] = {0, qb, qb + kb}, bytes[3] = {qb, kb, kb};
    for (int i = 0; i < 3; i++)
        PL_CUDA(ctx, pl_attn_count_diff_u32((const uint32_t *)((const char *)s->first + off[i]), out[i], bytes[i] / 4,
                                            s->diff + i, ctx->stream));
    unsigned long long n[3] = {0, 0, 0};
    PL_CUDA(ctx, cudaMemcpyAsync(n, s->diff, sizeof n, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return (long long)(n[0] + n[1] + n[2]);
}

/* dQ, dK, dV by relative L2 error and elementwise bounds against the reference (pl_gemm_verify's rules); the first
 * failure is the verdict. With --deterministic, flash_mma is run a second time and must give the same bits. */
static int bwd_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    bwd_state *s = state;
    static const char *const names[3] = {"dQ", "dK", "dV"};
    const uint16_t *out[3] = {s->p.dq, s->p.dk, s->p.dv};
    pl_verification g[3];
    for (int i = 0; i < 3; i++)
        PL_TRY(pl_gemm_verify(ctx, &s->ref[i], out[i], PL_DTYPE_BF16, 0.0, GRAD_RTOL, GRAD_ATOL_RMS, &g[i]));
    for (int i = 0; i < 3; i++)
        if (!g[i].passed) {
            char msg[sizeof v->message];
            pl_snprintf(msg, sizeof msg, "%s: %s", names[i], g[i].message);
            *v = g[i];
            pl_snprintf(v->message, sizeof v->message, "%s", msg);
            return 0;
        }
    *v = g[0];
    pl_snprintf(v->message, sizeof v->message,
                "rel L2 dQ %.2e, dK %.2e, dV %.2e <= %.0e, every element within %.4g·|ref| + %.4g·rms(row) (%s)",
                g[0].rel_l2_error, g[1].rel_l2_error, g[2].rel_l2_error, g[0].tolerance, GRAD_RTOL, GRAD_ATOL_RMS,
                s->ref[0].how);
    if (s->p.deterministic && ctx->variant && strcmp(ctx->variant, "flash_mma") == 0) {
        const long long n = rerun_diff(ctx, s);
        if (n < 0)
            return -1;
        if (n > 0) {
            v->passed = 0;
            pl_snprintf(v->message, sizeof v->message,
                        "--deterministic: %lld 32-bit words of dQ, dK, dV differ between two runs", n);
        }
    }
    return 0;
}

static void bwd_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    bwd_state *s = state;
    cublasDestroy(s->cublas);
}

static int run_unfused(pl_ctx *ctx, void *state)
{
    bwd_state *s = state;
    const pl_attn_problem *f = &s->p.f;
    pl_attn_problem dov = *f; /* dP = dO·Vᵀ: the scores' products with dO for Q and V for K */
    dov.q = s->p.dout;
    dov.k = f->v;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, f, s->scores));
    PL_CUDA(ctx, pl_attn_bwd_probs(f, s->scores, s->probs, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_kv(s->cublas, f, s->probs, s->p.dout, CUDA_R_16BF, 1.0f, s->dv_acc));
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &dov, s->scores));
    PL_CUDA(ctx, pl_attn_bwd_rowdot(f, s->p.dout, s->dsum, ctx->stream));
    PL_CUDA(ctx, pl_attn_bwd_ds(f, s->probs, s->scores, s->dsum, s->probs, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_q(s->cublas, f, s->probs, f->k, CUDA_R_16BF, f->scale, s->p.dq, CUDA_R_16BF));
    PL_CUBLAS(ctx, pl_attn_bwd_grad_kv(s->cublas, f, s->probs, f->q, CUDA_R_16BF, f->scale, s->dk_acc));
    PL_CUDA(ctx, pl_attn_f32_to_bf16(s->dk_acc, s->p.dk, s->kv_elems, ctx->stream));
    PL_CUDA(ctx, pl_attn_f32_to_bf16(s->dv_acc, s->p.dv, s->kv_elems, ctx->stream));
    return 0;
}

PL_LAUNCH_RUN(run_flash_mma, bwd_state, pl_attn_flash_bwd_mma(&s->p, s->workspace, ctx->stream))

static const pl_variant bwd_variants[] = {
    PL_VARIANT("baseline", run_unfused,
               "unfused: cuBLAS S = Q·Kᵀ, P (bf16) from the LSE, cuBLAS dV = Pᵀ·dO and dP = dO·Vᵀ, dS = P∘(dP − D) "
               "(bf16), cuBLAS dQ = dS·K and dK = dSᵀ·Q: S, P, dP, dS through device memory"),
    PL_VARIANT("flash_mma", run_flash_mma,
               "FlashAttention-2 backward: a CTA per 128 keys, dK/dV in registers over all query blocks, P and dS "
               "recomputed in registers (mma.sync m16n8k16), dQ by fp32 atomics (--deterministic: a second "
               "kernel over query blocks)",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANTS_END,
};

const pl_target pl_target_attention_flash_bwd = {
    .group = "attention",
    .name = "flash_bwd",
    .summary = "attention backward (bf16, dQ/dK/dV from dO, O, LSE; causal/GQA/layouts): unfused cuBLAS -> "
               "FlashAttention-2 backward (mma.sync, atomic or deterministic dQ)",
    .flags = PL_TARGET_POWER_BOUND,
    .req = {.needs_gpu = 1},
    .params = bwd_params,
    .variants = bwd_variants,
    .counters = bwd_counters,
    .setup = bwd_setup,
    .poison = bwd_poison,
    .check = bwd_check,
    .teardown = bwd_teardown,
    .check_params = bwd_check_params,
};
