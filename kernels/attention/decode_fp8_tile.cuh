/* The FP8 cache's part of the warp-per-kv-head decode kernels (decode_balanced_pages.cu's rows_deep_fp8): the rows'
 * scales copied into a stage beside its e4m3 rows, and a warp's conversion of its kv head's 16 e4m3 K and V rows
 * into bf16 (times each row's power-of-two scale: exact) in a tile of its own, laid out as the bf16 kernels' stage
 * rows (16-byte chunks XOR-swizzled by the row), so that the bf16 tensor-core step (dm_rows_step) reads it as it is. */
#ifndef PERFLAB_ATTENTION_DECODE_FP8_TILE_CUH
#define PERFLAB_ATTENTION_DECODE_FP8_TILE_CUH

#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"
#include "attention/decode_mma_tile.cuh"

/* 4 bytes global -> shared, asynchronously (cp.async.ca: the 4-byte form); src_bytes 0 writes zeros. */
__device__ __forceinline__ void df_cp_async4(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

/* Where token tok (0..15) of a stage's scales of head h is: [16][nw] by token (rows_deep_fp8), or (BY_LANE,
 * rows_frag_fp8) [nw][16] with each head's tokens in the order 2q, 2q+1, 2q+8, 2q+9 by q = 0..3, so that lane q of the
 * fragment step reads the four scales of its score columns in one 16-byte load. */
template <bool BY_LANE> __device__ __forceinline__ int df_scale_index(int tok, int h, int nw)
{
    return BY_LANE ? h * 16 + ((tok & 7) >> 1) * 4 + (tok >> 3) * 2 + (tok & 1) : tok * nw + h;
}

/* The K and V scales of tokens [t0, t0 + 16) (of a sequence of `len`, its pages `table`) and kv heads
 * [g0, g0 + hb) into ks_dst (16·nw floats, df_scale_index<BY_LANE>) and ks_dst + 16·nw floats (V); zeros past len.
 * Threads 0 .. 16·hb - 1. */
template <bool BY_LANE = false>
__device__ __forceinline__ void df_load_scales(uint32_t ks_dst, int nw, const pl_decode_problem &p, const int *table,
                                               int g0, int hb, int t0, int len)
{
    const int i = threadIdx.x;
    if (i >= 16 * hb)
        return;
    const int tok = i / hb, h = i - tok * hb, t = t0 + tok;
    const float *ks = p.k_scale, *vs = p.v_scale;
    if (t < len) {
        const long long row = ((long long)table[t / p.page_size] * p.page_size + t % p.page_size) * p.kv_heads + g0 + h;
        ks += row;
        vs += row;
    }
    const uint32_t dst = ks_dst + (uint32_t)df_scale_index<BY_LANE>(tok, h, nw) * 4;
    df_cp_async4(dst, ks, t < len ? 4 : 0);
    df_cp_async4(dst + 16 * nw * 4, vs, t < len ? 4 : 0);
}

/* Eight e4m3 values (two words, lowest byte first) times s into eight bf16 (a 16-byte chunk): e4m3 -> f16 is exact
 * (cvt.rn.f16x2.e4m3x2 on sm_89+, NaN kept), f16 -> f32 exact, the power-of-two scale exact, and the product is a
 * bf16 value, so the rounding to bf16 changes nothing. */
__device__ __forceinline__ uint4 df_e4m3x8_to_bf16(uint2 w, float s)
{
    uint32_t out[4];
    const uint32_t in[2] = {w.x, w.y};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const __nv_fp8x2_storage_t pair = (__nv_fp8x2_storage_t)(in[i / 2] >> (16 * (i % 2)));
        const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3)));
        out[i] = attn_pack_bf16(f.x * s, f.y * s);
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
}

/* A warp's conversion of its head's rows in a stage: src (shared) holds 16 rows of D e4m3 bytes `rs` bytes apart
 * (K, then V kv_off bytes further), scales (shared) [16][nw] floats of K then 16·nw of V, this head's at column
 * `head`; dst (shared) gets the K tile [16][D] bf16 and after it the V tile, chunks swizzled as dm_swz(r, ch, 2·D).
 * Each lane converts 8 bytes at a time: a half-warp reads one 128-byte row piece (no bank conflict), a quarter-warp
 * writes eight chunks of one bf16 row in eight different bank groups. */
template <int D>
__device__ __forceinline__ void df_convert_rows(uint32_t src, int rs, int kv_off, uint32_t scales, int nw, int head,
                                                uint32_t dst)
{
    constexpr int PIECES = D / 8; /* 8-byte pieces per e4m3 row = 16-byte chunks per bf16 row */
    const int lane = threadIdx.x & 31;
    __syncwarp(); /* every lane is done reading the previous tile's bf16 rows */
#pragma unroll
    for (int kv = 0; kv < 2; kv++) {
        const uint32_t in = src + kv * kv_off, out = dst + kv * 16 * D * 2, sc = scales + kv * 16 * nw * 4;
#pragma unroll
        for (int it = 0; it < 16 * PIECES / 32; it++) {
            const int q = it * 32 + lane, r = q / PIECES, pc = q % PIECES;
            uint2 w;
            float s;
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                         : "=r"(w.x), "=r"(w.y)
                         : "r"(in + (uint32_t)(r * rs + pc * 8)));
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(s) : "r"(sc + (uint32_t)(r * nw + head) * 4));
            const uint4 b = df_e4m3x8_to_bf16(w, s);
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(out + dm_swz(r, pc, D * 2)), "r"(b.x),
                         "r"(b.y), "r"(b.z), "r"(b.w)
                         : "memory");
        }
    }
    __syncwarp(); /* the tile written before any lane's ldmatrix reads it */
}

#endif
