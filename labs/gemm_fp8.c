/* gemm:fp8 — D (bf16) = scale·(A·B) with A M×K and B N×K in e4m3, fp32 accumulation, per-tensor scales or block
 * scales (1×128 for A, 128×128 for B) applied on the fp32 accumulator: what a user without FP8 kernels does
 * (dequantize to bf16, cuBLAS BF16), the native warp-specialized FP8 kernel with each scaling, and cuBLASLt's FP8
 * GEMM with each (the references). One bf16 source pair is quantized both ways; each output is judged against the
 * float64 (small) or cuBLAS fp32 (large) product of the very values its variant multiplied, dequantized exactly. */
#include <stdio.h>
#include <string.h>

#include "common/fp8_operands.h"
#include "common/gemm_host.h"
#include "labs.h"
#include "perflab/perflab.h"

#define STREAM_A            21 /* per-buffer seed streams of the sources */
#define STREAM_B            22
#define LT_WORKSPACE_BYTES  (32u << 20)

#define FP8_NATIVE_FEATURES (PL_FEAT_WGMMA | PL_FEAT_TMA | PL_FEAT_FP8)
#define REQ_FP8_NATIVE                                                                                                 \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = FP8_NATIVE_FEATURES                                    \
    }
#define REQ_FP8_NATIVE_CLUSTER                                                                                         \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = FP8_NATIVE_FEATURES | PL_FEAT_CLUSTERS                 \
    }
#define REQ_FP8_LT                                                                                                     \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 89, .features = PL_FEAT_FP8                                                          \
    }
#define REQ_FP8_LT_BLOCK                                                                                               \
    {                                                                                                                  \
        .needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_FP8                                            \
    }

typedef struct fp8_state {
    int m, n, k;
    pl_fp8_operands q[2];     /* [scaling]: tensor, block */
    pl_gemm_reference ref[2]; /* the product of q[s]'s values */
    uint16_t *a16, *b16;      /* dequantized operands: the baseline's scratch */
    uint16_t *d;              /* every variant's output */
    pl_fp8_cublaslt *lt[2];   /* NULL where cuBLASLt has no algorithm */
    cublasStatus_t lt_status[2];
    pl_fp8_cublaslt *lt_fast; /* tensor scaling with fast accumulation */
    cublasStatus_t lt_fast_status;
    cublasHandle_t cublas;
    cublasLtHandle_t lt_handle;
    pl_fp8_scaling last; /* the operands the last run multiplied: their reference judges it */
} fp8_state;

static const pl_param_def fp8_params[] = {
    PL_INT_PARAM("m", "8192", 4, 1 << 20, "rows of A and D; a multiple of 4 (cuBLASLt's block-scaled FP8)",
                 .small_value = "300"),
    PL_INT_PARAM("n", "8192", 1, 1 << 20, "columns of D (rows of B)", .small_value = "392"),
    PL_INT_PARAM("k", "8192", 16, 1 << 20,
                 "the reduction; a multiple of 16 (e4m3 rows of whole 16-byte units, for TMA and cuBLASLt)",
                 .small_value = "656"),
    /* 6 k-blocks of 128, the last partial: a whole promotion group of 4 and two past it */
    PL_CHOICE_PARAM(
        "inputs", "signed", "signed|positive",
        "the sources' signs: signed (uniform [-1, 1)) or positive (uniform [0, 1) in A and B: the sums grow with "
        "K, the hardest case for FP8 accumulation, where the promotion intervals' errors differ)"),
    PL_PARAMS_END,
};

static void fp8_counters(const pl_params *p, pl_counters *c)
{
    const double m = (double)pl_param_int(p, "m"), n = (double)pl_param_int(p, "n"), k = (double)pl_param_int(p, "k");
    const double kb = (double)((long long)(k + 127) / 128);
    c->flops = 2.0 * m * n * k;
    c->bytes_read = m * k + n * k + 4.0 * (m * kb + ((long long)(n + 127) / 128) * kb); /* e4m3 and block scales */
    c->bytes_written = 2.0 * m * n;
    c->elements = m * n;
}

static pl_gemm_fp8_problem problem_of(const fp8_state *s, pl_fp8_scaling scaling)
{
    pl_gemm_fp8_problem p;
    memset(&p, 0, sizeof p);
    p.m = s->m;
    p.n = s->n;
    p.k = s->k;
    p.a = s->q[scaling].a;
    p.b = s->q[scaling].b;
    p.d = s->d;
    p.scaling = scaling;
    p.scale_a = s->q[scaling].sa;
    p.scale_b = s->q[scaling].sb;
    return p;
}

/* Before any work (in the parent, and again by the setup): the shapes the reference variants take. */
static int fp8_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    const long long m = pl_param_int(params, "m"), n = pl_param_int(params, "n"), k = pl_param_int(params, "k");
    if (k % 16 != 0)
        return pl_params_refuse(err, errlen,
                                "--k %lld is not a multiple of 16: e4m3 rows must be whole 16-byte units (TMA, "
                                "cuBLASLt); pass e.g. --k %lld",
                                k, (k + 15) / 16 * 16);
    if (n % 8 != 0)
        return pl_params_refuse(err, errlen,
                                "--n %lld is not a multiple of 8: cuBLASLt's FP8 GEMM (the reference variants) takes "
                                "only rows of D in whole 16-byte units; pass e.g. --n %lld (the native kernels take "
                                "any N: tests/gpu/test_fp8_moe.c checks odd N on them directly)",
                                n, (n + 7) / 8 * 8);
    if (m % 4 != 0)
        return pl_params_refuse(err, errlen,
                                "--m %lld is not a multiple of 4: cuBLASLt's block-scaled FP8 GEMM (a reference "
                                "variant) refused M = 129 and took M = 300 on an H200; pass e.g. --m %lld (the native "
                                "kernels take any M: tests/gpu/test_fp8_moe.c checks odd M on them directly)",
                                m, (m + 3) / 4 * 4);
    return 0;
}

static int fp8_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char refused[512];
    if (fp8_check_params(params, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "%s", refused);
    fp8_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->m = (int)pl_param_int(params, "m");
    s->n = (int)pl_param_int(params, "n");
    s->k = (int)pl_param_int(params, "k");
    const size_t m = (size_t)s->m, n = (size_t)s->n, k = (size_t)s->k;
    uint16_t *x = pl_device_alloc(ctx, m * k * 2), *w = pl_device_alloc(ctx, n * k * 2);
    s->a16 = pl_device_alloc(ctx, m * k * 2);
    s->b16 = pl_device_alloc(ctx, n * k * 2);
    s->d = pl_device_alloc(ctx, m * n * 2);
    void *ws = pl_device_alloc(ctx, LT_WORKSPACE_BYTES);
    if (!x || !w || !s->a16 || !s->b16 || !s->d || !ws)
        return -1;
    const pl_fp8_inputs inputs =
        strcmp(pl_param_str(params, "inputs"), "positive") == 0 ? PL_FP8_INPUTS_POSITIVE : PL_FP8_INPUTS_SIGNED;
    PL_TRY(pl_fp8_sources_fill(ctx, x, s->m, w, s->n, s->k, STREAM_A, STREAM_B, inputs));
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    if (cublasLtCreate(&s->lt_handle) != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(s->cublas);
        return pl_fail(ctx, "cublasLtCreate failed");
    }
    static const char *const names[2] = {"per-tensor", "block (1×128, 128×128)"};
    for (int sc = 0; sc < 2; sc++) {
        int rc = pl_fp8_operands_make(ctx, x, s->m, w, 1, s->n, s->k, (pl_fp8_scaling)sc, &s->q[sc]);
        if (rc == 0)
            rc = pl_fp8_operands_dequantize(ctx, &s->q[sc], s->a16, s->b16);
        pl_gemm_problem p16;
        memset(&p16, 0, sizeof p16);
        p16.m = s->m;
        p16.n = s->n;
        p16.k = s->k;
        p16.a = s->a16;
        p16.b = s->b16;
        p16.d = s->d;
        if (rc == 0)
            rc = pl_gemm_reference_make(ctx, s->cublas, &p16, PL_DTYPE_BF16, &s->ref[sc]);
        if (rc != 0) {
            cublasLtDestroy(s->lt_handle);
            cublasDestroy(s->cublas);
            return -1;
        }
        const size_t used = strlen(s->ref[sc].how);
        pl_snprintf(s->ref[sc].how + used, sizeof s->ref[sc].how - used, " of the %s-quantized inputs", names[sc]);
        const pl_gemm_fp8_problem fp = problem_of(s, (pl_fp8_scaling)sc);
        s->lt_status[sc] = pl_fp8_cublaslt_plan(s->lt_handle, &fp, ws, LT_WORKSPACE_BYTES, &s->lt[sc]);
        if (sc == PL_FP8_SCALING_TENSOR) {
            pl_gemm_fp8_problem fast = fp;
            fast.fast_accum = 1;
            s->lt_fast_status = pl_fp8_cublaslt_plan(s->lt_handle, &fast, ws, LT_WORKSPACE_BYTES, &s->lt_fast);
        }
    }
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    *state = s;
    return 0;
}

static int fp8_poison(pl_ctx *ctx, void *state)
{
    fp8_state *s = state;
    return pl_poison(ctx, s->d, (size_t)s->m * s->n * 2);
}

static int fp8_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    fp8_state *s = state;
    double rtol, atol;
    pl_gemm_elementwise_tolerance(PL_DTYPE_FP8, &rtol, &atol);
    return pl_gemm_verify(ctx, &s->ref[s->last], s->d, PL_DTYPE_BF16, pl_default_tolerance(PL_DTYPE_FP8), rtol, atol,
                          v);
}

static void fp8_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    fp8_state *s = state;
    for (int sc = 0; sc < 2; sc++)
        pl_fp8_cublaslt_free(s->lt[sc]);
    pl_fp8_cublaslt_free(s->lt_fast);
    cublasLtDestroy(s->lt_handle);
    cublasDestroy(s->cublas);
}

static int run_baseline(pl_ctx *ctx, void *state)
{
    fp8_state *s = state;
    s->last = PL_FP8_SCALING_BLOCK;
    PL_TRY(pl_fp8_operands_dequantize(ctx, &s->q[PL_FP8_SCALING_BLOCK], s->a16, s->b16));
    PL_CUBLAS(ctx, cublasSetStream(s->cublas, ctx->stream));
    PL_CUBLAS(
        ctx, pl_gemm_cublas(s->cublas, s->m, s->n, s->k, PL_GEMM_B_NK, s->a16, s->b16, CUDA_R_16BF, s->d, CUDA_R_16BF));
    return 0;
}

typedef cudaError_t (*fp8_launcher)(const pl_gemm_fp8_problem *p, cudaStream_t stream);

static int run_native(pl_ctx *ctx, fp8_state *s, pl_fp8_scaling sc, fp8_launcher launch, int promote)
{
    s->last = sc;
    pl_gemm_fp8_problem p = problem_of(s, sc);
    p.promote = promote;
    char why[200];
    if (!pl_gemm_fp8_supports(&p, why, sizeof why))
        return pl_fail(ctx, "the native FP8 kernel cannot take this problem: %s", why);
    PL_CUDA(ctx, launch(&p, ctx->stream));
    return 0;
}

/* The variant `name` runs native kernel `launch` with scaling `sc`, promoting every `promote` k-blocks (0: every
 * k-block). */
#define NATIVE_VARIANT(name, sc, launch, promote)                                                                      \
    static int name(pl_ctx *ctx, void *state)                                                                          \
    {                                                                                                                  \
        return run_native(ctx, state, sc, launch, promote);                                                            \
    }
NATIVE_VARIANT(run_fp8_tensor, PL_FP8_SCALING_TENSOR, pl_gemm_fp8_ws, 0)
NATIVE_VARIANT(run_fp8_tensor_p4, PL_FP8_SCALING_TENSOR, pl_gemm_fp8_ws, 4)
NATIVE_VARIANT(run_fp8_block, PL_FP8_SCALING_BLOCK, pl_gemm_fp8_ws, 0)
NATIVE_VARIANT(run_fp8_block_halves, PL_FP8_SCALING_BLOCK, pl_gemm_fp8_ws_halves, 0)
NATIVE_VARIANT(run_fp8_tensor_halves, PL_FP8_SCALING_TENSOR, pl_gemm_fp8_ws_halves, 0)
NATIVE_VARIANT(run_fp8_block_c2, PL_FP8_SCALING_BLOCK, pl_gemm_fp8_ws_c2, 0)
NATIVE_VARIANT(run_fp8_tensor_2p, PL_FP8_SCALING_TENSOR, pl_gemm_fp8_ws_two_parts, 0)
NATIVE_VARIANT(run_fp8_picked_tensor, PL_FP8_SCALING_TENSOR, pl_gemm_fp8, 1)
NATIVE_VARIANT(run_fp8_picked_block, PL_FP8_SCALING_BLOCK, pl_gemm_fp8, 1)

static int run_lt_plan(pl_ctx *ctx, fp8_state *s, pl_fp8_scaling sc, const pl_fp8_cublaslt *plan, cublasStatus_t status,
                       const char *what)
{
    s->last = sc;
    if (!plan)
        return pl_fail(ctx, "cuBLASLt planned no %s FP8 GEMM for this problem on this GPU: %s", what,
                       cublasGetStatusString(status));
    PL_CUBLAS(ctx, pl_fp8_cublaslt_run(plan, ctx->stream));
    return 0;
}

static int run_lt_tensor(pl_ctx *ctx, void *state)
{
    fp8_state *s = state;
    return run_lt_plan(ctx, s, PL_FP8_SCALING_TENSOR, s->lt[PL_FP8_SCALING_TENSOR], s->lt_status[PL_FP8_SCALING_TENSOR],
                       "tensor-scaled");
}

static int run_lt_block(pl_ctx *ctx, void *state)
{
    fp8_state *s = state;
    return run_lt_plan(ctx, s, PL_FP8_SCALING_BLOCK, s->lt[PL_FP8_SCALING_BLOCK], s->lt_status[PL_FP8_SCALING_BLOCK],
                       "block-scaled");
}

static int run_lt_fast(pl_ctx *ctx, void *state)
{
    fp8_state *s = state;
    return run_lt_plan(ctx, s, PL_FP8_SCALING_TENSOR, s->lt_fast, s->lt_fast_status, "tensor-scaled fast-accumulating");
}

static const pl_variant fp8_variants[] = {
    PL_VARIANT("baseline", run_baseline,
               "dequantize the block-scaled e4m3 operands to bf16 (a pass over A and B), then cuBLAS BF16 GEMM"),
    PL_VARIANT(
        "fp8_tensor", run_fp8_tensor,
        "warp-specialized persistent wgmma m64n192k32 e4m3 (TMA producer warpgroup, 2 consumers at 232 registers, "
        "128×192 tiles), fp32 promotion every 128 K, per-tensor scales on the accumulator; a tile's first k-block "
        "issued before the previous tile's epilogue, which runs beside it",
        .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_tensor_p4", run_fp8_tensor_p4,
               "fp8_tensor promoting every 512 K: four k-blocks in straight-line code into one accumulator, one "
               "wgmma group kept in flight, drained once a group (a quarter of the drains)",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_block", run_fp8_block,
               "fp8_tensor with the block scales (A 1×128, B 128×128, bulk-copied into each stage with A and B): "
               "each k-block's wgmma in one commit group, drained (wait_group 0) and promoted with its scales; the "
               "next tile's first k-block runs beside the epilogue, as in fp8_tensor",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_block_halves", run_fp8_block_halves,
               "fp8_block with the promotion off the critical path: each k-block's wgmma in two commit groups "
               "(m64n96k32, the tile's column halves), one half promoted while the other runs, in straight-line "
               "runs of 4 k-blocks (A read from shared memory twice per k-block)",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_tensor_halves", run_fp8_tensor_halves,
               "fp8_tensor with fp8_block_halves' two half-tile commit groups: with one scale the promotion is an "
               "add, and the second read of A per k-block costs what the overlap saves",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_block_c2", run_fp8_block_c2,
               "fp8_block in 2-CTA clusters: vertically adjacent tiles share their B panel, each CTA loads half "
               "and TMA-multicasts it into both (L2 serves 28 KB per CTA and k-block instead of 40)",
               .req = REQ_FP8_NATIVE_CLUSTER),
    PL_VARIANT("fp8_tensor_2p", run_fp8_tensor_2p,
               "fp8_tensor on 128×128 tiles with two promotion accumulators alternating by k-block: k-block kb on "
               "the tensor cores while kb - 1 is promoted (wait_group 1), so no drain inside a tile, still every "
               "128 K (three 64-register accumulators: the reason for the narrower tile). The drain costs 5% at this "
               "width; the narrower tile costs more (docs/perf/gemm.md, FP8: other tile widths)",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_picked_tensor", run_fp8_picked_tensor,
               "pl_gemm_fp8, the one call, per-tensor scales, promotion every 128 K: the kernel its model picks for "
               "the shape (at decode sizes, M <= 128, the swapped split-K kernels: 64 weight rows × 16-64 tokens a "
               "CTA, K split over a cluster, partials added in rank order)",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("fp8_picked_block", run_fp8_picked_block,
               "fp8_picked_tensor with the block scales (A 1×128, B 128×128), as the engine's FP8 decode calls it",
               .req = REQ_FP8_NATIVE),
    PL_VARIANT("cublaslt_fp8", run_lt_tensor,
               "cuBLASLt FP8 GEMM, per-tensor scales, its first heuristic algorithm: the library reference",
               .flags = PL_VARIANT_REFERENCE, .req = REQ_FP8_LT),
    PL_VARIANT("cublaslt_fp8_fast", run_lt_fast,
               "cublaslt_fp8 with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM): no promotion, the tensor "
               "core's reduced-precision sum over all of K; the speed and the error that promotion trades "
               "(--inputs positive shows the error)",
               .req = REQ_FP8_LT),
    PL_VARIANT("cublaslt_fp8_block", run_lt_block,
               "cuBLASLt FP8 GEMM with block scales (VEC128_32F for A, BLK128x128_32F for B; sm_90 only)",
               .req = REQ_FP8_LT_BLOCK),
    PL_VARIANTS_END,
};

const pl_target pl_target_gemm_fp8 = {
    .group = "gemm",
    .name = "fp8",
    .summary = "FP8 e4m3 GEMM, bf16 out: dequantize + cuBLAS BF16 vs native warp-specialized wgmma e4m3 with "
               "per-tensor and block scales, vs cuBLASLt FP8",
    .flags = PL_TARGET_POWER_BOUND,
    .req = {.needs_gpu = 1, .min_cc = 80},
    .params = fp8_params,
    .variants = fp8_variants,
    .counters = fp8_counters,
    .setup = fp8_setup,
    .poison = fp8_poison,
    .check = fp8_check,
    .teardown = fp8_teardown,
    .check_params = fp8_check_params,
};
