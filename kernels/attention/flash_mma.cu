/* Attention, version 2 — flash_mma: the FlashAttention-2 scheme with mma.sync (sm_80+).
 *
 * One CTA per (tile of 128 queries, query head, batch), 8 warps, each warp owning 16 query rows. The Q tile is
 * loaded once into shared memory; K and V tiles of 64 keys stream through two shared-memory buffers with cp.async
 * (the next pair loads while this one is used). Per K/V tile a warp computes S = Q·Kᵀ (16×64, fp32 in registers)
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
#define FM_BN      64
#define FM_THREADS 256

/* ROWS rows of D bf16 starting at sequence row `row0` (row stride `stride` elements) into a swizzled tile; rows
 * at or past `seq` become zeros. */
template <int D, int ROWS>
__device__ __forceinline__ void fm_load_tile(uint32_t tile, const uint16_t *base, long long stride, int row0, int seq)
{
    constexpr int CPR = D / 8; /* 16-byte chunks per row */
#pragma unroll
    for (int i = 0; i < ROWS * CPR / FM_THREADS; i++) {
        const int c = threadIdx.x + i * FM_THREADS, row = c / CPR, ch = c % CPR;
        const bool in = row0 + row < seq;
        const uint16_t *src = in ? base + (long long)(row0 + row) * stride + ch * 8 : base;
        cp_async16(tile + attn_swz<D>(row, ch), src, in ? 16 : 0);
    }
}

struct fm_args {
    const uint16_t *q, *k, *v;
    uint16_t *o;
    float *lse;
    long long q_b, q_h, q_s; /* element strides of Q and O */
    long long k_b, k_h, k_s; /* of K and V */
    int heads, group, seq, causal, q_tiles;
    float scale_log2; /* scale · log2(e) */
};

template <int D> __global__ void __launch_bounds__(FM_THREADS, 2) flash_mma_kernel(const fm_args a)
{
    constexpr int Q_BYTES = FM_BM * D * 2, KV_BYTES = FM_BN * D * 2;
    constexpr int DT = D / 8; /* n8 tiles of O */
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sq = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t sk = sq + Q_BYTES, sv = sk + 2 * KV_BYTES; /* K[2], V[2] */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int qt = a.causal ? a.q_tiles - 1 - (int)blockIdx.x : (int)blockIdx.x; /* causal: heaviest first */
    const int h = blockIdx.y, b = blockIdx.z, kvh = h / a.group;
    const int q0 = qt * FM_BM;
    const uint16_t *qg = a.q + b * a.q_b + h * a.q_h;
    const uint16_t *kg = a.k + b * a.k_b + kvh * a.k_h;
    const uint16_t *vg = a.v + b * a.k_b + kvh * a.k_h;
    const int kv_end = a.causal ? min(a.seq, q0 + FM_BM) : a.seq;
    const int n_tiles = (kv_end + FM_BN - 1) / FM_BN;

    fm_load_tile<D, FM_BM>(sq, qg, a.q_s, q0, a.seq);
    fm_load_tile<D, FM_BN>(sk, kg, a.k_s, 0, a.seq);
    fm_load_tile<D, FM_BN>(sv, vg, a.k_s, 0, a.seq);
    cp_async_commit();

    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    const int row_lo = q0 + warp * 16 + (lane >> 2); /* this thread's rows: row_lo and row_lo + 8 */

    for (int j = 0; j < n_tiles; j++) {
        if (j + 1 < n_tiles) {
            const int nb = (j + 1) & 1;
            fm_load_tile<D, FM_BN>(sk + nb * KV_BYTES, kg, a.k_s, (j + 1) * FM_BN, a.seq);
            fm_load_tile<D, FM_BN>(sv + nb * KV_BYTES, vg, a.k_s, (j + 1) * FM_BN, a.seq);
        }
        cp_async_commit(); /* an empty group at the end keeps the count uniform */
        cp_async_wait<1>();
        __syncthreads(); /* tile j (and Q) visible to every warp */
        const uint32_t kt = sk + (j & 1) * KV_BYTES, vt = sv + (j & 1) * KV_BYTES;
        const int kv0 = j * FM_BN;

        /* S = Q·Kᵀ: 16×64 per warp */
        float s[8][4];
#pragma unroll
        for (int i = 0; i < 8; i++)
            s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t af[4];
            ldmatrix_x4(af, sq + attn_swz<D>(warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));
#pragma unroll
            for (int nt = 0; nt < 8; nt += 2) {
                uint32_t bf[4];
                const int mi = lane >> 3;
                ldmatrix_x4(bf, kt + attn_swz<D>(8 * (nt + (mi >> 1)) + (lane & 7), 2 * kk + (mi & 1)));
                mma_bf16_16816(s[nt], af, bf[0], bf[1]);
                mma_bf16_16816(s[nt + 1], af, bf[2], bf[3]);
            }
        }

        /* mask: keys past the sequence, and past the diagonal under the causal mask */
        const bool edge = kv0 + FM_BN > a.seq;
        const bool diag = a.causal && kv0 + FM_BN - 1 > q0 + warp * 16;
        if (edge || diag) {
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int col = kv0 + nt * 8 + 2 * (lane & 3) + (e & 1), row = row_lo + (e >> 1) * 8;
                    if (col >= a.seq || (a.causal && col > row))
                        s[nt][e] = -INFINITY;
                }
        }

        /* online softmax over the two rows of this thread (a quad of lanes shares each row) */
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            mx[0] = fmaxf(mx[0], fmaxf(s[nt][0], s[nt][1]));
            mx[1] = fmaxf(mx[1], fmaxf(s[nt][2], s[nt][3]));
        }
        float alpha[2], mb[2], rs[2] = {0.0f, 0.0f};
        attn_rows_new_max(mx, m, alpha, mb, a.scale_log2);
        uint32_t pa[4][4]; /* P as the A operand of the four k16 steps over the 64 keys */
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            const float p0 = attn_exp2(fmaf(s[nt][0], a.scale_log2, -mb[0]));
            const float p1 = attn_exp2(fmaf(s[nt][1], a.scale_log2, -mb[0]));
            const float p2 = attn_exp2(fmaf(s[nt][2], a.scale_log2, -mb[1]));
            const float p3 = attn_exp2(fmaf(s[nt][3], a.scale_log2, -mb[1]));
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
#pragma unroll
        for (int t = 0; t < 4; t++) {
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint32_t bf[4];
                const int mi = lane >> 3;
                ldmatrix_x4_trans(bf, vt + attn_swz<D>(16 * t + (mi & 1) * 8 + (lane & 7), dt + (mi >> 1)));
                mma_bf16_16816(o[dt], pa[t], bf[0], bf[1]);
                mma_bf16_16816(o[dt + 1], pa[t], bf[2], bf[3]);
            }
        }
        __syncthreads(); /* every warp is done with buffer j&1 before it is refilled */
    }

    /* finish: l over the quad, the LSE, O / l */
    attn_rows_finish(l, m, a.scale_log2, a.lse + ((long long)b * a.heads + h) * a.seq, row_lo, a.seq, lane);
    const float inv0 = 1.0f / l[0], inv1 = 1.0f / l[1];
    /* O through this warp's own Q rows (only this warp ever read them) for 16-byte stores */
    const int lr = lane >> 2;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        const uint32_t w0 = attn_pack_bf16(o[dt][0] * inv0, o[dt][1] * inv0);
        const uint32_t w1 = attn_pack_bf16(o[dt][2] * inv1, o[dt][3] * inv1);
        const uint32_t a0 = sq + attn_swz<D>(warp * 16 + lr, dt) + (lane & 3) * 4;
        const uint32_t a1 = sq + attn_swz<D>(warp * 16 + lr + 8, dt) + (lane & 3) * 4;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a0), "r"(w0) : "memory");
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a1), "r"(w1) : "memory");
    }
    __syncwarp();
    uint16_t *og = a.o + b * a.q_b + h * a.q_h;
#pragma unroll
    for (int i = 0; i < 16 * DT / 32; i++) {
        const int c = lane + i * 32, row = c / DT, ch = c % DT;
        const int grow = q0 + warp * 16 + row;
        if (grow < a.seq) {
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(sq + attn_swz<D>(warp * 16 + row, ch)));
            *reinterpret_cast<uint4 *>(og + (long long)grow * a.q_s + ch * 8) = v;
        }
    }
}

template <int D> static cudaError_t launch_flash_mma(const pl_attn_problem *p, cudaStream_t stream)
{
    constexpr int SMEM = FM_BM * D * 2 + 4 * FM_BN * D * 2;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    fm_args a;
    a.q = p->q;
    a.k = p->k;
    a.v = p->v;
    a.o = p->o;
    a.lse = p->lse;
    a.q_b = qs.b;
    a.q_h = qs.h;
    a.q_s = qs.s;
    a.k_b = ks.b;
    a.k_h = ks.h;
    a.k_s = ks.s;
    a.heads = p->heads;
    a.group = p->heads / p->kv_heads;
    a.seq = p->seq;
    a.causal = p->causal;
    a.q_tiles = (p->seq + FM_BM - 1) / FM_BM;
    a.scale_log2 = p->scale * PL_ATTN_LOG2E;
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
    return p->head_dim == 64 ? launch_flash_mma<64>(p, stream) : launch_flash_mma<128>(p, stream);
}
