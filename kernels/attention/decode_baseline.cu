/* Paged decode, baseline — one CTA per (sequence, query head) walking the sequence's whole KV cache.
 *
 * Four warps take every fourth token; for each token a warp loads the K row (head_dim/32 elements per lane),
 * reduces q·k across the warp with shuffles, updates its running max and sum (the online softmax) and
 * accumulates the V row. The four warps' partial results are merged through shared memory at the end. The plain
 * version: one token per warp per step (the next load waits for this one's reduction), and the query heads of a
 * GQA group each read the same K/V again (from L2 if the group's CTAs run together, else from HBM). Over an FP8
 * cache each element is the e4m3 byte converted (exactly) and times its row's scale, in fp32. */
#include <math.h>

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

#define DB_THREADS 128
#define DB_WARPS   (DB_THREADS / 32)

/* Element i (of E) of a cache row as fp32: bf16 bits, or (FP8) the e4m3 byte times the row's scale. */
template <bool FP8> struct db_row {
    const uint16_t *h;
    const uint8_t *b;
    float s;
    __device__ __forceinline__ float at(int i) const
    {
        if (FP8)
            return __half2float(__half(__nv_cvt_fp8_to_halfraw(b[i], __NV_E4M3))) * s;
        return __uint_as_float((uint32_t)h[i] << 16);
    }
};

/* This lane's E elements of the row of K (or V) at `row` (a cache row: slot · kv_heads + kv head). */
template <bool FP8>
__device__ __forceinline__ db_row<FP8> db_row_at(const uint16_t *c16, const uint8_t *c8, const float *scales,
                                                 long long row, int D, int first)
{
    db_row<FP8> r;
    r.h = FP8 ? nullptr : c16 + row * D + first;
    r.b = FP8 ? c8 + row * D + first : nullptr;
    r.s = FP8 ? scales[row] : 1.0f;
    return r;
}

template <int D, bool FP8>
__global__ void __launch_bounds__(DB_THREADS) decode_baseline_kernel(const pl_decode_problem p, float scale_log2)
{
    constexpr int E = D / 32; /* elements per lane */
    __shared__ float sm_m[DB_WARPS], sm_l[DB_WARPS], sm_acc[DB_WARPS][D];
    const int h = blockIdx.x, b = blockIdx.y, kvh = h / (p.heads / p.kv_heads);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int len = p.seq_lens[b];
    const uint16_t *qp = p.q + ((long long)b * p.heads + h) * D + lane * E;
    float q[E], acc[E];
#pragma unroll
    for (int e = 0; e < E; e++) {
        q[e] = __uint_as_float((uint32_t)qp[e] << 16) * scale_log2;
        acc[e] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int t = warp; t < len; t += DB_WARPS) {
        const int page = p.block_table[(long long)b * p.max_pages + t / p.page_size];
        const long long row = ((long long)page * p.page_size + t % p.page_size) * p.kv_heads + kvh;
        const db_row<FP8> kr = db_row_at<FP8>(p.k_cache, p.k_fp8, p.k_scale, row, D, lane * E);
        const db_row<FP8> vr = db_row_at<FP8>(p.v_cache, p.v_fp8, p.v_scale, row, D, lane * E);
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < E; e++)
            s = fmaf(q[e], kr.at(e), s);
        float alpha;
        const float pe = attn_warp_online_step(s, m, l, alpha);
#pragma unroll
        for (int e = 0; e < E; e++)
            acc[e] = fmaf(pe, vr.at(e), acc[e] * alpha);
    }
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int e = 0; e < E; e++)
        sm_acc[warp][lane * E + e] = acc[e];
    __syncthreads();
    /* merge the warps: thread d of the first D threads writes output element d */
    for (int d = threadIdx.x; d < D; d += DB_THREADS) {
        float mm = -INFINITY;
        for (int w = 0; w < DB_WARPS; w++)
            mm = fmaxf(mm, sm_m[w]);
        float ll = 0.0f, o = 0.0f;
        for (int w = 0; w < DB_WARPS; w++) {
            const float f = attn_exp2(sm_m[w] - mm); /* a warp with no token: m = -inf, f = 0 */
            ll += sm_l[w] * f;
            o += sm_acc[w][d] * f;
        }
        p.o[((long long)b * p.heads + h) * D + d] = __bfloat16_as_ushort(__float2bfloat16_rn(o / ll));
    }
}

extern "C" cudaError_t pl_decode_baseline(const pl_decode_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!pl_decode_problem_valid_any(p, why, sizeof why) || p->batch > 65535)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)p->heads, (unsigned)p->batch);
    const float sl2 = p->scale * PL_ATTN_LOG2E;
    const bool fp8 = p->kv_dtype == PL_KV_FP8_E4M3;
    if (p->head_dim == 64 && fp8)
        decode_baseline_kernel<64, true><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    else if (p->head_dim == 64)
        decode_baseline_kernel<64, false><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    else if (fp8)
        decode_baseline_kernel<128, true><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    else
        decode_baseline_kernel<128, false><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    return cudaGetLastError();
}
