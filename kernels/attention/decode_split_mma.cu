/* Paged decode, version 3 — split_kv_mma: flash-decoding with the GQA group on the tensor cores.
 *
 * The same split as split_kv (one CTA per chunk of a (sequence, kv head) KV range, partial results combined by a
 * second kernel), but the arithmetic goes through mma.sync m16n8k16: the G query heads of the group are the rows
 * of a 16-row A operand (zero rows pad G up to 16), so each warp's step is FlashAttention-2 on a 16 × 16 tile —
 * S = Q·Kᵀ for 16 tokens (ldmatrix from the K tile), the online softmax over the row, P to A registers in place,
 * O += P·V (ldmatrix.trans from the V tile). The SIMT version spends ~90 instructions per token and lane group on
 * fp32 FMAs, bf16 unpacking and shuffle reductions, enough to make a memory-bound problem instruction-bound; here
 * a token costs ~15 warp instructions, and the tensor cores, three quarters idle on padding rows, still have
 * room to spare. K and V stream through a 3-stage cp.async pipeline of 64-token tiles (16-byte copies, XOR-swizzled
 * rows so that ldmatrix does not conflict), each warp taking 16 tokens of a tile; the four warps' states merge
 * through shared memory at the end. */
#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/decode_split.cuh"

#define DM_THREADS 128
#define DM_WARPS   (DM_THREADS / 32)
#define DM_TILE    64 /* tokens per stage: 16 per warp */
#define DM_STAGES  3

template <int D> struct dm_smem {
    static constexpr int tile_bytes = DM_TILE * D * 2; /* K or V of one tile */
    static constexpr int stage_bytes = 2 * tile_bytes;
    static constexpr int merge_bytes = DM_WARPS * 8 * (D + 2) * 4; /* G <= 8 */
    static constexpr int bytes = DM_STAGES * stage_bytes > merge_bytes ? DM_STAGES *stage_bytes : merge_bytes;
};

/* Tile [t0, t0 + 64) of the chunk (ending at `end`) into a stage: K rows then V rows, swizzled; zeros past `end`.
 * t0 is a multiple of 64, so the page of each token follows from t0's page by a few subtractions. */
template <int D>
__device__ __forceinline__ void dm_load_tile(uint32_t stage, const pl_decode_problem &p, const int *table, int kvh,
                                             int t0, int end)
{
    constexpr int CPR = D / 8;             /* 16-byte chunks per row */
    constexpr int ROWS = DM_THREADS / CPR; /* rows one pass of the CTA covers */
    const int ch = threadIdx.x % CPR;
    const int pg0 = t0 / p.page_size, r0 = t0 % p.page_size;
#pragma unroll
    for (int i = 0; i < DM_TILE / ROWS; i++) {
        const int tok = threadIdx.x / CPR + i * ROWS, t = t0 + tok;
        const uint16_t *ks = p.k_cache, *vs = p.v_cache;
        if (t < end) {
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
        cp_async16(dst, ks, t < end ? 16 : 0);
        cp_async16(dst + DM_TILE * D * 2, vs, t < end ? 16 : 0);
    }
}

template <int D> __global__ void __launch_bounds__(DM_THREADS, 2) decode_split_mma_kernel(const ds_args a)
{
    constexpr int KS = D / 16; /* k16 steps of Q·Kᵀ */
    constexpr int DT = D / 8;  /* n8 tiles of O */
    typedef dm_smem<D> sm;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    const pl_decode_problem &p = a.p;
    const int sp = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
    const int len = p.seq_lens[b];
    const int start = sp * a.chunk;
    if (start >= len)
        return; /* the combine step knows this chunk is empty from the length */
    const int end = min(len, start + a.chunk);
    const int n_tiles = (end - start + DM_TILE - 1) / DM_TILE;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, qd = lane & 3; /* this thread's row (head) g (and g + 8, padding), column pair qd */
    const int *table = p.block_table + (long long)b * p.max_pages;

#pragma unroll
    for (int s = 0; s < DM_STAGES - 1; s++) {
        if (s < n_tiles)
            dm_load_tile<D>(sbase + s * sm::stage_bytes, p, table, kvh, start + s * DM_TILE, end);
        cp_async_commit();
    }

    /* Q as A fragments, once: row g is query head kvh·G + g when g < G, else zero; rows g + 8 are padding */
    uint32_t qa[KS][4];
    const uint32_t *qrow =
        g < a.group ? reinterpret_cast<const uint32_t *>(p.q + ((long long)b * p.heads + kvh * a.group + g) * D)
                    : nullptr;
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
        qa[kk][0] = qrow ? qrow[(16 * kk + 2 * qd) / 2] : 0u;
        qa[kk][1] = 0u;
        qa[kk][2] = qrow ? qrow[(16 * kk + 8 + 2 * qd) / 2] : 0u;
        qa[kk][3] = 0u;
    }
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m = -INFINITY, l = 0.0f; /* of row g, in base-2 units of the scaled score */

    for (int i = 0; i < n_tiles; i++) {
        cp_async_wait<DM_STAGES - 2>();
        __syncthreads(); /* tile i visible; every warp is done with the stage refilled next */
        if (i + DM_STAGES - 1 < n_tiles)
            dm_load_tile<D>(sbase + ((i + DM_STAGES - 1) % DM_STAGES) * sm::stage_bytes, p, table, kvh,
                            start + (i + DM_STAGES - 1) * DM_TILE, end);
        cp_async_commit();
        const uint32_t kt = sbase + (i % DM_STAGES) * sm::stage_bytes, vt = kt + sm::tile_bytes;
        const int tok0 = warp * 16; /* this warp's 16 tokens of the tile */

        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int kk = 0; kk < KS; kk++) {
            uint32_t bf[4];
            const int mi = lane >> 3;
            ldmatrix_x4(bf, kt + attn_swz<D>(tok0 + 8 * (mi >> 1) + (lane & 7), 2 * kk + (mi & 1)));
            mma_bf16_16816(s[0], qa[kk], bf[0], bf[1]);
            mma_bf16_16816(s[1], qa[kk], bf[2], bf[3]);
        }
        /* row g only (c0, c1): scale into base 2, mask tokens past the end, online softmax */
        const int t_first = start + i * DM_TILE + tok0;
        float mx = m;
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int t = t_first + nt * 8 + 2 * qd + e;
                s[nt][e] = t < end ? s[nt][e] * a.scale_log2 : -INFINITY;
                mx = fmaxf(mx, s[nt][e]);
            }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float use = mx == -INFINITY ? 0.0f : mx;
        const float alpha = attn_exp2(m - use);
        const float p00 = attn_exp2(s[0][0] - use), p01 = attn_exp2(s[0][1] - use);
        const float p10 = attn_exp2(s[1][0] - use), p11 = attn_exp2(s[1][1] - use);
        l = l * alpha + (p00 + p01) + (p10 + p11);
        m = mx;
        uint32_t pa[4];
        pa[0] = attn_pack_bf16(p00, p01);
        pa[1] = 0u; /* rows g + 8: padding */
        pa[2] = attn_pack_bf16(p10, p11);
        pa[3] = 0u;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            o[dt][0] *= alpha;
            o[dt][1] *= alpha;
        }
#pragma unroll
        for (int dt = 0; dt < DT; dt += 2) {
            uint32_t bf[4];
            const int mi = lane >> 3;
            ldmatrix_x4_trans(bf, vt + attn_swz<D>(tok0 + (mi & 1) * 8 + (lane & 7), dt + (mi >> 1)));
            mma_bf16_16816(o[dt], pa, bf[0], bf[1]);
            mma_bf16_16816(o[dt + 1], pa, bf[2], bf[3]);
        }
    }
    cp_async_wait<0>();

    /* the four warps' states of each head through shared memory (the stages are free now) */
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    __syncthreads();
    float *sm_o = reinterpret_cast<float *>(smem);                      /* [DM_WARPS][8][D] */
    float *sm_m = sm_o + DM_WARPS * 8 * D, *sm_l = sm_m + DM_WARPS * 8; /* [DM_WARPS][8] */
    if (g < a.group) {
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            sm_o[(warp * 8 + g) * D + dt * 8 + 2 * qd] = o[dt][0];
            sm_o[(warp * 8 + g) * D + dt * 8 + 2 * qd + 1] = o[dt][1];
        }
        if (qd == 0) {
            sm_m[warp * 8 + g] = m;
            sm_l[warp * 8 + g] = l;
        }
    }
    __syncthreads();
    ds_store_partials<D, DM_WARPS, 8>(a, sm_o, sm_m, sm_l, a.group, b, kvh, sp);
}

template <int D> static cudaError_t launch_split_mma(const ds_args &a, cudaStream_t stream)
{
    const dim3 grid((unsigned)a.max_splits, (unsigned)a.p.kv_heads, (unsigned)a.p.batch);
    const int smem = dm_smem<D>::bytes;
    cudaError_t e = cudaFuncSetAttribute(decode_split_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess)
        return e;
    decode_split_mma_kernel<D><<<grid, DM_THREADS, smem, stream>>>(a);
    e = cudaGetLastError();
    return e != cudaSuccess ? e : ds_launch_combine<D>(a, stream);
}

extern "C" cudaError_t pl_decode_split_mma(const pl_decode_problem *p, int max_len, int chunk, void *workspace,
                                           cudaStream_t stream)
{
    ds_args a;
    cudaError_t e = ds_args_of(p, max_len, chunk, workspace, &a);
    if (e != cudaSuccess)
        return e;
    return p->head_dim == 64 ? launch_split_mma<64>(a, stream) : launch_split_mma<128>(a, stream);
}
