/* On a GPU: gemm:fp8 and moe:grouped_gemm verified (every variant against the float64 or cuBLAS fp32 product of the
 * values it multiplied) at sizes that are no multiple of any tile: odd M, K not a multiple of 128, N odd (D stored
 * from registers; moe) and N % 8 == 0 (TMA stores), experts with zero tokens, odd token counts per expert, one token,
 * several tiles per CTA; and the native kernels directly (with and without clusters, odd N included, which the
 * target leaves to them where cuBLASLt cannot take it; in pairs, experts with odd and even tile row counts over odd
 * and even tile column counts; the 128×128, 128×176 and two-accumulator widths), each also run twice on the same
 * inputs: the same bits, or a race; and the promotion interval's accuracy on positive inputs. Exits 77 without a
 * GPU. */
#include <stdio.h>
#include <string.h>

#include "common/fp8_operands.h"
#include "common/gemm_host.h"
#include "common/grouped_ref.h"
#include "common/moe_routing.h"
#include "core/devprobe.h"
#include "core/results_json.h"
#include "core/util.h"
#include "gemm/grouped.h"
#include "gemm/host/heuristic.h"
#include "gemm/host/splitk.h"
#include "perflab/device.h"
#include "testutil.h"

static void verify_ok(const char *tag, const char *target, const char *args)
{
    pl_run run;
    pl_cmd_result r;
    char *cmd = pl_strfmt("verify --targets %s --target-extra-arg '%s=%s'", target, target, args);
    int code = pl_test_run_and_load(tag, cmd, &run, &r);
    printf("%s %s: exit %d\n%s", target, args, code, r.out);
    ck_assert_msg(code == 0, "%s %s: exit %d\n%s%s", target, args, code, r.out, r.err);
    ck_assert_int_eq(pl_test_expect_all_ok(&run, 0), 1);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
    free(cmd);
}

START_TEST(fp8_gemm_odd_shapes)
{
    verify_ok("fp8-small", "gemm:fp8", "--m 300 --n 392 --k 656");         /* the small values */
    verify_ok("fp8-m132", "gemm:fp8", "--m 132 --n 392 --k 1040");         /* one full and one 4-row tile row */
    verify_ok("fp8-cublas-ref", "gemm:fp8", "--m 1000 --n 1000 --k 1040"); /* past the host reference: cuBLAS fp32 */
    verify_ok("fp8-many-tiles", "gemm:fp8", "--m 2048 --n 2176 --k 2048"); /* several tiles per CTA: ring phases */
}
END_TEST

static const pl_variant_result *variant_named(const pl_run *run, const char *name)
{
    for (size_t i = 0; i < run->n_targets; i++)
        for (size_t k = 0; k < run->targets[i].n_variants; k++)
            if (strcmp(run->targets[i].variants[k].name, name) == 0)
                return &run->targets[i].variants[k];
    ck_abort_msg("no variant %s in the run", name);
    return NULL;
}

/* The promotion interval is what keeps a long FP8 accumulation accurate: on positive inputs (sums growing with K,
 * where the tensor core's truncated adds lose the most) at K = 8192, every native kernel promoting every 128 K stays
 * at the bf16 rounding of D (1.7e-3 relative L2 on an H100), while promoting every 512 K (fp8_tensor_p4) is several
 * times worse: that difference shows that the inputs test the interval, so a kernel whose promotion broke or grew
 * longer fails here. cuBLASLt's variants are not judged (their accuracy is its own), only printed. */
START_TEST(fp8_promotion_accuracy)
{
    pl_run run;
    pl_cmd_result r;
    const int code = pl_test_run_and_load("fp8-positive",
                                          "verify --targets gemm:fp8 --target-extra-arg "
                                          "'gemm:fp8=--m 512 --n 512 --k 8192 --inputs positive'",
                                          &run, &r);
    printf("gemm:fp8 positive inputs, K = 8192: exit %d\n%s", code, r.out);
    ck_assert_msg(code == 0 || code == 1, "exit %d\n%s%s", code, r.out, r.err); /* 1: cuBLASLt's fast accumulation */
    static const char *const promote_128[] = {"fp8_tensor", "fp8_block", "fp8_block_halves", "fp8_tensor_halves",
                                              "fp8_block_c2"};
    const pl_variant_result *t = variant_named(&run, "fp8_tensor");
    for (size_t i = 0; i < sizeof promote_128 / sizeof *promote_128; i++) {
        const pl_variant_result *v = variant_named(&run, promote_128[i]);
        ck_assert_msg(v->verification.checked && v->verification.passed && v->verification.rel_l2_error < 2.5e-3,
                      "%s: relative L2 error %.3g on positive inputs (promotion every 128 K keeps it under 2.5e-3): "
                      "%s",
                      promote_128[i], v->verification.rel_l2_error, v->verification.message);
    }
    const pl_variant_result *p4 = variant_named(&run, "fp8_tensor_p4");
    ck_assert_msg(p4->verification.checked && p4->verification.rel_l2_error > 2.0 * t->verification.rel_l2_error,
                  "promoting every 512 K (%.3g) should lose accuracy against every 128 K (%.3g) on positive inputs: "
                  "the test's inputs no longer test the interval",
                  p4->verification.rel_l2_error, t->verification.rel_l2_error);
    pl_cmd_result_free(&r);
    pl_run_free(&run);
}
END_TEST

START_TEST(moe_grouped_odd_routing)
{
    /* 74 rows over 40 experts: most get 0, 1 or 2 tokens */
    verify_ok("moe-small", "moe:grouped_gemm", "--experts 40 --tokens 37 --n 200 --k 272");
    /* N odd (register stores everywhere), K not a multiple of 128, uneven experts of tens of tokens */
    verify_ok("moe-odd-n", "moe:grouped_gemm", "--experts 8 --tokens 301 --n 201 --k 400");
    /* 128 experts, steep skew: many empty ones, one expert capped at every token */
    verify_ok("moe-steep", "moe:grouped_gemm", "--experts 128 --tokens 513 --n 136 --k 272 --alpha 3");
    /* one token on one expert */
    verify_ok("moe-one", "moe:grouped_gemm", "--experts 4 --tokens 1 --topk 1 --n 64 --k 16");
    /* the default's N and K at fewer tokens: past the host reference (cuBLAS per expert), several tiles per CTA */
    verify_ok("moe-cublas-ref", "moe:grouped_gemm", "--experts 64 --tokens 2001 --n 1536 --k 1024 --alpha 0.5");
}
END_TEST

/* Runs `launch` into d1, checks it against `ref`, runs it into d2 and compares the bits (a race would show as a
 * difference). */
static void check_twice(pl_ctx *ctx, const char *what, cudaError_t (*launch)(void *, uint16_t *, cudaStream_t),
                        void *arg, const pl_gemm_reference *ref, int fp8, uint16_t *d1, uint16_t *d2, size_t bytes)
{
    uint8_t *h1 = pl_host_alloc(ctx, bytes), *h2 = pl_host_alloc(ctx, bytes);
    ck_assert(h1 && h2);
    ck_assert(pl_poison(ctx, d1, bytes) == 0 && pl_poison(ctx, d2, bytes) == 0);
    cudaError_t e = launch(arg, d1, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    ck_assert_msg(e == cudaSuccess, "%s: %s", what, cudaGetErrorString(e));
    double rtol, atol;
    pl_gemm_elementwise_tolerance(fp8 ? PL_DTYPE_FP8 : PL_DTYPE_BF16, &rtol, &atol);
    pl_verification v;
    ck_assert_msg(
        pl_gemm_verify(ctx, ref, d1, PL_DTYPE_BF16, fp8 ? pl_default_tolerance(PL_DTYPE_FP8) : 0, rtol, atol, &v) == 0,
        "%s", ctx->error);
    printf("%s %s: %s\n", v.passed ? "ok  " : "FAIL", what, v.message);
    ck_assert_msg(v.passed, "%s: %s", what, v.message);
    ck_assert_msg(launch(arg, d2, ctx->stream) == cudaSuccess, "%s", what);
    ck_assert(cudaMemcpyAsync(h1, d1, bytes, cudaMemcpyDeviceToHost, ctx->stream) == cudaSuccess);
    ck_assert(cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, ctx->stream) == cudaSuccess);
    ck_assert(cudaStreamSynchronize(ctx->stream) == cudaSuccess);
    ck_assert_msg(memcmp(h1, h2, bytes) == 0, "%s gives different results on the same inputs", what);
}

/* check_twice's launcher of `fn` on the problem `arg` points at (a TYPE), writing into d. */
#define LAUNCHER(name, TYPE, fn)                                                                                       \
    static cudaError_t name(void *arg, uint16_t *d, cudaStream_t stream)                                               \
    {                                                                                                                  \
        TYPE *p = arg;                                                                                                 \
        p->d = d;                                                                                                      \
        return fn(p, stream);                                                                                          \
    }
LAUNCHER(launch_fp8, pl_gemm_fp8_problem, pl_gemm_fp8_ws)
LAUNCHER(launch_fp8_c2, pl_gemm_fp8_problem, pl_gemm_fp8_ws_c2)
LAUNCHER(launch_fp8_n128, pl_gemm_fp8_problem, pl_gemm_fp8_ws_n128)
LAUNCHER(launch_fp8_n128_c2, pl_gemm_fp8_problem, pl_gemm_fp8_ws_n128_c2)
LAUNCHER(launch_fp8_two_parts, pl_gemm_fp8_problem, pl_gemm_fp8_ws_two_parts)
LAUNCHER(launch_fp8_two_parts_c2, pl_gemm_fp8_problem, pl_gemm_fp8_ws_two_parts_c2)
LAUNCHER(launch_fp8_n176, pl_gemm_fp8_problem, pl_gemm_fp8_ws_n176)
LAUNCHER(launch_fp8_halves, pl_gemm_fp8_problem, pl_gemm_fp8_ws_halves)
LAUNCHER(launch_fp8_halves_c2, pl_gemm_fp8_problem, pl_gemm_fp8_ws_halves_c2)
LAUNCHER(launch_fp8_picked, pl_gemm_fp8_problem, pl_gemm_fp8)
LAUNCHER(launch_grouped_bf16, pl_grouped_gemm_problem, pl_grouped_gemm_bf16)
LAUNCHER(launch_grouped_fp8, pl_grouped_gemm_problem, pl_grouped_gemm_fp8)
LAUNCHER(launch_grouped_fp8_halves, pl_grouped_gemm_problem, pl_grouped_gemm_fp8_halves)
LAUNCHER(launch_grouped_bf16_t, pl_grouped_gemm_problem, pl_grouped_gemm_bf16_t)

typedef struct kenv {
    pl_ctx ctx;
    pl_device_info dev;
    cublasHandle_t cublas;
} kenv;

static int kenv_init(kenv *e)
{
    char err[256];
    memset(e, 0, sizeof *e);
    e->ctx.seed = 11;
    ck_assert(cudaSetDevice(0) == cudaSuccess);
    ck_assert_msg(pl_device_info_query(0, &e->dev, err, sizeof err) == 0, "%s", err);
    if (e->dev.cc_major != 9 || e->dev.cc_minor != 0) {
        printf("skip: the native kernels are sm_90a (this GPU is sm_%d%d)\n", e->dev.cc_major, e->dev.cc_minor);
        return 0;
    }
    e->ctx.device = &e->dev;
    ck_assert(cudaStreamCreate(&e->ctx.stream) == cudaSuccess);
    ck_assert(cublasCreate(&e->cublas) == CUBLAS_STATUS_SUCCESS);
    return 1;
}

/* The direct FP8 tests' buffers: bf16 sources A (m×k) and B (n×k) from seed streams sa and sb, their dequantized
 * copies once quantized, and two outputs. */
typedef struct fp8_bufs {
    uint16_t *x, *w, *x16, *w16, *d1, *d2;
} fp8_bufs;

static fp8_bufs fp8_bufs_make(pl_ctx *ctx, int m, int n, int k, int sa, int sb)
{
    fp8_bufs b = {pl_device_alloc(ctx, (size_t)m * k * 2), pl_device_alloc(ctx, (size_t)n * k * 2),
                  pl_device_alloc(ctx, (size_t)m * k * 2), pl_device_alloc(ctx, (size_t)n * k * 2),
                  pl_device_alloc(ctx, (size_t)m * n * 2), pl_device_alloc(ctx, (size_t)m * n * 2)};
    ck_assert(b.x && b.w && b.x16 && b.w16 && b.d1 && b.d2);
    ck_assert(pl_fp8_sources_fill(ctx, b.x, m, b.w, n, k, sa, sb, PL_FP8_INPUTS_SIGNED) == 0);
    return b;
}

/* The sources quantized with scaling sc: the FP8 problem over them (D unset), and in *ref the product of the values it
 * multiplies (dequantized exactly). */
static pl_gemm_fp8_problem fp8_quantized(kenv *e, const fp8_bufs *b, int m, int n, int k, pl_fp8_scaling sc,
                                         pl_gemm_reference *ref)
{
    pl_ctx *ctx = &e->ctx;
    pl_fp8_operands q;
    ck_assert_msg(pl_fp8_operands_make(ctx, b->x, m, b->w, 1, n, k, sc, &q) == 0, "%s", ctx->error);
    ck_assert(pl_fp8_operands_dequantize(ctx, &q, b->x16, b->w16) == 0);
    pl_gemm_problem p16 = {.m = m, .n = n, .k = k, .a = b->x16, .b = b->w16, .d = b->d1};
    ck_assert_msg(pl_gemm_reference_make(ctx, e->cublas, &p16, PL_DTYPE_BF16, ref) == 0, "%s", ctx->error);
    pl_gemm_fp8_problem p = {
        .m = m, .n = n, .k = k, .a = q.a, .b = q.b, .scaling = sc, .scale_a = q.sa, .scale_b = q.sb};
    return p;
}

/* The FP8 kernel, both scalings, with and without clusters, against the product of its quantized inputs. */
static void fp8_direct(kenv *e, int m, int n, int k)
{
    pl_ctx *ctx = &e->ctx;
    const fp8_bufs b = fp8_bufs_make(ctx, m, n, k, 1, 2);
    uint16_t *d1 = b.d1, *d2 = b.d2;
    for (int sc = 0; sc < 2; sc++) {
        pl_gemm_reference ref;
        pl_gemm_fp8_problem p = fp8_quantized(e, &b, m, n, k, (pl_fp8_scaling)sc, &ref);
        char what[128];
        /* the plain kernel, 2-CTA clusters, the half-tile commit groups, both (K = 1040: two runs of 4 k-blocks and one
         * more; 400: one run; 16: no whole run), the 128×128 tiles alone and in pairs */
        static const char *const kinds[8] = {"",
                                             ", 2-CTA clusters",
                                             ", half-tile commit groups",
                                             ", half-tile commit groups in 2-CTA clusters",
                                             ", 128x128 tiles",
                                             ", 128x128 tiles in 2-CTA clusters",
                                             ", 128x128 tiles with two alternating accumulators",
                                             ", 128x128 tiles with two alternating accumulators in 2-CTA clusters"};
        static cudaError_t (*const launch[8])(void *, uint16_t *, cudaStream_t) = {
            launch_fp8,      launch_fp8_c2,      launch_fp8_halves,    launch_fp8_halves_c2,
            launch_fp8_n128, launch_fp8_n128_c2, launch_fp8_two_parts, launch_fp8_two_parts_c2};
        for (int kind = 0; kind < 8; kind++) {
            pl_snprintf(what, sizeof what, "fp8 GEMM %dx%dx%d %s scales%s", m, n, k, sc ? "block" : "tensor",
                        kinds[kind]);
            check_twice(ctx, what, launch[kind], &p, &ref, 1, d1, d2, (size_t)m * n * 2);
        }
        if (sc == PL_FP8_SCALING_TENSOR) { /* 128×176 tiles: tensor scaling only */
            pl_snprintf(what, sizeof what, "fp8 GEMM %dx%dx%d tensor scales, 128x176 tiles", m, n, k);
            check_twice(ctx, what, launch_fp8_n176, &p, &ref, 1, d1, d2, (size_t)m * n * 2);
        } else {
            ck_assert(launch_fp8_n176(&p, d1, ctx->stream) == cudaErrorInvalidValue);
        }
        /* the one call: the kernel its pick chooses, with these scales (and every 512 K, where it may) */
        pl_snprintf(what, sizeof what, "fp8 GEMM %dx%dx%d %s scales, pl_gemm_fp8's pick", m, n, k,
                    sc ? "block" : "tensor");
        check_twice(ctx, what, launch_fp8_picked, &p, &ref, 1, d1, d2, (size_t)m * n * 2);
        if (sc == PL_FP8_SCALING_TENSOR) {
            p.promote = 4;
            pl_snprintf(what, sizeof what, "fp8 GEMM %dx%dx%d tensor scales promoted every 512 K, pl_gemm_fp8's pick",
                        m, n, k);
            check_twice(ctx, what, launch_fp8_picked, &p, &ref, 1, d1, d2, (size_t)m * n * 2);
            p.promote = 0;
        }
        if (sc == PL_FP8_SCALING_TENSOR) /* promoting every 4 k-blocks: whole groups, and the k-blocks past them */
            for (int c = 0; c < 2; c++) {
                p.promote = 4;
                pl_snprintf(what, sizeof what, "fp8 GEMM %dx%dx%d tensor scales promoted every 512 K%s", m, n, k,
                            kinds[c]);
                check_twice(ctx, what, launch[c], &p, &ref, 1, d1, d2, (size_t)m * n * 2);
                p.promote = 0;
            }
    }
    pl_free_all(ctx);
}

/* check_twice's launcher of the FP8 decode kernel with an explicit tile and split (0: the rule's). */
typedef struct fp8_sk_case {
    pl_gemm_fp8_problem p;
    int tile, split;
} fp8_sk_case;

static cudaError_t launch_fp8_sk_case(void *arg, uint16_t *d, cudaStream_t stream)
{
    fp8_sk_case *c = arg;
    c->p.d = d;
    return pl_gemm_fp8_sk(&c->p, c->tile, c->split, stream);
}

/* The FP8 decode kernels (swapped split-K) on m tokens, both scalings: every token tile that takes m (M <= 4 tiles),
 * each at the rule's split, unsplit, three CTAs (k-blocks shared unevenly) and the largest split the k-blocks allow
 * (up to 16: a non-portable cluster); then pl_gemm_fp8's pick, which at these sizes should be one of them. Each
 * against the product of its quantized inputs, outputs poisoned, run twice for the same bits. */
static void fp8_decode_direct(kenv *e, int m, int n, int k)
{
    pl_ctx *ctx = &e->ctx;
    const fp8_bufs b = fp8_bufs_make(ctx, m, n, k, 5, 6);
    uint16_t *d1 = b.d1, *d2 = b.d2;
    const int kb = pl_fp8_kblocks(k), most = kb < PL_SK_MAX_SPLIT ? kb : PL_SK_MAX_SPLIT;
    for (int sc = 0; sc < 2; sc++) {
        pl_gemm_reference ref;
        fp8_sk_case c = {.p = fp8_quantized(e, &b, m, n, k, (pl_fp8_scaling)sc, &ref)};
        char what[160];
        const int splits[4] = {0, 1, 3, most};
        for (int tile = 16; tile <= 64; tile *= 2) {
            if (m > 4 * tile)
                continue;
            for (int i = 0; i < 4; i++) {
                if (splits[i] > kb)
                    continue;
                c.tile = tile;
                c.split = splits[i];
                pl_snprintf(what, sizeof what, "fp8 decode GEMM %dx%dx%d %s scales, %d tokens a tile, split %d%s", m, n,
                            k, sc ? "block" : "tensor", tile, splits[i], splits[i] ? "" : " (the rule's)");
                check_twice(ctx, what, launch_fp8_sk_case, &c, &ref, 1, d1, d2, (size_t)m * n * 2);
            }
        }
        pl_gemm_pick pick;
        pl_gemm_gpu g;
        ck_assert(pl_gemm_gpu_query(&g) == cudaSuccess);
        c.p.d = d1;
        ck_assert_msg(pl_gemm_fp8_pick(&c.p, &g, &pick) == 0, "%s", pick.why);
        pl_snprintf(what, sizeof what, "fp8 decode GEMM %dx%dx%d %s scales, pl_gemm_fp8's pick (%s)", m, n, k,
                    sc ? "block" : "tensor", pick.kernel->name);
        check_twice(ctx, what, launch_fp8_picked, &c.p, &ref, 1, d1, d2, (size_t)m * n * 2);
        /* refused before any work: a tile it has not, promotion every 512 K */
        c.tile = 128;
        ck_assert(launch_fp8_sk_case(&c, d1, ctx->stream) == cudaErrorInvalidValue);
        c.tile = 16;
        c.p.promote = 4;
        ck_assert(launch_fp8_sk_case(&c, d1, ctx->stream) == cudaErrorInvalidValue);
    }
    pl_free_all(ctx);
}

/* The grouped kernels on a skewed routing of `experts` (some empty), bf16 and fp8 block-scaled. */
static void grouped_direct(kenv *e, int experts, int tokens, double alpha, int n, int k)
{
    pl_ctx *ctx = &e->ctx;
    char err[256], what[128];
    pl_moe_routing r;
    ck_assert(pl_moe_routing_make(&r, experts, tokens, 2, alpha, 3, err, sizeof err) == 0);
    const int rows = r.rows;
    int *offsets = pl_device_alloc(ctx, ((size_t)experts + 1) * sizeof(int));
    uint16_t *a = pl_device_alloc(ctx, (size_t)rows * k * 2), *b = pl_device_alloc(ctx, (size_t)experts * n * k * 2);
    uint16_t *a16 = pl_device_alloc(ctx, (size_t)rows * k * 2);
    uint16_t *b16 = pl_device_alloc(ctx, (size_t)experts * n * k * 2);
    uint16_t *g1 = pl_device_alloc(ctx, (size_t)rows * n * 2), *g2 = pl_device_alloc(ctx, (size_t)rows * n * 2);
    ck_assert(offsets && a && b && a16 && b16 && g1 && g2);
    ck_assert(cudaMemcpy(offsets, r.offsets, ((size_t)experts + 1) * sizeof(int), cudaMemcpyHostToDevice) ==
              cudaSuccess);
    ck_assert(pl_fp8_sources_fill(ctx, a, rows, b, experts * n, k, 3, 4, PL_FP8_INPUTS_SIGNED) == 0);
    pl_gemm_reference ref;
    ck_assert_msg(pl_grouped_reference_make(ctx, e->cublas, r.offsets, experts, n, k, a, b, &ref) == 0, "%s",
                  ctx->error);
    pl_grouped_gemm_problem gp = {.groups = experts, .n = n, .k = k, .rows = rows, .offsets = offsets, .a = a, .b = b};
    for (int c = 1; c <= 2; c++) { /* one CTA a tile; CTA pairs sharing B (odd tile rows pad a pair) */
        gp.cluster = c;
        gp.skip_idle = 0;
        pl_snprintf(what, sizeof what, "grouped bf16 cluster %d E=%d rows=%d (%d empty) N=%d K=%d", c, experts, rows,
                    r.empty, n, k);
        check_twice(ctx, what, launch_grouped_bf16, &gp, &ref, 0, g1, g2, (size_t)rows * n * 2);
        gp.skip_idle = 1; /* padding rows uncomputed: every stored row must still be right */
        pl_snprintf(what, sizeof what, "grouped bf16 cluster %d skipping idle halves E=%d rows=%d (%d empty) N=%d K=%d",
                    c, experts, rows, r.empty, n, k);
        check_twice(ctx, what, launch_grouped_bf16, &gp, &ref, 0, g1, g2, (size_t)rows * n * 2);
    }
    gp.skip_idle = 0;
    /* the tokens as wgmma's N: tiles of every width in steps of 8, an expert's end inside a group of 8 rows (N odd: the
     * 128-row kernel in its place) */
    pl_snprintf(what, sizeof what, "grouped bf16 tokens-as-N E=%d rows=%d (%d empty) N=%d K=%d", experts, rows, r.empty,
                n, k);
    check_twice(ctx, what, launch_grouped_bf16_t, &gp, &ref, 0, g1, g2, (size_t)rows * n * 2);
    gp.cluster = 0; /* the measured choice: one CTA a tile, or (1024 rows an expert or more) grouped_t or the pairs */
    pl_snprintf(what, sizeof what, "grouped bf16 measured choice (%s) E=%d rows=%d (%d empty) N=%d K=%d",
                pl_grouped_gemm_cluster_of(&gp, 0) == 2 ? (n % 8 == 0 ? "tokens-as-N" : "pairs") : "one CTA a tile",
                experts, rows, r.empty, n, k);
    check_twice(ctx, what, launch_grouped_bf16, &gp, &ref, 0, g1, g2, (size_t)rows * n * 2);
    pl_fp8_operands q;
    ck_assert(pl_fp8_operands_make(ctx, a, rows, b, experts, n, k, PL_FP8_SCALING_BLOCK, &q) == 0);
    ck_assert(pl_fp8_operands_dequantize(ctx, &q, a16, b16) == 0);
    ck_assert(pl_grouped_reference_make(ctx, e->cublas, r.offsets, experts, n, k, a16, b16, &ref) == 0);
    gp.a = q.a;
    gp.b = q.b;
    gp.scale_a = q.sa;
    gp.scale_b = q.sb;
    for (int c = 1; c <= 2; c++) {
        gp.cluster = c;
        pl_snprintf(what, sizeof what, "grouped fp8 cluster %d E=%d rows=%d (%d empty) N=%d K=%d", c, experts, rows,
                    r.empty, n, k);
        check_twice(ctx, what, launch_grouped_fp8, &gp, &ref, 1, g1, g2, (size_t)rows * n * 2);
        pl_snprintf(what, sizeof what, "grouped fp8 half-tile groups cluster %d E=%d rows=%d (%d empty) N=%d K=%d", c,
                    experts, rows, r.empty, n, k);
        check_twice(ctx, what, launch_grouped_fp8_halves, &gp, &ref, 1, g1, g2, (size_t)rows * n * 2);
    }
    gp.cluster = 3; /* refused, before any work */
    ck_assert(launch_grouped_fp8(&gp, g1, ctx->stream) == cudaErrorInvalidValue);
    pl_moe_routing_free(&r);
    pl_free_all(ctx);
}

/* The FP8 decode kernels at token counts of one, a few, a tile and past one (M = 1, 7, 64, 100), N no multiple of their
 * 64 rows (odd: every store element by element) and K no multiple of 128; and the Llama-3-8B layer's QKV shape at 64
 * tokens (the rule's split of 3 over 32 k-blocks: uneven shares). */
START_TEST(fp8_small_m)
{
    kenv e;
    if (!kenv_init(&e))
        return;
    fp8_decode_direct(&e, 1, 200, 656);
    fp8_decode_direct(&e, 7, 1001, 2064);
    fp8_decode_direct(&e, 64, 392, 1040);
    fp8_decode_direct(&e, 100, 520, 4112);
    fp8_decode_direct(&e, 64, 6144, 4096);
    cublasDestroy(e.cublas);
    /* the target's one-call variants at decode sizes, against the same reference as every gemm:fp8 variant */
    verify_ok("fp8-decode-64", "gemm:fp8", "--m 64 --n 392 --k 1040");
    verify_ok("fp8-decode-100", "gemm:fp8", "--m 100 --n 1000 --k 4112");
}
END_TEST

START_TEST(kernels_direct)
{
    kenv e;
    if (!kenv_init(&e))
        return;
    fp8_direct(&e, 129, 201, 400);    /* N odd: stores from registers; K not a multiple of 128 */
    fp8_direct(&e, 1000, 3000, 1040); /* partial tiles on every edge, cuBLAS ref */
    fp8_direct(&e, 1, 8, 16);         /* one row, one partial k-block */
    fp8_direct(&e, 2000, 3000, 656);  /* two or more tiles per CTA: a tile's epilogue beside the next one's mainloop */
    grouped_direct(&e, 16, 700, 1.5, 520, 528); /* TMA stores except where an expert's rows end */
    grouped_direct(&e, 9, 50, 1.0, 33, 64);     /* N odd: every store from registers */
    grouped_direct(&e, 6, 900, 1.2, 1000, 272); /* 4 and 6 tile columns: pairs side by side fill them */
    grouped_direct(&e, 8, 3000, 1.0, 264, 208); /* experts of 300-2400 rows: token tiles of many widths */
    grouped_direct(&e, 4, 2500, 1.0, 264, 208); /* 1250 rows an expert: the measured choice is grouped_t */
    grouped_direct(&e, 2, 1100, 1.0, 33, 64);   /* and with N odd, grouped_t hands it to the pairs */
    cublasDestroy(e.cublas);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fp8_moe");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, fp8_gemm_odd_shapes);
    tcase_add_test(tc, fp8_promotion_accuracy);
    tcase_add_test(tc, moe_grouped_odd_routing);
    tcase_add_test(tc, kernels_direct);
    tcase_add_test(tc, fp8_small_m);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
