/* Paged decode, baseline — one CTA per (sequence, query head) walking the sequence's whole KV cache.
 *
 * Four warps take every fourth token; for each token a warp loads the K row (head_dim/32 elements per lane),
 * reduces q·k across the warp with shuffles, updates its running max and sum (the online softmax) and
 * accumulates the V row. The four warps' partial results are merged through shared memory at the end. The plain
 * version: one token per warp per step (the next load waits for this one's reduction), and the query heads of a
 * GQA group each read the same K/V again (from L2 if the group's CTAs run together, else from HBM). */
#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

#define DB_THREADS 128
#define DB_WARPS   (DB_THREADS / 32)

template <int D>
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
        const uint16_t *kp = p.k_cache + row * D + lane * E, *vp = p.v_cache + row * D + lane * E;
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < E; e++)
            s = fmaf(q[e], __uint_as_float((uint32_t)kp[e] << 16), s);
        float alpha;
        const float pe = attn_warp_online_step(s, m, l, alpha);
#pragma unroll
        for (int e = 0; e < E; e++)
            acc[e] = fmaf(pe, __uint_as_float((uint32_t)vp[e] << 16), acc[e] * alpha);
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
    if (!pl_decode_problem_valid(p, why, sizeof why) || p->batch > 65535)
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)p->heads, (unsigned)p->batch);
    const float sl2 = p->scale * PL_ATTN_LOG2E;
    if (p->head_dim == 64)
        decode_baseline_kernel<64><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    else
        decode_baseline_kernel<128><<<grid, DB_THREADS, 0, stream>>>(*p, sl2);
    return cudaGetLastError();
}
