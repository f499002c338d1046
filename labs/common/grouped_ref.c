#include "common/grouped_ref.h"

#include <stdio.h>
#include <string.h>

#include "perflab/device.h"

/* Every product and sum in float64 from the bf16 inputs as the GPU holds them. */
static int host_reference(pl_ctx *ctx, const int *offsets, int groups, int n, int k, const uint16_t *a_dev,
                          const uint16_t *b_dev, float *ref_dev)
{
    const size_t rows = (size_t)offsets[groups], nk = (size_t)n * k;
    uint16_t *a = pl_host_alloc(ctx, rows * k * 2 + 2), *b = pl_host_alloc(ctx, (size_t)groups * nk * 2);
    float *ref = pl_host_alloc(ctx, rows * n * sizeof *ref + 4);
    double *arow = pl_host_alloc(ctx, (size_t)k * sizeof *arow);
    if (!a || !b || !ref || !arow)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(a, a_dev, rows * k * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(b, b_dev, (size_t)groups * nk * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (int g = 0; g < groups; g++)
        for (size_t i = (size_t)offsets[g]; i < (size_t)offsets[g + 1]; i++) {
            for (int kk = 0; kk < k; kk++)
                arow[kk] = pl_bf16_to_double(a[i * k + kk]);
            const uint16_t *bg = b + (size_t)g * nk;
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int kk = 0; kk < k; kk++)
                    s += arow[kk] * pl_bf16_to_double(bg[(size_t)j * k + kk]);
                ref[i * n + j] = (float)s;
            }
        }
    PL_CUDA(ctx, cudaMemcpyAsync(ref_dev, ref, rows * n * sizeof *ref, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

int pl_grouped_reference_make(pl_ctx *ctx, cublasHandle_t h, const int *offsets, int groups, int n, int k,
                              const uint16_t *a, const uint16_t *b, pl_gemm_reference *out)
{
    memset(out, 0, sizeof *out);
    const int rows = offsets[groups];
    out->elems = (size_t)rows * (size_t)n;
    out->ref = pl_device_alloc(ctx, out->elems * sizeof(float) + 4);
    out->scratch = pl_device_alloc(ctx, pl_gemm_diff_scratch_bytes());
    if (!out->ref || !out->scratch)
        return -1;
    const double macs = (double)rows * n * k, b_elems = (double)groups * n * k;
    if (macs <= PL_GEMM_HOST_REFERENCE_MACS && b_elems <= PL_GEMM_HOST_REFERENCE_MACS) {
        PL_TRY(host_reference(ctx, offsets, groups, n, k, a, b, out->ref));
        snprintf(out->how, sizeof out->how, "float64 host reference");
    } else {
        PL_CUBLAS(ctx, cublasSetStream(h, ctx->stream));
        for (int g = 0; g < groups; g++) {
            const int m = offsets[g + 1] - offsets[g];
            if (m == 0)
                continue;
            PL_CUBLAS(ctx, pl_gemm_cublas(h, m, n, k, PL_GEMM_B_NK, a + (size_t)offsets[g] * k, b + (size_t)g * n * k,
                                          CUDA_R_16BF, out->ref + (size_t)offsets[g] * n, CUDA_R_32F));
        }
        snprintf(out->how, sizeof out->how, "cuBLAS fp32-accumulated reference, one GEMM per group");
    }
    PL_CUDA(ctx, pl_gemm_rms_f32(out->ref, out->elems, out->scratch, &out->rms, ctx->stream));
    return 0;
}
