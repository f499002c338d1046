/* On a GPU: every GEMM kernel of the registry against the reference (float64 on the host for small shapes, cuBLAS
 * fp32 for the others) on shapes that are no multiple of any tile, both B layouts, with and without the fused
 * epilogue; kernels that cannot take a shape must say why, and the fallback must take it. Exits 77 without a GPU. */
#include <stdio.h>
#include <string.h>

#include "core/devprobe.h"
#include "core/util.h"
#include "common/gemm_host.h"
#include "common/kernel_req.h"
#include "perflab/device.h"
#include "testutil.h"

typedef struct shape {
    int m, n, k;
} shape;

static const shape shapes[] = {
    {1000, 3000, 520}, /* the odd shape: no dimension a multiple of 128 */
    {1, 1, 1},         {17, 33, 65},     {64, 80, 40},       {257, 129, 72},     {128, 256, 64}, {300, 200, 136},
    {16, 4096, 1024},  {129, 520, 1000}, {2048, 2048, 1024}, {1024, 1000, 4104}, {33, 17, 8},
};

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

/* One problem against every kernel; failures are appended to `fails`. */
static void check_problem(env *e, const shape *s, pl_gemm_b_layout layout, int epilogue, pl_buf *fails, int *checked)
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
    pl_gemm_reference ref;
    ck_assert_msg(pl_gemm_reference_make(ctx, e->cublas, &p, PL_DTYPE_BF16, &ref) == 0, "%s", ctx->error);
    double rtol, atol;
    pl_gemm_elementwise_tolerance(PL_DTYPE_BF16, &rtol, &atol);
    for (size_t i = 0; i < pl_gemm_kernel_count(); i++) {
        const pl_gemm_kernel *kern = pl_gemm_kernel_at(i);
        const pl_requirements kreq = pl_requirements_of_kernel(kern->needs);
        char why[256];
        char label[160];
        pl_snprintf(label, sizeof label, "%s %dx%dx%d %s%s%s%s", kern->name, s->m, s->n, s->k,
                    pl_gemm_layout_name(layout), epilogue & EPI_BIAS ? " +bias" : "", epilogue & EPI_GELU ? " +gelu" : "",
                    epilogue & EPI_RESIDUAL ? " +residual" : "");
        if (!pl_requirements_met(&kreq, &e->dev, ctx->device_count, NULL, why, sizeof why)) {
            printf("skip %s: %s\n", label, why);
            continue;
        }
        if (!kern->supports(&p, why, sizeof why)) {
            /* only the documented fast-path conditions may refuse a shape, and the fallback must take it */
            ck_assert_msg(layout == PL_GEMM_B_KN || s->k % 8 != 0, "%s refused a shape it should take: %s", label, why);
            ck_assert(pl_gemm_kernel_fallback()->supports(&p, why, sizeof why));
            printf("n/a  %s: %s\n", label, why);
            continue;
        }
        ck_assert(pl_poison(ctx, p.d, m * n * 2) == 0);
        cudaError_t err = kern->launch(&p, ctx->stream);
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(ctx->stream);
        ck_assert_msg(err == cudaSuccess, "%s: %s", label, cudaGetErrorString(err));
        pl_verification v;
        ck_assert_msg(pl_gemm_verify(ctx, &ref, p.d, PL_DTYPE_BF16, 0, rtol, atol, &v) == 0, "%s", ctx->error);
        printf("%s %s: %s\n", v.passed ? "ok  " : "FAIL", label, v.message);
        ++*checked;
        if (!v.passed)
            pl_buf_printf(fails, "%s: %s\n", label, v.message);
    }
    fflush(stdout);
    pl_free_all(ctx);
}

START_TEST(every_kernel_every_shape)
{
    env e;
    env_init(&e);
    pl_buf fails = {0};
    int checked = 0;
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
    const int m = 1000, n = 3000, k = 520;
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.n = n;
    p.k = k;
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
    for (int fused = 0; fused < 2; fused++) { /* plain, then with the epilogue's operands loaded ahead */
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
            ck_assert(cudaMemcpy(h1, d1, (size_t)m * n * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
            ck_assert(cudaMemcpy(h2, d2, (size_t)m * n * 2, cudaMemcpyDeviceToHost) == cudaSuccess);
            ck_assert_msg(memcmp(h1, h2, (size_t)m * n * 2) == 0, "%s%s gives different results on the same inputs",
                          kern->name, fused ? " (fused)" : "");
        }
    }
    pl_free_all(ctx);
    cublasDestroy(e.cublas);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gemm_kernels");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, every_kernel_every_shape);
    tcase_add_test(tc, deterministic);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!pl_test_have_gpu())
        return 77;
    return pl_run_suite(suite());
}
