/* The FP8 cache's tensor-core step converted in the mma fragments (decode_balanced_pages.cu's rows_frag_fp8): a warp's
 * kv head over a stage's 16 e4m3 K and V rows, each lane loading its bytes with a few wide shared-memory loads and
 * converting them in registers into the f16 operands of mma.sync m16n8k16 (cvt.rn.f16x2.e4m3x2, exact), no bf16 tile
 * in shared memory. rows_deep_fp8 (decode_fp8_tile.cuh) converts each stage into a bf16 tile that ldmatrix then reads
 * back: three shared-memory passes per byte, measured bound by the shared-memory pipe (H200, 2026-11-28: 39.7 M
 * wavefronts against rows_deep's 17.6 M, 28% of the DRAM peak). Here each byte of the stage is read from shared memory
 * once, by a conflict-free 16-byte (head_dim 64's V: 8-byte) load.
 *
 * The mappings (lane = 4g + q; mma fragments: A rows g and g + 8, k = 2q, 2q+1 and 2q+8, 2q+9; B column n = g, the
 * same k; C rows g, g + 8, columns 2q, 2q+1).
 *
 * S = Q·Kᵀ, k = head dim, n = token. A dot product does not care in which order its terms are summed as long as both
 * operands use the same order (the trick of gemm/portable/gemv_mma.cu), so the logical k of step kk map onto the
 * physical dims as 2q+e → q·D/4 + 4kk + e and 2q+8+e → q·D/4 + 4kk + 2 + e: lane q's operands over all steps are the
 * D/4 contiguous dims [q·D/4, (q+1)·D/4) of its token's row, one or two 16-byte loads, and word kk of them is step
 * kk's two B registers (its low and high byte pairs, one cvt each). Q's A fragments follow the same map.
 *
 * O = P·V, k = token, n = output dim. Lane (g, q) needs tokens 2q, 2q+1 (b0) and 2q+8, 2q+9 (b1) at column g of
 * every n-tile dt. The columns are mapped as dim φ(dt, n) = n·D/8 + dt, so lane g's dims over all n-tiles are the D/8
 * contiguous bytes [g·D/8, (g+1)·D/8) of each of its four token rows: four loads a lane, and one prmt per two n-tiles
 * interleaves the two tokens' bytes into e4m3 pairs. The accumulators then hold dims (2q + e)·D/8 + dt (e = 0, 1):
 * dp_finish<D, true> writes them so.
 *
 * The scales. K's (per token) multiply the scores after the mma, before the softmax. V's fold into P: a token's
 * weight in O is p·v_scale, and since p·v_scale spans far more than f16's range (v_scale = 2^e, |e| <= 100), O is
 * accumulated in a running unit u (a power of two): the A operand is p·v_scale/u, u the largest weight so far
 * (floored to a power of two, so the division is exact), and the accumulators are rescaled by alpha·u_old/u_new where
 * the online softmax already rescales them by alpha. Every A value is then below 2 (no f16 overflow) and any value
 * below f16's normal range (2^-14 of the largest weight) weighs less than 2^-14 of it. The softmax's sum uses the
 * unscaled p. The finish multiplies by u.
 *
 * Q in f16: the query's bf16 values have bf16's range (to 2^128), f16's ends at 65504, so each row (query head) is
 * scaled by a power of two m that puts its largest |value| in [2^14, 2^15): every value of the row within 2^-28 of its
 * largest is then an f16 normal number, and bf16's 8 significant bits fit f16's 11, so the conversion is exact for
 * them; the rest change by less than 2^-39 of the largest. 1/m goes into the score's scale. The products (e4m3 raw
 * values up to 448, Q up to 2^15) accumulate in fp32. */
#ifndef PERFLAB_ATTENTION_DECODE_FP8_FRAG_CUH
#define PERFLAB_ATTENTION_DECODE_FP8_FRAG_CUH

#include <math.h>
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/decode_balanced.cuh"
#include "attention/decode_mma_tile.cuh"

/* The XOR applied to the 16-byte chunk index (within the token's row of the block's heads) of token row tok in the
 * stage, chosen so that every load of df_frag_step is conflict-free: a 16-byte load is served a quarter-warp (8 lanes,
 * 128 bytes) at a time, an 8-byte load a half-warp at a time, and those lanes must reach 8 (16) different 16-byte
 * (8-byte) bank slots. The block's token rows are 128-byte multiples apart, so the slot is the chunk index mod 8.
 * D = 128 (8 chunks a head): K's quarter-warp reads chunks 2q + j of tokens g, g + 1 (g even): tok & 7 sends the odd
 * token to the other parity; V's reads chunk g of tokens 2q (+0, 1, 8, 9) for q = 0..3 and two g: the XOR by 2q
 * spreads the four tokens over the even slots, g's low bit takes the odd. D = 64 (4 chunks a head, 256-byte token
 * rows): K's reads chunk q of tokens g, g + 1, which only the XOR's bit 2 (tok & 1) can separate; V's (8 bytes, a
 * half-warp: chunks 2p, 2p + 1 of four tokens 2q) take the even XORs tok & 6 as at 128. */
template <int D> __device__ __forceinline__ int df_frag_swz(int tok)
{
    return D == 128 ? (tok & 7) : ((tok & 6) ^ ((tok & 1) << 2));
}

/* A warp's state: the bf16 kernels' (outputs, max, sum) with its outputs in units of u. */
template <int D> struct df_state {
    dm_state<D> s;
    float u;  /* a power of two: O (in the softmax's units) = s.o · u */
    float cs; /* the score's base-2 scale over Q's row factor m: scale·log2(e)/m */
};

/* 16 or 8 bytes (aligned) from shared address addr into registers. */
__device__ __forceinline__ void df_lds(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void df_lds(uint32_t (&r)[2], uint32_t addr)
{
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}

/* Four e4m3 bytes (lowest first) into two f16x2 registers: bytes 0, 1 into lo, 2, 3 into hi (exact). sm_89+: one
 * cvt.rn.f16x2.e4m3x2 on each 16-bit half of w, taken as a register half (no shift); below, cuda_fp8.h's emulation. */
__device__ __forceinline__ void df_e4m3x4_to_f16(uint32_t w, uint32_t &lo, uint32_t &hi)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(w));
#else
    const __half2_raw a = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w & 0xffffu), __NV_E4M3);
    const __half2_raw b = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w >> 16), __NV_E4M3);
    lo = (uint32_t)a.x | (uint32_t)a.y << 16;
    hi = (uint32_t)b.x | (uint32_t)b.y << 16;
#endif
}

/* Two floats rounded to f16 (nearest even), lo in the low half: an f16 mma operand register. */
__device__ __forceinline__ uint32_t df_pack_f16(float lo, float hi)
{
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&h);
}

/* Q of kv head kvh of sequence b as f16 A fragments in the permuted k order (rows g < group, else zero), each row
 * times the power of two m that puts its largest |value| in [2^14, 2^15) (m from the biased exponent E of the
 * largest, 2^(141 - E), E clamped to [15, 254] so that m and 1/m are normal floats); st.cs = scale·log2(e)/m. */
template <int D>
__device__ __forceinline__ void dp_load_q(uint32_t (&qa)[D / 16][4], df_state<D> &st, const dp_args &a, int b, int kvh)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    uint4 raw[D / 32]; /* bf16 dims q·D/4 + 8i .. + 7 */
    const uint4 *row =
        g < a.group
            ? reinterpret_cast<const uint4 *>(a.p.q + ((long long)b * a.p.heads + kvh * a.group + g) * D + q * (D / 4))
            : nullptr;
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < D / 32; i++) {
        raw[i] = row ? row[i] : make_uint4(0u, 0u, 0u, 0u);
        const uint32_t w[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
#pragma unroll
        for (int j = 0; j < 4; j++)
            amax = fmaxf(amax, fmaxf(fabsf(attn_bf16_lo(w[j])), fabsf(attn_bf16_hi(w[j]))));
    }
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const int e = min(max((int)((__float_as_uint(amax) >> 23) & 0xffu), 15), 254);
    const float m = __uint_as_float((uint32_t)(268 - e) << 23), inv_m = __uint_as_float((uint32_t)(e - 14) << 23);
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const uint4 &r = raw[kk / 2];
        const uint32_t w0 = kk & 1 ? r.z : r.x, w1 = kk & 1 ? r.w : r.y; /* dims 4kk, 4kk+1 and 4kk+2, 4kk+3 */
        qa[kk][0] = df_pack_f16(attn_bf16_lo(w0) * m, attn_bf16_hi(w0) * m);
        qa[kk][1] = 0u; /* rows g + 8: padding */
        qa[kk][2] = df_pack_f16(attn_bf16_lo(w1) * m, attn_bf16_hi(w1) * m);
        qa[kk][3] = 0u;
    }
    st.cs = a.scale_log2 * inv_m;
}

template <int D> __device__ __forceinline__ void dp_reset(df_state<D> &st)
{
    dm_state_reset<D>(st.s);
    st.u = 1.0f;
}

template <int D>
__device__ __forceinline__ void dp_finish_state(const dp_args &a, df_state<D> &st, int b, int kvh, int whole, int slot)
{
    dp_finish<D, true>(a, st.s, b, kvh, whole, slot, st.u);
}

/* A warp's step on the stage's 16 tokens of block head `head`: K rows at kb + tok·rs (chunks XORed by df_frag_swz),
 * V rows at vb the same way, the scales at sc ([2][nw][16] floats, K then V, each head's tokens in the order
 * 2q, 2q+1, 2q+8, 2q+9 by q: df_load_scales<true>), token t_first first, tokens at or past len masked. */
template <int D>
__device__ __forceinline__ void df_frag_step(df_state<D> &st, const uint32_t (&qa)[D / 16][4], uint32_t kb, uint32_t vb,
                                             uint32_t sc, int nw, int head, int rs, int t_first, int len)
{
    constexpr int CPH = D / 16, KC = D / 64, VW = D / 32; /* chunks a head row; K chunks, V words a lane a token */
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;

    /* every load of the step first: K's tokens g and g + 8, the four scales of K and of V, V's four tokens */
    uint32_t kw[2][4 * KC], vw[4][VW], ksc[4], vsc[4];
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int j = 0; j < KC; j++) {
            uint32_t r[4];
            df_lds(r, kb + (8 * nt + g) * rs + (((head * CPH + KC * q + j) ^ df_frag_swz<D>(g)) << 4));
#pragma unroll
            for (int x = 0; x < 4; x++)
                kw[nt][4 * j + x] = r[x];
        }
    df_lds(ksc, sc + (head * 16 + 4 * q) * 4);
    df_lds(vsc, sc + (16 * nw + head * 16 + 4 * q) * 4);
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int tok = 8 * (r >> 1) + 2 * q + (r & 1), byte = g * (D / 8);
        df_lds(vw[r], vb + tok * rs + (((head * CPH + byte / 16) ^ df_frag_swz<D>(tok)) << 4) + byte % 16);
    }

    /* S = Q·Kᵀ: word kk of a token's bytes is step kk's two B registers */
    float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            uint32_t b0, b1;
            df_e4m3x4_to_f16(kw[nt][kk], b0, b1);
            mma_f16_16816(s[nt], qa[kk], b0, b1);
        }

    /* row g (c0, c1 of each n-tile: token 8nt + 2q + e, scale 2nt + e): K's scale, base 2, the mask, online softmax */
    float mx = st.s.m;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int t = t_first + nt * 8 + 2 * q + e;
            s[nt][e] = t < len ? s[nt][e] * __uint_as_float(ksc[2 * nt + e]) * st.cs : -INFINITY;
            mx = fmaxf(mx, s[nt][e]);
        }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float use = mx == -INFINITY ? 0.0f : mx;
    const float alpha = attn_exp2(st.s.m - use);
    float w[4], wmax = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float p = attn_exp2(s[j / 2][j % 2] - use);
        st.s.l = j == 0 ? st.s.l * alpha + p : st.s.l + p;
        w[j] = p * __uint_as_float(vsc[j]); /* the token's weight in O; exact (a power of two) */
        wmax = fmaxf(wmax, w[j]);
    }
    st.s.m = mx;
    wmax = fmaxf(wmax, __shfl_xor_sync(0xffffffffu, wmax, 1));
    wmax = fmaxf(wmax, __shfl_xor_sync(0xffffffffu, wmax, 2));

    /* the new unit: the largest weight so far (the old unit in the new max's terms, or this tile's), floored to a
     * power of two of at least 2^-126; 1/u by the exponent (exact) */
    const float old = st.u * alpha;
    const uint32_t ub = max(__float_as_uint(fmaxf(old, wmax)) & 0x7f800000u, 0x00800000u);
    const float inv_u = __uint_as_float(0x7f000000u - ub), r = old * inv_u;
    st.u = __uint_as_float(ub);
    uint32_t pa[4];
    pa[0] = df_pack_f16(w[0] * inv_u, w[1] * inv_u);
    pa[1] = 0u; /* rows g + 8: padding */
    pa[2] = df_pack_f16(w[2] * inv_u, w[3] * inv_u);
    pa[3] = 0u;
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++) {
        st.s.o[dt][0] *= r;
        st.s.o[dt][1] *= r;
    }

    /* O += P·V: bytes b and b + 1 of word x of the four token rows are n-tiles 4x + b and 4x + b + 1; one prmt pairs
     * tokens 2q, 2q+1 (b0), one 2q+8, 2q+9 (b1) */
#pragma unroll
    for (int x = 0; x < VW; x++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const uint32_t sel = hf ? 0x7362u : 0x5140u;
            uint32_t b0[2], b1[2];
            df_e4m3x4_to_f16(__byte_perm(vw[0][x], vw[1][x], sel), b0[0], b0[1]);
            df_e4m3x4_to_f16(__byte_perm(vw[2][x], vw[3][x], sel), b1[0], b1[1]);
            mma_f16_16816(st.s.o[4 * x + 2 * hf], pa, b0[0], b1[0]);
            mma_f16_16816(st.s.o[4 * x + 2 * hf + 1], pa, b0[1], b1[1]);
        }
}

#endif
