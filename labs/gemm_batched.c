/* gemm:batched — `count` small BF16 GEMMs of one shape (default 40 attention heads of Q·Kᵀ with 128 queries, 128 keys
 * and head dimension 64): one cuBLAS call per GEMM, one cublasGemmStridedBatchedEx call for all (the library's
 * batched path, the reference), and perflab's own batched kernel, one launch for all.
 *
 * Timing region: GPU time (latched): the latch holds the stream until every call of a sample is enqueued, so the
 * host's cost per cuBLAS call is outside the region (launch:cuda_graphs and launch:persistent are the lessons on
 * that); what is measured is the GPU running `count` small kernels one after the other against one kernel that
 * fills it. Checked against a float64 host reference of every GEMM. */
#include <stdio.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "common/gemm_host.h"
#include "gemm_batched/gemm_batched.h"

#define A_STREAM_ID 1
#define B_STREAM_ID 2

typedef struct batched_state {
    pl_gemm_batch p;
    cublasHandle_t cublas; /* destroyed at teardown */
    pl_gemm_reference ref; /* every problem's float64 reference, one after the other */
} batched_state;

static const pl_param_def batched_params[] = {
    PL_INT_PARAM("count", "40", 1, 65535, "GEMMs in the batch", .small_value = "3"),
    PL_INT_PARAM("m", "128", 1, 16384, "rows of each A and D", .small_value = "77"),
    PL_INT_PARAM("n", "128", 1, 16384, "columns of each D (rows of B)", .small_value = "45"),
    PL_INT_PARAM("k", "64", 1, 16384, "the reduction dimension", .small_value = "37"),
    PL_PARAMS_END,
};

static void batched_counters(const pl_params *p, pl_counters *c)
{
    const double count = (double)pl_param_int(p, "count"), m = (double)pl_param_int(p, "m"),
                 n = (double)pl_param_int(p, "n"), k = (double)pl_param_int(p, "k");
    c->flops = 2.0 * count * m * n * k;
    c->bytes_read = 2.0 * count * (m * k + n * k);
    c->bytes_written = 2.0 * count * m * n;
    c->elements = count * m * n;
}

/* Each problem's float64 reference (labs/common/gemm_ref.c), gathered into one reference for the whole batch. */
static int batched_reference(pl_ctx *ctx, batched_state *s)
{
    const pl_gemm_batch *p = &s->p;
    const size_t mn = (size_t)p->m * p->n;
    s->ref.elems = mn * (size_t)p->count;
    s->ref.ref = pl_device_alloc(ctx, s->ref.elems * sizeof(float));
    s->ref.scratch = pl_device_alloc(ctx, pl_gemm_diff_scratch_bytes());
    if (!s->ref.ref || !s->ref.scratch)
        return -1;
    for (int i = 0; i < p->count; i++) {
        pl_gemm_problem one = {.m = p->m,
                               .n = p->n,
                               .k = p->k,
                               .b_layout = PL_GEMM_B_NK,
                               .a = p->a + (size_t)i * p->m * p->k,
                               .b = p->b + (size_t)i * p->n * p->k,
                               .d = p->d + (size_t)i * mn};
        pl_gemm_reference r;
        PL_TRY(pl_gemm_reference_make(ctx, s->cublas, &one, PL_DTYPE_BF16, &r));
        PL_CUDA(ctx, cudaMemcpyAsync(s->ref.ref + (size_t)i * mn, r.ref, mn * sizeof(float), cudaMemcpyDeviceToDevice,
                                     ctx->stream));
        snprintf(s->ref.how, sizeof s->ref.how, "%.80s of each GEMM", r.how);
    }
    PL_CUDA(ctx, pl_gemm_rms_f32(s->ref.ref, s->ref.elems, s->ref.scratch, &s->ref.rms, ctx->stream));
    return 0;
}

static int batched_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    batched_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    pl_gemm_batch *b = &s->p;
    b->count = (int)pl_param_int(p, "count");
    b->m = (int)pl_param_int(p, "m");
    b->n = (int)pl_param_int(p, "n");
    b->k = (int)pl_param_int(p, "k");
    const size_t na = (size_t)b->count * b->m * b->k, nb = (size_t)b->count * b->n * b->k,
                 nd = (size_t)b->count * b->m * b->n;
    uint16_t *a = pl_device_alloc(ctx, na * 2), *bb = pl_device_alloc(ctx, nb * 2);
    b->d = pl_device_alloc(ctx, nd * 2);
    if (!a || !bb || !b->d)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, a, na, -1.0f, 1.0f, A_STREAM_ID));
    PL_TRY(pl_fill_uniform_bf16(ctx, bb, nb, -1.0f, 1.0f, B_STREAM_ID));
    b->a = a;
    b->b = bb;
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    if (batched_reference(ctx, s) != 0) {
        cublasDestroy(s->cublas);
        return -1;
    }
    *state = s;
    return 0;
}

static void batched_teardown(pl_ctx *ctx, void *state)
{
    batched_state *s = state;
    if (s->cublas)
        cublasDestroy(s->cublas);
    s->cublas = NULL;
}

static int batched_poison(pl_ctx *ctx, void *state)
{
    batched_state *s = state;
    return pl_poison(ctx, s->p.d, s->ref.elems * sizeof(uint16_t));
}

static int batched_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    batched_state *s = state;
    double rtol, atol_rms;
    pl_gemm_elementwise_tolerance(PL_DTYPE_BF16, &rtol, &atol_rms);
    return pl_gemm_verify(ctx, &s->ref, s->p.d, PL_DTYPE_BF16, 0.0, rtol, atol_rms, v);
}

static int run_cublas_each(pl_ctx *ctx, void *state)
{
    batched_state *s = state;
    const pl_gemm_batch *p = &s->p;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    for (int i = 0; i < p->count; i++)
        PL_CUBLAS(ctx, pl_gemm_cublas(s->cublas, p->m, p->n, p->k, PL_GEMM_B_NK, p->a + (size_t)i * p->m * p->k,
                                      p->b + (size_t)i * p->n * p->k, CUDA_R_16BF, p->d + (size_t)i * p->m * p->n,
                                      CUDA_R_16BF));
    return 0;
}

static int run_cublas_strided(pl_ctx *ctx, void *state)
{
    batched_state *s = state;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(ctx, pl_gemm_batched_cublas_strided(s->cublas, &s->p));
    return 0;
}

static int run_native_with(pl_ctx *ctx, void *state, unsigned options)
{
    batched_state *s = state;
    PL_CUDA(ctx, pl_gemm_batched_mma(&s->p, options, ctx->stream));
    return 0;
}

static int run_native(pl_ctx *ctx, void *state)
{
    return run_native_with(ctx, state, 0);
}

static int run_native_staged(pl_ctx *ctx, void *state)
{
    return run_native_with(ctx, state, PL_BATCHED_STAGED_STORE);
}

static int run_native_halves(pl_ctx *ctx, void *state)
{
    return run_native_with(ctx, state, PL_BATCHED_STAGED_STORE | PL_BATCHED_K_HALVES);
}

static int run_native_pdl(pl_ctx *ctx, void *state)
{
    return run_native_with(ctx, state, PL_BATCHED_STAGED_STORE | PL_BATCHED_K_HALVES | PL_BATCHED_PDL);
}

static const pl_variant batched_variants[] = {
    PL_VARIANT("baseline", run_cublas_each,
               "one cublasGemmEx call per GEMM: `count` small kernels one after the other, each filling a few "
               "multiprocessors"),
    PL_VARIANT("cublas_strided", run_cublas_strided,
               "one cublasGemmStridedBatchedEx call for the batch: the library's batched path",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("native", run_native,
               "one launch: a 64×64 tile of one GEMM per block (mma.sync, cp.async, swizzled shared memory), the "
               "batch's tiles one grid; D stored from the fragments",
               .req = PL_GEMM_REQ_MMA),
    PL_VARIANT("native_staged", run_native_staged,
               "native + D staged through shared memory: 16-byte coalesced stores, a quarter of the store "
               "instructions",
               .req = PL_GEMM_REQ_MMA),
    PL_VARIANT("native_halves", run_native_halves,
               "native_staged + each k-tile loaded as two cp.async groups: the mma of the first half runs while "
               "the second lands",
               .req = PL_GEMM_REQ_MMA),
    PL_VARIANT("native_pdl", run_native_pdl,
               "native_halves launched as a programmatic dependent (griddepcontrol): the next launch overlaps "
               "this one's tail",
               .req = {.needs_gpu = 1, .min_cc = 90}),
    PL_VARIANTS_END,
};

const pl_target pl_target_gemm_batched = {
    .group = "gemm",
    .name = "batched",
    .summary = "`count` small BF16 GEMMs (D = A·Bᵀ): a cuBLAS call each vs cublasGemmStridedBatchedEx vs a native "
               "batched kernel; GPU time (latched), the host's per-call cost outside",
    .req = {.needs_gpu = 1},
    .params = batched_params,
    .variants = batched_variants,
    .counters = batched_counters,
    .setup = batched_setup,
    .poison = batched_poison,
    .check = batched_check,
    .teardown = batched_teardown,
};
