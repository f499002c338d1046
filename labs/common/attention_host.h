/* The harness's side of the attention kernels: the float64 host references (forward and paged decode), the
 * parameter checks with their one-line fixes, the counters, and the sequence lengths and block tables of the paged
 * cache (a pure function of the parameters, so that the counters can recompute them). */
#ifndef PERFLAB_ATTENTION_HOST_H
#define PERFLAB_ATTENTION_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "attention/attention.h"
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

/* Checks shape parameters before any allocation: 0 when fine, else -1 with the problem and its fix in err. */
int pl_attn_fwd_params_check(int batch, int heads, int kv_heads, int seq, int head_dim, char *err, size_t errlen);

/* float64 reference of the forward pass from the bf16 inputs as the GPU holds them (host copies in the problem's
 * layout): out (fp32, the layout of q) and lse (double, [batch][heads][seq]). p's pointers are not used. */
void pl_attn_fwd_reference_host(const pl_attn_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                float *out, double *lse);

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
