/* attention:flash_fwd — the forward pass of softmax attention, bf16 in, O in bf16 and the log-sum-exp in fp32:
 * unfused (S and P through device memory, cuBLAS for the two products), FlashAttention-2 with mma.sync, and the
 * Hopper kernel with TMA, an mbarrier ring, a producer warp and wgmma. Head dims 64, 128 and 256 (every variant
 * takes each; --small runs 256, the instance with the tightest register and shared-memory budgets), causal or not,
 * grouped-query attention, the [b,h,s,d] and [b,s,h,d] layouts, any seq. PyTorch's SDPA (flash and cuDNN backends)
 * on the same shapes: scripts/torch_attention_bench.py. */
#include <stdio.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "attention/attention.h"
#include "common/attention_host.h"
#include "common/gemm_host.h"

#define STREAM_Q 31 /* per-buffer seed streams of the inputs */
#define STREAM_K 32
#define STREAM_V 33
/* LSE tolerance: fp32 sums of 2^x from the hardware exp2 (about 2 ulp) in another order than the reference's */
#define LSE_TOLERANCE 1e-4

typedef struct fwd_state {
    pl_attn_problem p;
    size_t q_elems, kv_elems, lse_elems;
    pl_gemm_reference ref; /* O in fp32 on the device, its RMS and the comparison's scratch */
    double *lse_ref;       /* host */
    float *lse_host;
    float *scores;   /* the baseline's S (fp32) */
    uint16_t *probs; /* and P (bf16) */
    cublasHandle_t cublas;
    int pingpong; /* flash_wgmma's schedule */
} fwd_state;

static const pl_param_def fwd_params[] = {
    PL_ATTN_SHAPE_PARAMS("2", "2", 256, "64, 128 or 256", "256"),
    PL_CHOICE_PARAM(
        "wgmma-schedule", "overlap", "overlap|pingpong",
        "flash_wgmma's consumer warpgroups: interleave freely, or take turns issuing GEMMs (named barriers; "
        "faster causal and at head_dim 64)"),
    PL_PARAMS_END,
};

static void fwd_counters(const pl_params *p, pl_counters *c)
{
    pl_attn_problem sh;
    pl_attn_shape_from_params(p, &sh);
    const double b = sh.batch, h = sh.heads, s = sh.seq, d = sh.head_dim, kv = sh.kv_heads;
    c->flops = pl_attn_fwd_flops(sh.batch, sh.heads, sh.seq, sh.head_dim, sh.causal);
    c->bytes_read = 2.0 * (b * h * s * d + 2.0 * b * kv * s * d); /* Q, K, V once */
    c->bytes_written = 2.0 * b * h * s * d + 4.0 * b * h * s;     /* O, and the LSE */
    c->elements = b * h * s * d;
}

/* The reference: float64 on the host for small problems, else the unfused pipeline in fp32 on the device. */
static int make_reference(pl_ctx *ctx, fwd_state *s)
{
    const pl_attn_problem *p = &s->p;
    s->ref.elems = s->q_elems;
    s->ref.ref = pl_device_alloc(ctx, s->q_elems * sizeof(float));
    s->ref.scratch = pl_device_alloc(ctx, pl_gemm_diff_scratch_bytes());
    s->lse_ref = pl_host_alloc(ctx, s->lse_elems * sizeof(double));
    if (!s->ref.ref || !s->ref.scratch || !s->lse_ref)
        return -1;
    const double macs = (double)p->batch * p->heads * p->seq * (double)p->seq * p->head_dim;
    if (macs <= PL_ATTN_HOST_REFERENCE_MACS) {
        uint16_t *q = pl_host_alloc(ctx, s->q_elems * 2), *k = pl_host_alloc(ctx, s->kv_elems * 2),
                 *v = pl_host_alloc(ctx, s->kv_elems * 2);
        float *out = pl_host_alloc(ctx, s->q_elems * sizeof(float));
        if (!q || !k || !v || !out)
            return -1;
        PL_CUDA(ctx, cudaMemcpyAsync(q, p->q, s->q_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaMemcpyAsync(k, p->k, s->kv_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaMemcpyAsync(v, p->v, s->kv_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        pl_attn_fwd_reference_host(p, q, k, v, out, s->lse_ref);
        PL_CUDA(ctx, cudaMemcpyAsync(s->ref.ref, out, s->q_elems * sizeof(float), cudaMemcpyHostToDevice, ctx->stream));
        snprintf(s->ref.how, sizeof s->ref.how, "float64 host reference");
    } else {
        /* S (fp32, the baseline's buffer) -> P fp32 in place -> O = P·V with V in fp32, fp32 GEMMs */
        float *v32 = pl_device_alloc(ctx, s->kv_elems * sizeof(float));
        float *lse32 = pl_device_alloc(ctx, s->lse_elems * sizeof(float));
        if (!v32 || !lse32)
            return -1;
        pl_attn_problem r = *p;
        r.lse = lse32;
        PL_CUDA(ctx, pl_attn_bf16_to_f32(p->v, v32, s->kv_elems, ctx->stream));
        PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &r, s->scores));
        PL_CUDA(ctx, pl_attn_unfused_softmax(&r, s->scores, NULL, s->scores, ctx->stream));
        PL_CUBLAS(ctx, pl_attn_reference_pv_f32(s->cublas, &r, s->scores, v32, s->ref.ref));
        PL_CUDA(ctx,
                cudaMemcpyAsync(s->lse_host, lse32, s->lse_elems * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        for (size_t i = 0; i < s->lse_elems; i++)
            s->lse_ref[i] = s->lse_host[i];
        snprintf(s->ref.how, sizeof s->ref.how, "unfused fp32 reference (cuBLAS fp32 GEMMs, fp32 softmax)");
    }
    /* The elementwise bound's scale (pl_gemm_verify multiplies it by the absolute tolerance): not the RMS of O, as
     * for a GEMM, but the largest |V| (1: V is drawn from [-1, 1)). Every output is a convex combination of V
     * rows, and rounding P to bf16 errs by up to 2^-9 of each term, so |error| <= 2^-9·max|V| + O's own rounding:
     * an output of small magnitude (terms that cancel) may err by far more than 2^-7 of its RMS and be right. */
    s->ref.rms = 1.0;
    return 0;
}

/* Before any work, in the parent: the shapes the kernels take, and the unfused baseline's S and P (batch·heads·
 * seq² · 6 bytes) with Q, K, V and O within the GPU's memory. */
static int fwd_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    pl_attn_problem sh;
    pl_attn_shape_from_params(params, &sh);
    const int batch = sh.batch, heads = sh.heads, kv = sh.kv_heads, seq = sh.seq, d = sh.head_dim;
    if (pl_attn_fwd_params_check(batch, heads, kv, seq, d, 1, err, errlen) != 0)
        return -1;
    const double scores = (double)batch * heads * seq * (double)seq;
    const double qkvo = 2.0 * 2.0 * (double)seq * d * batch * (heads + kv);
    return pl_check_device_memory(gpu, 6.0 * scores + qkvo, "lower --batch, --heads or --seq", err, errlen);
}

static int fwd_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char err[256];
    if (fwd_check_params(params, NULL, err, sizeof err) != 0)
        return pl_fail(ctx, "attention:flash_fwd: %s", err);
    fwd_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    pl_attn_problem *p = &s->p;
    pl_attn_shape_from_params(params, p);
    const int batch = p->batch, heads = p->heads, kv = p->kv_heads, seq = p->seq, d = p->head_dim;
    s->pingpong = strcmp(pl_param_str(params, "wgmma-schedule"), "pingpong") == 0;
    s->q_elems = (size_t)batch * heads * seq * d;
    s->kv_elems = (size_t)batch * kv * seq * d;
    s->lse_elems = (size_t)batch * heads * seq;
    const size_t scores = (size_t)batch * heads * seq * (size_t)seq;
    /* the baseline's S and P dominate: say so plainly rather than fail an allocation */
    size_t free_b = 0, total_b = 0;
    PL_CUDA(ctx, cudaMemGetInfo(&free_b, &total_b));
    if ((double)scores * 6.0 > 0.8 * (double)free_b)
        return pl_fail(ctx,
                       "attention:flash_fwd: the unfused baseline needs %.1f GB for S and P (batch·heads·seq² · 6 "
                       "bytes) and %.1f GB are free: lower --batch, --heads or --seq",
                       scores * 6.0 / 1e9, free_b / 1e9);
    uint16_t *q = pl_device_alloc(ctx, s->q_elems * 2), *k = pl_device_alloc(ctx, s->kv_elems * 2),
             *v = pl_device_alloc(ctx, s->kv_elems * 2);
    p->o = pl_device_alloc(ctx, s->q_elems * 2);
    p->lse = pl_device_alloc(ctx, s->lse_elems * sizeof(float));
    s->scores = pl_device_alloc(ctx, scores * sizeof(float));
    s->probs = pl_device_alloc(ctx, scores * 2);
    s->lse_host = pl_host_alloc(ctx, s->lse_elems * sizeof(float));
    if (!q || !k || !v || !p->o || !p->lse || !s->scores || !s->probs || !s->lse_host)
        return -1;
    /* Q and K in [-2, 2): scaled scores of a few units, so the softmax is peaked, not nearly uniform */
    PL_TRY(pl_fill_uniform_bf16(ctx, q, s->q_elems, -2.0f, 2.0f, STREAM_Q));
    PL_TRY(pl_fill_uniform_bf16(ctx, k, s->kv_elems, -2.0f, 2.0f, STREAM_K));
    PL_TRY(pl_fill_uniform_bf16(ctx, v, s->kv_elems, -1.0f, 1.0f, STREAM_V));
    p->q = q;
    p->k = k;
    p->v = v;
    char why[256];
    if (!pl_attn_problem_valid(p, why, sizeof why))
        return pl_fail(ctx, "attention:flash_fwd: %s", why);
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    if (cublasSetStream(s->cublas, ctx->stream) != CUBLAS_STATUS_SUCCESS || make_reference(ctx, s) != 0) {
        cublasDestroy(s->cublas);
        return ctx->error[0] ? -1 : pl_fail(ctx, "attention:flash_fwd: cublasSetStream failed");
    }
    *state = s;
    return 0;
}

static int fwd_poison(pl_ctx *ctx, void *state)
{
    fwd_state *s = state;
    PL_TRY(pl_poison(ctx, s->p.o, s->q_elems * 2));
    return pl_poison(ctx, s->p.lse, s->lse_elems * sizeof(float));
}

/* O by relative L2 error and elementwise bounds against the reference (pl_gemm_verify's rules), then the LSE;
 * the first failure is the verdict. */
static int fwd_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    fwd_state *s = state;
    /* every element within 2^-7·|ref| + 2^-7·max|V| (twice the bound of P's rounding, see make_reference), and the
     * relative L2 error within bf16's 1e-2 */
    PL_TRY(pl_gemm_verify(ctx, &s->ref, s->p.o, PL_DTYPE_BF16, 0.0, 1.0 / 128, 1.0 / 128, v));
    PL_CUDA(ctx,
            cudaMemcpyAsync(s->lse_host, s->p.lse, s->lse_elems * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verification lv;
    pl_verify_f32(s->lse_host, s->lse_ref, s->lse_elems, PL_DTYPE_F32, LSE_TOLERANCE, &lv);
    if (v->passed && !lv.passed) {
        char msg[sizeof v->message];
        pl_snprintf(msg, sizeof msg, "O passes, the LSE does not: %s", lv.message);
        *v = lv;
        pl_snprintf(v->message, sizeof v->message, "%s", msg);
    } else if (v->passed) {
        char msg[sizeof v->message];
        pl_snprintf(msg, sizeof msg, "O: %s; LSE rel L2 %.1e", v->message, lv.rel_l2_error);
        pl_snprintf(v->message, sizeof v->message, "%s", msg);
    }
    return 0;
}

static void fwd_teardown(pl_ctx *ctx, void *state)
{
    fwd_state *s = state;
    cublasDestroy(s->cublas);
}

static int run_unfused(pl_ctx *ctx, void *state)
{
    fwd_state *s = state;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_unfused_scores(s->cublas, &s->p, s->scores));
    PL_CUDA(ctx, pl_attn_unfused_softmax(&s->p, s->scores, s->probs, NULL, ctx->stream));
    PL_CUBLAS(ctx, pl_attn_unfused_pv(s->cublas, &s->p, s->probs));
    return 0;
}

PL_LAUNCH_RUN(run_flash_mma, fwd_state, pl_attn_flash_mma(&s->p, ctx->stream))

PL_LAUNCH_RUN(run_flash_wgmma, fwd_state, pl_attn_flash_wgmma_schedule(&s->p, s->pingpong, ctx->stream))

static const pl_variant fwd_variants[] = {
    PL_VARIANT("baseline", run_unfused,
               "unfused: cuBLAS Q·Kᵀ into fp32 S in device memory, a softmax kernel writing bf16 P, cuBLAS P·V"),
    PL_VARIANT("flash_mma", run_flash_mma,
               "FlashAttention-2: K/V tiles through smem (cp.async, 2 buffers), mma.sync m16n8k16, online "
               "softmax in registers (head_dim 256: 32-key tiles, one CTA an SM)",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("flash_wgmma", run_flash_wgmma,
               "FlashAttention-3 style: TMA K/V ring on mbarriers, producer warps, 2 consumer warpgroups, "
               "wgmma with P from registers, softmax overlapped with the next GEMMs (head_dim 256: 80-key tiles)",
               .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA}),
    PL_VARIANTS_END,
};

const pl_target pl_target_attention_flash_fwd = {
    .group = "attention",
    .name = "flash_fwd",
    .summary = "attention forward (bf16, causal/GQA/layouts, O + LSE): unfused cuBLAS -> FlashAttention-2 "
               "(mma.sync) -> Hopper TMA+wgmma",
    .flags = PL_TARGET_POWER_BOUND,
    .req = {.needs_gpu = 1},
    .params = fwd_params,
    .variants = fwd_variants,
    .counters = fwd_counters,
    .setup = fwd_setup,
    .poison = fwd_poison,
    .check = fwd_check,
    .teardown = fwd_teardown,
    .check_params = fwd_check_params,
};
