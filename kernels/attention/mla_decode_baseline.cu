/* MLA decode, baseline — one CTA per (sequence, group of 8 query heads), a warp per query head walking every cached
 * token of the sequence with fp32 FMAs.
 *
 * A latent row is 288 32-bit words (576 bf16): lane l holds words l + 32·e of the value part (e < 8, 16 elements)
 * and word 256 + l of the rotary part, the same words of its head's query (times scale·log2 e). For each token the
 * warp loads the row (nine coalesced 128-byte loads), reduces q·k over the warp with shuffles, updates its running
 * max and sum (the online softmax, base 2) and accumulates the value part. The eight warps of a CTA read the same
 * rows, from L1 when they run together; the groups of a sequence read them again (from L2 or HBM): the plain
 * version, no tensor cores, no reuse across heads in registers. */
#include <math.h>

#include "attention/mla.h"
#include "attention/attn_common.cuh"

#define MB_WARPS   8
#define MB_THREADS (MB_WARPS * 32)
#define MB_VWORDS  (PL_MLA_D_V / 64) /* value words a lane: 8 */

__global__ void __launch_bounds__(MB_THREADS) mla_decode_baseline_kernel(const pl_mla_problem p, float scale_log2)
{
    const int lane = threadIdx.x & 31, h = blockIdx.x * MB_WARPS + (threadIdx.x >> 5), b = blockIdx.y;
    if (h >= p.heads)
        return;
    const int len = p.seq_lens[b];
    const uint32_t *qw = reinterpret_cast<const uint32_t *>(p.q + ((long long)b * p.heads + h) * PL_MLA_D_QK);
    float q[2 * MB_VWORDS + 2], acc[2 * MB_VWORDS];
#pragma unroll
    for (int e = 0; e <= MB_VWORDS; e++) {
        const uint32_t w = qw[e < MB_VWORDS ? lane + 32 * e : 256 + lane];
        q[2 * e] = attn_bf16_lo(w) * scale_log2;
        q[2 * e + 1] = attn_bf16_hi(w) * scale_log2;
    }
#pragma unroll
    for (int e = 0; e < 2 * MB_VWORDS; e++)
        acc[e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int t = 0; t < len; t++) {
        const long long page = p.block_table[(long long)b * p.max_pages + t / p.page_size];
        const uint32_t *row =
            reinterpret_cast<const uint32_t *>(p.kv_cache + (page * p.page_size + t % p.page_size) * PL_MLA_D_QK);
        uint32_t w[MB_VWORDS + 1];
#pragma unroll
        for (int e = 0; e <= MB_VWORDS; e++)
            w[e] = row[e < MB_VWORDS ? lane + 32 * e : 256 + lane];
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e <= MB_VWORDS; e++)
            s = fmaf(q[2 * e], attn_bf16_lo(w[e]), fmaf(q[2 * e + 1], attn_bf16_hi(w[e]), s));
        float alpha;
        const float pe = attn_warp_online_step(s, m, l, alpha);
#pragma unroll
        for (int e = 0; e < MB_VWORDS; e++) {
            acc[2 * e] = fmaf(pe, attn_bf16_lo(w[e]), acc[2 * e] * alpha);
            acc[2 * e + 1] = fmaf(pe, attn_bf16_hi(w[e]), acc[2 * e + 1] * alpha);
        }
    }
    uint32_t *ow = reinterpret_cast<uint32_t *>(p.o + ((long long)b * p.heads + h) * PL_MLA_D_V);
    const float inv = 1.0f / l;
#pragma unroll
    for (int e = 0; e < MB_VWORDS; e++)
        ow[lane + 32 * e] = attn_pack_bf16(acc[2 * e] * inv, acc[2 * e + 1] * inv);
}

extern "C" cudaError_t pl_mla_decode_baseline(const pl_mla_problem *p, cudaStream_t stream)
{
    char why[160];
    if (!p || !pl_mla_problem_valid(p, why, sizeof why))
        return cudaErrorInvalidValue;
    const dim3 grid((unsigned)((p->heads + MB_WARPS - 1) / MB_WARPS), (unsigned)p->batch);
    mla_decode_baseline_kernel<<<grid, MB_THREADS, 0, stream>>>(*p, p->scale * PL_ATTN_LOG2E);
    return cudaGetLastError();
}
