/* Multi-head latent attention (MLA) decode, DeepSeek-style: one new query token per sequence against a paged cache of
 * one latent KV head. Each cached token is a row of 576 bf16 (PL_MLA_D_QK): the 512-wide compressed latent followed
 * by the 64-wide shared rotary key. The key of a token is its whole row, the value its first 512 elements (the query
 * heads have the up-projections absorbed, so every query head attends to the same latent rows). Per sequence b and
 * query head h:
 *
 *   O[b][h] = softmax_t(scale · q[b][h] · kv[t]) · kv[t][0:512]      t over the sequence's cached tokens
 *
 * fp32 accumulation and softmax, O in bf16. The cache is a pool of pages [num_pages][page_size][576]; sequence b's
 * token t lives in page block_table[b·max_pages + t / page_size] at row t % page_size (the layout of the paged
 * decode in attention.h with one kv head). q is [batch][heads][576], o [batch][heads][512]. No mask.
 *
 * Versions (one file each, the technique at its top):
 *   mla_decode_baseline.cu  one CTA per (sequence, group of 8 query heads), a warp per head walking every token
 *                           with fp32 FMAs
 *   mla_decode_mma.cu       the query heads as the M rows of mma.sync m16n8k16, 32-token tiles of latent rows
 *                           streamed through shared memory with cp.async (one tile feeds both Q·Kᵀ and P·V),
 *                           the sequence split over CTAs and the splits merged by their log-sum-exp
 *   mla_decode_wgmma_sm90a.cu  the same split with 64 heads as the M of wgmma (sm_90a), 64-token tiles in the
 *                           128-byte-swizzled layout, two warpgroups splitting S by tokens and O by columns
 *
 * Every launcher enqueues on `stream`, never synchronises and returns the launch's cudaError_t. */
#ifndef PERFLAB_ATTENTION_MLA_H
#define PERFLAB_ATTENTION_MLA_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_MLA_D_QK 576 /* elements of a latent row: the key width */
#define PL_MLA_D_V  512 /* its first PL_MLA_D_V elements: the value width */

typedef struct pl_mla_problem {
    int batch, heads, page_size, max_pages;
    float scale;              /* multiplies q·k before the softmax */
    const uint16_t *q;        /* [batch][heads][576] bf16 bits */
    const uint16_t *kv_cache; /* [pages][page_size][576] bf16 bits */
    const int *block_table;   /* [batch][max_pages] */
    const int *seq_lens;      /* [batch], each in 1 .. max_pages·page_size */
    uint16_t *o;              /* [batch][heads][512] bf16 bits */
} pl_mla_problem;

/* 1 when the kernels can compute p; else 0 with the reason and the fix in why. Heads 1..4096 (the kernels pad the
 * last block of query heads), batch 1..65535, page_size >= 1, tensors 16-byte aligned. */
int pl_mla_problem_valid(const pl_mla_problem *p, char *why, size_t whylen);

/* Baseline (mla_decode_baseline.cu). */
cudaError_t pl_mla_decode_baseline(const pl_mla_problem *p, cudaStream_t stream);

/* Tensor cores (mla_decode_mma.cu, sm_80+). The heads in blocks of 16, 32 or 64 (the fewest 16-row blocks that
 * hold them, at most 64), each (head block, sequence) split into chunks of `chunk` tokens (a multiple of 64), one
 * CTA each, writing its normalised partial output and log-sum-exp to `workspace`; a second kernel merges the chunks
 * of each (sequence, head). max_len bounds the sequence lengths. chunk 0 in pl_mla_decode_chunk picks one that
 * gives the GPU's `sm_count` SMs about four CTAs each (four waves of one CTA an SM) over the batch's
 * `total_tokens`. */
int pl_mla_decode_chunk(const pl_mla_problem *p, long long total_tokens, int max_len, int sm_count);
size_t pl_mla_decode_workspace_bytes(const pl_mla_problem *p, int max_len, int chunk);
cudaError_t pl_mla_decode_mma(const pl_mla_problem *p, int max_len, int chunk, void *workspace, cudaStream_t stream);

/* Warpgroup MMA (mla_decode_wgmma_sm90a.cu, sm_90a only: the caller checks the requirements): blocks of 64 heads,
 * 64-token tiles, wgmma from shared memory; the same chunk, workspace and combine as pl_mla_decode_mma. */
cudaError_t pl_mla_decode_wgmma(const pl_mla_problem *p, int max_len, int chunk, void *workspace, cudaStream_t stream);

/* Read-only reference (decode_read.cu): every 32-bit word of the first `rows` latent rows of the pool XORed into
 * *out (device memory, zeroed first) by a flat stream of `ctas` CTAs: the read ceiling for the bytes the decode
 * reads once (rows = the batch's cached tokens). */
cudaError_t pl_mla_read(const pl_mla_problem *p, long long rows, int ctas, uint32_t *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
