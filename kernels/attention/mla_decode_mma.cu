/* MLA decode on the tensor cores — the query heads as the M rows of mma.sync m16n8k16, the latent rows streamed
 * through shared memory, the sequence split over CTAs.
 *
 * A CTA computes a block of M = 16·RB query heads (RB = 1, 2 or 4: 16, 32 or 64 heads) of one sequence over one
 * chunk of its tokens, in RB × 4 warps: warp (rb, cs) owns rows 16·rb .. 16·rb + 15 and, of each 32-token tile,
 * tokens 8·cs .. 8·cs + 7 of the scores and output columns 128·cs .. 128·cs + 127.
 *
 *   Q (M × 576 bf16) is copied into shared memory once; tiles of 32 latent rows (32 × 576 bf16, 36 KB) stream
 *   through a ring of STAGES stages with 16-byte cp.async (rows gathered through the block table, zeros past the
 *   chunk), STAGES - 1 tiles in flight while one is computed. Both operands are 128-byte rows swizzled by
 *   attn_swz so that ldmatrix reads them without bank conflicts.
 *   Per tile: S = Q·Kᵀ over all 576 columns (36 k-steps of one m16n8 tile a warp); the row maxima of the four
 *   warps of a row block exchanged through shared memory; P = 2^(S·scale·log2 e − m) in bf16 into a shared
 *   tile; O += P·V with V the same tile's first 512 columns (ldmatrix.trans), so that each latent row is read
 *   from memory once for both products.
 *   At the end of the chunk each row's output is normalised and written with its base-2 log-sum-exp to the
 *   workspace; mla_combine_kernel merges the chunks of each (sequence, head): weights 2^(lse_i − max lse).
 *
 * The chunk is chosen so that the grid is about four waves of one CTA an SM (each CTA holds 160-190 KB of shared
 * memory). */
#include <math.h>

#include "attention/mla_split.cuh"

#define MM_NT      32                   /* tokens a tile */
#define MM_CS      4                    /* warps of a row block: token slices of S, column slices of O */
#define MM_CHUNKS  (PL_MLA_D_QK / 8)    /* 16-byte chunks of a latent row: 72 */
#define MM_ROW_B   (PL_MLA_D_QK * 2)    /* bytes of a latent row in shared memory: 1152 */
#define MM_P_PITCH (MM_NT + 8)          /* bf16 a row of the P tile: 80 bytes, the 8 rows of an ldmatrix in 8 banks */
#define MM_OCOLS   (PL_MLA_D_V / MM_CS) /* output columns a warp: 128 */

template <int RB> struct mm_cfg {
    static constexpr int M = 16 * RB, WARPS = MM_CS * RB, THREADS = 32 * WARPS;
    static constexpr int STAGES = RB == 4 ? 3 : 4;
    static constexpr int Q_BYTES = M * MM_ROW_B, STAGE_BYTES = MM_NT * MM_ROW_B;
    static constexpr int KV_OFF = Q_BYTES, P_OFF = KV_OFF + STAGES * STAGE_BYTES;
    static constexpr int RED_OFF = P_OFF + M * MM_P_PITCH * 2;
    static constexpr int SMEM = RED_OFF + MM_CS * M * 4;
};

/* Tokens [t0, t0 + 32) into a stage, rows at or past t_end zero-filled. Warp w copies rows w·RPW .. w·RPW + RPW - 1,
 * a row at a time, 32 consecutive 16-byte chunks per instruction (the row's 72 in three); lane j < RPW looks up row
 * j's place in the pool once (one block-table read a row, not one a copy) and the warp takes it by shuffle. */
template <int WARPS>
__device__ __forceinline__ void mm_load_tile(uint32_t stage, const mla_split_args &a, const int *table, int t0,
                                             int t_end)
{
    constexpr int RPW = MM_NT / WARPS;
    const int lane = threadIdx.x & 31, r0 = (threadIdx.x >> 5) * RPW;
    long long mine = -1; /* -1: past t_end */
    if (lane < RPW && t0 + r0 + lane < t_end)
        mine = mla_row_of(a, table, t0 + r0 + lane);
#pragma unroll
    for (int j = 0; j < RPW; j++) {
        const long long row = __shfl_sync(0xffffffffu, mine, j);
        for (int ch = lane; ch < MM_CHUNKS; ch += 32)
            cp_async16(stage + attn_swz<PL_MLA_D_QK>(r0 + j, ch), row >= 0 ? a.p.kv_cache + row + ch * 8 : a.p.kv_cache,
                       row >= 0 ? 16 : 0);
    }
}

/* The block's query rows into shared memory, zeros for rows past the last head. */
template <int RB> __device__ __forceinline__ void mm_load_q(uint32_t sq, const pl_mla_problem &p, int b, int h0)
{
    using C = mm_cfg<RB>;
    for (int i = threadIdx.x; i < C::M * MM_CHUNKS; i += C::THREADS) {
        const int r = i / MM_CHUNKS, ch = i - r * MM_CHUNKS, h = h0 + r;
        const bool in = h < p.heads;
        const uint16_t *src = in ? p.q + ((long long)b * p.heads + h) * PL_MLA_D_QK + ch * 8 : p.q;
        cp_async16(sq + attn_swz<PL_MLA_D_QK>(r, ch), src, in ? 16 : 0);
    }
}

/* A warp's scores of one tile: its 16 rows against its 8 tokens over the 576 columns (rows g and g + 8 of the
 * quad's lane in s[0..1] and s[2..3], tokens 2·(lane % 4) + {0, 1}). */
__device__ __forceinline__ void mm_scores(float (&s)[4], uint32_t sq, uint32_t st, int rb, int cs, int lane)
{
    s[0] = s[1] = s[2] = s[3] = 0.0f;
    const int qrow = rb * 16 + (lane & 15), krow = cs * 8 + (lane & 7);
#pragma unroll 6
    for (int kp = 0; kp < MM_CHUNKS / 4; kp++) { /* two k-steps of 16 columns: four 16-byte chunks */
        uint32_t kb[4], qa[4];
        ldmatrix_x4(kb, st + attn_swz<PL_MLA_D_QK>(krow, 4 * kp + (lane >> 3)));
        ldmatrix_x4(qa, sq + attn_swz<PL_MLA_D_QK>(qrow, 4 * kp + (lane >> 4)));
        mma_bf16_16816(s, qa, kb[0], kb[1]);
        ldmatrix_x4(qa, sq + attn_swz<PL_MLA_D_QK>(qrow, 4 * kp + 2 + (lane >> 4)));
        mma_bf16_16816(s, qa, kb[2], kb[3]);
    }
}

/* The online-softmax step of one tile for a warp: scaled scores (tokens at or past t_end masked), the row maxima
 * of the row block's four warps merged through red[cs][M], the output and sums rescaled, P (bf16) into the shared
 * P tile. m: running max of rows g, g + 8 (base-2 units); l: this thread's part of their sums. */
template <int RB>
__device__ __forceinline__ void mm_softmax(float (&s)[4], float (&m)[2], float (&l)[2], float (&o)[MM_OCOLS / 8][4],
                                           unsigned char *smem, float sl2, int tok, int t_end, int rb, int cs, int lane)
{
    using C = mm_cfg<RB>;
    float *red = reinterpret_cast<float *>(smem + C::RED_OFF);
    const int row = rb * 16 + (lane >> 2);
#pragma unroll
    for (int j = 0; j < 4; j++)
        s[j] = tok + (j & 1) < t_end ? s[j] * sl2 : -INFINITY;
    float mx[2] = {fmaxf(s[0], s[1]), fmaxf(s[2], s[3])};
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    if ((lane & 3) == 0) {
        red[cs * C::M + row] = mx[0];
        red[cs * C::M + row + 8] = mx[1];
    }
    __syncthreads();
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float mn = m[r];
#pragma unroll
        for (int c = 0; c < MM_CS; c++)
            mn = fmaxf(mn, red[c * C::M + row + 8 * r]);
        /* the tile holds a visible token (t0 < t_end), so mn is finite; m is -inf before the first tile */
        alpha[r] = attn_exp2(m[r] - mn);
        m[r] = mn;
    }
    const float p0 = attn_exp2(s[0] - m[0]), p1 = attn_exp2(s[1] - m[0]);
    const float p2 = attn_exp2(s[2] - m[1]), p3 = attn_exp2(s[3] - m[1]);
    l[0] = l[0] * alpha[0] + p0 + p1;
    l[1] = l[1] * alpha[1] + p2 + p3;
#pragma unroll
    for (int n = 0; n < MM_OCOLS / 8; n++) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
    }
    uint32_t *pt = reinterpret_cast<uint32_t *>(smem + C::P_OFF);
    const int col = cs * 8 + 2 * (lane & 3);
    pt[(row * MM_P_PITCH + col) / 2] = attn_pack_bf16(p0, p1);
    pt[((row + 8) * MM_P_PITCH + col) / 2] = attn_pack_bf16(p2, p3);
}

/* O (the warp's 16 rows × 128 columns) += P (16 rows × the tile's 32 tokens, shared) · V (the tile's rows, columns
 * 128·cs ..). */
__device__ __forceinline__ void mm_pv(float (&o)[MM_OCOLS / 8][4], uint32_t sp, uint32_t st, int rb, int cs, int lane)
{
#pragma unroll
    for (int ks = 0; ks < MM_NT / 16; ks++) {
        uint32_t pa[4];
        ldmatrix_x4(pa, sp + (uint32_t)(((rb * 16 + (lane & 15)) * MM_P_PITCH + ks * 16 + (lane >> 4) * 8) * 2));
        const int tok = ks * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int j = 0; j < MM_OCOLS / 16; j++) {
            uint32_t vb[4];
            ldmatrix_x4_trans(vb, st + attn_swz<PL_MLA_D_QK>(tok, cs * (MM_OCOLS / 8) + 2 * j + (lane >> 4)));
            mma_bf16_16816(o[2 * j], pa, vb[0], vb[1]);
            mma_bf16_16816(o[2 * j + 1], pa, vb[2], vb[3]);
        }
    }
}

/* The chunk's result: sums of the row block's warps merged through red, rows normalised, written with their
 * log-sum-exp to the workspace slot of (b, head, sp). */
template <int RB>
__device__ __forceinline__ void mm_store_partial(const mla_split_args &a, unsigned char *smem,
                                                 float (&o)[MM_OCOLS / 8][4], const float (&m)[2], float (&l)[2], int b,
                                                 int h0, int sp, int rb, int cs, int lane)
{
    using C = mm_cfg<RB>;
    float *red = reinterpret_cast<float *>(smem + C::RED_OFF);
    const int row = rb * 16 + (lane >> 2);
    mla_publish_sums<C::M>(l, red, cs, row, lane & 3);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int h = h0 + row + 8 * r;
        if (h >= a.p.heads)
            continue;
        float lt = 0.0f;
#pragma unroll
        for (int c = 0; c < MM_CS; c++)
            lt += red[c * C::M + row + 8 * r];
        mla_store_row<MM_OCOLS / 8>(a, &o[0][0], 4, b, h, sp, cs * MM_OCOLS + 2 * (lane & 3), r, 1.0f / lt,
                                    m[r] + log2f(lt), cs == 0 && (lane & 3) == 0);
    }
}

template <int RB> __global__ void __launch_bounds__(mm_cfg<RB>::THREADS) mla_decode_mma_kernel(const mla_split_args a)
{
    using C = mm_cfg<RB>;
    extern __shared__ __align__(128) unsigned char smem[];
    const int hb = blockIdx.x, sp = blockIdx.y, b = blockIdx.z;
    const int len = a.p.seq_lens[b], t_begin = sp * a.chunk;
    if (t_begin >= len) /* past the sequence: the combine reads only the chunks inside it */
        return;
    const int t_end = min(len, t_begin + a.chunk), ntiles = (t_end - t_begin + MM_NT - 1) / MM_NT;
    const int h0 = hb * C::M;
    const int *table = a.p.block_table + (long long)b * a.p.max_pages;
    const uint32_t sq = (uint32_t)__cvta_generic_to_shared(smem), skv = sq + C::KV_OFF, sp_tile = sq + C::P_OFF;

    mm_load_q<RB>(sq, a.p, b, h0); /* in the first tile's group */
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; s++) {
        if (s < ntiles)
            mm_load_tile<C::WARPS>(skv + s * C::STAGE_BYTES, a, table, t_begin + s * MM_NT, t_end);
        cp_async_commit();
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, rb = warp / MM_CS, cs = warp % MM_CS;
    float o[MM_OCOLS / 8][4];
#pragma unroll
    for (int n = 0; n < MM_OCOLS / 8; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    for (int it = 0; it < ntiles; it++) {
        cp_async_wait<C::STAGES - 2>(); /* tile it (and Q) landed for this thread */
        __syncthreads();                /* ... for every thread; the stage of tile it - 1 is free */
        const int next = it + C::STAGES - 1;
        if (next < ntiles)
            mm_load_tile<C::WARPS>(skv + (next % C::STAGES) * C::STAGE_BYTES, a, table, t_begin + next * MM_NT, t_end);
        cp_async_commit();
        const uint32_t st = skv + (it % C::STAGES) * C::STAGE_BYTES;
        float s[4];
        mm_scores(s, sq, st, rb, cs, lane);
        mm_softmax<RB>(s, m, l, o, smem, a.scale_log2, t_begin + it * MM_NT + cs * 8 + 2 * (lane & 3), t_end, rb, cs,
                       lane);
        __syncthreads(); /* the P tile complete */
        mm_pv(o, sp_tile, st, rb, cs, lane);
    }
    cp_async_wait<0>(); /* no copy left in flight at exit (the trailing groups are empty) */
    mm_store_partial<RB>(a, smem, o, m, l, b, h0, sp, rb, cs, lane);
}

/* Rows of mma tiles a CTA: the fewest 16-row blocks that hold the heads, at most 4. */
static int mm_row_blocks(int heads)
{
    return heads <= 16 ? 1 : heads <= 32 ? 2 : 4;
}

extern "C" int pl_mla_decode_chunk(const pl_mla_problem *p, long long total_tokens, int max_len, int sm_count)
{
    const long long head_blocks = (p->heads + 16 * mm_row_blocks(p->heads) - 1) / (16 * mm_row_blocks(p->heads));
    /* four waves of one CTA an SM, so that the last, partly empty wave (where lengths differ) is a small share of
     * the time, while a CTA still streams hundreds of KB for each fill of its pipeline */
    const long long target = 4LL * (sm_count > 0 ? sm_count : 1);
    long long chunk = (head_blocks * (total_tokens > 0 ? total_tokens : 1) + target - 1) / target;
    chunk = (chunk + 63) / 64 * 64;
    const long long at_least = ((long long)max_len + 65534) / 65535; /* the grid's y dimension */
    if (chunk < at_least)
        chunk = (at_least + 63) / 64 * 64;
    return (int)(chunk > (1 << 24) ? (1 << 24) : chunk);
}

extern "C" size_t pl_mla_decode_workspace_bytes(const pl_mla_problem *p, int max_len, int chunk)
{
    if (chunk < 64 || max_len < 1)
        return 0;
    const size_t n = (size_t)p->batch * p->heads * mla_max_splits(max_len, chunk);
    return n * PL_MLA_D_V * sizeof(float) + n * sizeof(float);
}

template <int RB>
static cudaError_t mm_launch(const pl_mla_problem *p, int max_len, int chunk, void *workspace, cudaStream_t stream)
{
    using C = mm_cfg<RB>;
    return mla_launch_split(mla_decode_mma_kernel<RB>, C::M, C::THREADS, C::SMEM, p, max_len, chunk, workspace, stream);
}

extern "C" cudaError_t pl_mla_decode_mma(const pl_mla_problem *p, int max_len, int chunk, void *workspace,
                                         cudaStream_t stream)
{
    if (!p || p->heads < 1)
        return cudaErrorInvalidValue;
    const int rb = mm_row_blocks(p->heads);
    return rb == 1   ? mm_launch<1>(p, max_len, chunk, workspace, stream)
           : rb == 2 ? mm_launch<2>(p, max_len, chunk, workspace, stream)
                     : mm_launch<4>(p, max_len, chunk, workspace, stream);
}
