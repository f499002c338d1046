/* On a GPU: every GEMM kernel of the kernel table against the reference (float64 on the host for small shapes, cuBLAS
 * fp32 for the others) on shapes that are no multiple of any tile, both B layouts, with and without the fused
 * epilogue; kernels that cannot take a shape must say why, and the fallback must take it. Exits 77 without a GPU.
 *
 * Besides, split_k_every_split runs each split-K kernel with every split (1-8, uneven ones included) on sizes that are
 * no multiple of their tiles, edge tiles on the half-width wgmma, the fused epilogue in the fix-up, and the same bits
 * on a second run; decode_gemv runs the streaming GEMV kernels on M = 1-32 against N not a multiple of their 16 rows
 * and K not of their 64-k chunks, twice (same bits); the library call pl_gemm_bf16 runs on every problem; and
 * tuned_pick tunes the pick on the device (an in-place residual problem left untouched by the tuning, autotune, a
 * capture never tuned); compare_rows checks the row-scaled output comparison. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/devprobe.h"
#include "core/util.h"
#include "common/gemm_host.h"
#include "common/kernel_req.h"
#include "gemm/host/heuristic.h"
#include "gemm/host/splitk.h"
#include "gemm/tune.h"
#include "perflab/device.h"
#include "testutil.h"

typedef struct shape {
    int m, n, k;
} shape;

static const shape shapes[] = {
    {1000, 3000, 520}, /* the odd shape: no dimension a multiple of 128 */
    {1, 1, 1},
    {17, 33, 65},
    {64, 80, 40},
    {257, 129, 72},
    {128, 256, 64},
    {300, 200, 136},
    {16, 4096, 1024},
    {129, 520, 1000},
    {2048, 2048, 1024},
    {1024, 1000, 4104},
    {33, 17, 8},
    /* the 2-CTA 128×256 kernels' split tail (wgmma_ws_sm90a.cu), with 66 clusters: 17 × 17 = 289 pairs, four rounds
     * and 25 (17 of them with a half wholly past M, skipped); and N odd (D from registers): 9 × 8 = 72, one and 6 */
    {4104, 4104, 1032},
    {2100, 1863, 600},
    /* B K×N kernels: M past a tile, N a multiple of 8 but not of a 64-column box, K not of a k-block; and decode-sized
     * M for the swapped split-K twins (M <= 64 for the 16-token tiles) */
    {77, 1864, 1032},
    {1, 1864, 4104},
    {13, 520, 2056},
    {40, 3000, 72},
};

/* B K×N problems each _kn row verified (every_kernel_every_shape), by table index: each must run on several. */
static int kn_runs[64];
#define KN_MIN_RUNS 5

typedef struct env {
    pl_ctx ctx;
    pl_device_info dev;
    cublasHandle_t cublas;
} env;

static void env_init(env *e)
{
    char err[256];
    memset(e, 0, sizeof *e);
    e->ctx.seed = 7;
    ck_assert(cudaSetDevice(0) == cudaSuccess);
    ck_assert(cudaGetDeviceCount(&e->ctx.device_count) == cudaSuccess);
    ck_assert_msg(pl_device_info_query(0, &e->dev, err, sizeof err) == 0, "%s", err);
    e->ctx.device = &e->dev;
    ck_assert(cudaStreamCreate(&e->ctx.stream) == cudaSuccess);
    ck_assert(cublasCreate(&e->cublas) == CUBLAS_STATUS_SUCCESS);
}

/* What the fused epilogue adds (bits of `epilogue`). */
enum { EPI_BIAS = 1, EPI_GELU = 2, EPI_RESIDUAL = 4, EPI_ALL = 7 };

/* A problem's operands (random, seeded), its epilogue operands and its reference, allocated in e->ctx. */
static pl_gemm_problem make_problem(env *e, const shape *s, pl_gemm_b_layout layout, int epilogue,
                                    pl_gemm_reference *ref)
{
    pl_ctx *ctx = &e->ctx;
    const size_t m = (size_t)s->m, n = (size_t)s->n, k = (size_t)s->k;
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = s->m;
    p.n = s->n;
    p.k = s->k;
    p.b_layout = layout;
    uint16_t *a = pl_device_alloc(ctx, m * k * 2), *b = pl_device_alloc(ctx, n * k * 2);
    p.d = pl_device_alloc(ctx, m * n * 2);
    ck_assert(a && b && p.d);
    ck_assert(pl_fill_uniform_bf16(ctx, a, m * k, -1, 1, 1) == 0);
    ck_assert(pl_fill_uniform_bf16(ctx, b, n * k, -1, 1, 2) == 0);
    p.a = a;
    p.b = b;
    if (epilogue & EPI_BIAS) {
        uint16_t *bias = pl_device_alloc(ctx, n * 2);
        ck_assert(bias && pl_fill_uniform_bf16(ctx, bias, n, -1, 1, 3) == 0);
        p.epi.bias = bias;
    }
    if (epilogue & EPI_RESIDUAL) {
        uint16_t *res = pl_device_alloc(ctx, m * n * 2);
        ck_assert(res && pl_fill_uniform_bf16(ctx, res, m * n, -1, 1, 4) == 0);
        p.epi.residual = res;
    }
    p.epi.gelu = (epilogue & EPI_GELU) != 0;
    ck_assert_msg(pl_gemm_reference_make(ctx, e->cublas, &p, PL_DTYPE_BF16, ref) == 0, "%s", ctx->error);
    return p;
}

/* Poison D, launch, verify; the outcome printed and failures appended to `fails`. */
static void run_and_verify(env *e, pl_gemm_problem *p, const pl_gemm_reference *ref, const char *label,
                           cudaError_t (*launch)(const pl_gemm_problem *, void *, cudaStream_t), void *arg,
                           pl_buf *fails, int *checked)
{
    pl_ctx *ctx = &e->ctx;
    double rtol, atol;
    pl_gemm_elementwise_tolerance(PL_DTYPE_BF16, &rtol, &atol);
    ck_assert(pl_poison(ctx, p->d, (size_t)p->m * p->n * 2) == 0);
    cudaError_t err = launch(p, arg, ctx->stream);
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(ctx->stream);
    ck_assert_msg(err == cudaSuccess, "%s: %s", label, cudaGetErrorString(err));
    pl_verification v;
    ck_assert_msg(pl_gemm_verify(ctx, ref, p->d, PL_DTYPE_BF16, 0, rtol, atol, &v) == 0, "%s", ctx->error);
    printf("%s %s: %s\n", v.passed ? "ok  " : "FAIL", label, v.message);
    ++*checked;
    if (!v.passed)
        pl_buf_printf(fails, "%s: %s\n", label, v.message);
}

static cudaError_t launch_kernel(const pl_gemm_problem *p, void *arg, cudaStream_t stream)
{
    return ((const pl_gemm_kernel *)arg)->launch(p, stream);
}

/* Verify a kernel on p, then run it again: the same bits (h1, h2: host buffers of D's size). */
static void verify_twice(env *e, const pl_gemm_kernel *kern, pl_gemm_problem *p, const pl_gemm_reference *ref,
                         const char *label, uint16_t *h1, uint16_t *h2, pl_buf *fails, int *checked)
{
    const size_t bytes = (size_t)p->m * p->n * 2;
    run_and_verify(e, p, ref, label, launch_kernel, (void *)kern, fails, checked);
    ck_assert(cudaMemcpy(h1, p->d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    ck_assert(kern->launch(p, e->ctx.stream) == cudaSuccess);
    ck_assert(cudaMemcpy(h2, p->d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    ck_assert_msg(memcmp(h1, h2, bytes) == 0, "%s: different bits on the same inputs", label);
}

static cudaError_t launch_library(const pl_gemm_problem *p, void *arg, cudaStream_t stream)
{
    (void)arg;
    return pl_gemm_bf16(p, stream);
}

/* One problem against every kernel, and pl_gemm_bf16; failures are appended to `fails`. */
/* Whether a kernel may refuse M: the decode kernels an M over their tile, the swapped small-M kernels an M over 4 of
 * their tiles, and a swapped tile fitted to one M (a width that is no power of two: 200) an M outside (128, tile]. */
static int may_refuse_m(const pl_gemm_kernel *k, int m)
{
    if (k->flags & PL_GEMM_KERNEL_SMALL_M)
        return m > k->tile_m;
    if (!(k->flags & PL_GEMM_KERNEL_SWAP_AB))
        return 0;
    const int fitted = (k->tile_m & (k->tile_m - 1)) != 0;
    return fitted ? m <= 128 || m > k->tile_m : m > 4 * k->tile_m;
}

/* Whether a kernel may refuse a shape for its layout: a row reads one layout of B (the _kn rows K×N, the other TMA
 * kernels N×K; mma_sync and the teaching rungs both), TMA rows are 16-byte multiples (K % 8 == 0 for A and B N×K;
 * N % 8 == 0 too for B K×N). */
static int may_refuse_layout(const pl_gemm_kernel *k, const shape *s, pl_gemm_b_layout layout)
{
    if (k->flags & PL_GEMM_KERNEL_B_KN)
        return layout != PL_GEMM_B_KN || s->k % 8 != 0 || s->n % 8 != 0;
    return layout == PL_GEMM_B_KN || s->k % 8 != 0;
}

static void check_problem(env *e, const shape *s, pl_gemm_b_layout layout, int epilogue, pl_buf *fails, int *checked)
{
    pl_ctx *ctx = &e->ctx;
    pl_gemm_reference ref;
    pl_gemm_problem p = make_problem(e, s, layout, epilogue, &ref);
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++) {
        const pl_gemm_kernel *kern = pl_gemm_kernel_at(i);
        const pl_requirements kreq = pl_requirements_of_kernel(kern->needs);
        char why[256];
        char label[160];
        pl_snprintf(label, sizeof label, "%s %dx%dx%d %s%s%s%s", kern->name, s->m, s->n, s->k,
                    pl_gemm_layout_name(layout), epilogue & EPI_BIAS ? " +bias" : "",
                    epilogue & EPI_GELU ? " +gelu" : "", epilogue & EPI_RESIDUAL ? " +residual" : "");
        if (!pl_requirements_met(&kreq, &e->dev, ctx->device_count, NULL, why, sizeof why)) {
            printf("skip %s: %s\n", label, why);
            continue;
        }
        if (!kern->supports(&p, why, sizeof why)) {
            /* only the documented fast-path conditions may refuse a shape (and an M outside a small-M kernel's
             * range: may_refuse_m), and the fallback must take it */
            ck_assert_msg(may_refuse_layout(kern, s, layout) || may_refuse_m(kern, s->m),
                          "%s refused a shape it should take: %s", label, why);
            ck_assert(pl_gemm_kernel_fallback()->supports(&p, why, sizeof why));
            printf("n/a  %s: %s\n", label, why);
            continue;
        }
        run_and_verify(e, &p, &ref, label, launch_kernel, (void *)kern, fails, checked);
        if ((kern->flags & PL_GEMM_KERNEL_B_KN) && i < 64)
            kn_runs[i]++;
    }
    /* the library call: its pick among the same kernels */
    {
        pl_gemm_gpu g;
        pl_gemm_pick pick;
        ck_assert(pl_gemm_gpu_query(&g) == cudaSuccess);
        ck_assert_msg(pl_gemm_bf16_pick(&p, &g, &pick) == 0, "%s", pick.why);
        char label[200];
        pl_snprintf(label, sizeof label, "pl_gemm_bf16 (%s) %dx%dx%d %s%s", pick.kernel->name, s->m, s->n, s->k,
                    pl_gemm_layout_name(layout), epilogue ? " +epilogue" : "");
        run_and_verify(e, &p, &ref, label, launch_library, NULL, fails, checked);
    }
    fflush(stdout);
    pl_free_all(ctx);
}

/* The split-K kernels with an explicit split: (tile, swapped) and the splits each is run with (0: the launcher's
 * choice; 3 and 5 split K unevenly; a split over the k-block count is capped at it). */
typedef struct sk_config {
    int tile, swap;
    int kn; /* has a B K×N twin (a _kn row): run with B K×N too */
} sk_config;
static const sk_config sk_configs[] = {{16, 1, 1},
                                       {32, 1, 1},
                                       {64, 1, 1},
                                       {128, 1, 1},
                                       {64, 0, 1},
                                       {128, 0, 1},
                                       {128 | PL_SK_WG2, 0, 1},
                                       {256 | PL_SK_WG2, 0, 0}, /* two warpgroups: splits <= 8 */
                                       {64 | PL_SK_DEEP, 0, 1},
                                       {128 | PL_SK_DEEP, 0, 1}, /* deep rings: splits <= 8 */
                                       {16 | PL_SK_DEEP, 1, 1},
                                       {32 | PL_SK_DEEP, 1, 1},
                                       {200 | PL_SK_WG2, 1, 0}};
#define SK_ONE_CTA (PL_SK_WG2 | PL_SK_DEEP)
static const int sk_splits[] = {0, 1, 2, 3, 5, 8, 12, 16}; /* 12, 16: non-portable clusters */

typedef struct sk_launch_arg {
    int tile, swap, split;
} sk_launch_arg;

static cudaError_t launch_sk(const pl_gemm_problem *p, void *arg, cudaStream_t stream)
{
    const sk_launch_arg *a = arg;
    return pl_gemm_wgmma_sk(p, a->tile, a->swap, a->split, stream);
}

/* Shapes that are no multiple of any of their tiles: M from 1 past 128, N from 8 to past 4096 (edge tiles of 8
 * and of 104 columns: half-width and full), K from one k-block to 14336 (224 k-blocks over up to 16 CTAs). Every N is
 * a multiple of 8, so each shape runs with B N×K and, through the configurations with a K×N twin, B K×N. */
static const shape sk_shapes[] = {
    {1, 4104, 4104}, {13, 1000, 520}, {100, 72, 4104},   {129, 520, 1032},
    {300, 1000, 72}, {17, 8, 8},      {64, 4096, 14336}, {31, 3000, 2056},
};

START_TEST(split_k_every_split)
{
    env e;
    env_init(&e);
    pl_gemm_gpu g;
    ck_assert(pl_gemm_gpu_query(&g) == cudaSuccess);
    if (!pl_gemm_kernel_runs_on(pl_gemm_kernel_find("wgmma_sk_64x128x64"), &g)) {
        printf("skip: the split-K kernels need sm_90a with clusters (cc %d)\n", g.cc);
        cublasDestroy(e.cublas);
        return;
    }
    pl_buf fails = {0};
    int checked = 0;
    for (size_t si = 0; si < sizeof sk_shapes / sizeof sk_shapes[0]; si++)
        for (int run = 0; run < 4; run++) {
            const shape *s = &sk_shapes[si];
            const int epilogue = run % 2 ? EPI_ALL : 0;
            const pl_gemm_b_layout layout = run < 2 ? PL_GEMM_B_NK : PL_GEMM_B_KN;
            if (epilogue && si % 2) /* the fused epilogue in the fix-up on every other shape */
                continue;
            pl_gemm_reference ref;
            pl_gemm_problem p = make_problem(&e, s, layout, epilogue, &ref);
            for (size_t ci = 0; ci < sizeof sk_configs / sizeof sk_configs[0]; ci++) {
                const sk_config *c = &sk_configs[ci];
                if ((c->swap && s->m > 4 * (c->tile & ~SK_ONE_CTA)) || (layout == PL_GEMM_B_KN && !c->kn))
                    continue;
                for (size_t k = 0; k < sizeof sk_splits / sizeof sk_splits[0]; k++) {
                    sk_launch_arg arg = {c->tile, c->swap, sk_splits[k]};
                    if ((c->tile & SK_ONE_CTA) && arg.split > PL_SK_PORTABLE_SPLIT)
                        continue;
                    char label[160];
                    pl_snprintf(label, sizeof label, "split-K %s tile %d%s split %d %dx%dx%d %s%s",
                                c->swap ? "swapped" : "plain", c->tile & ~SK_ONE_CTA,
                                (c->tile & PL_SK_WG2)    ? " (2 warpgroups)"
                                : (c->tile & PL_SK_DEEP) ? " (deep)"
                                                         : "",
                                arg.split, s->m, s->n, s->k, pl_gemm_layout_name(layout), epilogue ? " +epilogue" : "");
                    run_and_verify(&e, &p, &ref, label, launch_sk, &arg, &fails, &checked);
                }
            }
            pl_free_all(&e.ctx);
        }
    /* a tile width the launcher does not have, and a split past the portable cluster size, are refused */
    pl_gemm_reference ref;
    pl_gemm_problem p = make_problem(&e, &sk_shapes[1], PL_GEMM_B_NK, 0, &ref);
    ck_assert_int_eq(pl_gemm_wgmma_sk(&p, 48, 1, 0, e.ctx.stream), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_gemm_wgmma_sk(&p, 64, 0, PL_SK_MAX_SPLIT + 1, e.ctx.stream), cudaErrorInvalidValue);
    ck_assert_int_eq(pl_gemm_wgmma_sk(&p, 128 | PL_SK_WG2, 0, PL_SK_PORTABLE_SPLIT + 1, e.ctx.stream),
                     cudaErrorInvalidValue);
    p.b_layout = PL_GEMM_B_KN; /* a configuration without a B K×N twin */
    ck_assert_int_eq(pl_gemm_wgmma_sk(&p, 200 | PL_SK_WG2, 1, 0, e.ctx.stream), cudaErrorInvalidValue);
    pl_free_all(&e.ctx);
    printf("%d split-K kernel/split/problem triples checked\n", checked);
    ck_assert_msg(fails.len == 0, "failed:\n%s", fails.data);
    ck_assert(checked > 0);
    pl_buf_free(&fails);
    cublasDestroy(e.cublas);
}
END_TEST

START_TEST(every_kernel_every_shape)
{
    env e;
    env_init(&e);
    pl_buf fails = {0};
    int checked = 0;
    memset(kn_runs, 0, sizeof kn_runs);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        check_problem(&e, &shapes[i], PL_GEMM_B_NK, 0, &fails, &checked);
        check_problem(&e, &shapes[i], PL_GEMM_B_KN, 0, &fails, &checked);
    }
    /* the fused epilogue through every kernel: TMA-stored tiles with edges (n % 8 == 0; bias and residual come
     * ahead through TMA), register-stored ones (n odd), and the mma_sync path with B K×N; each operand alone; a
     * single k-block; and several tiles per CTA, so that the operand barriers' phases turn over */
    static const shape one_k_block = {300, 520, 64}, many_tiles = {4096, 4096, 256};
    check_problem(&e, &shapes[0], PL_GEMM_B_NK, EPI_ALL, &fails, &checked);
    check_problem(&e, &shapes[4], PL_GEMM_B_NK, EPI_ALL, &fails, &checked);
    check_problem(&e, &shapes[4], PL_GEMM_B_KN, EPI_ALL, &fails, &checked);
    check_problem(&e, &shapes[9], PL_GEMM_B_NK, EPI_ALL, &fails, &checked);
    check_problem(&e, &shapes[9], PL_GEMM_B_NK, EPI_BIAS, &fails, &checked);
    check_problem(&e, &shapes[9], PL_GEMM_B_NK, EPI_RESIDUAL, &fails, &checked);
    check_problem(&e, &shapes[0], PL_GEMM_B_NK, EPI_GELU, &fails, &checked);
    check_problem(&e, &one_k_block, PL_GEMM_B_NK, EPI_ALL, &fails, &checked);
    check_problem(&e, &many_tiles, PL_GEMM_B_NK, EPI_ALL, &fails, &checked);
    /* the same through the B K×N kernels: edges in N and K, one k-block, the operand barriers turning over */
    check_problem(&e, &shapes[0], PL_GEMM_B_KN, EPI_ALL, &fails, &checked);
    check_problem(&e, &shapes[14], PL_GEMM_B_KN, EPI_BIAS, &fails, &checked);
    check_problem(&e, &shapes[16], PL_GEMM_B_KN, EPI_ALL, &fails, &checked);
    check_problem(&e, &one_k_block, PL_GEMM_B_KN, EPI_ALL, &fails, &checked);
    check_problem(&e, &many_tiles, PL_GEMM_B_KN, EPI_ALL, &fails, &checked);
    /* every B K×N row that runs here verified on several problems (none left out by a refusal nobody checked) */
    for (size_t i = 0; i < pl_gemm_kernel_count() && i < 64; i++) {
        const pl_gemm_kernel *kern = pl_gemm_kernel_at(i);
        const pl_requirements kreq = pl_requirements_of_kernel(kern->needs);
        char why[256];
        if (!(kern->flags & PL_GEMM_KERNEL_B_KN) ||
            !pl_requirements_met(&kreq, &e.dev, e.ctx.device_count, NULL, why, sizeof why))
            continue;
        printf("%s: %d B K×N problems\n", kern->name, kn_runs[i]);
        ck_assert_msg(kn_runs[i] >= KN_MIN_RUNS, "%s verified on %d B K×N problems, fewer than %d", kern->name,
                      kn_runs[i], KN_MIN_RUNS);
    }
    printf("%d kernel/problem pairs checked\n", checked);
    ck_assert_msg(fails.len == 0, "failed:\n%s", fails.data);
    ck_assert(checked > 0);
    pl_buf_free(&fails);
    cublasDestroy(e.cublas);
}
END_TEST

/* Running the same kernel twice on the same inputs gives the same bits: a race would show up as a difference. */
START_TEST(deterministic)
{
    env e;
    env_init(&e);
    pl_ctx *ctx = &e.ctx;
    /* 1000×3000×520, then 2100×1863×600 (the 2-CTA kernels' split tail) */
    static const shape det[] = {{1000, 3000, 520}, {2100, 1863, 600}};
    int m = 0, n = 0, k = 0; /* the largest of each: the buffers hold every problem */
    for (size_t i = 0; i < sizeof det / sizeof det[0]; i++) {
        m = det[i].m > m ? det[i].m : m;
        n = det[i].n > n ? det[i].n : n;
        k = det[i].k > k ? det[i].k : k;
    }
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    uint16_t *a = pl_device_alloc(ctx, (size_t)m * k * 2), *b = pl_device_alloc(ctx, (size_t)n * k * 2);
    uint16_t *d1 = pl_device_alloc(ctx, (size_t)m * n * 2), *d2 = pl_device_alloc(ctx, (size_t)m * n * 2);
    uint16_t *h1 = pl_host_alloc(ctx, (size_t)m * n * 2), *h2 = pl_host_alloc(ctx, (size_t)m * n * 2);
    ck_assert(pl_fill_uniform_bf16(ctx, a, (size_t)m * k, -1, 1, 1) == 0);
    ck_assert(pl_fill_uniform_bf16(ctx, b, (size_t)n * k, -1, 1, 2) == 0);
    p.a = a;
    p.b = b;
    uint16_t *bias = pl_device_alloc(ctx, (size_t)n * 2), *res = pl_device_alloc(ctx, (size_t)m * n * 2);
    ck_assert(pl_fill_uniform_bf16(ctx, bias, (size_t)n, -1, 1, 3) == 0);
    ck_assert(pl_fill_uniform_bf16(ctx, res, (size_t)m * n, -1, 1, 4) == 0);
    /* plain, then with the epilogue's operands loaded ahead; B N×K, then K×N (the _kn kernels where N % 8 == 0) */
    for (int run = 0; run < 8; run++) {
        const int fused = run % 2;
        p.m = det[run / 4].m;
        p.n = det[run / 4].n;
        p.k = det[run / 4].k;
        p.b_layout = run % 4 < 2 ? PL_GEMM_B_NK : PL_GEMM_B_KN;
        p.epi.bias = fused ? bias : NULL;
        p.epi.residual = fused ? res : NULL;
        p.epi.gelu = fused;
        for (size_t i = 0; i < pl_gemm_kernel_count(); i++) {
            const pl_gemm_kernel *kern = pl_gemm_kernel_at(i);
            const pl_requirements kreq = pl_requirements_of_kernel(kern->needs);
            char why[256];
            if (!pl_requirements_met(&kreq, &e.dev, ctx->device_count, NULL, why, sizeof why) ||
                !kern->supports(&p, why, sizeof why))
                continue;
            p.d = d1;
            ck_assert(kern->launch(&p, ctx->stream) == cudaSuccess);
            p.d = d2;
            ck_assert(kern->launch(&p, ctx->stream) == cudaSuccess);
            const size_t bytes = (size_t)p.m * p.n * 2;
            ck_assert(cudaMemcpy(h1, d1, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            ck_assert(cudaMemcpy(h2, d2, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            ck_assert_msg(memcmp(h1, h2, bytes) == 0, "%s%s %s %dx%dx%d gives different results on the same inputs",
                          kern->name, fused ? " (fused)" : "", pl_gemm_layout_name(p.b_layout), p.m, p.n, p.k);
        }
    }
    /* the split-K fix-up adds the partials in rank order: every split gives the same bits on every run */
    {
        pl_gemm_gpu g;
        ck_assert(pl_gemm_gpu_query(&g) == cudaSuccess);
        p.epi.bias = NULL;
        p.epi.residual = NULL;
        p.epi.gelu = 0;
        p.n = det[0].n;
        p.k = det[0].k;
        for (size_t ci = 0; pl_gemm_kernel_runs_on(pl_gemm_kernel_find("wgmma_sk_64x128x64"), &g) &&
                            ci < 2 * (sizeof sk_configs / sizeof sk_configs[0]);
             ci++)
            for (int split = 2; split <= PL_SK_MAX_SPLIT; split += 3) {
                /* each configuration with B N×K, then those with a twin with B K×N */
                const size_t nc = sizeof sk_configs / sizeof sk_configs[0];
                const sk_config *c = &sk_configs[ci % nc];
                p.b_layout = ci < nc ? PL_GEMM_B_NK : PL_GEMM_B_KN;
                if (((c->tile & SK_ONE_CTA) && split > PL_SK_PORTABLE_SPLIT) || (ci >= nc && !c->kn))
                    continue;
                p.m = c->swap ? 4 * (c->tile & ~SK_ONE_CTA) - 3 : det[0].m;
                p.d = d1;
                ck_assert(pl_gemm_wgmma_sk(&p, c->tile, c->swap, split, ctx->stream) == cudaSuccess);
                p.d = d2;
                ck_assert(pl_gemm_wgmma_sk(&p, c->tile, c->swap, split, ctx->stream) == cudaSuccess);
                ck_assert(cudaMemcpy(h1, d1, (size_t)p.m * n * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
                ck_assert(cudaMemcpy(h2, d2, (size_t)p.m * n * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
                ck_assert_msg(memcmp(h1, h2, (size_t)p.m * n * 2) == 0,
                              "split-K tile %d%s split %d %s gives different results on the same inputs",
                              c->tile & ~SK_ONE_CTA, c->swap ? " swapped" : "", split, pl_gemm_layout_name(p.b_layout));
            }
    }
    pl_free_all(ctx);
    cublasDestroy(e.cublas);
}
END_TEST

/* The decode GEMV kernels (portable/gemv_mma.cu, B N×K) on M from 1 to 64 (each kernel on the Ms it takes), N not a
 * multiple of their 16 rows, K from one 8-element piece to 14336 and not a multiple of their 64-k chunks (nor of a
 * CTA's 8 warps), the fused epilogue on every other shape; each run twice for the same bits. */
static const shape gemv_shapes[] = {
    {1, 4104, 4104}, {13, 1000, 520}, {31, 3000, 2056}, {8, 17, 8},    {16, 4096, 14336}, {32, 520, 1032},
    {2, 8, 4096},    {9, 7, 64},      {24, 33, 72},     {1, 129, 24},  {64, 1000, 4104},  {57, 4100, 520},
    {40, 3, 136},    {3, 584, 8},     {32, 576, 7176},  {17, 8, 2056},
};

START_TEST(decode_gemv)
{
    env e;
    env_init(&e);
    pl_buf fails = {0};
    int checked = 0;
    for (size_t si = 0; si < sizeof gemv_shapes / sizeof gemv_shapes[0]; si++) {
        const shape *s = &gemv_shapes[si];
        const int epilogue = si % 2 ? 0 : EPI_ALL;
        pl_gemm_reference ref;
        pl_gemm_problem p = make_problem(&e, s, PL_GEMM_B_NK, epilogue, &ref);
        uint16_t *h1 = pl_host_alloc(&e.ctx, (size_t)s->m * s->n * 2),
                 *h2 = pl_host_alloc(&e.ctx, (size_t)s->m * s->n * 2);
        ck_assert(h1 && h2);
        for (size_t i = 0; i < pl_gemm_kernel_count(); i++) {
            const pl_gemm_kernel *kern = pl_gemm_kernel_at(i);
            char why[256], label[160];
            if (!(kern->flags & PL_GEMM_KERNEL_SMALL_M))
                continue;
            if (s->m > kern->tile_m) {
                ck_assert(!kern->supports(&p, why, sizeof why));
                ck_assert_msg(strstr(why, "takes M <=") != NULL, "%s", why);
                ck_assert_int_eq(kern->launch(&p, e.ctx.stream), cudaErrorInvalidValue);
                continue;
            }
            ck_assert_msg(kern->supports(&p, why, sizeof why), "%s refused %dx%dx%d: %s", kern->name, s->m, s->n, s->k,
                          why);
            pl_snprintf(label, sizeof label, "%s %dx%dx%d nk%s", kern->name, s->m, s->n, s->k,
                        epilogue ? " +epilogue" : "");
            verify_twice(&e, kern, &p, &ref, label, h1, h2, &fails, &checked);
        }
        pl_free_all(&e.ctx);
    }
    printf("%d decode GEMV kernel/problem pairs checked\n", checked);
    ck_assert_msg(fails.len == 0, "failed:\n%s", fails.data);
    ck_assert(checked > 0);
    pl_buf_free(&fails);
    cublasDestroy(e.cublas);
}
END_TEST

/* On-device tuning (gemm/tune.h): an in-place residual problem (D = A·B + D) tuned leaves D as it was, and the tuned
 * pick then computes it right; autotune makes pl_gemm_bf16 tune a new class and compute it right; a capturing stream is
 * never tuned (the capture succeeds and its replay is right). */
START_TEST(tuned_pick)
{
    env e;
    env_init(&e);
    pl_ctx *ctx = &e.ctx;
    pl_buf fails = {0};
    int checked = 0;
    pl_gemm_tune_clear();
    /* in place: the reference of A·B + R, then D = R */
    const shape in_place = {333, 4100, 1032};
    pl_gemm_reference ref;
    pl_gemm_problem p = make_problem(&e, &in_place, PL_GEMM_B_NK, EPI_RESIDUAL, &ref);
    const size_t bytes = (size_t)p.m * p.n * 2;
    uint16_t *before = pl_host_alloc(ctx, bytes), *after = pl_host_alloc(ctx, bytes);
    ck_assert(before && after);
    p.d = (uint16_t *)p.epi.residual;
    ck_assert(cudaMemcpy(before, p.d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    pl_gemm_tune_result r;
    const cudaError_t te = pl_gemm_bf16_tune(&p, ctx->stream, NULL, &r);
    ck_assert_msg(te == cudaSuccess, "%s", cudaGetErrorString(te));
    ck_assert_msg(r.kernel && r.timed >= 2 && r.us > 0, "timed %d", r.timed);
    printf("tuned 333x4100x1032 +residual in place: %s %.1f us over %d candidates (the model's pick %s %.1f us)\n",
           r.kernel->name, r.us, r.timed, r.model_pick ? r.model_pick->name : "-", r.model_pick_us);
    ck_assert(cudaMemcpy(after, p.d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    ck_assert_msg(memcmp(before, after, bytes) == 0, "tuning wrote the in-place D (the residual)");
    pl_gemm_gpu g;
    pl_gemm_pick pick;
    ck_assert(pl_gemm_gpu_query(&g) == cudaSuccess);
    ck_assert(pl_gemm_bf16_pick(&p, &g, &pick) == 0 && pick.tuned && pick.kernel == r.kernel);
    ck_assert(pl_gemm_bf16(&p, ctx->stream) == cudaSuccess && cudaStreamSynchronize(ctx->stream) == cudaSuccess);
    double rtol, atol;
    pl_gemm_elementwise_tolerance(PL_DTYPE_BF16, &rtol, &atol);
    pl_verification v;
    ck_assert_msg(pl_gemm_verify(ctx, &ref, p.d, PL_DTYPE_BF16, 0, rtol, atol, &v) == 0, "%s", ctx->error);
    ck_assert_msg(v.passed, "the tuned kernel in place: %s", v.message);
    /* autotune: a new class is tuned by its first pl_gemm_bf16 call, and computed right */
    pl_gemm_set_autotune(1);
    const shape fresh = {77, 2056, 4104};
    pl_gemm_problem q = make_problem(&e, &fresh, PL_GEMM_B_NK, 0, &ref);
    run_and_verify(&e, &q, &ref, "pl_gemm_bf16 autotuned 77x2056x4104", launch_library, NULL, &fails, &checked);
    ck_assert(pl_gemm_bf16_pick(&q, &g, &pick) == 0 && pick.tuned);
    /* captured: not tuned, the graph right */
    const shape captured = {129, 520, 1032};
    pl_gemm_problem c = make_problem(&e, &captured, PL_GEMM_B_NK, 0, &ref);
    ck_assert(pl_poison(ctx, c.d, (size_t)c.m * c.n * 2) == 0 && cudaStreamSynchronize(ctx->stream) == cudaSuccess);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    ck_assert(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    const cudaError_t ce = pl_gemm_bf16(&c, ctx->stream);
    ck_assert(cudaStreamEndCapture(ctx->stream, &graph) == cudaSuccess);
    ck_assert_msg(ce == cudaSuccess, "pl_gemm_bf16 under capture with autotune: %s", cudaGetErrorString(ce));
    ck_assert(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    ck_assert(cudaGraphLaunch(exec, ctx->stream) == cudaSuccess && cudaStreamSynchronize(ctx->stream) == cudaSuccess);
    ck_assert(pl_gemm_bf16_pick(&c, &g, &pick) == 0 && !pick.tuned);
    ck_assert_msg(pl_gemm_verify(ctx, &ref, c.d, PL_DTYPE_BF16, 0, rtol, atol, &v) == 0, "%s", ctx->error);
    ck_assert_msg(v.passed, "captured under autotune: %s", v.message);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    pl_gemm_set_autotune(0);
    pl_gemm_tune_clear();
    ck_assert_msg(fails.len == 0, "failed:\n%s", fails.data);
    pl_buf_free(&fails);
    pl_free_all(ctx);
    cublasDestroy(e.cublas);
}
END_TEST

/* pl_gemm_compare_rows scales each element's bound by its own row: three rows of 130 (no multiple of a warp) at
 * scales 1, 100 and 0.01, the output the reference rounded to bf16, one element of the large row and one of the
 * small row moved by 0.05, one element of the first left at the poison: the small row's is a violation (0.05 against
 * 0.01/16), the large row's is not (against 100/16), the poisoned one unwritten; against the whole tensor's RMS
 * (pl_gemm_compare, ~58/16) neither is. */
START_TEST(compare_rows)
{
    enum { ROWS = 3, LEN = 130, N = ROWS * LEN };
    static const double scale[ROWS] = {1.0, 100.0, 0.01};
    float ref[N];
    uint16_t out[N];
    uint64_t st = 20261128;
    double sq = 0;
    for (int i = 0; i < N; i++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        ref[i] = (float)(scale[i / LEN] * (((double)(st >> 11) / 9007199254740992.0) * 2.0 - 1.0));
        out[i] = pl_bf16_round_host(ref[i]);
        sq += (double)ref[i] * ref[i];
    }
    out[LEN + 7] = pl_bf16_round_host(ref[LEN + 7] + 0.05f);
    out[2 * LEN + 11] = pl_bf16_round_host(ref[2 * LEN + 11] + 0.05f);
    out[3] = 0xFFFFu;
    float *ref_d;
    uint16_t *out_d;
    void *scratch;
    ck_assert(cudaMalloc((void **)&ref_d, sizeof ref) == cudaSuccess);
    ck_assert(cudaMalloc((void **)&out_d, sizeof out) == cudaSuccess);
    ck_assert(cudaMalloc(&scratch, pl_gemm_diff_scratch_bytes()) == cudaSuccess);
    ck_assert(cudaMemcpy(ref_d, ref, sizeof ref, cudaMemcpyHostToDevice) == cudaSuccess);
    ck_assert(cudaMemcpy(out_d, out, sizeof out, cudaMemcpyHostToDevice) == cudaSuccess);
    pl_gemm_diff rows, whole;
    ck_assert(pl_gemm_compare_rows(out_d, 0, ref_d, ROWS, LEN, 1.0 / 64, 1.0 / 16, scratch, &rows, 0) == cudaSuccess);
    ck_assert(pl_gemm_compare(out_d, 0, ref_d, N, 1.0 / 64, sqrt(sq / N) / 16, scratch, &whole, 0) == cudaSuccess);
    ck_assert_int_eq((int)rows.unwritten, 1);
    ck_assert_int_eq((int)rows.violations, 1);
    ck_assert_int_eq((int)whole.unwritten, 1);
    ck_assert_int_eq((int)whole.violations, 0);
    ck_assert(pl_gemm_compare_rows(out_d, 0, ref_d, ROWS, 0, 1.0 / 64, 1.0 / 16, scratch, &rows, 0) ==
              cudaErrorInvalidValue);
    cudaFree(ref_d), cudaFree(out_d), cudaFree(scratch);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_kernels");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_kernel_every_shape);
    tcase_add_test(tc, deterministic);
    tcase_add_test(tc, split_k_every_split);
    tcase_add_test(tc, decode_gemv);
    tcase_add_test(tc, tuned_pick);
    tcase_add_test(tc, compare_rows);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
