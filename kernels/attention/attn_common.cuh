/* Device helpers the attention kernels share: fast exp2, bf16 packing, cp.async with zero fill, swizzled tiles,
 * mma.sync, and the row bookkeeping of the online softmax in the mma accumulator layout. */
#ifndef PERFLAB_ATTENTION_COMMON_CUH
#define PERFLAB_ATTENTION_COMMON_CUH

#include <stdint.h>
#include <cuda_bf16.h>

#include "attention/attention.h"
#include "common/ptx.cuh"      /* cp_async16, mma_bf16_16816 */
#include "common/ldmatrix.cuh" /* ldmatrix_x4, ldmatrix_x4_trans */

#define PL_ATTN_LOG2E 1.4426950408889634f
#define PL_ATTN_LN2   0.6931471805599453f

/* What every prefill kernel (forward and backward) takes of a problem: the element strides of the query-side tensors
 * (Q, O, dO, dQ) and of the kv-side ones (K, V, dK, dV), and the shape. */
struct attn_geom {
    long long q_b, q_h, q_s; /* batch, head, row strides of the query side */
    long long k_b, k_h, k_s; /* of the kv side */
    int heads, group, seq, causal;
    float scale, scale_log2; /* scale, scale · log2(e) */
};

static inline attn_geom attn_geom_of(const pl_attn_problem *p)
{
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    attn_geom g;
    g.q_b = qs.b;
    g.q_h = qs.h;
    g.q_s = qs.s;
    g.k_b = ks.b;
    g.k_h = ks.h;
    g.k_s = ks.s;
    g.heads = p->heads;
    g.group = p->heads / p->kv_heads;
    g.seq = p->seq;
    g.causal = p->causal;
    g.scale = p->scale;
    g.scale_log2 = p->scale * PL_ATTN_LOG2E;
    return g;
}

/* 2^x with the SFU (about 2 ulp; 2^-inf = 0): the exponentials of the online softmax. */
__device__ __forceinline__ float attn_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Two floats rounded to bf16 (nearest even), lo in the low half: an mma operand register. */
__device__ __forceinline__ uint32_t attn_pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

__device__ __forceinline__ float attn_bf16_lo(uint32_t w)
{
    return __uint_as_float(w << 16);
}

__device__ __forceinline__ float attn_bf16_hi(uint32_t w)
{
    return __uint_as_float(w & 0xffff0000u);
}

/* One token's step of a warp's online softmax (base 2): this lane's part s of the token's scaled score summed over
 * the warp, the running max m and sum l updated. Returns the token's weight; alpha rescales the accumulated output. */
__device__ __forceinline__ float attn_warp_online_step(float s, float &m, float &l, float &alpha)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    const float mn = fmaxf(m, s);
    alpha = attn_exp2(m - mn); /* the first token: 2^-inf = 0 */
    const float pe = attn_exp2(s - mn);
    l = l * alpha + pe;
    m = mn;
    return pe;
}

/* Byte offset of 16-byte chunk `chunk` of row `row` in a shared-memory tile whose rows are D bf16, the chunk index
 * XORed with the row's low 3 bits: the 8 rows of an ldmatrix matrix (and of the cp.async writes) land in 8
 * different bank groups. */
template <int D> __device__ __forceinline__ uint32_t attn_swz(int row, int chunk)
{
    return (uint32_t)(row * (D * 2) + ((chunk ^ (row & 7)) << 4));
}

/* ROWS rows of D bf16 starting at sequence row `row0` (row stride `stride` elements) into a swizzled tile, by a CTA
 * of THREADS threads with cp.async; rows at or past `seq` become zeros. */
template <int D, int ROWS, int THREADS>
__device__ __forceinline__ void attn_load_tile(uint32_t tile, const uint16_t *base, long long stride, int row0, int seq)
{
    constexpr int CPR = D / 8; /* 16-byte chunks per row */
    static_assert(ROWS * CPR % THREADS == 0, "the tile's chunks must split evenly over the threads");
#pragma unroll
    for (int i = 0; i < ROWS * CPR / THREADS; i++) {
        const int c = threadIdx.x + i * THREADS, row = c / CPR, ch = c % CPR;
        const bool in = row0 + row < seq;
        const uint16_t *src = in ? base + (long long)(row0 + row) * stride + ch * 8 : base;
        cp_async16(tile + attn_swz<D>(row, ch), src, in ? 16 : 0);
    }
}

/* N accumulator tiles (m16n8, fp32) set to 0. */
template <int N> __device__ __forceinline__ void attn_zero(float (&x)[N][4])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        x[i][0] = x[i][1] = x[i][2] = x[i][3] = 0.0f;
}

/* acc (16 rows × 8·NT columns, fp32) += A·Bᵀ over K = D: A the 16 rows from row a_row of a swizzled tile of D-wide
 * rows, B the 8·NT rows from row 0 of another (both stored K-major): S = Q·Kᵀ, dP = dO·Vᵀ, Sᵀ = K·Qᵀ. */
template <int D, int NT>
__device__ __forceinline__ void attn_warp_abt(float (&acc)[NT][4], uint32_t a_tile, int a_row, uint32_t b_tile,
                                              int lane)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        uint32_t af[4];
        ldmatrix_x4(af, a_tile + attn_swz<D>(a_row + (lane & 15), 2 * kk + (lane >> 4)));
#pragma unroll
        for (int nt = 0; nt < NT; nt += 2) {
            uint32_t bf[4];
            const int mi = lane >> 3;
            ldmatrix_x4(bf, b_tile + attn_swz<D>(8 * (nt + (mi >> 1)) + (lane & 7), 2 * kk + (mi & 1)));
            mma_bf16_16816(acc[nt], af, bf[0], bf[1]);
            mma_bf16_16816(acc[nt + 1], af, bf[2], bf[3]);
        }
    }
}

/* acc (16 rows × 8·DT columns, starting at column 8·dt0 of B) += A·B: A in registers as KT k16 steps (an
 * accumulator packed by attn_pack_a), B the 16·KT rows from row 0 of a swizzled tile of D-wide rows (stored
 * row-major K×N, read transposed): O += P·V, dV += Pᵀ·dO, dK += dSᵀ·Q, dQ += dS·K. */
template <int D, int KT, int DT>
__device__ __forceinline__ void attn_warp_ab(float (&acc)[DT][4], const uint32_t (&a)[KT][4], uint32_t b_tile, int dt0,
                                             int lane)
{
#pragma unroll
    for (int t = 0; t < KT; t++) {
#pragma unroll
        for (int dt = 0; dt < DT; dt += 2) {
            uint32_t bf[4];
            const int mi = lane >> 3;
            ldmatrix_x4_trans(bf, b_tile + attn_swz<D>(16 * t + (mi & 1) * 8 + (lane & 7), dt0 + dt + (mi >> 1)));
            mma_bf16_16816(acc[dt], a[t], bf[0], bf[1]);
            mma_bf16_16816(acc[dt + 1], a[t], bf[2], bf[3]);
        }
    }
}

/* An accumulator of 16 rows × 16·KT columns (x, n8 tiles) as the A operand of KT k16 steps, rounded to bf16: the
 * m16n8 accumulator layout is the m16n8k16 A layout, two n8 tiles to a k16 step. */
template <int KT> __device__ __forceinline__ void attn_pack_a(const float (&x)[2 * KT][4], uint32_t (&a)[KT][4])
{
#pragma unroll
    for (int nt = 0; nt < 2 * KT; nt++) {
        a[nt >> 1][(nt & 1) * 2 + 0] = attn_pack_bf16(x[nt][0], x[nt][1]);
        a[nt >> 1][(nt & 1) * 2 + 1] = attn_pack_bf16(x[nt][2], x[nt][3]);
    }
}

/* A warp's 16 rows × D of fp32 accumulators (row r0 = lane/4 and r0 + 8, times mul0 and mul1) as bf16 to rows
 * grow0.. of `out` (row stride `stride` elements; rows at or past `seq` skipped): staged through rows srow0..+15 of
 * a swizzled shared tile that only this warp uses by now, then written with 16-byte stores. */
template <int D>
__device__ __forceinline__ void attn_warp_store_rows(const float (&acc)[D / 8][4], float mul0, float mul1,
                                                     uint32_t stage, int srow0, uint16_t *out, long long stride,
                                                     int grow0, int seq, int lane)
{
    constexpr int DT = D / 8;
    const int lr = lane >> 2;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        const uint32_t w0 = attn_pack_bf16(acc[dt][0] * mul0, acc[dt][1] * mul0);
        const uint32_t w1 = attn_pack_bf16(acc[dt][2] * mul1, acc[dt][3] * mul1);
        const uint32_t a0 = stage + attn_swz<D>(srow0 + lr, dt) + (lane & 3) * 4;
        const uint32_t a1 = stage + attn_swz<D>(srow0 + lr + 8, dt) + (lane & 3) * 4;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a0), "r"(w0) : "memory");
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a1), "r"(w1) : "memory");
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 16 * DT / 32; i++) {
        const int c = lane + i * 32, row = c / DT, ch = c % DT;
        if (grow0 + row < seq) {
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(stage + attn_swz<D>(srow0 + row, ch)));
            *reinterpret_cast<uint4 *>(out + (long long)(grow0 + row) * stride + ch * 8) = v;
        }
    }
}

/* The online softmax's new running max of this thread's two rows (g and g + 8 of an m16 accumulator tile, a quad
 * of lanes sharing each row): mx holds the thread's max over the tile and the old max; reduced over the quad, it
 * becomes m. alpha = 2^((m_old - m_new)·sl2) rescales O and the sum, mb = m_new·sl2 is the exponent's offset
 * (0 for a row with nothing visible yet, so that no inf - inf appears). */
__device__ __forceinline__ void attn_rows_new_max(float (&mx)[2], float (&m)[2], float (&alpha)[2], float (&mb)[2],
                                                  float sl2)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float use = mx[r] == -INFINITY ? 0.0f : mx[r];
        alpha[r] = attn_exp2((m[r] - use) * sl2);
        mb[r] = use * sl2;
        m[r] = mx[r];
    }
}

/* The end of the rows: the per-thread sums l reduced over the quad, and the log-sum-exp m·scale + ln l of rows
 * row_lo and row_lo + 8 (when inside the sequence) written by the quad's first lane to lse[row]. */
__device__ __forceinline__ void attn_rows_finish(float (&l)[2], const float (&m)[2], float sl2, float *lse, int row_lo,
                                                 int seq, int lane)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    if ((lane & 3) == 0) {
        if (row_lo < seq)
            lse[row_lo] = (m[0] * sl2 + log2f(l[0])) * PL_ATTN_LN2;
        if (row_lo + 8 < seq)
            lse[row_lo + 8] = (m[1] * sl2 + log2f(l[1])) * PL_ATTN_LN2;
    }
}

#endif
