/* Attention backward, version 2 — FlashAttention-2's backward with mma.sync (sm_80+).
 *
 * Three kernels (four with the deterministic dQ of flash_bwd_dq.cu):
 *   preprocess  a warp per query row: D = rowsum(dO ∘ O) in fp32, the LSE times log2(e) (+inf for the padding
 *               rows past seq, so that their P is 0 without a test), and the fp32 dQ accumulator's row zeroed;
 *   key blocks  one CTA per (block of 128 keys, kv head, batch), 8 warps of 16 keys each. K and V of the block stay
 *               in shared memory; the CTA walks every query block of 64 rows of every query head of the GQA group
 *               (Q, dO and their rows' LSE and D double-buffered with cp.async) and per step computes, in the
 *               transposed form where a warp's rows are its keys: Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ (mma.sync m16n8k16),
 *               Pᵀ = 2^(scale·log2e·Sᵀ − LSE·log2e) (the softmax recomputed from the forward's LSE, nothing
 *               reduced), dSᵀ = Pᵀ ∘ (dPᵀ − D), then dV += Pᵀ·dO and dK += dSᵀ·Q with Pᵀ and dSᵀ straight from
 *               registers as A operands. dK and dV of the block never leave registers until the end, summed over
 *               the group's query heads without atomics. dQ needs dS with queries as rows: dSᵀ goes to shared
 *               memory as bf16, and the 8 warps compute the step's dQ (64 rows × head_dim, a quarter of the rows
 *               and half the columns each) = dS·K, read with ldmatrix.trans, added with fp32 atomics (RED) into
 *               the accumulator;
 *   dQ          the accumulator times the scale, as bf16 in Q's layout.
 * With `deterministic` the key-block kernel skips dQ and flash_bwd_dq.cu's kernel computes it per query block
 * (S, dP and dS again: 7 GEMMs of the 5, no atomics, the same bits every run).
 * Causal: a key block starts at the query block holding its first key; the mask is applied only where a tile
 * crosses the diagonal or the end of the sequence. Rows and keys past `seq` are zero-filled by the copies. */
#include <math.h>

#include "attention/flash_bwd.cuh"

#define FB_PRE_THREADS 256

/* A warp per padded row r = bh·seq_pad + i: D, LSE·log2e, and (zero_acc) the dQ accumulator's row set to 0. The
 * padded rows are a multiple of the 8 rows a block takes, so every warp has a row. */
template <int D> __global__ void __launch_bounds__(FB_PRE_THREADS) flash_bwd_pre_kernel(const fb_args a, int zero_acc)
{
    const long long r = blockIdx.x * (long long)(FB_PRE_THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31, i = (int)(r % a.seq_pad);
    const long long bh = r / a.seq_pad;
    float d = 0.0f, l2 = INFINITY;
    if (i < a.g.seq) {
        const long long off = (bh / a.g.heads) * a.g.q_b + (bh % a.g.heads) * a.g.q_h + i * a.g.q_s;
        const uint32_t *dw = reinterpret_cast<const uint32_t *>(a.dout + off);
        const uint32_t *ow = reinterpret_cast<const uint32_t *>(a.o + off);
#pragma unroll
        for (int w = lane; w < D / 2; w += 32) {
            const uint32_t x = dw[w], y = ow[w];
            d = fmaf(attn_bf16_lo(x), attn_bf16_lo(y), d);
            d = fmaf(attn_bf16_hi(x), attn_bf16_hi(y), d);
        }
#pragma unroll
        for (int off2 = 16; off2 > 0; off2 >>= 1)
            d += __shfl_xor_sync(0xffffffffu, d, off2);
        l2 = a.lse[bh * a.g.seq + i] * PL_ATTN_LOG2E;
    }
    if (lane == 0) {
        a.dsum[r] = d;
        a.lse2[r] = l2;
    }
    if (zero_acc && lane < D / 4)
        reinterpret_cast<float4 *>(a.dq_acc + r * D)[lane] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* One step's inputs into buffer slots: Q and dO of query rows m0.. of head h, and their rows' LSE·log2e and D
 * (64 floats each, from the padded workspace: no bounds). */
template <int D, int THREADS>
__device__ __forceinline__ void fb_load_step(const fb_args &a, int b, int h, int m0, uint32_t sq, uint32_t sdo,
                                             uint32_t srow)
{
    const long long qoff = b * a.g.q_b + h * a.g.q_h;
    attn_load_tile<D, FB_BM, THREADS>(sq, a.q + qoff, a.g.q_s, m0, a.g.seq);
    attn_load_tile<D, FB_BM, THREADS>(sdo, a.dout + qoff, a.g.q_s, m0, a.g.seq);
    if (threadIdx.x < 2 * FB_BM / 4) {
        const int c = threadIdx.x;
        const float *src =
            (c < FB_BM / 4 ? a.lse2 : a.dsum) + ((long long)b * a.g.heads + h) * a.seq_pad + m0 + (c % (FB_BM / 4)) * 4;
        cp_async16(srow + c * 16, src, 16);
    }
}

/* Pᵀ and dSᵀ of a warp's 16 keys × 64 queries from Sᵀ and dPᵀ, as A operands (bf16). key_lo: the thread's first
 * key; lse2 and dsum: the step's rows in shared memory; mask: the tile crosses the diagonal or the sequence end. */
__device__ __forceinline__ void fb_probs_t(const float (&s)[8][4], const float (&dp)[8][4], const float *lse2,
                                           const float *dsum, const fb_args &a, int key_lo, int m0, bool mask, int lane,
                                           uint32_t (&pa)[4][4], uint32_t (&dsa)[4][4])
{
    float p[8][4], ds[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; nt++) {
        const int col = nt * 8 + 2 * (lane & 3);
        const float2 l2 = *reinterpret_cast<const float2 *>(lse2 + col);
        const float2 dd = *reinterpret_cast<const float2 *>(dsum + col);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float pe = fb_prob(s[nt][e], a.g.scale_log2, (e & 1) ? l2.y : l2.x);
            if (mask) {
                const int key = key_lo + (e >> 1) * 8, query = m0 + col + (e & 1);
                if (key >= a.g.seq || (a.g.causal && key > query))
                    pe = 0.0f;
            }
            p[nt][e] = pe;
            ds[nt][e] = pe * (dp[nt][e] - ((e & 1) ? dd.y : dd.x));
        }
    }
    attn_pack_a<4>(p, pa);
    attn_pack_a<4>(ds, dsa);
}

/* The step's dQ (64 rows × D) = dS·K over the block's 128 keys, dSᵀ read from shared memory transposed: warp w
 * takes rows 16·(w % 4).. and half the columns (w / 4), and adds them to the fp32 accumulator. */
template <int D>
__device__ __forceinline__ void fb_dq_step(const fb_args &a, uint32_t sds, uint32_t sk, long long acc_row0, int warp,
                                           int lane)
{
    constexpr int BN = 16 * FB_KV_WARPS, CS = FB_KV_WARPS / (FB_BM / 16), DTW = D / 8 / CS;
    const int rg = warp % (FB_BM / 16), cpart = warp / (FB_BM / 16), mi = lane >> 3;
    uint32_t af[BN / 16][4];
#pragma unroll
    for (int ks = 0; ks < BN / 16; ks++)
        ldmatrix_x4_trans(af[ks], sds + attn_swz<FB_BM>(ks * 16 + (mi >> 1) * 8 + (lane & 7), 2 * rg + (mi & 1)));
    float dq[DTW][4];
    attn_zero(dq);
    attn_warp_ab<D, BN / 16, DTW>(dq, af, sk, cpart * DTW, lane);
    float *acc = a.dq_acc + (acc_row0 + rg * 16 + (lane >> 2)) * D + cpart * DTW * 8 + 2 * (lane & 3);
#pragma unroll
    for (int dt = 0; dt < DTW; dt++) {
        atomicAdd(acc + dt * 8, dq[dt][0]);
        atomicAdd(acc + dt * 8 + 1, dq[dt][1]);
        atomicAdd(acc + 8 * D + dt * 8, dq[dt][2]);
        atomicAdd(acc + 8 * D + dt * 8 + 1, dq[dt][3]);
    }
}

/* dSᵀ of a warp's 16 keys (A-operand registers) to rows 16·warp.. of the [key][query] bf16 tile. */
__device__ __forceinline__ void fb_store_ds(uint32_t sds, const uint32_t (&dsa)[4][4], int warp, int lane)
{
    const int r = warp * 16 + (lane >> 2), byte = 4 * (lane & 3);
#pragma unroll
    for (int t = 0; t < 4; t++)
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t at = sds + attn_swz<FB_BM>(r + (k & 1) * 8, 2 * t + (k >> 1)) + byte;
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(dsa[t][k]) : "memory");
        }
}

template <int D, bool ATOMIC_DQ>
__global__ void __launch_bounds__(FB_KV_WARPS * 32, 1) flash_bwd_kv_kernel(const fb_args a)
{
    constexpr int THREADS = FB_KV_WARPS * 32, BN = 16 * FB_KV_WARPS, DT = D / 8;
    constexpr int KV_BYTES = BN * D * 2, QT_BYTES = FB_BM * D * 2, ROW_BYTES = 2 * FB_BM * 4;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sk = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t sv = sk + KV_BYTES, sq = sv + KV_BYTES, sdo = sq + 2 * QT_BYTES, srow = sdo + 2 * QT_BYTES;
    const uint32_t sds = srow + 2 * ROW_BYTES; /* [BN keys][64 queries] bf16 (atomic dQ only) */
    const float *rows_f = reinterpret_cast<const float *>(smem + (srow - sk));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = blockIdx.y, b = blockIdx.z, n0 = blockIdx.x * BN;
    const long long koff = b * a.g.k_b + kvh * a.g.k_h;
    /* causal: a key block starts at the query block holding its first key (earlier queries see none of it) */
    const int m_begin = a.g.causal ? n0 / FB_BM : 0, per_head = a.q_tiles - m_begin, steps = a.g.group * per_head;

    attn_load_tile<D, BN, THREADS>(sk, a.k + koff, a.g.k_s, n0, a.g.seq);
    attn_load_tile<D, BN, THREADS>(sv, a.v + koff, a.g.k_s, n0, a.g.seq);
    fb_load_step<D, THREADS>(a, b, kvh * a.g.group, m_begin * FB_BM, sq, sdo, srow);
    cp_async_commit();

    float dk[DT][4], dv[DT][4];
    attn_zero(dk);
    attn_zero(dv);
    const int key_lo = n0 + warp * 16 + (lane >> 2); /* this thread's keys: key_lo and key_lo + 8 */
    const bool edge = n0 + BN > a.g.seq;

    for (int t = 0; t < steps; t++) {
        if (t + 1 < steps) {
            const int nb = (t + 1) & 1, h1 = kvh * a.g.group + (t + 1) / per_head;
            fb_load_step<D, THREADS>(a, b, h1, (m_begin + (t + 1) % per_head) * FB_BM, sq + nb * QT_BYTES,
                                     sdo + nb * QT_BYTES, srow + nb * ROW_BYTES);
        }
        cp_async_commit(); /* an empty group at the end keeps the count uniform */
        cp_async_wait<1>();
        __syncthreads(); /* step t's tiles (and K, V) visible to every warp */
        const int buf = t & 1, h = kvh * a.g.group + t / per_head, m0 = (m_begin + t % per_head) * FB_BM;
        const uint32_t qt = sq + buf * QT_BYTES, dot = sdo + buf * QT_BYTES;
        const float *lse2 = rows_f + buf * (ROW_BYTES / 4), *dsum = lse2 + FB_BM;

        /* Sᵀ = K·Qᵀ and dPᵀ = V·dOᵀ: 16 keys × 64 queries per warp */
        float s[8][4], dp[8][4];
        attn_zero(s);
        attn_zero(dp);
        attn_warp_abt<D, 8>(s, sk, warp * 16, qt, lane);
        attn_warp_abt<D, 8>(dp, sv, warp * 16, dot, lane);
        const bool mask = edge || (a.g.causal && n0 + warp * 16 + 15 > m0);
        uint32_t pa[4][4], dsa[4][4];
        fb_probs_t(s, dp, lse2, dsum, a, key_lo, m0, mask, lane, pa, dsa);

        /* dV += Pᵀ·dO, dK += dSᵀ·Q (the scale applied at the end) */
        attn_warp_ab<D, 4, DT>(dv, pa, dot, 0, lane);
        attn_warp_ab<D, 4, DT>(dk, dsa, qt, 0, lane);

        if (ATOMIC_DQ) {
            fb_store_ds(sds, dsa, warp, lane);
            __syncthreads(); /* every warp's dSᵀ in place */
            fb_dq_step<D>(a, sds, sk, ((long long)b * a.g.heads + h) * a.seq_pad + m0, warp, lane);
        }
        __syncthreads(); /* buffer t&1 and dSᵀ free for refilling */
    }

    /* dK·scale and dV through this warp's own K and V rows (no warp reads K or V any more) */
    attn_warp_store_rows<D>(dk, a.g.scale, a.g.scale, sk, warp * 16, a.dk + koff, a.g.k_s, n0 + warp * 16, a.g.seq,
                            lane);
    attn_warp_store_rows<D>(dv, 1.0f, 1.0f, sv, warp * 16, a.dv + koff, a.g.k_s, n0 + warp * 16, a.g.seq, lane);
}

/* dQ = scale · accumulator, bf16 in Q's layout: a thread per 8 elements (two float4 loads, one 16-byte store). */
template <int D> __global__ void flash_bwd_dq_convert_kernel(const fb_args a, long long chunks)
{
    const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (c >= chunks)
        return;
    const long long row = c / (D / 8);
    const int ch = (int)(c % (D / 8)), i = (int)(row % a.g.seq);
    const long long bh = row / a.g.seq;
    const float4 *src = reinterpret_cast<const float4 *>(a.dq_acc + (bh * a.seq_pad + i) * D + ch * 8);
    const float4 x = src[0], y = src[1];
    uint4 v;
    v.x = attn_pack_bf16(x.x * a.g.scale, x.y * a.g.scale);
    v.y = attn_pack_bf16(x.z * a.g.scale, x.w * a.g.scale);
    v.z = attn_pack_bf16(y.x * a.g.scale, y.y * a.g.scale);
    v.w = attn_pack_bf16(y.z * a.g.scale, y.w * a.g.scale);
    *reinterpret_cast<uint4 *>(a.dq + (bh / a.g.heads) * a.g.q_b + (bh % a.g.heads) * a.g.q_h + i * a.g.q_s + ch * 8) =
        v;
}

static int seq_pad_of(int seq)
{
    return (seq + FB_BM - 1) / FB_BM * FB_BM;
}

extern "C" size_t pl_attn_flash_bwd_workspace_bytes(const pl_attn_bwd_problem *p)
{
    const size_t rows = (size_t)p->f.batch * p->f.heads * seq_pad_of(p->f.seq);
    return rows * 2 * sizeof(float) + (p->deterministic ? 0 : rows * p->f.head_dim * sizeof(float));
}

template <int D> static cudaError_t launch_flash_bwd(const pl_attn_bwd_problem *p, void *workspace, cudaStream_t stream)
{
    constexpr int BN = 16 * FB_KV_WARPS;
    constexpr int SMEM_KV = 2 * BN * D * 2 + 4 * FB_BM * D * 2 + 2 * 2 * FB_BM * 4;
    constexpr int SMEM_KV_ATOMIC = SMEM_KV + BN * FB_BM * 2;
    const pl_attn_problem *f = &p->f;
    fb_args a;
    a.q = f->q;
    a.k = f->k;
    a.v = f->v;
    a.o = f->o;
    a.dout = p->dout;
    a.dq = p->dq;
    a.dk = p->dk;
    a.dv = p->dv;
    a.lse = f->lse;
    a.seq_pad = seq_pad_of(f->seq);
    const size_t rows = (size_t)f->batch * f->heads * a.seq_pad;
    a.dq_acc = p->deterministic ? NULL : static_cast<float *>(workspace);
    a.lse2 = static_cast<float *>(workspace) + (p->deterministic ? 0 : rows * D);
    a.dsum = a.lse2 + rows;
    a.g = attn_geom_of(f);
    a.q_tiles = a.seq_pad / FB_BM;
    const long long pre_blocks = (long long)rows / (FB_PRE_THREADS / 32);
    if (f->heads > 65535 || f->batch > 65535 || pre_blocks > 0x7fffffffLL)
        return cudaErrorInvalidValue;

    flash_bwd_pre_kernel<D><<<(unsigned)pre_blocks, FB_PRE_THREADS, 0, stream>>>(a, !p->deterministic);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    const dim3 kv_grid((f->seq + BN - 1) / BN, f->kv_heads, f->batch);
    if (p->deterministic) {
        e = cudaFuncSetAttribute(flash_bwd_kv_kernel<D, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_KV);
        if (e != cudaSuccess)
            return e;
        flash_bwd_kv_kernel<D, false><<<kv_grid, FB_KV_WARPS * 32, SMEM_KV, stream>>>(a);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        return fb_launch_dq<D>(a, f->batch, stream);
    }
    e = cudaFuncSetAttribute(flash_bwd_kv_kernel<D, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_KV_ATOMIC);
    if (e != cudaSuccess)
        return e;
    flash_bwd_kv_kernel<D, true><<<kv_grid, FB_KV_WARPS * 32, SMEM_KV_ATOMIC, stream>>>(a);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return e;
    const long long chunks = (long long)f->batch * f->heads * f->seq * (D / 8);
    flash_bwd_dq_convert_kernel<D><<<(unsigned)((chunks + 255) / 256), 256, 0, stream>>>(a, chunks);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_attn_flash_bwd_mma(const pl_attn_bwd_problem *p, void *workspace, cudaStream_t stream)
{
    char why[160];
    if (!pl_attn_bwd_problem_valid(p, why, sizeof why) || !workspace || ((uintptr_t)workspace & 255u) != 0)
        return cudaErrorInvalidValue;
    return p->f.head_dim == 64 ? launch_flash_bwd<64>(p, workspace, stream)
                               : launch_flash_bwd<128>(p, workspace, stream);
}
