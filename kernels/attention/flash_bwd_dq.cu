/* Attention backward — the deterministic dQ (with flash_bwd_mma.cu, sm_80+): one CTA per (block of 64 queries,
 * query head, batch), 4 warps of 16 query rows, the way the forward walks its keys: Q and dO of the block stay in
 * shared memory, K and V tiles of 64 keys stream through two buffers (cp.async), and per tile a warp computes
 * S = Q·Kᵀ and dP = dO·Vᵀ (mma.sync m16n8k16), P = 2^(scale·log2e·S − LSE·log2e) and dS = P ∘ (dP − D) from its
 * rows' LSE and D (the preprocess's), then dQ += dS·K with dS straight from registers. dQ is a sum in one fixed
 * order in registers, written once: no atomics, so the same bits every run, at the cost of recomputing S and dP
 * (three more GEMMs than the key-block kernel's atomic dQ, which needs one). Causal: the heaviest query blocks
 * launch first, key tiles past the diagonal are never loaded. */
#include <math.h>

#include "attention/flash_bwd.cuh"

template <int D> __global__ void __launch_bounds__(FB_DQ_WARPS * 32) flash_bwd_dq_kernel(const fb_args a)
{
    constexpr int THREADS = FB_DQ_WARPS * 32, BM = 16 * FB_DQ_WARPS, BN = FB_DQ_KEYS, DT = D / 8;
    constexpr int Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sq = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t sdo = sq + Q_BYTES, sk = sdo + Q_BYTES, sv = sk + 2 * KV_BYTES; /* K[2], V[2] */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int n_qt = (a.g.seq + BM - 1) / BM;
    const int qt = a.g.causal ? n_qt - 1 - (int)blockIdx.x : (int)blockIdx.x; /* causal: heaviest first */
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / a.g.group, m0 = qt * BM;
    const long long qoff = b * a.g.q_b + h * a.g.q_h, koff = b * a.g.k_b + kvh * a.g.k_h;
    const int kv_end = a.g.causal ? min(a.g.seq, m0 + BM) : a.g.seq;
    const int n_tiles = (kv_end + BN - 1) / BN;

    attn_load_tile<D, BM, THREADS>(sq, a.q + qoff, a.g.q_s, m0, a.g.seq);
    attn_load_tile<D, BM, THREADS>(sdo, a.dout + qoff, a.g.q_s, m0, a.g.seq);
    attn_load_tile<D, BN, THREADS>(sk, a.k + koff, a.g.k_s, 0, a.g.seq);
    attn_load_tile<D, BN, THREADS>(sv, a.v + koff, a.g.k_s, 0, a.g.seq);
    cp_async_commit();

    const int row_lo = m0 + warp * 16 + (lane >> 2); /* this thread's rows: row_lo and row_lo + 8 (< seq_pad) */
    const long long rbase = ((long long)b * a.g.heads + h) * a.seq_pad;
    const float l2[2] = {a.lse2[rbase + row_lo], a.lse2[rbase + row_lo + 8]};
    const float dd[2] = {a.dsum[rbase + row_lo], a.dsum[rbase + row_lo + 8]};
    float dq[DT][4];
    attn_zero(dq);

    for (int j = 0; j < n_tiles; j++) {
        if (j + 1 < n_tiles) {
            const int nb = (j + 1) & 1;
            attn_load_tile<D, BN, THREADS>(sk + nb * KV_BYTES, a.k + koff, a.g.k_s, (j + 1) * BN, a.g.seq);
            attn_load_tile<D, BN, THREADS>(sv + nb * KV_BYTES, a.v + koff, a.g.k_s, (j + 1) * BN, a.g.seq);
        }
        cp_async_commit(); /* an empty group at the end keeps the count uniform */
        cp_async_wait<1>();
        __syncthreads(); /* tile j (and Q, dO) visible to every warp */
        const uint32_t kt = sk + (j & 1) * KV_BYTES, vt = sv + (j & 1) * KV_BYTES;
        const int kv0 = j * BN;

        /* S = Q·Kᵀ and dP = dO·Vᵀ: 16 queries × 64 keys per warp */
        float s[8][4], dp[8][4];
        attn_zero(s);
        attn_zero(dp);
        attn_warp_abt<D, 8>(s, sq, warp * 16, kt, lane);
        attn_warp_abt<D, 8>(dp, sdo, warp * 16, vt, lane);

        /* dS = P ∘ (dP − D), masked past the sequence and the diagonal */
        const bool mask = kv0 + BN > a.g.seq || (a.g.causal && kv0 + BN - 1 > m0 + warp * 16);
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float pe = fb_prob(s[nt][e], a.g.scale_log2, l2[e >> 1]);
                if (mask) {
                    const int col = kv0 + nt * 8 + 2 * (lane & 3) + (e & 1), row = row_lo + (e >> 1) * 8;
                    if (col >= a.g.seq || (a.g.causal && col > row))
                        pe = 0.0f;
                }
                s[nt][e] = pe * (dp[nt][e] - dd[e >> 1]);
            }
        uint32_t dsa[4][4];
        attn_pack_a<4>(s, dsa);

        /* dQ += dS·K */
        attn_warp_ab<D, 4, DT>(dq, dsa, kt, 0, lane);
        __syncthreads(); /* every warp is done with buffer j&1 before it is refilled */
    }

    /* dQ·scale through this warp's own Q rows (only this warp ever read them) */
    attn_warp_store_rows<D>(dq, a.g.scale, a.g.scale, sq, warp * 16, a.dq + qoff, a.g.q_s, m0 + warp * 16, a.g.seq,
                            lane);
}

template <int D> cudaError_t fb_launch_dq(const fb_args &a, int batch, cudaStream_t stream)
{
    constexpr int BM = 16 * FB_DQ_WARPS, SMEM = 2 * BM * D * 2 + 4 * FB_DQ_KEYS * D * 2;
    cudaError_t e = cudaFuncSetAttribute(flash_bwd_dq_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (e != cudaSuccess)
        return e;
    const dim3 grid((a.g.seq + BM - 1) / BM, a.g.heads, batch);
    flash_bwd_dq_kernel<D><<<grid, FB_DQ_WARPS * 32, SMEM, stream>>>(a);
    return cudaGetLastError();
}

template cudaError_t fb_launch_dq<64>(const fb_args &a, int batch, cudaStream_t stream);
template cudaError_t fb_launch_dq<128>(const fb_args &a, int batch, cudaStream_t stream);
