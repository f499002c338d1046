/* Device helpers the attention kernels share: fast exp2, bf16 packing, cp.async with zero fill, swizzled tiles,
 * mma.sync, and the row bookkeeping of the online softmax in the mma accumulator layout. */
#ifndef PERFLAB_ATTENTION_COMMON_CUH
#define PERFLAB_ATTENTION_COMMON_CUH

#include <stdint.h>
#include <cuda_bf16.h>

#include "common/ptx.cuh"     /* cp_async16, mma_bf16_16816 */
#include "common/ldmatrix.cuh" /* ldmatrix_x4, ldmatrix_x4_trans */

#define PL_ATTN_LOG2E 1.4426950408889634f
#define PL_ATTN_LN2   0.6931471805599453f

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

/* 16 bytes global -> shared, asynchronously; src_bytes 0 writes zeros (rows past the sequence). */
/* Byte offset of 16-byte chunk `chunk` of row `row` in a shared-memory tile whose rows are D bf16, the chunk index
 * XORed with the row's low 3 bits: the 8 rows of an ldmatrix matrix (and of the cp.async writes) land in 8
 * different bank groups. */
template <int D> __device__ __forceinline__ uint32_t attn_swz(int row, int chunk)
{
    return (uint32_t)(row * (D * 2) + ((chunk ^ (row & 7)) << 4));
}

/* D (16×8 fp32) += A (16×16 bf16, row) · B (16×8 bf16, col). */
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
