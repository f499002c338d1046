/* Tensor-core ceilings through the libraries a user would call: cuBLASLt GEMMs of M = N = K = gemm_n in BF16,
 * FP16, TF32 and FP8 (e4m3 in, BF16 out), each with the first few algorithms of cuBLASLt's heuristic timed and
 * the best kept; and a plain cuBLAS BF16 GEMM (cublasGemmEx, default algorithm) of the same size in the same
 * process, the figure the cuBLASLt one is compared with. All use the "TN" layout that FP8 requires (A
 * transposed, column-major), so that every type runs the same problem. Inputs are random, exactly
 * representable in the operand type; 256 outputs are checked against a float64 dot product on the host. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <math.h>
#include <string.h>

#include "core/util.h"
#include "hw/peak.h"
#include "peak/peak_kernels.h"
#include "perflab/cublas_check.h"
#include "perflab/device.h"
#include "perflab/verify.h"

#define WORKSPACE_BYTES (32u << 20)
#define HEURISTICS      8
#define CHECK_ROWS      16 /* a 16 x 16 block of D: rows n/2 + 3 ... and columns spread over N */

typedef struct gemm_type {
    const char *id, *label, *datasheet;
    cudaDataType_t ab, cd;
    cublasComputeType_t compute;
    int convert; /* PL_CONVERT_* */
    size_t ab_size, cd_size;
    pl_dtype dtype; /* the tolerance of the check */
} gemm_type;

static const gemm_type types[] = {
    {"lt_bf16", "BF16 GEMM (cuBLASLt, best algorithm)", "bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F,
     PL_CONVERT_BF16, 2, 2, PL_DTYPE_BF16},
    {"lt_fp16", "FP16 GEMM (cuBLASLt, best algorithm)", "fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F,
     PL_CONVERT_F16, 2, 2, PL_DTYPE_F16},
    {"lt_tf32", "TF32 GEMM (cuBLASLt, best, fp32 in/out)", "tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
     PL_CONVERT_TF32, 4, 4, PL_DTYPE_TF32},
    {"lt_fp8", "FP8 e4m3 GEMM (cuBLASLt, best, BF16 out)", "fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F,
     PL_CONVERT_E4M3, 1, 2, PL_DTYPE_FP8},
};

typedef struct gemm_run {
    const gemm_type *t;
    int n;
    void *a, *b, *d; /* A is K x M column-major (op(A) = A^T), B is K x N, D is M x N */
    float alpha, beta;
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    void *workspace;
    cublasHandle_t blas;
    int use_blas;
} gemm_run;

static int run_gemm(pl_ctx *ctx, void *state)
{
    gemm_run *r = state;
    if (r->use_blas) {
        PL_CUBLAS(ctx, cublasGemmEx(r->blas, CUBLAS_OP_T, CUBLAS_OP_N, r->n, r->n, r->n, &r->alpha, r->a, r->t->ab,
                                    r->n, r->b, r->t->ab, r->n, &r->beta, r->d, r->t->cd, r->n, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
        return 0;
    }
    PL_CUBLAS(ctx, cublasLtMatmul(r->lt, r->op, &r->alpha, r->a, r->la, r->b, r->lb, &r->beta, r->d, r->ld, r->d, r->ld,
                                  &r->algo, r->workspace, WORKSPACE_BYTES, ctx->stream));
    return 0;
}

/* Decode one element of the operand or output type. */
static double element(cudaDataType_t type, const void *p, size_t i)
{
    switch (type) {
    case CUDA_R_16BF: return pl_bf16_to_double(((const uint16_t *)p)[i]);
    case CUDA_R_16F: return pl_f16_to_double(((const uint16_t *)p)[i]);
    case CUDA_R_32F: return ((const float *)p)[i];
    default: { /* e4m3: bias 7, no infinities, S.1111.111 is NaN */
        uint8_t v = ((const uint8_t *)p)[i];
        int e = (v >> 3) & 15, m = v & 7;
        double mag = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
        if (e == 15 && m == 7)
            mag = NAN;
        return v & 0x80 ? -mag : mag;
    }
    }
}

/* Poison D, run once, and compare a 16 x 16 block of D with float64 dot products of the inputs as stored. */
static int check_gemm(pl_ctx *ctx, gemm_run *r, pl_verification *v)
{
    const gemm_type *t = r->t;
    const size_t n = (size_t)r->n, rows = CHECK_ROWS, i0 = n / 2 + 3;
    size_t cols[CHECK_ROWS];
    for (size_t k = 0; k < rows; k++)
        cols[k] = (k * 977 + 5) % n;
    uint8_t *ha = pl_host_alloc(ctx, rows * n * t->ab_size), *hb = pl_host_alloc(ctx, rows * n * t->ab_size);
    uint8_t *hd = pl_host_alloc(ctx, rows * rows * t->cd_size);
    double *ref = pl_host_alloc(ctx, rows * rows * sizeof(double));
    if (!ha || !hb || !hd || !ref)
        return -1;
    PL_TRY(pl_poison(ctx, r->d, n * n * t->cd_size));
    PL_TRY(run_gemm(ctx, r));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t k = 0; k < rows; k++) {
        /* row i of op(A) is column i of A, contiguous; column j of B is contiguous */
        PL_CUDA(ctx, cudaMemcpy(ha + k * n * t->ab_size, (uint8_t *)r->a + (i0 + k) * n * t->ab_size, n * t->ab_size,
                                cudaMemcpyDeviceToHost));
        PL_CUDA(ctx, cudaMemcpy(hb + k * n * t->ab_size, (uint8_t *)r->b + cols[k] * n * t->ab_size, n * t->ab_size,
                                cudaMemcpyDeviceToHost));
        PL_CUDA(ctx, cudaMemcpy(hd + k * rows * t->cd_size, (uint8_t *)r->d + (i0 + cols[k] * n) * t->cd_size,
                                rows * t->cd_size, cudaMemcpyDeviceToHost));
    }
    for (size_t jj = 0; jj < rows; jj++)
        for (size_t ii = 0; ii < rows; ii++) {
            double s = 0;
            for (size_t kk = 0; kk < n; kk++)
                s += element(t->ab, ha, ii * n + kk) * element(t->ab, hb, jj * n + kk);
            ref[jj * rows + ii] = s;
        }
    const double tol = pl_default_tolerance(t->dtype);
    if (t->cd == CUDA_R_32F)
        pl_verify_f32((const float *)hd, ref, rows * rows, t->dtype, tol, v);
    else if (t->cd == CUDA_R_16F)
        pl_verify_f16((const uint16_t *)hd, ref, rows * rows, tol, v);
    else
        pl_verify_bf16((const uint16_t *)hd, ref, rows * rows, tol, v);
    return 0;
}

static int make_inputs(pl_ctx *ctx, gemm_run *r, float *scratch)
{
    const size_t elems = (size_t)r->n * r->n;
    void *ops[2] = {r->a, r->b};
    for (int i = 0; i < 2; i++) {
        PL_TRY(pl_fill_uniform_f32(ctx, scratch, elems, -1.0f, 1.0f, 10 + (uint64_t)i));
        PL_CUDA(ctx, pl_convert_f32(scratch, ops[i], elems, r->t->convert, ctx->stream));
    }
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

static int describe_lt(pl_ctx *ctx, gemm_run *r, cublasLtMatmulPreference_t pref)
{
    const gemm_type *t = r->t;
    const uint64_t n = (uint64_t)r->n;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    PL_CUBLAS(ctx, cublasLtMatmulDescCreate(&r->op, t->compute, CUDA_R_32F));
    PL_CUBLAS(ctx, cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    PL_CUBLAS(ctx, cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    PL_CUBLAS(ctx, cublasLtMatrixLayoutCreate(&r->la, t->ab, n, n, (int64_t)n));
    PL_CUBLAS(ctx, cublasLtMatrixLayoutCreate(&r->lb, t->ab, n, n, (int64_t)n));
    PL_CUBLAS(ctx, cublasLtMatrixLayoutCreate(&r->ld, t->cd, n, n, (int64_t)n));
    uint64_t ws = WORKSPACE_BYTES;
    PL_CUBLAS(ctx,
              cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    return 0;
}

/* Each type's operands are allocated and freed here, not tracked by the context: the next type needs the memory. */
static int alloc_operands(pl_ctx *ctx, gemm_run *r, size_t elems)
{
    PL_CUDA(ctx, cudaMalloc(&r->a, elems * r->t->ab_size));
    PL_CUDA(ctx, cudaMalloc(&r->b, elems * r->t->ab_size));
    PL_CUDA(ctx, cudaMalloc(&r->d, elems * r->t->cd_size));
    return 0;
}

static void free_operands(gemm_run *r)
{
    cudaFree(r->a);
    cudaFree(r->b);
    cudaFree(r->d);
    r->a = r->b = r->d = NULL;
}

static void destroy_lt(gemm_run *r)
{
    if (r->ld)
        cublasLtMatrixLayoutDestroy(r->ld);
    if (r->lb)
        cublasLtMatrixLayoutDestroy(r->lb);
    if (r->la)
        cublasLtMatrixLayoutDestroy(r->la);
    if (r->op)
        cublasLtMatmulDescDestroy(r->op);
    r->ld = r->lb = r->la = NULL;
    r->op = NULL;
}

/* A GEMM this large runs into the power limit within a second: its clock (so its rate) falls until it settles
 * around 1.4-1.6 GHz on an H200, and dips now and then for a fraction of a second. Timing one candidate after
 * another would favour the first, and a dip would sink whichever candidate it hit. So the GPU is brought to its
 * steady state first, the candidates are timed in interleaved rounds (each round in another order), and each
 * figure is the median of its rounds' medians: one bad round cannot move it. */
#define GEMM_HEAT_S     0.5
#define GEMM_MAX_ROUNDS 5

static int rounds_of(const pl_peak_options *o)
{
    return o->quick ? 3 : GEMM_MAX_ROUNDS;
}

/* One way to run the GEMM: a cuBLASLt algorithm, or plain cuBLAS. */
typedef struct candidate {
    int use_blas;
    int rank; /* in cuBLASLt's heuristic order */
    cublasLtMatmulAlgo_t algo;
    pl_verification check;
    pl_sample_pool pool;
    double round_ms[GEMM_MAX_ROUNDS]; /* each round's median */
    double clock_sum;
    int clocks;
} candidate;

static int time_interleaved(pl_hw_gpu *g, const pl_peak_options *o, gemm_run *r, candidate *cands, int n)
{
    pl_ctx *ctx = &g->ctx;
    for (int i = 0; i < n; i++) {
        r->use_blas = cands[i].use_blas;
        r->algo = cands[i].algo;
        PL_TRY(check_gemm(ctx, r, &cands[i].check));
    }
    double t0 = pl_now_s();
    r->use_blas = cands[0].use_blas;
    r->algo = cands[0].algo;
    while (pl_now_s() - t0 < (o->quick ? GEMM_HEAT_S / 2 : GEMM_HEAT_S)) {
        PL_TRY(run_gemm(ctx, r));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    }
    pl_peak_settings(g, o, 1);
    for (int round = 0; round < rounds_of(o); round++)
        for (int k = 0; k < n; k++) {
            candidate *cand = &cands[(k + round) % n]; /* each round in another order: no candidate always last */
            if (!cand->check.passed)
                continue;
            r->use_blas = cand->use_blas;
            r->algo = cand->algo;
            size_t before = cand->pool.n;
            PL_TRY(pl_peak_measure_into(g, run_gemm, r, 0, &cand->pool));
            double *copy = pl_xmalloc((cand->pool.n - before) * sizeof *copy);
            memcpy(copy, cand->pool.x + before, (cand->pool.n - before) * sizeof *copy);
            cand->round_ms[round] = pl_median_inplace(copy, cand->pool.n - before);
            free(copy);
            double mhz = pl_peak_sm_clock(g);
            if (!isnan(mhz)) {
                cand->clock_sum += mhz;
                cand->clocks++;
            }
        }
    r->use_blas = 0;
    return 0;
}

/* The median over the rounds' medians (and their spread), for the figure and the choice of the best. */
static void candidate_stats(const candidate *cand, int rounds, pl_stats *st)
{
    pl_stats_compute(cand->round_ms, (size_t)rounds, st);
}

static void set_candidate(json_t *f, candidate *cand, int rounds, double flops)
{
    json_object_set_new(f, "check",
                        json_sprintf("rel. L2 error %.1e over %zu outputs (tolerance %.0e)", cand->check.rel_l2_error,
                                     cand->check.elements, cand->check.tolerance));
    if (!cand->check.passed) {
        pl_peak_set_status(f, "failed", cand->check.message);
        return;
    }
    pl_stats st;
    candidate_stats(cand, rounds, &st);
    pl_peak_set_value(f, flops / st.median / 1e9, &st, cand->clocks ? cand->clock_sum / cand->clocks : NAN);
    json_object_set_new(f, "samples", json_integer((json_int_t)cand->pool.n));
    json_object_set_new(f, "rounds", json_integer(rounds));
}

static json_t *rounds_json(const candidate *cand, int rounds, double flops)
{
    json_t *a = json_array();
    for (int i = 0; i < rounds; i++)
        json_array_append_new(a, json_real(flops / cand->round_ms[i] / 1e9));
    return a;
}

/* The heuristic's first candidates, interleaved with plain cuBLAS for BF16. Into f the best cuBLASLt one (the
 * ceiling); for BF16 also the heuristic's own choice (what cuBLASLt and cuBLAS pick untuned) and cuBLAS. */
static int gemm_figures(pl_hw_child *c, pl_hw_gpu *g, gemm_run *r, json_t *f, json_t *heuristic_f, json_t *blas_f)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    cublasLtMatmulPreference_t pref = NULL;
    PL_CUBLAS(ctx, cublasLtMatmulPreferenceCreate(&pref));
    int rc = describe_lt(ctx, r, pref);
    cublasLtMatmulHeuristicResult_t found[HEURISTICS];
    int returned = 0;
    if (rc == 0 && cublasLtMatmulAlgoGetHeuristic(r->lt, r->op, r->la, r->lb, r->ld, r->ld, pref, HEURISTICS, found,
                                                  &returned) != CUBLAS_STATUS_SUCCESS)
        returned = 0;
    cublasLtMatmulPreferenceDestroy(pref);
    if (rc != 0)
        return -1;
    if (returned == 0) {
        pl_peak_set_status(f, "failed", "cuBLASLt offers no algorithm for this type and size");
        if (heuristic_f)
            pl_peak_set_status(heuristic_f, "failed", "cuBLASLt offers no algorithm for this type and size");
        if (blas_f)
            pl_peak_set_status(blas_f, "skipped", "no cuBLASLt algorithm to compare with");
        return 0;
    }
    const int tries = returned < (o->quick ? 2 : 4) ? returned : (o->quick ? 2 : 4), rounds = rounds_of(o);
    candidate cands[HEURISTICS + 1];
    memset(cands, 0, sizeof cands);
    int n = 0;
    for (; n < tries; n++) {
        cands[n].rank = n;
        cands[n].algo = found[n].algo;
    }
    if (blas_f)
        cands[n++].use_blas = 1;
    rc = time_interleaved(g, o, r, cands, n);
    const double flops = 2.0 * pow(r->n, 3);
    int best = -1;
    double best_ms = INFINITY;
    json_t *tried = json_array();
    for (int i = 0; rc == 0 && i < tries; i++) {
        if (!cands[i].check.passed) {
            json_array_append_new(tried, json_pack("{s:i, s:s}", "heuristic_rank", i, "check", cands[i].check.message));
            continue;
        }
        pl_stats st;
        candidate_stats(&cands[i], rounds, &st);
        double ms = st.median;
        json_array_append_new(tried, json_pack("{s:i, s:f, s:o}", "heuristic_rank", i, "tflops", flops / ms / 1e9,
                                               "rounds_tflops", rounds_json(&cands[i], rounds, flops)));
        if (ms < best_ms) {
            best_ms = ms;
            best = i;
        }
    }
    json_object_set_new(f, "algorithms", tried);
    if (rc == 0) {
        set_candidate(f, &cands[best < 0 ? 0 : best], rounds, flops);
        json_object_set_new(f, "config",
                            json_sprintf("heuristic candidate %d, best of %d timed (of %d offered) in %d "
                                         "interleaved rounds after %.2f s at load; %u MiB workspace",
                                         best, tries, returned, rounds, o->quick ? GEMM_HEAT_S / 2 : GEMM_HEAT_S,
                                         WORKSPACE_BYTES >> 20));
        if (heuristic_f) {
            set_candidate(heuristic_f, &cands[0], rounds, flops);
            json_object_set_new(heuristic_f, "config", json_string("heuristic candidate 0, timed in the same rounds"));
        }
        if (blas_f) {
            set_candidate(blas_f, &cands[n - 1], rounds, flops);
            json_object_set_new(blas_f, "rounds_tflops", rounds_json(&cands[n - 1], rounds, flops));
        }
    }
    for (int i = 0; i < n; i++)
        free(cands[i].pool.x);
    return rc;
}

static int blas_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    const size_t elems = (size_t)o->gemm_n * o->gemm_n;
    gemm_run r;
    memset(&r, 0, sizeof r);
    r.n = o->gemm_n;
    r.alpha = 1.0f;
    float *scratch = pl_device_alloc(ctx, elems * sizeof(float));
    r.workspace = pl_device_alloc(ctx, WORKSPACE_BYTES);
    if (!scratch || !r.workspace)
        return -1;
    PL_CUBLAS(ctx, cublasLtCreate(&r.lt));
    int rc = 0;
    if (cublasCreate(&r.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(r.blas, ctx->stream) != 0) {
        cublasLtDestroy(r.lt);
        return pl_fail(ctx, "cublasCreate failed");
    }
    for (size_t i = 0; rc == 0 && i < sizeof types / sizeof types[0]; i++) {
        const gemm_type *t = &types[i];
        char method[320];
        pl_snprintf(method, sizeof method,
                    "cublasLtMatmul, M = N = K = %d, TN layout, fp32 accumulation, alpha 1, beta 0; FLOPs = 2 M N K; "
                    "random inputs; 256 outputs checked against float64",
                    r.n);
        json_t *f = pl_peak_figure(t->id, "tensor", t->label, "TFLOP/s", NULL, method, t->datasheet);
        if (t->ab == CUDA_R_8F_E4M3 && g->dev.cc_major * 10 + g->dev.cc_minor < 89) {
            pl_peak_set_status(f, "skipped", "FP8 tensor cores need compute capability 8.9+");
            pl_hw_emit(c, f);
            continue;
        }
        r.t = t;
        rc = alloc_operands(ctx, &r, elems);
        if (rc == 0)
            rc = make_inputs(ctx, &r, scratch);
        json_t *heuristic_f = NULL, *blas_f = NULL;
        if (t->ab == CUDA_R_16BF) {
            pl_snprintf(method, sizeof method,
                        "cublasLtMatmul with the heuristic's first algorithm (what cuBLASLt and cuBLAS pick "
                        "without tuning), M = N = K = %d, timed in the same rounds as the others",
                        r.n);
            heuristic_f = pl_peak_figure("lt_bf16_heuristic", "tensor", "BF16 GEMM (cuBLASLt, heuristic's choice)",
                                         "TFLOP/s", NULL, method, "bf16");
            pl_snprintf(method, sizeof method,
                        "cublasGemmEx, M = N = K = %d, the same inputs and TN layout, CUBLAS_COMPUTE_32F, default "
                        "algorithm and workspace (what a plain cuBLAS user gets), timed in the same rounds",
                        r.n);
            blas_f =
                pl_peak_figure("cublas_bf16", "tensor", "BF16 GEMM (plain cuBLAS)", "TFLOP/s", NULL, method, "bf16");
        }
        if (rc == 0)
            rc = gemm_figures(c, g, &r, f, heuristic_f, blas_f);
        destroy_lt(&r);
        if (rc != 0) {
            json_decref(f);
            json_decref(heuristic_f);
            json_decref(blas_f);
            free_operands(&r);
            break;
        }
        pl_hw_emit(c, f);
        if (heuristic_f)
            pl_hw_emit(c, heuristic_f);
        if (blas_f)
            pl_hw_emit(c, blas_f);
        free_operands(&r);
    }
    cublasDestroy(r.blas);
    cublasLtDestroy(r.lt);
    return rc;
}

int pl_peak_task_tensor_blas(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_TENSOR, "cuBLASLt and cuBLAS GEMMs", blas_figures);
}
