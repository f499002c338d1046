/* What the two files of the fused backward share (flash_bwd_mma.cu: preprocess, the key-block kernel, dQ's
 * conversion and the launcher; flash_bwd_dq.cu: the deterministic dQ kernel): the kernels' arguments, the tile
 * shapes and the exponent of P from a row's LSE. */
#ifndef PERFLAB_ATTENTION_FLASH_BWD_CUH
#define PERFLAB_ATTENTION_FLASH_BWD_CUH

#include <cuda_runtime_api.h>

#include "attention/attention.h"
#include "attention/attn_common.cuh"

#define FB_BM       64 /* query rows per step of the key-block kernel, and the padding of the per-row workspace */
#define FB_KV_WARPS 8  /* key-block kernel: 8 warps × 16 keys = 128 keys a CTA */
#define FB_DQ_WARPS 4  /* deterministic dQ kernel: 4 warps × 16 queries = 64 queries a CTA */
#define FB_DQ_KEYS  64 /* keys per step of the dQ kernel */

struct fb_args {
    const uint16_t *q, *k, *v, *o, *dout;
    uint16_t *dq, *dk, *dv;
    const float *lse; /* the forward's, [batch·heads][seq], natural log */
    float *lse2;      /* workspace [batch·heads][seq_pad]: LSE·log2(e), +inf past seq (P = 0 there) */
    float *dsum;      /* workspace [batch·heads][seq_pad]: D = rowsum(dO ∘ O), 0 past seq */
    float *dq_acc;    /* workspace [batch·heads][seq_pad][head_dim] fp32, unscaled (atomic dQ only) */
    attn_geom g;
    int seq_pad, q_tiles;
};

/* P of one score (base 2): 2^(s·scale·log2e − LSE·log2e); a row past seq has lse2 = +inf and gets 0. */
__device__ __forceinline__ float fb_prob(float s, float scale_log2, float lse2)
{
    return attn_exp2(fmaf(s, scale_log2, -lse2));
}

/* The deterministic dQ kernel's launch (flash_bwd_dq.cu), after the preprocess. */
template <int D> cudaError_t fb_launch_dq(const fb_args &a, int batch, cudaStream_t stream);

#endif
