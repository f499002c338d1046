/* moe:grouped_gemm — the expert GEMMs of a mixture-of-experts layer: T tokens routed top-k over E experts with a
 * seeded Zipf skew (labs/common/moe_routing.h), each expert's tokens (rows of the permuted activations A, T·k × K)
 * times its weight (N×K) into the same rows of D. A host loop of one cuBLAS GEMM per expert (the baseline),
 * cublasGemmGroupedBatchedEx (the library reference), one persistent native launch whose tile scheduler walks
 * (expert, tile) pairs from the offsets on the device (bf16), and the same in FP8 with block scales. FLOPs count the
 * routed tokens: 2·T·k·N·K. */
#include <stdio.h>
#include <string.h>

#include "common/fp8_operands.h"
#include "common/gemm_host.h"
#include "common/grouped_ref.h"
#include "common/moe_routing.h"
#include "gemm/grouped.h"
#include "labs.h"
#include "perflab/perflab.h"

#define STREAM_A 31 /* per-buffer seed streams of the inputs */
#define STREAM_B 32

#define REQ_GROUPED                                                                                                    \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA                            \
    }
#define REQ_GROUPED_FP8                                                                                                \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA | PL_FEAT_TMA | PL_FEAT_FP8              \
    }

enum { OUT_BF16 = 0, OUT_FP8 = 1 };

typedef struct moe_state {
    pl_moe_routing route;
    int n, k;
    int *offsets; /* device copy of route.offsets */
    uint16_t *a, *b, *d;
    pl_fp8_operands q;        /* block-scaled e4m3 of a and b */
    pl_gemm_reference ref[2]; /* of the bf16 inputs; of the quantized ones */
    cublasHandle_t cublas;
    /* cublasGemmGroupedBatchedEx: one group per expert with tokens */
    int groups;
    cublasOperation_t *ta, *tb;
    int *gm, *gn, *gk, *glda, *gldb, *gldc, *gsize;
    float *alpha, *beta;
    const void **a_arr, **b_arr; /* device arrays of device pointers */
    void **d_arr;
    int last; /* OUT_BF16 or OUT_FP8: which inputs the last run multiplied */
} moe_state;

static const pl_param_def moe_params[] = {
    PL_INT_PARAM("experts", "64", 1, 4096, "E: experts (8, 64, 128 ...)", .small_value = "40"),
    PL_INT_PARAM("tokens", "8192", 1, 1 << 24, "T: tokens of the batch", .small_value = "37"),
    PL_INT_PARAM("topk", "2", 1, 64, "experts per token", .small_value = "2"),
    PL_INT_PARAM("n", "1536", 1, 1 << 20, "N: output columns per expert", .small_value = "200"),
    PL_INT_PARAM("k", "4096", 16, 1 << 20, "K: the reduction (hidden size); a multiple of 16 (TMA rows of e4m3)",
                 .small_value = "272"),
    PL_FLOAT_PARAM("alpha", "1.0", 0, 8,
                   "Zipf skew of the routing: the r-th most popular expert gets weight 1/r^alpha (0: even)"),
    PL_PARAMS_END,
};

static void moe_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n"), k = (double)pl_param_int(p, "k");
    pl_moe_routing r;
    char err[200];
    /* the counts' multiset does not depend on the seed: neither do the experts with tokens */
    if (pl_moe_routing_make(&r, (int)pl_param_int(p, "experts"), (int)pl_param_int(p, "tokens"),
                            (int)pl_param_int(p, "topk"), pl_param_float(p, "alpha"), 0, err, sizeof err) != 0)
        return;
    const double rows = (double)r.rows, used = (double)(r.experts - r.empty);
    c->flops = 2.0 * rows * n * k;
    c->bytes_read = 2.0 * (rows * k + used * n * k); /* bf16 A and the weights of experts with tokens */
    c->bytes_written = 2.0 * rows * n;
    c->elements = rows * n;
    pl_moe_routing_free(&r);
}

/* The arrays of cublasGemmGroupedBatchedEx, in the column-major terms of pl_gemm_cublas: Dᵀ_e (N × M_e) =
 * B_e (K×N column-major, transposed) · Aᵀ_e (K × M_e). */
static int grouped_cublas_setup(pl_ctx *ctx, moe_state *s)
{
    const int E = s->route.experts;
    s->ta = pl_host_alloc(ctx, (size_t)E * sizeof *s->ta);
    s->tb = pl_host_alloc(ctx, (size_t)E * sizeof *s->tb);
    int **ints[] = {&s->gm, &s->gn, &s->gk, &s->glda, &s->gldb, &s->gldc, &s->gsize};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!(*ints[i] = pl_host_alloc(ctx, (size_t)E * sizeof(int))))
            return -1;
    s->alpha = pl_host_alloc(ctx, (size_t)E * sizeof(float));
    s->beta = pl_host_alloc(ctx, (size_t)E * sizeof(float));
    const void **ha = pl_host_alloc(ctx, (size_t)E * sizeof *ha), **hb = pl_host_alloc(ctx, (size_t)E * sizeof *hb);
    void **hd = pl_host_alloc(ctx, (size_t)E * sizeof *hd);
    s->a_arr = pl_device_alloc(ctx, (size_t)E * sizeof(void *));
    s->b_arr = pl_device_alloc(ctx, (size_t)E * sizeof(void *));
    s->d_arr = pl_device_alloc(ctx, (size_t)E * sizeof(void *));
    if (!s->ta || !s->tb || !s->alpha || !s->beta || !ha || !hb || !hd || !s->a_arr || !s->b_arr || !s->d_arr)
        return -1;
    int g = 0;
    for (int e = 0; e < E; e++) {
        const int m = s->route.counts[e];
        if (m == 0) /* an expert with no token is no group */
            continue;
        s->ta[g] = CUBLAS_OP_T;
        s->tb[g] = CUBLAS_OP_N;
        s->gm[g] = s->n;
        s->gn[g] = m;
        s->gk[g] = s->k;
        s->glda[g] = s->k;
        s->gldb[g] = s->k;
        s->gldc[g] = s->n;
        s->gsize[g] = 1;
        s->alpha[g] = 1.0f;
        s->beta[g] = 0.0f;
        hb[g] = s->a + (size_t)s->route.offsets[e] * s->k; /* cuBLAS's B is our A */
        ha[g] = s->b + (size_t)e * s->n * s->k;
        hd[g] = s->d + (size_t)s->route.offsets[e] * s->n;
        g++;
    }
    s->groups = g;
    PL_CUDA(ctx, cudaMemcpyAsync(s->a_arr, ha, (size_t)g * sizeof *ha, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->b_arr, hb, (size_t)g * sizeof *hb, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->d_arr, hd, (size_t)g * sizeof *hd, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* Before any work (in the parent, and again by the setup): the shapes, the routing, and the device memory the
 * setup allocates (A and B twice, D once, 2 bytes an element). */
static int moe_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const long long n = pl_param_int(params, "n"), k = pl_param_int(params, "k"), E = pl_param_int(params, "experts");
    const long long tokens = pl_param_int(params, "tokens"), topk = pl_param_int(params, "topk");
    if (k % 16 != 0)
        return pl_params_refuse(err, errlen,
                                "--k %lld is not a multiple of 16: e4m3 rows must be whole 16-byte units (TMA); pass "
                                "e.g. --k %lld",
                                k, (k + 15) / 16 * 16);
    if (E * n > 0x7fffffffLL)
        return pl_params_refuse(err, errlen, "--experts %lld × --n %lld exceeds 2^31 weight rows; lower one of them",
                                E, n);
    if (pl_moe_routing_check((int)E, (int)tokens, (int)topk, pl_param_float(params, "alpha"), err, errlen) != 0)
        return -1;
    const double rows = (double)tokens * (double)topk;
    return pl_check_device_memory(gpu, 4.0 * (rows + (double)E * n) * (double)k + 2.0 * rows * (double)n,
                                  "lower --tokens, --topk, --experts, --n or --k", err, errlen);
}

static int moe_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char err[256];
    if (moe_check_params(params, NULL, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    moe_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (int)pl_param_int(params, "n");
    s->k = (int)pl_param_int(params, "k");
    const int E = (int)pl_param_int(params, "experts");
    if (pl_moe_routing_make(&s->route, E, (int)pl_param_int(params, "tokens"), (int)pl_param_int(params, "topk"),
                            pl_param_float(params, "alpha"), ctx->seed, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    pl_moe_routing *r = &s->route;
    fprintf(stderr,
            "perflab: moe routing: %d rows over %d experts, %d without tokens, busiest %d (max/mean %.2f, gini "
            "%.3f)\n",
            r->rows, r->experts, r->empty, r->max_count, r->max_over_mean, r->gini);
    const size_t rows = (size_t)r->rows, n = (size_t)s->n, k = (size_t)s->k;
    s->offsets = pl_device_alloc(ctx, ((size_t)E + 1) * sizeof(int));
    s->a = pl_device_alloc(ctx, rows * k * 2);
    s->b = pl_device_alloc(ctx, (size_t)E * n * k * 2);
    s->d = pl_device_alloc(ctx, rows * n * 2);
    uint16_t *a16 = pl_device_alloc(ctx, rows * k * 2), *b16 = pl_device_alloc(ctx, (size_t)E * n * k * 2);
    if (!s->offsets || !s->a || !s->b || !s->d || !a16 || !b16) {
        pl_moe_routing_free(r);
        return -1;
    }
    int rc = 0;
    if (cudaMemcpyAsync(s->offsets, r->offsets, ((size_t)E + 1) * sizeof(int), cudaMemcpyHostToDevice, ctx->stream) !=
        cudaSuccess)
        rc = pl_fail(ctx, "copying the routing offsets to the device failed");
    if (rc == 0)
        rc = pl_fp8_sources_fill(ctx, s->a, r->rows, s->b, E * s->n, s->k, STREAM_A, STREAM_B, PL_FP8_INPUTS_SIGNED);
    if (rc == 0 && cublasCreate(&s->cublas) != CUBLAS_STATUS_SUCCESS)
        rc = pl_fail(ctx, "cublasCreate failed");
    else if (rc == 0) {
        rc = pl_grouped_reference_make(ctx, s->cublas, r->offsets, E, s->n, s->k, s->a, s->b, &s->ref[OUT_BF16]);
        if (rc == 0)
            rc = pl_fp8_operands_make(ctx, s->a, r->rows, s->b, E, s->n, s->k, PL_FP8_SCALING_BLOCK, &s->q);
        if (rc == 0)
            rc = pl_fp8_operands_dequantize(ctx, &s->q, a16, b16);
        if (rc == 0)
            rc = pl_grouped_reference_make(ctx, s->cublas, r->offsets, E, s->n, s->k, a16, b16, &s->ref[OUT_FP8]);
        if (rc == 0) {
            const size_t used = strlen(s->ref[OUT_FP8].how);
            pl_snprintf(s->ref[OUT_FP8].how + used, sizeof s->ref[OUT_FP8].how - used,
                        " of the block-quantized inputs");
            rc = grouped_cublas_setup(ctx, s);
        }
        if (rc != 0)
            cublasDestroy(s->cublas);
    }
    if (rc != 0) {
        pl_moe_routing_free(r);
        return -1;
    }
    *state = s;
    return 0;
}

static int moe_poison(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    return pl_poison(ctx, s->d, (size_t)s->route.rows * s->n * 2);
}

static int moe_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    moe_state *s = state;
    const pl_dtype in = s->last == OUT_FP8 ? PL_DTYPE_FP8 : PL_DTYPE_BF16;
    double rtol, atol;
    pl_gemm_elementwise_tolerance(in, &rtol, &atol);
    return pl_gemm_verify(ctx, &s->ref[s->last], s->d, PL_DTYPE_BF16, in == PL_DTYPE_FP8 ? pl_default_tolerance(in) : 0,
                          rtol, atol, v);
}

static void moe_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    moe_state *s = state;
    cublasDestroy(s->cublas);
    pl_moe_routing_free(&s->route);
}

static int run_loop(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    s->last = OUT_BF16;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    for (int e = 0; e < s->route.experts; e++) {
        const int m = s->route.counts[e], off = s->route.offsets[e];
        if (m == 0)
            continue;
        PL_CUBLAS(ctx,
                  pl_gemm_cublas(s->cublas, m, s->n, s->k, PL_GEMM_B_NK, s->a + (size_t)off * s->k,
                                 s->b + (size_t)e * s->n * s->k, CUDA_R_16BF, s->d + (size_t)off * s->n, CUDA_R_16BF));
    }
    return 0;
}

static int run_cublas_grouped(pl_ctx *ctx, void *state)
{
    moe_state *s = state;
    s->last = OUT_BF16;
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(ctx, cublasGemmGroupedBatchedEx(
                       s->cublas, s->ta, s->tb, s->gm, s->gn, s->gk, s->alpha, (const void *const *)s->a_arr,
                       CUDA_R_16BF, s->glda, (const void *const *)s->b_arr, CUDA_R_16BF, s->gldb, s->beta,
                       (void *const *)s->d_arr, CUDA_R_16BF, s->gldc, s->groups, s->gsize, CUBLAS_COMPUTE_32F));
    return 0;
}

static pl_grouped_gemm_problem problem_of(const moe_state *s, int fp8)
{
    pl_grouped_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.groups = s->route.experts;
    p.n = s->n;
    p.k = s->k;
    p.rows = s->route.rows;
    p.offsets = s->offsets;
    p.a = fp8 ? (const void *)s->q.a : (const void *)s->a;
    p.b = fp8 ? (const void *)s->q.b : (const void *)s->b;
    p.d = s->d;
    if (fp8) {
        p.scale_a = s->q.sa;
        p.scale_b = s->q.sb;
    }
    return p;
}

/* The native kernels: the 128-row kernels in BF16 and FP8 (one CTA a tile or pairs), FP8 with the halves mainloop,
 * and grouped_t (the tokens as wgmma's N). */
typedef enum { NATIVE_BF16, NATIVE_BF16_T, NATIVE_FP8, NATIVE_FP8_HALVES } native_kernel;

static int run_native(pl_ctx *ctx, moe_state *s, native_kernel kernel, int skip_idle, int cluster)
{
    const int fp8 = kernel == NATIVE_FP8 || kernel == NATIVE_FP8_HALVES;
    s->last = fp8 ? OUT_FP8 : OUT_BF16;
    pl_grouped_gemm_problem p = problem_of(s, fp8);
    p.skip_idle = skip_idle;
    p.cluster = cluster;
    char why[200];
    if (!pl_grouped_gemm_supports(&p, fp8, why, sizeof why))
        return pl_fail(ctx, "the native grouped GEMM cannot take this problem: %s", why);
    PL_CUDA(ctx, kernel == NATIVE_BF16     ? pl_grouped_gemm_bf16(&p, ctx->stream)
                 : kernel == NATIVE_BF16_T ? pl_grouped_gemm_bf16_t(&p, ctx->stream)
                 : kernel == NATIVE_FP8    ? pl_grouped_gemm_fp8(&p, ctx->stream)
                                           : pl_grouped_gemm_fp8_halves(&p, ctx->stream));
    return 0;
}

static int run_grouped(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_BF16, 0, 1);
}

static int run_grouped_skip(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_BF16, 1, 1);
}

static int run_grouped_c2(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_BF16, 1, 2);
}

static int run_grouped_t(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_BF16_T, 0, 0); /* its own pairs and tile ends: neither field is read */
}

static int run_grouped_fp8(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_FP8, 0, 1);
}

static int run_grouped_fp8_halves(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_FP8_HALVES, 0, 1);
}

static int run_grouped_fp8_c2(pl_ctx *ctx, void *state)
{
    return run_native(ctx, state, NATIVE_FP8, 0, 2);
}

static const pl_variant moe_variants[] = {
    PL_VARIANT("baseline", run_loop,
               "a host loop of one cuBLAS BF16 GEMM per expert with tokens (the counts known on the host)"),
    PL_VARIANT("cublas_grouped", run_cublas_grouped,
               "cublasGemmGroupedBatchedEx: one call, one group per expert with tokens (counts on the host)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("grouped", run_grouped,
               "one persistent warp-specialized wgmma launch, 128×256 tiles; the tile scheduler walks (expert, "
               "tile) pairs from device offsets",
               .req = REQ_GROUPED),
    PL_VARIANT("grouped_skip", run_grouped_skip,
               "grouped, where a consumer warpgroup whose 64 rows of a tile all lie past its expert's end (the "
               "padding of the expert's last tile row) issues no wgmma for it",
               .req = REQ_GROUPED),
    PL_VARIANT("grouped_c2", run_grouped_c2,
               "grouped_skip in 2-CTA clusters: two vertically adjacent tiles of an expert share their B panel, "
               "each CTA loading half and multicasting it (a third less L2 → SM traffic)",
               .req = REQ_GROUPED),
    PL_VARIANT("grouped_t", run_grouped_t,
               "the tokens as wgmma's N: 256-weight × up-to-192-token tiles computed as Dᵀ, an expert's tokens cut "
               "into tiles of nearly equal width in steps of 8 (fewer than 8 rows past its end computed), CTA "
               "pairs sharing the weights",
               .req = REQ_GROUPED),
    PL_VARIANT("grouped_fp8", run_grouped_fp8,
               "the same in e4m3 with block scales (tokens 1×128, weights 128×128), 128×192 tiles, fp32 "
               "promotion every 128 K",
               .req = REQ_GROUPED_FP8),
    PL_VARIANT("grouped_fp8_halves", run_grouped_fp8_halves,
               "grouped_fp8 with each k-block's wgmma in two half-tile commit groups (m64n96k32): the left half "
               "is promoted while the right half runs",
               .req = REQ_GROUPED_FP8),
    PL_VARIANT("grouped_fp8_c2", run_grouped_fp8_c2, "grouped_fp8 in 2-CTA clusters sharing each B panel (multicast)",
               .req = REQ_GROUPED_FP8),
    PL_VARIANTS_END,
};

const pl_target pl_target_moe_grouped_gemm = {
    .group = "moe",
    .name = "grouped_gemm",
    .summary = "MoE expert GEMMs over skewed top-k routing: per-expert cuBLAS loop vs cublasGemmGroupedBatchedEx vs "
               "one native grouped launch (bf16, fp8 block-scaled)",
    .flags = PL_TARGET_POWER_BOUND,
    .req = {.needs_gpu = 1, .min_cc = 80},
    .params = moe_params,
    .variants = moe_variants,
    .counters = moe_counters,
    .setup = moe_setup,
    .poison = moe_poison,
    .check = moe_check,
    .teardown = moe_teardown,
    .check_params = moe_check_params,
};
