/* The tensor-core step of the paged decode kernels (decode_split_mma.cu, decode_balanced_mma.cu): a 64-token K/V
 * tile of one (sequence, kv head) loaded into a shared-memory stage with 16-byte cp.async, and FlashAttention-2 on
 * it with the GQA group as the rows of mma.sync m16n8k16 (rows g < G are query heads, the rest zero padding), each
 * of the four warps taking 16 of the tile's tokens. */
#ifndef PERFLAB_ATTENTION_DECODE_MMA_TILE_CUH
#define PERFLAB_ATTENTION_DECODE_MMA_TILE_CUH

#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

#define DM_THREADS 128
#define DM_WARPS   (DM_THREADS / 32)
#define DM_TILE    64 /* tokens per stage: 16 per warp */

/* A warp's online-softmax state of its row g (its quad's head): unnormalised output columns, running max in
 * base-2 units of the scaled score, running sum (of this thread's columns until reduced over the quad). */
template <int D> struct dm_state {
    float o[D / 8][4];
    float m, l;
};

template <int D> __device__ __forceinline__ void dm_state_reset(dm_state<D> &s)
{
#pragma unroll
    for (int i = 0; i < D / 8; i++)
        s.o[i][0] = s.o[i][1] = s.o[i][2] = s.o[i][3] = 0.0f;
    s.m = -INFINITY;
    s.l = 0.0f;
}

/* An L2 policy that marks lines as the first to evict (a stream read once), for dm_cp_async16's hint. */
__device__ __forceinline__ uint64_t dm_policy_evict_first()
{
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    return pol;
}

/* cp_async16 with, when EF, the L2 cache hint `policy` (src_bytes 0 writes zeros). */
template <bool EF>
__device__ __forceinline__ void dm_cp_async16(uint32_t dst, const void *src, int src_bytes, uint64_t policy)
{
    if (EF)
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
                     "r"(src_bytes), "l"(policy)
                     : "memory");
    else
        cp_async16(dst, src, src_bytes);
}

/* Tile [t0, t0 + 64) of a sequence of `len` tokens into a stage (K rows, then V rows, swizzled); zeros past len.
 * t0 is a multiple of 64, so the page of each token follows from t0's page by a few subtractions. EF: the copies
 * carry the L2 hint `policy` (evict-first). */
template <int D, bool EF = false>
__device__ __forceinline__ void dm_load_tile(uint32_t stage, const pl_decode_problem &p, const int *table, int kvh,
                                             int t0, int len, uint64_t policy = 0)
{
    constexpr int CPR = D / 8;             /* 16-byte chunks per row */
    constexpr int ROWS = DM_THREADS / CPR; /* rows one pass of the CTA covers */
    const int ch = threadIdx.x % CPR;
    const int pg0 = t0 / p.page_size, r0 = t0 % p.page_size;
#pragma unroll
    for (int i = 0; i < DM_TILE / ROWS; i++) {
        const int tok = threadIdx.x / CPR + i * ROWS, t = t0 + tok;
        const uint16_t *ks = p.k_cache, *vs = p.v_cache;
        if (t < len) {
            int off = r0 + tok, pg = pg0;
            while (off >= p.page_size) {
                off -= p.page_size;
                pg++;
            }
            const long long row = ((long long)table[pg] * p.page_size + off) * p.kv_heads + kvh;
            ks += row * D + ch * 8;
            vs += row * D + ch * 8;
        }
        const uint32_t dst = stage + attn_swz<D>(tok, ch);
        dm_cp_async16<EF>(dst, ks, t < len ? 16 : 0, policy);
        dm_cp_async16<EF>(dst + DM_TILE * D * 2, vs, t < len ? 16 : 0, policy);
    }
}

/* Q of the group as A fragments: row g is query head kvh·G + g of sequence b when g < G, else zero; rows g + 8
 * are padding. */
template <int D>
__device__ __forceinline__ void dm_load_q(uint32_t (&qa)[D / 16][4], const pl_decode_problem &p, int group, int b,
                                          int kvh)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, qd = lane & 3;
    const uint32_t *qrow =
        g < group ? reinterpret_cast<const uint32_t *>(p.q + ((long long)b * p.heads + kvh * group + g) * D) : nullptr;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        qa[kk][0] = qrow ? qrow[(16 * kk + 2 * qd) / 2] : 0u;
        qa[kk][1] = 0u;
        qa[kk][2] = qrow ? qrow[(16 * kk + 8 + 2 * qd) / 2] : 0u;
        qa[kk][3] = 0u;
    }
}

/* Byte offset of 16-byte chunk ch of row r of 16 rows `rs` bytes apart, the chunk XORed with r's low 3 bits (as
 * attn_swz, for rows that need not be adjacent). */
__device__ __forceinline__ uint32_t dm_swz(int r, int ch, int rs)
{
    return (uint32_t)(r * rs + ((ch ^ (r & 7)) << 4));
}

/* Byte offset of chunk ch of row r: dm_swz, or with PAD (rows whose stride rs is 16 bytes past a multiple of 128,
 * filled by bulk copies that cannot swizzle) r·rs + 16·ch: eight rows' same chunk fall in eight different banks
 * either way. */
template <bool PAD> __device__ __forceinline__ uint32_t dm_off(int r, int ch, int rs)
{
    return PAD ? (uint32_t)(r * rs + (ch << 4)) : dm_swz(r, ch, rs);
}

/* A warp's step on 16 tokens whose K rows are at kb + dm_off<PAD>(r, ., rs) and V rows at vb + dm_off<PAD>(r, ., rs)
 * (r = 0..15), token t_first first, tokens at or past len masked: S = Q·Kᵀ, the online softmax of row g,
 * O += P·V. */
template <int D, bool PAD = false>
__device__ __forceinline__ void dm_rows_step(dm_state<D> &st, const uint32_t (&qa)[D / 16][4], uint32_t kb, uint32_t vb,
                                             int rs, int t_first, int len, float scale_log2)
{
    constexpr int KS = D / 16, DT = D / 8;
    const int lane = threadIdx.x & 31, qd = lane & 3, mi = lane >> 3;
    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
        uint32_t bf[4];
        ldmatrix_x4(bf, kb + dm_off<PAD>(8 * (mi >> 1) + (lane & 7), 2 * kk + (mi & 1), rs));
        mma_bf16_16816(s[0], qa[kk], bf[0], bf[1]);
        mma_bf16_16816(s[1], qa[kk], bf[2], bf[3]);
    }
    /* row g only (c0, c1): scale into base 2, mask tokens past the end, online softmax */
    float mx = st.m;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int t = t_first + nt * 8 + 2 * qd + e;
            s[nt][e] = t < len ? s[nt][e] * scale_log2 : -INFINITY;
            mx = fmaxf(mx, s[nt][e]);
        }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float use = mx == -INFINITY ? 0.0f : mx;
    const float alpha = attn_exp2(st.m - use);
    const float p00 = attn_exp2(s[0][0] - use), p01 = attn_exp2(s[0][1] - use);
    const float p10 = attn_exp2(s[1][0] - use), p11 = attn_exp2(s[1][1] - use);
    st.l = st.l * alpha + (p00 + p01) + (p10 + p11);
    st.m = mx;
    uint32_t pa[4];
    pa[0] = attn_pack_bf16(p00, p01);
    pa[1] = 0u; /* rows g + 8: padding */
    pa[2] = attn_pack_bf16(p10, p11);
    pa[3] = 0u;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        st.o[dt][0] *= alpha;
        st.o[dt][1] *= alpha;
    }
#pragma unroll
    for (int dt = 0; dt < DT; dt += 2) {
        uint32_t bf[4];
        ldmatrix_x4_trans(bf, vb + dm_off<PAD>((mi & 1) * 8 + (lane & 7), dt + (mi >> 1), rs));
        mma_bf16_16816(st.o[dt], pa, bf[0], bf[1]);
        mma_bf16_16816(st.o[dt + 1], pa, bf[2], bf[3]);
    }
}

/* This warp's 16 tokens of the 64-token tile in stage kt (rows of D bf16, V at kt + tile bytes), the tile's first
 * token t_tile. */
template <int D>
__device__ __forceinline__ void dm_tile_step(dm_state<D> &st, const uint32_t (&qa)[D / 16][4], uint32_t kt, int t_tile,
                                             int len, float scale_log2)
{
    const int tok0 = (threadIdx.x >> 5) * 16;
    const uint32_t kb = kt + tok0 * D * 2;
    dm_rows_step<D>(st, qa, kb, kb + DM_TILE * D * 2, D * 2, t_tile + tok0, len, scale_log2);
}

/* Bytes of the merge area: each warp's state of up to 8 heads (outputs [DM_WARPS][8][D], maxima and sums
 * [DM_WARPS][8]). */
template <int D> struct dm_merge {
    static constexpr int bytes = DM_WARPS * 8 * (D + 2) * 4;
};

/* The warp's state of its head g (when g < group) into the merge area at sm (the sum reduced over the quad first);
 * the caller synchronises the CTA before ds_store_partials / dm_store_merged reads it. */
template <int D> __device__ __forceinline__ void dm_stash_state(float *sm, dm_state<D> &st, int group)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, qd = lane & 3;
    float *sm_o = sm, *sm_m = sm + DM_WARPS * 8 * D, *sm_l = sm_m + DM_WARPS * 8;
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 1);
    st.l += __shfl_xor_sync(0xffffffffu, st.l, 2);
    if (g < group) {
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++) {
            sm_o[(warp * 8 + g) * D + dt * 8 + 2 * qd] = st.o[dt][0];
            sm_o[(warp * 8 + g) * D + dt * 8 + 2 * qd + 1] = st.o[dt][1];
        }
        if (qd == 0) {
            sm_m[warp * 8 + g] = st.m;
            sm_l[warp * 8 + g] = st.l;
        }
    }
}

#endif
