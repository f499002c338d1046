/* Attention kernels: the forward pass of softmax attention over bf16 Q, K, V (prefill), and decoding one new
 * token per sequence against a paged KV cache.
 *
 * Forward: O = softmax(scale · Q·Kᵀ + mask) · V per (batch, query head), fp32 accumulation and softmax, O in bf16
 * and the log-sum-exp of every query row in fp32 (natural log of Σⱼ exp(scale · q·kⱼ) over the visible keys, what
 * a backward pass needs). Grouped-query attention: query head h reads kv head h / (heads / kv_heads). The causal
 * mask lets query i see keys 0..i (query and key sequences have the same length). Any seq >= 1.
 *
 * Versions (one file each, the technique at its top):
 *   unfused.cu              baseline: cuBLAS Q·Kᵀ into fp32 S in memory, a softmax kernel, cuBLAS P·V
 *   flash_mma.cu            FlashAttention-2: tiles of K/V streamed through shared memory, online softmax in
 *                           registers, mma.sync m16n8k16
 *   flash_wgmma_sm90a.cu    FlashAttention-3's ideas on Hopper: TMA, mbarrier ring, producer warp, wgmma
 *   bwd_unfused.cu          backward baseline: cuBLAS products through fp32 S/dP and bf16 P/dS in memory
 *   flash_bwd_mma.cu        backward, FlashAttention-2: a CTA per key block, dK and dV in registers, dQ by atomics
 *   flash_bwd_dq.cu         backward's deterministic dQ: a CTA per query block, no atomics
 *   decode_baseline.cu      paged decode, one CTA per (sequence, query head)
 *   decode_split_kv.cu      paged decode, flash-decoding: KV split over CTAs, GQA group per CTA, a combine step
 *   decode_split_mma.cu     the same split with the GQA group as the rows of mma.sync tiles
 *   decode_balanced_mma.cu  the mma tile step on a persistent grid, all pairs' tiles cut evenly among the CTAs
 *   decode_balanced_pages.cu the same grid, a CTA computing all kv heads of its tokens: whole pages per stage
 *   decode_rows_bulk.cu     rows_deep's schedule, each stage's token rows copied by bulk copies onto an mbarrier
 *   decode_fp8_tile.cuh     rows_deep_fp8's part: rows_deep over an FP8 (e4m3) cache, a scale per row, to bf16 on chip
 *   decode_fp8_frag.cuh     rows_frag_fp8's part: the same cache converted in registers into f16 mma fragments
 *   decode_read.cu          read-only references over the K/V caches (a stream, the per-head rows' pattern)
 *
 * Backward: dQ, dK, dV (bf16) from dO and the forward's O and LSE: P = exp(scale·Q·Kᵀ − LSE) recomputed,
 * dV = Pᵀ·dO, dP = dO·Vᵀ, D = rowsum(dO ∘ O), dS = P ∘ (dP − D), dQ = scale·dS·K, dK = scale·dSᵀ·Q; under GQA
 * dK and dV of a kv head sum over the query heads of its group.
 *
 * Every launcher enqueues on `stream`, never synchronises and returns the launch's cudaError_t (the cuBLAS steps
 * of the baseline return their cublasStatus_t). */
#ifndef PERFLAB_ATTENTION_H
#define PERFLAB_ATTENTION_H

#include <stddef.h>
#include <stdint.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/needs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_attn_layout {
    PL_ATTN_BHSD = 0, /* [batch][heads][seq][head_dim] */
    PL_ATTN_BSHD = 1, /* [batch][seq][heads][head_dim] (the layout of a fused QKV projection's output) */
} pl_attn_layout;

int pl_attn_layout_from_name(const char *name); /* "bhsd" | "bshd"; -1 when unknown */

typedef struct pl_attn_problem {
    int batch, heads, kv_heads, seq, head_dim;
    int causal;
    pl_attn_layout layout; /* of Q, K, V and O alike */
    float scale;           /* multiplies Q·Kᵀ before the softmax (1/sqrt(head_dim) by convention) */
    const uint16_t *q;     /* bf16 bits, `heads` heads */
    const uint16_t *k, *v; /* bf16 bits, `kv_heads` heads */
    uint16_t *o;           /* bf16 bits, `heads` heads */
    float *lse;            /* [batch][heads][seq] */
} pl_attn_problem;

/* Element strides of a tensor of `nheads` heads in the problem's layout. */
typedef struct pl_attn_strides {
    long long b, h, s; /* the head_dim stride is 1 */
} pl_attn_strides;

pl_attn_strides pl_attn_strides_of(const pl_attn_problem *p, int nheads);

/* 1 when the forward kernels can compute p; else 0 with the reason and the fix in why. Every forward kernel here
 * takes head_dim 64, 128 or 256, heads divisible by kv_heads, and 16-byte aligned tensors. */
int pl_attn_problem_valid(const pl_attn_problem *p, char *why, size_t whylen);

/* What each version needs of the GPU. */
#define PL_ATTN_NEEDS_MMA                                                                                              \
    {                                                                                                                  \
        80, 0, 0                                                                                                       \
    }
#define PL_ATTN_NEEDS_WGMMA                                                                                            \
    {                                                                                                                  \
        90, 90, PL_KNEED_WGMMA | PL_KNEED_TMA                                                                          \
    }

/* ---- baseline (unfused.cu): three passes, S and P materialised in device memory ---- */

/* S[b][h] = Q·Kᵀ (fp32, [batch·heads][seq][seq]) with strided-batched cublasGemmEx calls (a loop over the GQA
 * group, and over the batch for the bshd layout). */
cublasStatus_t pl_attn_unfused_scores(cublasHandle_t h, const pl_attn_problem *p, float *s);
/* Row softmax of scale·S with the causal mask: P (bf16, same shape; masked entries 0) and the LSE. When p_f32 is
 * not NULL it writes fp32 probabilities there instead (may be s itself: the reference's path). */
cudaError_t pl_attn_unfused_softmax(const pl_attn_problem *p, const float *s, uint16_t *p_bf16, float *p_f32,
                                    cudaStream_t stream);
/* O = P·V (bf16 out, fp32 accumulation). */
cublasStatus_t pl_attn_unfused_pv(cublasHandle_t h, const pl_attn_problem *p, const uint16_t *probs);
/* The reference's last step: o32 = P·V in fp32 throughout (P fp32, V converted to fp32 in v32, o32 in the
 * problem's layout as fp32, CUBLAS_COMPUTE_32F: no tf32, no bf16 rounding of P). */
cublasStatus_t pl_attn_reference_pv_f32(cublasHandle_t h, const pl_attn_problem *p, const float *probs,
                                        const float *v32, float *o32);
cudaError_t pl_attn_bf16_to_f32(const uint16_t *in, float *out, size_t n, cudaStream_t stream);

/* ---- flash_mma.cu (sm_80+): FlashAttention-2 with mma.sync ---- */
cudaError_t pl_attn_flash_mma(const pl_attn_problem *p, cudaStream_t stream);

/* ---- flash_wgmma_sm90a.cu (sm_90a only; the caller checks the requirements) ---- */
/* pingpong 1 makes the consumer warpgroups take turns issuing their GEMMs (named barriers), 0 leaves the
 * interleaving to the warp schedulers. Measured on an H200 (docs/perf/attention.md), 0 is 3.5% faster at head_dim
 * 128 without the causal mask, 1 is 3% faster with it and 6% faster at head_dim 64; attention:flash_fwd's
 * --wgmma-schedule picks it and defaults to 0 ("overlap"). */
cudaError_t pl_attn_flash_wgmma_schedule(const pl_attn_problem *p, int pingpong, cudaStream_t stream);

/* ---- backward ---- */

/* The backward problem: the forward's problem with O and the LSE as inputs (what the forward wrote), dO in the
 * layout of Q, dQ in the layout of Q, dK and dV in the layout of K. */
typedef struct pl_attn_bwd_problem {
    pl_attn_problem f;    /* q, k, v, o, lse (o and lse read, never written here) */
    const uint16_t *dout; /* dO, bf16 bits */
    uint16_t *dq;         /* bf16 bits, `heads` heads */
    uint16_t *dk, *dv;    /* bf16 bits, `kv_heads` heads */
    int deterministic;    /* flash backward: dQ without atomics (bit-identical from run to run) */
} pl_attn_bwd_problem;

/* pl_attn_problem_valid of f, head_dim 64 or 128 (the backward kernels have no 256), plus dO, dQ, dK, dV present
 * and 16-byte aligned. */
int pl_attn_bwd_problem_valid(const pl_attn_bwd_problem *p, char *why, size_t whylen);

/* Baseline (bwd_unfused.cu), the steps the lab composes, each enqueued on the handle's or the given stream:
 *   S = Q·Kᵀ (pl_attn_unfused_scores), P = pl_attn_bwd_probs, dV = pl_attn_bwd_grad_kv(P, dO),
 *   dP = dO·Vᵀ (pl_attn_unfused_scores of the problem with q = dO, k = V), D = pl_attn_bwd_rowdot(dO, O),
 *   dS = pl_attn_bwd_ds, dQ = pl_attn_bwd_grad_q(dS, K), dK = pl_attn_bwd_grad_kv(dS, Q).
 * P = exp(scale·S − LSE) from the fp32 S ([batch·heads][seq][seq]) and p->lse, 0 past the causal diagonal, as
 * bf16 (the fp32 reference takes its P from pl_attn_unfused_softmax instead). */
cudaError_t pl_attn_bwd_probs(const pl_attn_problem *p, const float *s, uint16_t *probs, cudaStream_t stream);
/* d[row] = Σ dO[row]·O[row] in fp32 over head_dim, row = (b·heads + h)·seq + i. */
cudaError_t pl_attn_bwd_rowdot(const pl_attn_problem *p, const uint16_t *dout, float *d, cudaStream_t stream);
/* dS = P ∘ (dP − D[row]) into ds (bf16; may alias probs, each element read before it is written). */
cudaError_t pl_attn_bwd_ds(const pl_attn_problem *p, const uint16_t *probs, const float *dp, const float *d,
                           uint16_t *ds, cudaStream_t stream);
/* The reference's fp32 version: per row D = d[row] (rowsum(dO ∘ O) of the O the backward is given, from
 * pl_attn_bwd_rowdot) or, with d NULL, Σⱼ P·dP (the same as rowsum(dO ∘ O) of the exact O), then dP ← P ∘ (dP − D)
 * in place. */
cudaError_t pl_attn_bwd_ds_f32(const pl_attn_problem *p, const float *probs, float *dp, const float *d,
                               cudaStream_t stream);
/* acc (fp32, the layout of K) = alpha · Σ over the query heads h of each group of Xₕᵀ·Yₕ: X per (batch, query
 * head) a seq×seq matrix ([batch·heads][seq][seq], P or dS), Y in the layout of Q (dO or Q); X and Y both of
 * type t (CUDA_R_16BF or CUDA_R_32F). */
cublasStatus_t pl_attn_bwd_grad_kv(cublasHandle_t h, const pl_attn_problem *p, const void *x, const void *y,
                                   cudaDataType t, float alpha, float *acc);
/* out (the layout of Q, type out_t) = alpha · Xₕ·Z: X per (batch, query head) seq×seq (dS), Z in the layout of K
 * (K); X and Z of type t. */
cublasStatus_t pl_attn_bwd_grad_q(cublasHandle_t h, const pl_attn_problem *p, const void *x, const void *z,
                                  cudaDataType t, float alpha, void *out, cudaDataType out_t);
cudaError_t pl_attn_f32_to_bf16(const float *in, uint16_t *out, size_t n, cudaStream_t stream);

/* FlashAttention-2's backward with mma.sync (flash_bwd_mma.cu, flash_bwd_dq.cu; sm_80+): a preprocess kernel (D,
 * the LSE in base 2, the dQ accumulator zeroed), one CTA per (key block, kv head, batch) accumulating dK and dV in
 * registers over every query block of the group's heads, and dQ either added with fp32 atomics into an fp32
 * accumulator then converted (deterministic 0) or computed by a second kernel over query blocks (1). `workspace`:
 * pl_attn_flash_bwd_workspace_bytes(p) bytes, 256-byte aligned. */
size_t pl_attn_flash_bwd_workspace_bytes(const pl_attn_bwd_problem *p);
cudaError_t pl_attn_flash_bwd_mma(const pl_attn_bwd_problem *p, void *workspace, cudaStream_t stream);

/* ---- paged decode ---- */

/* One new query token per sequence against a paged KV cache. K and V caches are pools of pages,
 * [num_pages][page_size][kv_heads][head_dim] bf16 (the flash-attn / FlashInfer "NHD" page layout); sequence b's
 * token t lives in page block_table[b·max_pages + t / page_size] at row t % page_size. q and o are
 * [batch][heads][head_dim] bf16. Sequence lengths are >= 1 and at most max_pages · page_size. No mask (the new
 * token sees its whole context).
 *
 * An FP8 cache (kv_dtype PL_KV_FP8_E4M3; kernels/attention/kv_fp8.h): the same page layout in e4m3 bytes (k_fp8,
 * v_fp8, 1 byte an element), and beside each pool its rows' scales, [num_pages·page_size][kv_heads] float (element
 * (slot, g) the power-of-two scale of that token's kv head g row): value = e4m3(byte) · scale. k_cache and v_cache
 * are unused then. Only the launchers named _fp8 (and pl_decode_baseline) take it. */
typedef enum pl_kv_dtype {
    PL_KV_BF16 = 0,     /* bf16 pools (k_cache, v_cache) */
    PL_KV_FP8_E4M3 = 1, /* e4m3 pools with a power-of-two scale per (token, kv head) row */
} pl_kv_dtype;

typedef struct pl_decode_problem {
    int batch, heads, kv_heads, head_dim, page_size, max_pages;
    float scale;
    const uint16_t *q;
    const uint16_t *k_cache, *v_cache;
    const int *block_table; /* [batch][max_pages] */
    const int *seq_lens;    /* [batch] */
    uint16_t *o;
    pl_kv_dtype kv_dtype;           /* 0 (PL_KV_BF16) for a zeroed problem */
    const uint8_t *k_fp8, *v_fp8;   /* e4m3 pools (PL_KV_FP8_E4M3) */
    const float *k_scale, *v_scale; /* their rows' scales, [num_pages·page_size][kv_heads] */
} pl_decode_problem;

/* 1 when the bf16 kernels can compute p (kv_dtype PL_KV_BF16); else 0 with the reason and the fix. */
int pl_decode_problem_valid(const pl_decode_problem *p, char *why, size_t whylen);
/* The same for the kernels that take either cache (pl_decode_baseline, pl_decode_rows_deep_fp8 for the FP8 one):
 * the FP8 cache's pools and scales present, the pools 16-byte aligned. */
int pl_decode_problem_valid_any(const pl_decode_problem *p, char *why, size_t whylen);

/* Baseline: one CTA per (sequence, query head) walking the sequence's whole KV: each query head of a GQA group
 * reads the same K/V again. Takes a bf16 or an FP8 cache (each row's e4m3 values times its scale, in fp32). */
cudaError_t pl_decode_baseline(const pl_decode_problem *p, cudaStream_t stream);

/* Flash-decoding: the KV of each (sequence, kv head) split into chunks of `chunk` tokens, one CTA per chunk
 * computing all the query heads of the GQA group from each K/V load (16-byte loads), partial results (running max,
 * sum, unnormalised output) combined by a second kernel. `workspace` holds pl_decode_split_workspace_bytes(p,
 * max_len, chunk) bytes; max_len bounds the sequence lengths. chunk 0 picks one from the shape and the SM count. */
size_t pl_decode_split_workspace_bytes(const pl_decode_problem *p, int max_len, int chunk);
int pl_decode_split_chunk(const pl_decode_problem *p, int max_len, int sm_count);
cudaError_t pl_decode_split_kv(const pl_decode_problem *p, int max_len, int chunk, void *workspace,
                               cudaStream_t stream);
/* The same split on the tensor cores: the GQA group as the rows of mma.sync m16n8k16 (decode_split_mma.cu, sm_80+);
 * the same workspace and chunk rules. */
cudaError_t pl_decode_split_mma(const pl_decode_problem *p, int max_len, int chunk, void *workspace,
                                cudaStream_t stream);

/* Balanced (decode_balanced_mma.cu, sm_80+): split_kv_mma's tile step on a persistent grid of `ctas` CTAs (all
 * resident at once: pl_decode_balanced_ctas), the 64-token tiles of all (sequence, kv head) pairs cut into `ctas`
 * equal contiguous ranges, a combine kernel for the pairs a range boundary cuts. evict_first: the K/V loads carry
 * an L2 evict-first hint. `workspace`: pl_decode_balanced_workspace_bytes(p, ctas) bytes, 256-byte aligned. */
int pl_decode_balanced_ctas(const pl_decode_problem *p, int sm_count);
size_t pl_decode_balanced_workspace_bytes(const pl_decode_problem *p, int ctas);
cudaError_t pl_decode_balanced_mma(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                   cudaStream_t stream);

/* Balanced pages (decode_balanced_pages.cu, sm_80+): balanced_mma's schedule, but one CTA of eight warps computes
 * a block of up to 8 kv heads (the largest divisor of kv_heads up to 8), a warp each, so that each stage reads
 * whole token rows (16 tokens × all the block's heads: at page 16 one whole K page and one V page). The same
 * arguments as pl_decode_balanced_mma, with its own grid size and workspace. */
int pl_decode_pages_ctas(const pl_decode_problem *p, int sm_count);
size_t pl_decode_pages_workspace_bytes(const pl_decode_problem *p, int ctas);
cudaError_t pl_decode_balanced_pages(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                     cudaStream_t stream);

/* Rows deep (decode_balanced_pages.cu): balanced_pages with an early refill (each stage refilled as soon as the
 * warps are done with it, before the wait for the next: three stages in flight, not two), in CTAs of `warps` warps
 * (4: two CTAs an SM, a block of up to 4 kv heads each, 1 KB of each token's rows at head_dim 128; 8: one CTA an
 * SM, blocks of up to 8). Its own grid and workspace for each warp count. */
int pl_decode_rows_ctas(const pl_decode_problem *p, int warps, int sm_count);
size_t pl_decode_rows_workspace_bytes(const pl_decode_problem *p, int warps, int ctas);
cudaError_t pl_decode_rows_deep(const pl_decode_problem *p, int warps, int ctas, int evict_first, void *workspace,
                                cudaStream_t stream);

/* Rows deep over an FP8 cache (decode_balanced_pages.cu with decode_fp8_tile.cuh, sm_80+; kv_dtype PL_KV_FP8_E4M3):
 * rows_deep's four-warp schedule (two CTAs an SM, a block of up to 4 kv heads, early refill) with each stage's e4m3
 * token rows (half the bytes of bf16: 512 B of each token at head_dim 128) and their scales copied in by cp.async, four
 * stages deep; each warp converts its head's 16 rows to bf16 times their scales (exact) in a shared-memory tile of its
 * own, then runs the bf16 kernel's tensor-core step on it. Reads K and V at 1 byte an element plus 4 bytes of scale a
 * row. Its own grid and workspace. */
int pl_decode_rows_fp8_ctas(const pl_decode_problem *p, int sm_count);
size_t pl_decode_rows_fp8_workspace_bytes(const pl_decode_problem *p, int ctas);
cudaError_t pl_decode_rows_deep_fp8(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                    cudaStream_t stream);

/* Rows frag over an FP8 cache (decode_balanced_pages.cu with decode_fp8_frag.cuh; the e4m3 conversion in hardware on
 * sm_89+, emulated below; kv_dtype PL_KV_FP8_E4M3): rows_deep_fp8's schedule and stages, but no bf16 tile: each lane
 * loads its bytes of the stage's e4m3 rows (16-byte shared loads, the chunks XOR-swizzled) and converts them straight
 * into the f16 operands of mma.sync (Q in f16 at a power-of-two scale per row, K's row scales on the scores, V's folded
 * into P under a running power-of-two unit), fp32 accumulation. Its own grid and workspace. */
int pl_decode_rows_frag_fp8_ctas(const pl_decode_problem *p, int sm_count);
size_t pl_decode_rows_frag_fp8_workspace_bytes(const pl_decode_problem *p, int ctas);
cudaError_t pl_decode_rows_frag_fp8(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                    cudaStream_t stream);

/* Rows bulk (decode_rows_bulk.cu, sm_90+): rows_deep's four-warp schedule with each stage's token rows brought in by
 * bulk copies (one per token row of the block, K and V) completing on an mbarrier. Its own grid and workspace. */
int pl_decode_rows_bulk_ctas(const pl_decode_problem *p, int sm_count);
size_t pl_decode_rows_bulk_workspace_bytes(const pl_decode_problem *p, int ctas);
cudaError_t pl_decode_rows_bulk(const pl_decode_problem *p, int ctas, int evict_first, void *workspace,
                                cudaStream_t stream);

/* Read-only references (decode_read.cu): every 32-bit word of the K and V caches (`pages` pages each) XORed into
 * *out (device memory, zeroed first). hb 0: a flat grid-stride stream of `ctas` CTAs; hb > 0 (dividing kv_heads):
 * the per-head kernels' pattern, the CTAs of each block of hb kv heads reading only its rows. */
cudaError_t pl_decode_read(const pl_decode_problem *p, int pages, int hb, int ctas, uint32_t *out, cudaStream_t stream);

/* *count = the number of 32-bit words in which a and b differ (compare_words.cu; count is device memory). */
cudaError_t pl_attn_count_diff_u32(const uint32_t *a, const uint32_t *b, size_t n, unsigned long long *count,
                                   cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
