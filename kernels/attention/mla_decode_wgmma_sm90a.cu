/* MLA decode on Hopper's warpgroup MMA (sm_90a) — 64 query heads as the M rows of wgmma, 64-token tiles of latent
 * rows streamed through shared memory, the sequence split over CTAs.
 *
 * A CTA computes a block of 64 query heads of one sequence over one chunk of its tokens, in two warpgroups. Every
 * operand lives in shared memory in the layout TMA writes with 128-byte swizzle — boxes of 64 columns (128-byte
 * rows), the 16-byte chunk c of row r at (c ^ (r % 8)) — but is copied there by all 256 threads with 16-byte
 * cp.async, each latent row gathered through the block table, so that any page size works (a TMA box would have to
 * stop at a page's end). Q (64 × 576) is copied once; tiles of 64 latent rows (72 KB) go through two stages, the
 * next tile loading while this one is computed (shared memory holds no third: 72 KB of Q, 144 KB of tiles).
 *
 * Per tile:
 *   S = Q·Kᵀ, warpgroup w taking tokens 32w .. 32w + 31: 36 wgmma m64n32k16, both operands K-major from shared
 *   memory;
 *   the online softmax in registers, the two warpgroups' row maxima merged through shared memory; P (bf16) into a
 *   64 × 64 swizzled box, both halves together;
 *   O += P·V, warpgroup w taking output columns 256w .. 256w + 255: 4 wgmma m64n256k16 with A = P and B = the
 *   same tile's first 512 columns read N-major (one latent row read from memory feeds both products).
 * The shared-memory writes of cp.async and of P are made visible to the tensor cores' async proxy with
 * fence.proxy.async before the barrier that precedes each wgmma. The chunk's normalised output and base-2 log-sum-exp
 * go to the workspace; mla_combine_kernel (mla_split.cuh) merges the chunks. The schedule is the plain one: the
 * softmax does not overlap the GEMMs, nor the warpgroups each other. */
#include <math.h>

#include "attention/mla_split.cuh"
#include "common/sm90_common.cuh"

#define MW_NT      64                                 /* tokens a tile */
#define MW_M       64                                 /* query heads a CTA */
#define MW_THREADS 256                                /* two warpgroups */
#define MW_CHUNKS  (PL_MLA_D_QK / 8)                  /* 16-byte chunks of a latent row: 72 */
#define MW_BOX_B   (64 * 128)                         /* a 64-row box of 64 columns: 8 KB */
#define MW_TILE_B  (9 * MW_BOX_B)                     /* 64 rows × 576 columns: 72 KB */
#define MW_KV_OFF  MW_TILE_B                          /* Q first, then the two stages, */
#define MW_P_OFF   (MW_KV_OFF + 2 * MW_TILE_B)        /* the P box, */
#define MW_RED_OFF (MW_P_OFF + MW_BOX_B)              /* the warpgroups' row maxima and sums [2][64] */
#define MW_SMEM    (MW_RED_OFF + 2 * MW_M * 4 + 1024) /* + the alignment of the base to 1024 bytes */

/* Byte offset of 16-byte chunk ch (0..71) of row r of a 64-row operand in boxes of 64 columns. */
__device__ __forceinline__ uint32_t mw_off(int r, int ch)
{
    return (uint32_t)((ch >> 3) * MW_BOX_B + r * 128 + (((ch & 7) ^ (r & 7)) << 4));
}

/* Tokens [t0, t0 + 64) into a stage, rows at or past t_end zero-filled: warp w copies rows 8w .. 8w + 7, a row at a
 * time (32 consecutive chunks an instruction), lane j < 8 looking up row j's place in the pool once. */
__device__ __forceinline__ void mw_load_tile(uint32_t stage, const mla_split_args &a, const int *table, int t0,
                                             int t_end)
{
    const int lane = threadIdx.x & 31, r0 = (threadIdx.x >> 5) * 8;
    long long mine = -1; /* -1: past t_end */
    if (lane < 8 && t0 + r0 + lane < t_end)
        mine = mla_row_of(a, table, t0 + r0 + lane);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const long long row = __shfl_sync(0xffffffffu, mine, j);
        for (int ch = lane; ch < MW_CHUNKS; ch += 32)
            cp_async16(stage + mw_off(r0 + j, ch), row >= 0 ? a.p.kv_cache + row + ch * 8 : a.p.kv_cache,
                       row >= 0 ? 16 : 0);
    }
}

/* The block's 64 query rows, zeros past the last head. */
__device__ __forceinline__ void mw_load_q(uint32_t sq, const pl_mla_problem &p, int b, int h0)
{
    for (int i = threadIdx.x; i < MW_M * MW_CHUNKS; i += MW_THREADS) {
        const int r = i / MW_CHUNKS, ch = i - r * MW_CHUNKS, h = h0 + r;
        const bool in = h < p.heads;
        cp_async16(sq + mw_off(r, ch), in ? p.q + ((long long)b * p.heads + h) * PL_MLA_D_QK + ch * 8 : p.q,
                   in ? 16 : 0);
    }
}

/* S (64 heads × this warpgroup's 32 tokens) = Q·Kᵀ over the 576 columns. */
__device__ __forceinline__ void mw_scores(float (&s)[16], uint32_t sq, uint32_t st, int wg)
{
#pragma unroll
    for (int i = 0; i < 16; i++)
        s[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < PL_MLA_D_QK / 16; kk++) {
        const uint32_t koff = (uint32_t)((kk >> 2) * MW_BOX_B + (kk & 3) * 32);
        pl_wgmma_m64n32k16_bf16<0>(s, wgmma_desc_k128(sq + koff), wgmma_desc_k128(st + wg * 32 * 128 + koff), 1);
    }
    wgmma_commit();
    wgmma_wait<0>();
    accumulators_fence(s);
}

/* The online-softmax step of a tile for a thread's rows `row` and `row + 8` (m, l: their running max in base-2
 * units and this thread's part of their sums): scores masked past t_end and scaled, the maxima of both
 * warpgroups merged through red, O rescaled, P written to the shared box. tok0: the token of this warpgroup's
 * column 0. */
__device__ __forceinline__ void mw_softmax(float (&s)[16], float (&m)[2], float (&l)[2], float (&o)[128],
                                           unsigned char *smem, float sl2, int tok0, int t_end, int wg, int row, int q4)
{
    float *red = reinterpret_cast<float *>(smem + MW_RED_OFF);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < 4; n++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float v = tok0 + 8 * n + 2 * q4 + (j & 1) < t_end ? s[4 * n + j] * sl2 : -INFINITY;
            s[4 * n + j] = v;
            mx[j >> 1] = fmaxf(mx[j >> 1], v);
        }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    if (q4 == 0) {
        red[wg * MW_M + row] = mx[0];
        red[wg * MW_M + row + 8] = mx[1];
    }
    __syncthreads();
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        /* the tile's first token is visible, so the merged max is finite; m is -inf before the first tile */
        const float mn = fmaxf(m[r], fmaxf(red[row + 8 * r], red[MW_M + row + 8 * r]));
        alpha[r] = attn_exp2(m[r] - mn);
        m[r] = mn;
    }
    unsigned char *pbox = smem + MW_P_OFF;
#pragma unroll
    for (int n = 0; n < 4; n++) {
        const float p0 = attn_exp2(s[4 * n] - m[0]), p1 = attn_exp2(s[4 * n + 1] - m[0]);
        const float p2 = attn_exp2(s[4 * n + 2] - m[1]), p3 = attn_exp2(s[4 * n + 3] - m[1]);
        l[0] = (n == 0 ? l[0] * alpha[0] : l[0]) + p0 + p1;
        l[1] = (n == 0 ? l[1] * alpha[1] : l[1]) + p2 + p3;
        const int ch = 4 * wg + n; /* the 16-byte chunk of the P row holding these tokens */
        *reinterpret_cast<uint32_t *>(pbox + row * 128 + ((ch ^ (row & 7)) << 4) + 4 * q4) = attn_pack_bf16(p0, p1);
        *reinterpret_cast<uint32_t *>(pbox + (row + 8) * 128 + ((ch ^ (row & 7)) << 4) + 4 * q4) =
            attn_pack_bf16(p2, p3);
    }
#pragma unroll
    for (int n = 0; n < 32; n++) {
        o[4 * n] *= alpha[0];
        o[4 * n + 1] *= alpha[0];
        o[4 * n + 2] *= alpha[1];
        o[4 * n + 3] *= alpha[1];
    }
}

/* O (64 heads × this warpgroup's 256 columns) += P (64 × 64 tokens) · V (the tile's rows, columns 256·wg ..). */
__device__ __forceinline__ void mw_pv(float (&o)[128], uint32_t sp, uint32_t st, int wg)
{
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < MW_NT / 16; ks++)
        pl_wgmma_m64n256k16_bf16<1>(o, wgmma_desc_k128(sp + ks * 32),
                                    wgmma_desc_mn128(st + 4 * wg * MW_BOX_B + ks * 2048, MW_BOX_B), 1);
    wgmma_commit();
    wgmma_wait<0>();
    accumulators_fence(o);
}

/* The chunk's result: the warpgroups' sums merged through red, rows normalised, written with their log-sum-exp. */
__device__ __forceinline__ void mw_store_partial(const mla_split_args &a, unsigned char *smem, const float (&o)[128],
                                                 const float (&m)[2], float (&l)[2], int b, int h0, int sp, int wg,
                                                 int row, int q4)
{
    float *red = reinterpret_cast<float *>(smem + MW_RED_OFF);
    mla_publish_sums<MW_M>(l, red, wg, row, q4);
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int h = h0 + row + 8 * r;
        if (h >= a.p.heads)
            continue;
        const float lt = red[row + 8 * r] + red[MW_M + row + 8 * r];
        mla_store_row<32>(a, o, 4, b, h, sp, 256 * wg + 2 * q4, r, 1.0f / lt, m[r] + log2f(lt), wg == 0 && q4 == 0);
    }
}

__global__ void __launch_bounds__(MW_THREADS, 1) mla_decode_wgmma_kernel(const mla_split_args a)
{
    extern __shared__ unsigned char smem_raw[];
    const int hb = blockIdx.x, sp = blockIdx.y, b = blockIdx.z;
    const int len = a.p.seq_lens[b], t_begin = sp * a.chunk;
    if (t_begin >= len) /* past the sequence: the combine reads only the chunks inside it */
        return;
    const int t_end = min(len, t_begin + a.chunk), ntiles = (t_end - t_begin + MW_NT - 1) / MW_NT;
    const int h0 = hb * MW_M;
    const int *table = a.p.block_table + (long long)b * a.p.max_pages;
    const uint32_t raw = smem_u32(smem_raw), sq = (raw + 1023u) & ~1023u; /* swizzle atoms are 1024-byte aligned */
    unsigned char *smem = smem_raw + (sq - raw);
    const uint32_t skv = sq + MW_KV_OFF, sp_box = sq + MW_P_OFF;

    mw_load_q(sq, a.p, b, h0); /* in the first tile's group */
    mw_load_tile(skv, a, table, t_begin, t_end);
    cp_async_commit();

    const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31, q4 = lane & 3;
    const int row = ((threadIdx.x >> 5) & 3) * 16 + (lane >> 2); /* rows row and row + 8 of the m64 accumulators */
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++)
        o[i] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

    for (int it = 0; it < ntiles; it++) {
        cp_async_wait<0>();         /* tile it (and Q) landed for this thread */
        fence_proxy_async_shared(); /* ... visible to the tensor cores */
        __syncthreads();            /* ... for every thread; the other stage is free (tile it - 1 is done) */
        if (it + 1 < ntiles)
            mw_load_tile(skv + ((it + 1) & 1) * MW_TILE_B, a, table, t_begin + (it + 1) * MW_NT, t_end);
        cp_async_commit();
        const uint32_t st = skv + (it & 1) * MW_TILE_B;
        float s[16];
        mw_scores(s, sq, st, wg);
        mw_softmax(s, m, l, o, smem, a.scale_log2, t_begin + it * MW_NT + 32 * wg, t_end, wg, row, q4);
        fence_proxy_async_shared(); /* P's stores visible to the tensor cores */
        __syncthreads();            /* the P box complete */
        mw_pv(o, sp_box, st, wg);
    }
    cp_async_wait<0>();
    mw_store_partial(a, smem, o, m, l, b, h0, sp, wg, row, q4);
}

extern "C" cudaError_t pl_mla_decode_wgmma(const pl_mla_problem *p, int max_len, int chunk, void *workspace,
                                           cudaStream_t stream)
{
    return mla_launch_split(mla_decode_wgmma_kernel, MW_M, MW_THREADS, MW_SMEM, p, max_len, chunk, workspace, stream);
}
