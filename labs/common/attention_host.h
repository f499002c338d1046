/* The harness's side of the attention kernels: the float64 host references (forward and paged decode), the
 * parameter checks with their one-line fixes, the counters, and the sequence lengths and block tables of the paged
 * cache (a pure function of the parameters, so that the counters can recompute them). */
#ifndef PERFLAB_ATTENTION_HOST_H
#define PERFLAB_ATTENTION_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "attention/attention.h"
#include "perflab/declare.h"
#include "perflab/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Problems of at most this many multiply-adds (batch·heads·seq²·head_dim) get the float64 host reference; larger
 * ones the unfused pipeline in fp32 on the device (cuBLAS fp32 GEMMs, an fp32 softmax). */
#define PL_ATTN_HOST_REFERENCE_MACS (128.0 * 1024 * 1024)

/* FLOPs of the forward pass: 4·b·h·seq²·d (Q·Kᵀ and P·V, 2 FLOPs per multiply-add), halved under the causal
 * mask — exactly half of seq², i.e. the diagonal counted as half (the visible pairs are seq·(seq+1)/2). The
 * convention of FlashAttention's and PyTorch's benchmarks, so that the figures compare. */
double pl_attn_fwd_flops(int batch, int heads, int seq, int head_dim, int causal);

/* The shape parameters attention:flash_fwd and attention:flash_bwd share, as lines of a pl_param_def table, with
 * the --small batch and kv heads (of 4 query heads, seq 77) given, and the head dims the target's kernels take: the
 * largest, the help line naming them, the --small one (NULL: the default, 128). */
#define PL_ATTN_SHAPE_PARAMS(small_batch, small_kv, max_head_dim, head_dims, small_head_dim)                           \
    PL_INT_PARAM("batch", "4", 1, 65535, "sequences", .small_value = small_batch),                                     \
        PL_INT_PARAM("heads", "16", 1, 65535, "query heads", .small_value = "4"),                                      \
        PL_INT_PARAM("kv-heads", "0", 0, 65535,                                                                        \
                     "key/value heads (grouped-query attention; must divide heads); 0: as many as heads",              \
                     .small_value = small_kv),                                                                         \
        PL_INT_PARAM("seq", "4096", 1, 1 << 20, "tokens per sequence (queries = keys)", .small_value = "77"),          \
        PL_INT_PARAM("head-dim", "128", 64, max_head_dim, head_dims, .small_value = small_head_dim),                   \
        PL_BOOL_PARAM("causal", "false", "query i sees keys 0..i"),                                                    \
        PL_CHOICE_PARAM("layout", "bhsd", "bhsd|bshd",                                                                 \
                        "bhsd = [batch][heads][seq][head_dim], bshd = [batch][seq][heads][head_dim]"),                 \
        PL_FLOAT_PARAM("scale", "0", 0, 1e6, "softmax scale applied to Q·Kᵀ; 0: 1/sqrt(head_dim)")

/* The shape, mask, layout and scale of those parameters (kv heads 0: as many as heads; scale 0: 1/sqrt(head_dim));
 * p's pointers are left as they are. */
void pl_attn_shape_from_params(const pl_params *params, pl_attn_problem *p);

/* Checks shape parameters before any allocation: 0 when fine, else -1 with the problem and its fix in err. Head
 * dims 64, 128 and (with_256) 256: the forward kernels take 256, the backward kernels do not. */
int pl_attn_fwd_params_check(int batch, int heads, int kv_heads, int seq, int head_dim, int with_256, char *err,
                             size_t errlen);

/* float64 reference of the forward pass from the bf16 inputs as the GPU holds them (host copies in the problem's
 * layout): out (fp32, the layout of q) and lse (double, [batch][heads][seq]). p's pointers are not used. */
void pl_attn_fwd_reference_host(const pl_attn_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                float *out, double *lse);

/* ---- backward ---- */

/* Problems of at most this many multiply-adds (batch·heads·seq²·head_dim) get the float64 host reference of the
 * backward (about 6 passes of that size on the host); larger ones the unfused backward in fp32 on the device. */
#define PL_ATTN_BWD_HOST_REFERENCE_MACS (32.0 * 1024 * 1024)

/* FLOPs of the backward pass: 2.5 × the forward's (five seq×seq×head_dim products: S, dP, dV, dK, dQ against the
 * forward's two), so 10·b·h·seq²·d, halved under the causal mask by the same convention. */
double pl_attn_bwd_flops(int batch, int heads, int seq, int head_dim, int causal);

/* float64 reference of the backward from the bf16 inputs as the GPU holds them (host copies in the problem's
 * layouts): P exact from Q, K, V, D = rowsum(dO ∘ O), then dQ (the layout of q), dK and dV (the layout of k; summed
 * over each GQA group) as fp32. o: the forward's bf16 O that the backward is given (D is taken from it, as every
 * backward takes it: the bf16 rounding of O moves D by up to 2^-9 of |dO|·|O|, an error the same in every row's dS
 * that no kernel could remove), or NULL for the exact O = P·V (the gradient of the loss Σ dO ∘ O by definition).
 * p's pointers are not used. */
void pl_attn_bwd_reference_host(const pl_attn_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                const uint16_t *o, const uint16_t *dout, float *dq, float *dk, float *dv);

/* ---- paged decode ---- */

/* Sequence lengths: uniform in [max(1, round((1 - spread)·kv_len)), kv_len], a pure function of (len_seed, b). */
void pl_decode_lengths(int batch, int kv_len, double spread, uint64_t len_seed, int *lens);
/* Total tokens over the batch, from the same draw. */
long long pl_decode_total_tokens(int batch, int kv_len, double spread, uint64_t len_seed);
/* Block table of `batch` sequences of lengths `lens`: each sequence's pages drawn from a shuffled pool of
 * exactly the pages needed (returns their number), so that pages of one sequence are scattered; entries past a
 * sequence's last page are -1. table is batch × max_pages. */
int pl_decode_block_table(int batch, const int *lens, int page_size, int max_pages, uint64_t seed, int *table);
/* float64 reference of paged decode: out [batch][heads][head_dim]. k and v are host copies of the caches. */
void pl_decode_reference_host(const pl_decode_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                              const int *table, const int *lens, double *out);

#ifdef __cplusplus
}
#endif
#endif
