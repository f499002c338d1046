/* Attention backward, baseline — unfused, the way a user writes it from library calls: every seq×seq intermediate
 * goes through device memory.
 *   1. S = Q·Kᵀ with cuBLAS (fp32 S, the forward baseline's call), then P = exp(scale·S − LSE) as bf16 (a kernel;
 *      the LSE is what the forward wrote, so no max or sum is recomputed),
 *   2. dV = Pᵀ·dO with cuBLAS into an fp32 accumulator (the query heads of a GQA group add into it, beta = 1),
 *   3. dP = dO·Vᵀ with cuBLAS (fp32, into S's buffer), D = rowsum(dO ∘ O) (a kernel, a warp a row),
 *   4. dS = P ∘ (dP − D) as bf16 (a kernel, over P's buffer),
 *   5. dQ = scale·dS·K and dK = scale·dSᵀ·Q with cuBLAS (dK accumulated in fp32 over the group), and the fp32
 *      accumulators of dK and dV converted to bf16.
 * Traffic per score: S written and read (8 bytes), P written and read twice (6), dP written and read (8), dS
 * written and read twice (6): 28 bytes against 10·head_dim FLOPs, which the fused kernel removes.
 * The same GEMMs over fp32 operands (pl_attn_bwd_grad_kv/q with CUDA_R_32F) and pl_attn_bwd_ds_f32 make the
 * reference of large problems. */
#include <math.h>
#include <cuda_bf16.h>

#include "attention/attention.h"
#include "attention/unfused_plan.h"

#define ROW_THREADS 256

static size_t elem_bytes(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

extern "C" cublasStatus_t pl_attn_bwd_grad_kv(cublasHandle_t h, const pl_attn_problem *p, const void *x, const void *y,
                                              cudaDataType t, float alpha, float *acc)
{
    const float zero = 0.0f, one = 1.0f;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    const size_t es = elem_bytes(t);
    const int g = p->heads / p->kv_heads;
    for (int c = 0; c < call_count(p); c++) {
        const call_plan pl = plan_of(p, c);
        /* column-major view: accᵀ (d × keys, ld of K) = Yᵀ (d × queries) · X (queries × keys: X stored row-major is
         * keys × queries column-major, transposed); the first query head of a group overwrites, the others add */
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_T, p->head_dim, p->seq, p->seq, &alpha, (const char *)y + pl.q0 * es, t,
            (int)qs.s, pl.q_stride, (const char *)x + pl.s0 * es, t, p->seq, pl.s_stride, c % g == 0 ? &zero : &one,
            acc + pl.kv0, CUDA_R_32F, (int)ks.s, pl.kv_stride, pl.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t pl_attn_bwd_grad_q(cublasHandle_t h, const pl_attn_problem *p, const void *x, const void *z,
                                             cudaDataType t, float alpha, void *out, cudaDataType out_t)
{
    const float zero = 0.0f;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    const size_t es = elem_bytes(t), eo = elem_bytes(out_t);
    for (int c = 0; c < call_count(p); c++) {
        const call_plan pl = plan_of(p, c);
        /* outᵀ (d × queries) = Zᵀ (d × keys, Z stored row-major) · Xᵀ (keys × queries, X stored row-major) */
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, p->head_dim, p->seq, p->seq, &alpha, (const char *)z + pl.kv0 * es, t,
            (int)ks.s, pl.kv_stride, (const char *)x + pl.s0 * es, t, p->seq, pl.s_stride, &zero,
            (char *)out + pl.o0 * eo, out_t, (int)qs.s, pl.o_stride, pl.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* One block per score row (row = (batch·heads + head)·seq + i). */
__global__ void __launch_bounds__(ROW_THREADS)
    bwd_probs_kernel(const float *s, const float *lse, uint16_t *probs, int seq, int causal, float scale)
{
    const long long row = blockIdx.x;
    const int i = (int)(row % seq), visible = causal ? i + 1 : seq;
    const float l = lse[row];
    for (int j = threadIdx.x; j < seq; j += ROW_THREADS) {
        const float pj = j < visible ? expf(s[row * seq + j] * scale - l) : 0.0f;
        probs[row * seq + j] = __bfloat16_as_ushort(__float2bfloat16_rn(pj));
    }
}

static cudaError_t rows_check(const pl_attn_problem *p, long long *rows)
{
    *rows = (long long)p->batch * p->heads * p->seq;
    return *rows > 0x7fffffffLL ? cudaErrorInvalidValue : cudaSuccess;
}

extern "C" cudaError_t pl_attn_bwd_probs(const pl_attn_problem *p, const float *s, uint16_t *probs, cudaStream_t stream)
{
    long long rows;
    if (rows_check(p, &rows) != cudaSuccess)
        return cudaErrorInvalidValue;
    bwd_probs_kernel<<<(unsigned)rows, ROW_THREADS, 0, stream>>>(s, p->lse, probs, p->seq, p->causal, p->scale);
    return cudaGetLastError();
}

/* A warp per query row: D = Σ dO·O over head_dim, both in the layout of Q. */
__global__ void __launch_bounds__(ROW_THREADS)
    bwd_rowdot_kernel(const uint16_t *dout, const uint16_t *o, float *d, long long rows, int seq, int heads,
                      int head_dim, long long sb, long long sh, long long ss)
{
    const long long row = blockIdx.x * (long long)(ROW_THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    const int i = (int)(row % seq);
    const long long bh = row / seq, off = (bh / heads) * sb + (bh % heads) * sh + i * ss;
    float acc = 0.0f;
    for (int e = lane; e < head_dim; e += 32)
        acc += __uint_as_float((uint32_t)dout[off + e] << 16) * __uint_as_float((uint32_t)o[off + e] << 16);
#pragma unroll
    for (int w = 16; w > 0; w >>= 1)
        acc += __shfl_xor_sync(0xffffffffu, acc, w);
    if (lane == 0)
        d[row] = acc;
}

extern "C" cudaError_t pl_attn_bwd_rowdot(const pl_attn_problem *p, const uint16_t *dout, float *d, cudaStream_t stream)
{
    long long rows;
    if (rows_check(p, &rows) != cudaSuccess)
        return cudaErrorInvalidValue;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads);
    const long long blocks = (rows + ROW_THREADS / 32 - 1) / (ROW_THREADS / 32);
    bwd_rowdot_kernel<<<(unsigned)blocks, ROW_THREADS, 0, stream>>>(dout, p->o, d, rows, p->seq, p->heads, p->head_dim,
                                                                    qs.b, qs.h, qs.s);
    return cudaGetLastError();
}

/* One block per score row: dS = P·(dP − D), bf16. */
__global__ void __launch_bounds__(ROW_THREADS)
    bwd_ds_kernel(const uint16_t *probs, const float *dp, const float *d, uint16_t *ds, int seq)
{
    const long long row = blockIdx.x;
    const float dr = d[row];
    for (int j = threadIdx.x; j < seq; j += ROW_THREADS) {
        const long long at = row * seq + j;
        const float pj = __uint_as_float((uint32_t)probs[at] << 16);
        ds[at] = __bfloat16_as_ushort(__float2bfloat16_rn(pj * (dp[at] - dr)));
    }
}

extern "C" cudaError_t pl_attn_bwd_ds(const pl_attn_problem *p, const uint16_t *probs, const float *dp, const float *d,
                                      uint16_t *ds, cudaStream_t stream)
{
    long long rows;
    if (rows_check(p, &rows) != cudaSuccess)
        return cudaErrorInvalidValue;
    bwd_ds_kernel<<<(unsigned)rows, ROW_THREADS, 0, stream>>>(probs, dp, d, ds, p->seq);
    return cudaGetLastError();
}

/* One block per score row: D = d[row] when d is given, else Σⱼ P·dP (a block reduction); then dP ← P·(dP − D), all
 * fp32. */
__global__ void __launch_bounds__(ROW_THREADS)
    bwd_ds_f32_kernel(const float *probs, float *dp, const float *d_given, int seq)
{
    __shared__ float part[ROW_THREADS / 32];
    const long long row = blockIdx.x;
    const float *pr = probs + row * seq;
    float *dr = dp + row * seq;
    float d = 0.0f;
    if (d_given) {
        d = d_given[row];
    } else {
        float acc = 0.0f;
        for (int j = threadIdx.x; j < seq; j += ROW_THREADS)
            acc += pr[j] * dr[j];
#pragma unroll
        for (int w = 16; w > 0; w >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, w);
        if ((threadIdx.x & 31) == 0)
            part[threadIdx.x / 32] = acc;
        __syncthreads();
        for (int w = 0; w < ROW_THREADS / 32; w++)
            d += part[w];
    }
    for (int j = threadIdx.x; j < seq; j += ROW_THREADS)
        dr[j] = pr[j] * (dr[j] - d);
}

extern "C" cudaError_t pl_attn_bwd_ds_f32(const pl_attn_problem *p, const float *probs, float *dp, const float *d,
                                          cudaStream_t stream)
{
    long long rows;
    if (rows_check(p, &rows) != cudaSuccess)
        return cudaErrorInvalidValue;
    bwd_ds_f32_kernel<<<(unsigned)rows, ROW_THREADS, 0, stream>>>(probs, dp, d, p->seq);
    return cudaGetLastError();
}

__global__ void f32_to_bf16_kernel(const float *in, uint16_t *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

extern "C" cudaError_t pl_attn_f32_to_bf16(const float *in, uint16_t *out, size_t n, cudaStream_t stream)
{
    size_t blocks = (n + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    if (blocks == 0)
        return cudaSuccess;
    f32_to_bf16_kernel<<<(unsigned)blocks, 256, 0, stream>>>(in, out, n);
    return cudaGetLastError();
}
