/* The reference a GEMM output is judged by, and the judgement. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gemm_host.h"
#include "perflab/device.h"
#include "perflab/text.h"

static double to_double(uint16_t bits, pl_dtype dt)
{
    return dt == PL_DTYPE_F16 ? pl_f16_to_double(bits) : pl_bf16_to_double(bits);
}

static int copy_back(pl_ctx *ctx, uint16_t **host, const uint16_t *dev, size_t n)
{
    *host = pl_host_alloc(ctx, n * sizeof **host);
    if (!*host)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(*host, dev, n * sizeof **host, cudaMemcpyDeviceToHost, ctx->stream));
    return 0;
}

/* Small problems: every product and sum in float64 from the inputs as the GPU holds them. */
static int host_reference(pl_ctx *ctx, const pl_gemm_problem *p, pl_dtype dt, float *ref_dev)
{
    const size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k;
    uint16_t *a, *b, *bias = NULL, *res = NULL;
    PL_TRY(copy_back(ctx, &a, p->a, m * k));
    PL_TRY(copy_back(ctx, &b, p->b, n * k));
    if (p->epi.bias)
        PL_TRY(copy_back(ctx, &bias, p->epi.bias, n));
    if (p->epi.residual)
        PL_TRY(copy_back(ctx, &res, p->epi.residual, m * n));
    float *ref = pl_host_alloc(ctx, m * n * sizeof *ref);
    double *arow = pl_host_alloc(ctx, k * sizeof *arow);
    if (!ref || !arow)
        return -1;
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < m; i++) {
        for (size_t kk = 0; kk < k; kk++)
            arow[kk] = to_double(a[i * k + kk], dt);
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t kk = 0; kk < k; kk++) {
                const uint16_t bb = p->b_layout == PL_GEMM_B_NK ? b[j * k + kk] : b[kk * n + j];
                s += arow[kk] * to_double(bb, dt);
            }
            if (bias)
                s += pl_bf16_to_double(bias[j]);
            if (p->epi.gelu)
                s = 0.5 * s * (1.0 + tanh(0.79788456080286535588 * (s + 0.044715 * s * s * s)));
            if (res)
                s += pl_bf16_to_double(res[i * n + j]);
            ref[i * n + j] = (float)s;
        }
    }
    PL_CUDA(ctx, cudaMemcpyAsync(ref_dev, ref, m * n * sizeof *ref, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

int pl_gemm_reference_make(pl_ctx *ctx, cublasHandle_t h, const pl_gemm_problem *p, pl_dtype ab_dtype,
                           pl_gemm_reference *out)
{
    memset(out, 0, sizeof *out);
    char why[256];
    if (!pl_gemm_problem_valid(p, why, sizeof why))
        return pl_fail(ctx, "GEMM reference: %s", why);
    out->elems = (size_t)p->m * (size_t)p->n;
    out->ref = pl_device_alloc(ctx, out->elems * sizeof(float));
    out->scratch = pl_device_alloc(ctx, pl_gemm_diff_scratch_bytes());
    if (!out->ref || !out->scratch)
        return -1;
    const double macs = (double)p->m * p->n * p->k;
    if (macs <= PL_GEMM_HOST_REFERENCE_MACS) {
        PL_TRY(host_reference(ctx, p, ab_dtype, out->ref));
        snprintf(out->how, sizeof out->how, "float64 host reference");
    } else {
        const cudaDataType t = ab_dtype == PL_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
        PL_CUBLAS(ctx, cublasSetStream(h, ctx->stream));
        PL_CUBLAS(ctx, pl_gemm_cublas(h, p->m, p->n, p->k, p->b_layout, p->a, p->b, t, out->ref, CUDA_R_32F));
        if (p->epi.bias || p->epi.residual || p->epi.gelu)
            PL_CUDA(ctx, pl_gemm_epilogue_reference_f32(out->ref, p->m, p->n, &p->epi, ctx->stream));
        snprintf(out->how, sizeof out->how, "cuBLAS fp32-accumulated reference%s",
                 p->epi.bias || p->epi.residual || p->epi.gelu ? ", epilogue in float64" : "");
    }
    PL_CUDA(ctx, pl_gemm_rms_f32(out->ref, out->elems, out->scratch, &out->rms, ctx->stream));
    return 0;
}

void pl_gemm_elementwise_tolerance(pl_dtype in_dtype, double *rtol, double *atol_rms)
{
    *rtol = 1.0 / 128;
    *atol_rms = in_dtype == PL_DTYPE_FP8 ? 1.0 / 16 : 1.0 / 128;
}

int pl_gemm_verify(pl_ctx *ctx, const pl_gemm_reference *r, const uint16_t *out, pl_dtype out_dtype, double tolerance,
                   double rtol, double atol_rms, pl_verification *v)
{
    pl_gemm_diff d;
    const int f16 = out_dtype == PL_DTYPE_F16;
    if (r->row_len > 0)
        PL_CUDA(ctx, pl_gemm_compare_rows(out, f16, r->ref, r->elems / (size_t)r->row_len, r->row_len, rtol, atol_rms,
                                          r->scratch, &d, ctx->stream));
    else
        PL_CUDA(ctx, pl_gemm_compare(out, f16, r->ref, r->elems, rtol, atol_rms * r->rms, r->scratch, &d, ctx->stream));
    char atol[48];
    if (r->row_len > 0)
        snprintf(atol, sizeof atol, "%.4g·rms(row)", atol_rms);
    else
        snprintf(atol, sizeof atol, "%.4g", atol_rms * r->rms);
    memset(v, 0, sizeof *v);
    v->checked = 1;
    v->dtype = out_dtype;
    v->tolerance = tolerance > 0 ? tolerance : pl_default_tolerance(out_dtype);
    v->rel_l2_error = d.ref_sq > 0 ? sqrt(d.err_sq / d.ref_sq) : (d.err_sq > 0 ? INFINITY : 0.0);
    v->max_abs_error = d.max_abs;
    v->max_error_index = (size_t)d.max_index;
    v->elements = r->elems;
    v->nonfinite = (size_t)d.nonfinite;
    v->unwritten = (size_t)d.unwritten;
    if (d.unwritten)
        pl_snprintf(v->message, sizeof v->message, "%llu of %zu elements never written", d.unwritten, r->elems);
    else if (d.nonfinite)
        pl_snprintf(v->message, sizeof v->message, "%llu of %zu elements are NaN or Inf", d.nonfinite, r->elems);
    else if (v->rel_l2_error > v->tolerance)
        pl_snprintf(v->message, sizeof v->message, "relative L2 error %.3g > %.3g (max |err| %.4g at %zu; %s)",
                    v->rel_l2_error, v->tolerance, v->max_abs_error, v->max_error_index, r->how);
    else if (d.violations)
        pl_snprintf(v->message, sizeof v->message,
                    "%llu of %zu elements beyond %.4g·|ref| + %s (max |err| %.4g at %zu) though the L2 error %.3g "
                    "passes (%s)",
                    d.violations, r->elems, rtol, atol, v->max_abs_error, v->max_error_index, v->rel_l2_error, r->how);
    else {
        v->passed = 1;
        pl_snprintf(v->message, sizeof v->message, "rel L2 %.2e <= %.0e, every element within %.4g·|ref| + %s (%s)",
                    v->rel_l2_error, v->tolerance, rtol, atol, r->how);
    }
    return 0;
}
