/* What the split-KV MLA kernels share (mla_decode_mma.cu, mla_decode_wgmma_sm90a.cu): their arguments, the place of
 * a token's latent row in the pool, the workspace of per-chunk partial results and the kernel that merges them. */
#ifndef PERFLAB_ATTENTION_MLA_SPLIT_CUH
#define PERFLAB_ATTENTION_MLA_SPLIT_CUH

#include <math.h>

#include "attention/mla.h"
#include "attention/attn_common.cuh"

struct mla_split_args {
    pl_mla_problem p;
    int chunk, max_splits;
    int page_shift; /* log2(page_size) when a power of two, else -1 */
    float scale_log2;
    float *ws_o;   /* [batch][heads][max_splits][512] normalised partial outputs */
    float *ws_lse; /* [batch][heads][max_splits] base-2 log-sum-exp of the scaled scores */
};

static inline int mla_max_splits(int max_len, int chunk)
{
    return (max_len + chunk - 1) / chunk;
}

/* The arguments of a launch (chunk a multiple of 64 tokens, the workspace carved into its two arrays), or
 * cudaErrorInvalidValue. */
static inline cudaError_t mla_split_args_of(const pl_mla_problem *p, int max_len, int chunk, void *workspace,
                                            mla_split_args *a)
{
    char why[160];
    if (!p || !pl_mla_problem_valid(p, why, sizeof why) || max_len < 1 || chunk < 64 || chunk % 64 != 0 || !workspace ||
        ((uintptr_t)workspace & 15u) != 0 || mla_max_splits(max_len, chunk) > 65535)
        return cudaErrorInvalidValue;
    a->p = *p;
    a->chunk = chunk;
    a->max_splits = mla_max_splits(max_len, chunk);
    a->page_shift = -1;
    for (int s = 0; s < 31; s++)
        if ((1 << s) == p->page_size)
            a->page_shift = s;
    a->scale_log2 = p->scale * PL_ATTN_LOG2E;
    const size_t n = (size_t)p->batch * p->heads * a->max_splits;
    a->ws_o = static_cast<float *>(workspace);
    a->ws_lse = a->ws_o + n * PL_MLA_D_V;
    return cudaSuccess;
}

/* Offset in the pool (elements) of token t's latent row; table is the sequence's row of the block table. */
__device__ __forceinline__ long long mla_row_of(const mla_split_args &a, const int *table, int t)
{
    const int ps = a.p.page_size;
    const long long page = a.page_shift >= 0 ? table[t >> a.page_shift] : table[t / ps];
    const int in_page = a.page_shift >= 0 ? (t & (ps - 1)) : t % ps;
    return (page * ps + in_page) * PL_MLA_D_QK;
}

/* One CTA of D_V / 4 threads per (head, sequence), four columns a thread: the chunks' normalised outputs merged
 * with weights 2^(lse_i − max lse). */
template <int D_V> __global__ void __launch_bounds__(D_V / 4) mla_combine_kernel(const mla_split_args a)
{
    const int h = blockIdx.x, b = blockIdx.y;
    const int splits = (a.p.seq_lens[b] + a.chunk - 1) / a.chunk;
    const long long slot0 = ((long long)b * a.p.heads + h) * a.max_splits;
    float mx = -INFINITY;
    for (int i = 0; i < splits; i++)
        mx = fmaxf(mx, a.ws_lse[slot0 + i]);
    float wsum = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = 0; i < splits; i++) {
        const float w = attn_exp2(a.ws_lse[slot0 + i] - mx);
        const float4 v = reinterpret_cast<const float4 *>(a.ws_o + (slot0 + i) * D_V)[threadIdx.x];
        wsum += w;
        acc.x = fmaf(w, v.x, acc.x);
        acc.y = fmaf(w, v.y, acc.y);
        acc.z = fmaf(w, v.z, acc.z);
        acc.w = fmaf(w, v.w, acc.w);
    }
    const float inv = 1.0f / wsum;
    uint2 out;
    out.x = attn_pack_bf16(acc.x * inv, acc.y * inv);
    out.y = attn_pack_bf16(acc.z * inv, acc.w * inv);
    reinterpret_cast<uint2 *>(a.p.o + ((long long)b * a.p.heads + h) * D_V)[threadIdx.x] = out;
}

static inline cudaError_t mla_launch_combine(const mla_split_args &a, cudaStream_t stream)
{
    mla_combine_kernel<PL_MLA_D_V><<<dim3((unsigned)a.p.heads, (unsigned)a.p.batch), PL_MLA_D_V / 4, 0, stream>>>(a);
    return cudaGetLastError();
}

/* The split kernel `kernel` (blocks of `rows` heads, `threads` threads and `smem` bytes of dynamic shared memory a
 * CTA; grid: head blocks × chunks × sequences) on the problem, then the combine. */
static inline cudaError_t mla_launch_split(void (*kernel)(const mla_split_args), int rows, int threads, int smem,
                                           const pl_mla_problem *p, int max_len, int chunk, void *workspace,
                                           cudaStream_t stream)
{
    mla_split_args a;
    cudaError_t e = mla_split_args_of(p, max_len, chunk, workspace, &a);
    if (e != cudaSuccess)
        return e;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess)
        return e;
    const dim3 grid((unsigned)((a.p.heads + rows - 1) / rows), (unsigned)a.max_splits, (unsigned)a.p.batch);
    kernel<<<grid, threads, (size_t)smem, stream>>>(a);
    e = cudaGetLastError();
    return e != cudaSuccess ? e : mla_launch_combine(a, stream);
}

/* The end of a chunk: the sums of a thread's rows `row` and `row + 8` reduced over its quad and published by the quad's
 * first lane in red[part·M + row] (part: the warp or warpgroup's share of the tokens), then a barrier, after which
 * every part's sums can be read. */
template <int M>
__device__ __forceinline__ void mla_publish_sums(float (&l)[2], float *red, int part, int row, int q4)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    if (q4 == 0) {
        red[part * M + row] = l[0];
        red[part * M + row + 8] = l[1];
    }
    __syncthreads();
}

/* Row r (< 16) of a warp's m16 slice — rows g and g + 8 of the quad's lane — written to the workspace: the
 * thread's two columns col, col + 1 of every 8-column group n of o (n_tiles groups, o[n][2r], o[n][2r + 1]),
 * normalised by inv; its head's log-sum-exp by the quad's first lane of the warp that owns column 0. */
template <int N_TILES>
__device__ __forceinline__ void mla_store_row(const mla_split_args &a, const float *o, int stride_n, int b, int h,
                                              int sp, int col0, int r, float inv, float lse, bool writes_lse)
{
    const long long slot = ((long long)b * a.p.heads + h) * a.max_splits + sp;
    float *dst = a.ws_o + slot * PL_MLA_D_V + col0;
#pragma unroll
    for (int n = 0; n < N_TILES; n++)
        *reinterpret_cast<float2 *>(dst + n * 8) =
            make_float2(o[n * stride_n + 2 * r] * inv, o[n * stride_n + 2 * r + 1] * inv);
    if (writes_lse)
        a.ws_lse[slot] = lse;
}

#endif
