#include "common/gemm_lab.h"

#include <stdio.h>
#include <string.h>

#include "perflab/text.h"

#define STREAM_A        11 /* per-buffer seed streams of the random inputs */
#define STREAM_B        12
#define STREAM_BIAS     13
#define STREAM_RESIDUAL 14

static int declared(const pl_params *p, const char *name)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->values[i].def->name, name) == 0)
            return 1;
    return 0;
}

static int has_residual(const pl_params *p, unsigned flags)
{
    return (flags & GEMM_LAB_EPILOGUE) && declared(p, "residual") && pl_param_bool(p, "residual");
}

void gemm_lab_counters(const pl_params *p, unsigned flags, pl_counters *c)
{
    const double m = (double)pl_param_int(p, "m"), n = (double)pl_param_int(p, "n"), k = (double)pl_param_int(p, "k");
    c->flops = 2.0 * m * n * k;
    c->bytes_read = 2.0 * (m * k + n * k);
    if (flags & GEMM_LAB_EPILOGUE)
        c->bytes_read += 2.0 * n + (has_residual(p, flags) ? 2.0 * m * n : 0.0);
    c->bytes_written = 2.0 * m * n;
    c->elements = m * n;
}

int gemm_lab_setup(pl_ctx *ctx, const pl_params *params, unsigned flags, void **state)
{
    gemm_lab *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    pl_gemm_problem *p = &s->p;
    p->m = (int)pl_param_int(params, "m");
    p->n = (int)pl_param_int(params, "n");
    p->k = (int)pl_param_int(params, "k");
    if (declared(params, "kernel"))
        pl_snprintf(s->kernel, sizeof s->kernel, "%s", pl_param_str(params, "kernel"));
    p->b_layout = declared(params, "layout")
                      ? (pl_gemm_b_layout)pl_gemm_layout_from_name(pl_param_str(params, "layout"))
                      : PL_GEMM_B_NK;
    const size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k;
    uint16_t *a = pl_device_alloc(ctx, m * k * 2), *b = pl_device_alloc(ctx, n * k * 2);
    p->d = pl_device_alloc(ctx, m * n * 2);
    if (!a || !b || !p->d)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, a, m * k, -1.0f, 1.0f, STREAM_A));
    PL_TRY(pl_fill_uniform_bf16(ctx, b, n * k, -1.0f, 1.0f, STREAM_B));
    p->a = a;
    p->b = b;
    if (flags & GEMM_LAB_EPILOGUE) {
        uint16_t *bias = pl_device_alloc(ctx, n * 2);
        if (!bias)
            return -1;
        PL_TRY(pl_fill_uniform_bf16(ctx, bias, n, -1.0f, 1.0f, STREAM_BIAS));
        p->epi.bias = bias;
        p->epi.gelu = 1;
        if (has_residual(params, flags)) {
            uint16_t *res = pl_device_alloc(ctx, m * n * 2);
            if (!res)
                return -1;
            PL_TRY(pl_fill_uniform_bf16(ctx, res, m * n, -1.0f, 1.0f, STREAM_RESIDUAL));
            p->epi.residual = res;
        }
    }
    if ((flags & GEMM_LAB_UNFUSED) && !(s->product = pl_device_alloc(ctx, m * n * 2)))
        return -1;
    PL_CUBLAS(ctx, cublasCreate(&s->cublas));
    if (pl_gemm_reference_make(ctx, s->cublas, p, PL_DTYPE_BF16, &s->ref) != 0) {
        cublasDestroy(s->cublas);
        return -1;
    }
    *state = s;
    return 0;
}

int gemm_lab_poison(pl_ctx *ctx, void *state)
{
    gemm_lab *s = state;
    return pl_poison(ctx, s->p.d, (size_t)s->p.m * s->p.n * 2);
}

int gemm_lab_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    gemm_lab *s = state;
    double rtol, atol;
    pl_gemm_elementwise_tolerance(PL_DTYPE_BF16, &rtol, &atol);
    return pl_gemm_verify(ctx, &s->ref, s->p.d, PL_DTYPE_BF16, 0.0, rtol, atol, v);
}

void gemm_lab_teardown(pl_ctx *ctx, void *state)
{
    gemm_lab *s = state;
    cublasDestroy(s->cublas);
}

int gemm_lab_native(pl_ctx *ctx, gemm_lab *lab, const char *name, int fused)
{
    const pl_gemm_kernel *k = pl_gemm_kernel_find(name);
    if (!k)
        return pl_fail(ctx, "no GEMM kernel named '%s' in the kernel table", name);
    pl_gemm_problem q = lab->p;
    if (!fused) {
        memset(&q.epi, 0, sizeof q.epi);
        if (lab->product)
            q.d = lab->product;
    }
    char why[256];
    if (!k->supports(&q, why, sizeof why)) {
        /* B K×N: the kernel's twin that reads it (the name with _kn), where there is one and it takes the shape */
        char twin_name[96];
        pl_snprintf(twin_name, sizeof twin_name, "%s_kn", name);
        const pl_gemm_kernel *twin = q.b_layout == PL_GEMM_B_KN ? pl_gemm_kernel_find(twin_name) : NULL;
        char twin_why[256];
        const pl_gemm_kernel *fb =
            twin && twin->supports(&q, twin_why, sizeof twin_why) ? twin : pl_gemm_kernel_fallback();
        const uint64_t bit = (uint64_t)1 << pl_gemm_kernel_index(k);
        if (!(lab->warned & bit)) {
            fprintf(stderr, "perflab: %s cannot take this shape (%s); running %s instead\n", name, why, fb->name);
            lab->warned |= bit;
        }
        k = fb;
    }
    PL_CUDA(ctx, k->launch(&q, ctx->stream));
    return 0;
}

int gemm_lab_cublas(pl_ctx *ctx, gemm_lab *lab, uint16_t *d)
{
    const pl_gemm_problem *p = &lab->p;
    PL_CUBLAS(ctx, cublasSetStream(lab->cublas, ctx->stream));
    PL_CUBLAS(ctx, pl_gemm_cublas(lab->cublas, p->m, p->n, p->k, p->b_layout, p->a, p->b, CUDA_R_16BF, d, CUDA_R_16BF));
    return 0;
}

int gemm_lab_epilogue_pass(pl_ctx *ctx, gemm_lab *lab)
{
    PL_CUDA(ctx, pl_gemm_bias_gelu(lab->product, lab->p.d, lab->p.m, lab->p.n, &lab->p.epi, ctx->stream));
    return 0;
}
