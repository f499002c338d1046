/* Attention, version 2 — flash_mma: the FlashAttention-2 scheme with mma.sync (sm_80+).
 *
 * One CTA per (tile of 128 queries, query head, batch), 8 warps, each warp owning 16 query rows. The Q tile is
 * loaded once into shared memory; K and V tiles of 64 keys (32 at head_dim 256, fm_config) stream through two
 * shared-memory buffers with cp.async (the next pair loads while this one is used). Per K/V tile a warp computes
 * S = Q·Kᵀ (16×64, fp32 in registers)
 * with mma.sync m16n8k16 fed by ldmatrix, applies the mask where the tile needs one (the causal diagonal, the
 * keys past the sequence), updates its rows' running max m and sum l (the online softmax: O and l are rescaled by
 * 2^(m_old - m_new) when the max grows), turns P = 2^(scale·log2e·S - m) into bf16 A-operand registers in place
 * (the accumulator layout of m16n8 is the A layout of m16n8k16, two tiles at a time) and accumulates O += P·V,
 * V read through ldmatrix.trans. S and P never leave registers. At the end O is divided by l, staged through the
 * warp's own Q rows in shared memory for 16-byte stores, and the log-sum-exp m·scale + ln l is written.
 * Causal: key tiles past the diagonal are never loaded, and CTAs are launched heaviest first (the last query
 * tiles see the most keys) so that the short ones fill the tail. Rows and keys past `seq` are zero-filled by the
 * copies and masked, so any seq works. Shared memory rows are XOR-swizzled in 16-byte chunks so that neither the
 * copies nor ldmatrix conflict on banks. */
#include <math.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

#define FM_BM      128
#define FM_THREADS 256

/* The key tile and occupancy of one head dimension. At 64 and 128: 64-key tiles, two CTAs an SM (128 registers a
 * thread; 64 or 96 KB of shared memory). At 256 a warp's O alone is 16 × 256 fp32 = 128 registers a thread, so one
 * CTA an SM (up to 255 registers) with 32-key tiles (S 16 registers, P 8): Q 64 KB + 2 × (K, V) of 16 KB = 128 KB
 * of shared memory, within the 163 KB of sm_80 and 227 KB of sm_90 (not the 99 KB of sm_86/89). */
template <int D> struct fm_config {
    static constexpr int bn = D == 256 ? 32 : 64;
    static constexpr int min_blocks = D == 256 ? 1 : 2;
    static constexpr int smem_bytes = FM_BM * D * 2 + 4 * bn * D * 2;
};

struct fm_args {
    const uint16_t *q, *k, *v;
    uint16_t *o;
    float *lse;
    attn_geom g;
    int q_tiles;
};

template <int D>
__global__ void __launch_bounds__(FM_THREADS, fm_config<D>::min_blocks) flash_mma_kernel(const fm_args a)
{
    constexpr int BN = fm_config<D>::bn, NT = BN / 8; /* keys per tile, n8 tiles of S */
    constexpr int Q_BYTES = FM_BM * D * 2, KV_BYTES = BN * D * 2;
    constexpr int DT = D / 8; /* n8 tiles of O */
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sq = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t sk = sq + Q_BYTES, sv = sk + 2 * KV_BYTES; /* K[2], V[2] */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int qt = a.g.causal ? a.q_tiles - 1 - (int)blockIdx.x : (int)blockIdx.x; /* causal: heaviest first */
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / a.g.group;
    const int q0 = qt * FM_BM;
    const uint16_t *qg = a.q + b * a.g.q_b + h * a.g.q_h;
    const uint16_t *kg = a.k + b * a.g.k_b + kvh * a.g.k_h;
    const uint16_t *vg = a.v + b * a.g.k_b + kvh * a.g.k_h;
    const int kv_end = a.g.causal ? min(a.g.seq, q0 + FM_BM) : a.g.seq;
    const int n_tiles = (kv_end + BN - 1) / BN;

    attn_load_tile<D, FM_BM, FM_THREADS>(sq, qg, a.g.q_s, q0, a.g.seq);
    attn_load_tile<D, BN, FM_THREADS>(sk, kg, a.g.k_s, 0, a.g.seq);
    attn_load_tile<D, BN, FM_THREADS>(sv, vg, a.g.k_s, 0, a.g.seq);
    cp_async_commit();

    float o[DT][4];
    attn_zero(o);
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    const int row_lo = q0 + warp * 16 + (lane >> 2); /* this thread's rows: row_lo and row_lo + 8 */

    for (int j = 0; j < n_tiles; j++) {
        if (j + 1 < n_tiles) {
            const int nb = (j + 1) & 1;
            attn_load_tile<D, BN, FM_THREADS>(sk + nb * KV_BYTES, kg, a.g.k_s, (j + 1) * BN, a.g.seq);
            attn_load_tile<D, BN, FM_THREADS>(sv + nb * KV_BYTES, vg, a.g.k_s, (j + 1) * BN, a.g.seq);
        }
        cp_async_commit(); /* an empty group at the end keeps the count uniform */
        cp_async_wait<1>();
        __syncthreads(); /* tile j (and Q) visible to every warp */
        const uint32_t kt = sk + (j & 1) * KV_BYTES, vt = sv + (j & 1) * KV_BYTES;
        const int kv0 = j * BN;

        /* S = Q·Kᵀ: 16×BN per warp */
        float s[NT][4];
        attn_zero(s);
        attn_warp_abt<D, NT>(s, sq, warp * 16, kt, lane);

        /* mask: keys past the sequence, and past the diagonal under the causal mask */
        const bool edge = kv0 + BN > a.g.seq;
        const bool diag = a.g.causal && kv0 + BN - 1 > q0 + warp * 16;
        if (edge || diag) {
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int col = kv0 + nt * 8 + 2 * (lane & 3) + (e & 1), row = row_lo + (e >> 1) * 8;
                    if (col >= a.g.seq || (a.g.causal && col > row))
                        s[nt][e] = -INFINITY;
                }
        }

        /* online softmax over the two rows of this thread (a quad of lanes shares each row) */
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            mx[0] = fmaxf(mx[0], fmaxf(s[nt][0], s[nt][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[nt][2], s[nt][3]));
        }
        float alpha[2], mb[2], rs[2] = {0.0f, 0.0f};
        attn_rows_new_max(mx, m, alpha, mb, a.g.scale_log2);
        uint32_t pa[NT / 2][4]; /* P as the A operand of the k16 steps over the BN keys */
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            const float p0 = attn_exp2(fmaf(s[nt][0], a.g.scale_log2, -mb[0]));
            const float p1 = attn_exp2(fmaf(s[nt][1], a.g.scale_log2, -mb[0]));
            const float p2 = attn_exp2(fmaf(s[nt][2], a.g.scale_log2, -mb[1]));
            const float p3 = attn_exp2(fmaf(s[nt][3], a.g.scale_log2, -mb[1]));
            rs[0] += p0 + p1;
            rs[1] += p2 + p3;
            pa[nt >> 1][(nt & 1) * 2 + 0] = attn_pack_bf16(p0, p1);
            pa[nt >> 1][(nt & 1) * 2 + 1] = attn_pack_bf16(p2, p3);
        }
        l[0] = l[0] * alpha[0] + rs[0];
        l[1] = l[1] * alpha[1] + rs[1];
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            o[dt][0] *= alpha[0];
            o[dt][1] *= alpha[0];
            o[dt][2] *= alpha[1];
            o[dt][3] *= alpha[1];
        }

        /* O += P·V */
        attn_warp_ab<D, NT / 2, DT>(o, pa, vt, 0, lane);
        __syncthreads(); /* every warp is done with buffer j&1 before it is refilled */
    }

    /* finish: l over the quad, the LSE, O / l */
    attn_rows_finish(l, m, a.g.scale_log2, a.lse + ((long long)b * a.g.heads + h) * a.g.seq, row_lo, a.g.seq, lane);
    /* O / l through this warp's own Q rows (only this warp ever read them) for 16-byte stores */
    attn_warp_store_rows<D>(o, 1.0f / l[0], 1.0f / l[1], sq, warp * 16, a.o + b * a.g.q_b + h * a.g.q_h, a.g.q_s,
                            q0 + warp * 16, a.g.seq, lane);
}

template <int D> static cudaError_t launch_flash_mma(const pl_attn_problem *p, cudaStream_t stream)
{
    constexpr int SMEM = fm_config<D>::smem_bytes;
    fm_args a;
    a.q = p->q;
    a.k = p->k;
    a.v = p->v;
    a.o = p->o;
    a.lse = p->lse;
    a.g = attn_geom_of(p);
    a.q_tiles = (p->seq + FM_BM - 1) / FM_BM;
    cudaError_t e = cudaFuncSetAttribute(flash_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (e != cudaSuccess)
        return e;
    if (p->heads > 65535 || p->batch > 65535)
        return cudaErrorInvalidValue;
    flash_mma_kernel<D><<<dim3(a.q_tiles, p->heads, p->batch), FM_THREADS, SMEM, stream>>>(a);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_attn_flash_mma(const pl_attn_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!pl_attn_problem_valid(p, why, sizeof why))
        return cudaErrorInvalidValue;
    if (p->head_dim == 256)
        return launch_flash_mma<256>(p, stream);
    return p->head_dim == 64 ? launch_flash_mma<64>(p, stream) : launch_flash_mma<128>(p, stream);
}
