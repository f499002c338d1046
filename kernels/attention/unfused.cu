/* Attention, baseline — unfused, the way a user writes it from library calls: three passes over device memory.
 *   1. S = Q·Kᵀ with cuBLAS (bf16 in, fp32 S out, [batch·heads][seq][seq] in device memory),
 *   2. a softmax kernel: per query row, the scale, the causal mask, max and sum in fp32, P = exp(...)/sum written
 *      as bf16 (and the row's log-sum-exp),
 *   3. O = P·V with cuBLAS (bf16 in, fp32 accumulation, bf16 out).
 * The (batch, head) pairs go through strided-batched cublasGemmEx calls. Grouped-query attention maps query head
 * h = kvh·g + j (g = heads / kv_heads) onto kv head kvh: one call per j whose batch walks (batch, kv head) with the
 * query stride g heads, so K and V are never copied per query head; the bshd layout, whose batch stride is not a
 * multiple of its head stride, adds a loop over the batch.
 * S costs 4 bytes per score written and read twice, P 2 bytes written and read once: 16 bytes of traffic per
 * score against 2·head_dim FLOPs, which is what the fused kernels remove.
 *
 * The same pieces in fp32 throughout (fp32 P in place of S, V converted to fp32, an fp32 GEMM) are the reference
 * of large problems. */
#include <math.h>
#include <cuda_bf16.h>

#include "attention/attention.h"
#include "attention/unfused_plan.h"

#define SOFTMAX_THREADS 256
#define LOG2E           1.4426950408889634f
#define LN2             0.6931471805599453f

extern "C" cublasStatus_t pl_attn_unfused_scores(cublasHandle_t h, const pl_attn_problem *p, float *s)
{
    const float one = 1.0f, zero = 0.0f;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    for (int c = 0; c < call_count(p); c++) {
        const call_plan pl = plan_of(p, c);
        /* column-major view: Sᵀ (keys × queries, ld seq) = K (keys × d: Kᵀ stored, transposed) · Qᵀ (d × queries) */
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_T, CUBLAS_OP_N, p->seq, p->seq, p->head_dim, &one, p->k + pl.kv0, CUDA_R_16BF, (int)ks.s,
            pl.kv_stride, p->q + pl.q0, CUDA_R_16BF, (int)qs.s, pl.q_stride, &zero, s + pl.s0, CUDA_R_32F, p->seq,
            pl.s_stride, pl.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t pl_attn_unfused_pv(cublasHandle_t h, const pl_attn_problem *p, const uint16_t *probs)
{
    const float one = 1.0f, zero = 0.0f;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    for (int c = 0; c < call_count(p); c++) {
        const call_plan pl = plan_of(p, c);
        /* Oᵀ (d × queries) = Vᵀ (d × keys, V stored row-major) · Pᵀ (keys × queries, P stored row-major) */
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, p->head_dim, p->seq, p->seq, &one, p->v + pl.kv0, CUDA_R_16BF, (int)ks.s,
            pl.kv_stride, probs + pl.s0, CUDA_R_16BF, p->seq, pl.s_stride, &zero, p->o + pl.o0, CUDA_R_16BF, (int)qs.s,
            pl.o_stride, pl.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t pl_attn_reference_pv_f32(cublasHandle_t h, const pl_attn_problem *p, const float *probs,
                                                   const float *v32, float *o32)
{
    const float one = 1.0f, zero = 0.0f;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    for (int c = 0; c < call_count(p); c++) {
        const call_plan pl = plan_of(p, c);
        cublasStatus_t st = cublasGemmStridedBatchedEx(
            h, CUBLAS_OP_N, CUBLAS_OP_N, p->head_dim, p->seq, p->seq, &one, v32 + pl.kv0, CUDA_R_32F, (int)ks.s,
            pl.kv_stride, probs + pl.s0, CUDA_R_32F, p->seq, pl.s_stride, &zero, o32 + pl.o0, CUDA_R_32F, (int)qs.s,
            pl.o_stride, pl.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS)
            return st;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* (m, l) of two partial softmax sums in base-2 units of the scaled score: m the max score (raw), l the sum of
 * 2^((s - m)·sl2). An empty part has m = -inf and l = 0. */
__device__ __forceinline__ void merge_ml(float &m, float &l, float m2, float l2, float sl2)
{
    const float mm = fmaxf(m, m2);
    if (mm == -INFINITY)
        return;
    l = (m == -INFINITY ? 0.0f : l * exp2f((m - mm) * sl2)) + (m2 == -INFINITY ? 0.0f : l2 * exp2f((m2 - mm) * sl2));
    m = mm;
}

/* One block per query row (row = (batch·heads + head)·seq + i). Pass 1: max and sum, online, then across the
 * block; pass 2: the probabilities (0 where masked), bf16 into p_bf16 or fp32 into p_f32 (in place allowed: each
 * element is read before it is written, by the same thread). */
__global__ void __launch_bounds__(SOFTMAX_THREADS)
    softmax_rows_kernel(const float *s, uint16_t *p_bf16, float *p_f32, float *lse, int seq, int heads, int causal,
                        float scale)
{
    __shared__ float sm[SOFTMAX_THREADS / 32], sl[SOFTMAX_THREADS / 32];
    const long long row = blockIdx.x;
    const int i = (int)(row % seq);
    const int visible = causal ? i + 1 : seq;
    const float sl2 = scale * LOG2E;
    const float *srow = s + row * seq;
    float m = -INFINITY, l = 0.0f;
    for (int j = threadIdx.x; j < visible; j += SOFTMAX_THREADS) {
        const float x = srow[j];
        if (x > m) {
            l = (m == -INFINITY ? 0.0f : l * exp2f((m - x) * sl2)) + 1.0f;
            m = x;
        } else {
            l += exp2f((x - m) * sl2);
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, off), l2 = __shfl_xor_sync(0xffffffffu, l, off);
        merge_ml(m, l, m2, l2, sl2);
    }
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (lane == 0) {
        sm[warp] = m;
        sl[warp] = l;
    }
    __syncthreads();
    m = sm[0];
    l = sl[0];
    for (int w = 1; w < SOFTMAX_THREADS / 32; w++)
        merge_ml(m, l, sm[w], sl[w], sl2);
    const float inv = 1.0f / l;
    for (int j = threadIdx.x; j < seq; j += SOFTMAX_THREADS) {
        const float pj = j < visible ? exp2f((srow[j] - m) * sl2) * inv : 0.0f;
        if (p_f32)
            p_f32[row * seq + j] = pj;
        else
            p_bf16[row * seq + j] = __bfloat16_as_ushort(__float2bfloat16_rn(pj));
    }
    if (threadIdx.x == 0)
        lse[row] = m * scale + logf(l);
}

extern "C" cudaError_t pl_attn_unfused_softmax(const pl_attn_problem *p, const float *s, uint16_t *p_bf16, float *p_f32,
                                               cudaStream_t stream)
{
    const long long rows = (long long)p->batch * p->heads * p->seq;
    if (rows > 0x7fffffffLL || (!p_bf16 && !p_f32))
        return cudaErrorInvalidValue;
    softmax_rows_kernel<<<(unsigned)rows, SOFTMAX_THREADS, 0, stream>>>(s, p_bf16, p_f32, p->lse, p->seq, p->heads,
                                                                        p->causal, p->scale);
    return cudaGetLastError();
}

__global__ void bf16_to_f32_kernel(const uint16_t *in, float *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __uint_as_float((uint32_t)in[i] << 16);
}

extern "C" cudaError_t pl_attn_bf16_to_f32(const uint16_t *in, float *out, size_t n, cudaStream_t stream)
{
    size_t blocks = (n + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    if (blocks == 0)
        return cudaSuccess;
    bf16_to_f32_kernel<<<(unsigned)blocks, 256, 0, stream>>>(in, out, n);
    return cudaGetLastError();
}
