/* What the two flash-decoding kernels share (decode_split_kv.cu, decode_split_mma.cu): their arguments, the
 * workspace of per-chunk partial results, the merge of two partial softmax states and the combine kernel. */
#ifndef PERFLAB_ATTENTION_DECODE_SPLIT_CUH
#define PERFLAB_ATTENTION_DECODE_SPLIT_CUH

#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

struct ds_args {
    pl_decode_problem p;
    int chunk, max_splits, group;
    float scale_log2;
    float *ws_o; /* [batch][heads][max_splits][D] unnormalised outputs */
    float *ws_m; /* [batch][heads][max_splits] */
    float *ws_l;
};

static inline int ds_max_splits(int max_len, int chunk)
{
    return (max_len + chunk - 1) / chunk;
}

/* The arguments of a launch: chunk (a multiple of 64 tokens), the workspace carved into its three arrays. */
static inline cudaError_t ds_args_of(const pl_decode_problem *p, int max_len, int chunk, void *workspace, ds_args *a)
{
    char why[160];
    if (!pl_decode_problem_valid(p, why, sizeof why) || max_len < 1 || chunk < 64 || chunk % 64 != 0 || !workspace ||
        ((uintptr_t)workspace & 15u) != 0 || p->batch > 65535 || p->kv_heads > 65535)
        return cudaErrorInvalidValue;
    a->p = *p;
    a->chunk = chunk;
    a->max_splits = ds_max_splits(max_len, chunk);
    a->group = p->heads / p->kv_heads;
    a->scale_log2 = p->scale * PL_ATTN_LOG2E;
    const size_t n = (size_t)p->batch * p->heads * a->max_splits;
    a->ws_o = static_cast<float *>(workspace);
    a->ws_m = a->ws_o + n * p->head_dim;
    a->ws_l = a->ws_m + n;
    return cudaSuccess;
}

/* Merge (m2, l2, acc2) into (m, l, acc): running maxima in base-2 units; -inf marks an empty part. */
template <int N>
__device__ __forceinline__ void ds_merge(float &m, float &l, float (&acc)[N], float m2, float l2,
                                         const float (&acc2)[N])
{
    const float mm = fmaxf(m, m2);
    const float use = mm == -INFINITY ? 0.0f : mm;
    const float f1 = attn_exp2(m - use), f2 = attn_exp2(m2 - use);
    l = l * f1 + l2 * f2;
#pragma unroll
    for (int e = 0; e < N; e++)
        acc[e] = acc[e] * f1 + acc2[e] * f2;
    m = mm;
}

/* Column d of head g merged over the NW warps' states in shared memory (unnormalised outputs acc[NW][GS][D],
 * maxima m[NW][GS], sums l[NW][GS]): the unnormalised output, with the merged max in mm and sum in ll. */
template <int D, int NW, int GS>
__device__ __forceinline__ float ds_merge_warps(const float *sm_acc, const float *sm_m, const float *sm_l, int g, int d,
                                                float &mm, float &ll)
{
    mm = -INFINITY;
#pragma unroll
    for (int w = 0; w < NW; w++)
        mm = fmaxf(mm, sm_m[w * GS + g]);
    ll = 0.0f;
    float o = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; w++) {
        const float f = attn_exp2(sm_m[w * GS + g] - mm); /* a warp that saw no token: m = -inf, f = 0 */
        ll += sm_l[w * GS + g] * f;
        o += sm_acc[(w * GS + g) * D + d] * f;
    }
    return o;
}

/* The CTA's result for chunk sp: the warps' states of each head of the group (shared memory: unnormalised outputs
 * acc[NW][GS][D], maxima m[NW][GS] and sums l[NW][GS]) merged and written to the head's workspace slot. */
template <int D, int NW, int GS>
__device__ __forceinline__ void ds_store_partials(const ds_args &a, const float *sm_acc, const float *sm_m,
                                                  const float *sm_l, int heads_here, int b, int kvh, int sp)
{
    for (int i = threadIdx.x; i < heads_here * D; i += NW * 32) {
        const int g = i / D, d = i % D;
        float mm, ll;
        const float o = ds_merge_warps<D, NW, GS>(sm_acc, sm_m, sm_l, g, d, mm, ll);
        const long long slot = ((long long)b * a.p.heads + kvh * a.group + g) * a.max_splits + sp;
        a.ws_o[slot * D + d] = o;
        if (d == 0) {
            a.ws_m[slot] = mm;
            a.ws_l[slot] = ll;
        }
    }
}

/* One block of D threads per (sequence, query head): the chunks' partial results into O. */
template <int D> __global__ void __launch_bounds__(D) decode_combine_kernel(const ds_args a)
{
    const pl_decode_problem &p = a.p;
    const int bh = blockIdx.x, b = bh / p.heads;
    const int splits = (p.seq_lens[b] + a.chunk - 1) / a.chunk;
    const long long slot0 = (long long)bh * a.max_splits;
    float mm = -INFINITY;
    for (int i = 0; i < splits; i++)
        mm = fmaxf(mm, a.ws_m[slot0 + i]);
    float ll = 0.0f, o = 0.0f;
    for (int i = 0; i < splits; i++) {
        const float f = attn_exp2(a.ws_m[slot0 + i] - mm);
        ll += a.ws_l[slot0 + i] * f;
        o += a.ws_o[(slot0 + i) * D + threadIdx.x] * f;
    }
    p.o[(long long)bh * D + threadIdx.x] = __bfloat16_as_ushort(__float2bfloat16_rn(o / ll));
}

template <int D> static cudaError_t ds_launch_combine(const ds_args &a, cudaStream_t stream)
{
    decode_combine_kernel<D><<<(unsigned)(a.p.batch * a.p.heads), D, 0, stream>>>(a);
    return cudaGetLastError();
}

#endif
