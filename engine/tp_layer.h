/* The dense layer's decode step split over N GPUs (tensor parallel, Megatron's split), one rank a GPU, a thread a rank:
 *
 *   xn    = RMSNorm(x, attn_norm)                       every rank, on the whole (replicated) residual stream x
 *   qkv_r = xn · qkv_rᵀ                                 column-parallel: rank r's heads/N query heads and kv_heads/N
 *                                                       key/value heads (heads r·H/N.., kv heads r·KV/N..)
 *   RoPE, the KV write, paged decode attention          on the rank's heads; its KV pools hold its kv heads only
 *   h     = x + all-reduce(a_r · o_rᵀ)                  row-parallel: o_r is o's columns of the rank's query heads
 *   xn    = RMSNorm(h, mlp_norm)
 *   act_r = SiLU(gate_r) · up_r                         column-parallel: rows r·I/N.. of gate and of up
 *   out   = h + all-reduce(act_r · down_rᵀ)             row-parallel: down's columns r·I/N..
 *
 * Each all-reduce is NCCL's (ncclAllReduce, bf16, sum, then the residual add kernel) or perflab's own over NVLink
 * peer pointers (kernels/allreduce: one-shot or two-shot, the residual added in the same kernel). Every rank ends with
 * the same x for the next layer (NCCL's ring and tree, and perflab's kernels, give every rank the same bits).
 *
 * Requirements: a dense model without qk-norm whose kv_heads, heads and intermediate are multiples of N
 * (kv_heads % N == 0: a kv head is never split, so each rank's GQA groups are whole and its cache is its kv heads'
 * pools; Llama-3-8B and -70B, with 8 kv heads, split over 2, 4 or 8 GPUs).
 *
 * The weights of rank r are exactly the row and column slices of the single-GPU layer's (pl_dense_weights_alloc with
 * the same seed), so a test compares the two: the whole layer is filled on the rank's GPU by the same counter hash,
 * the slices copied out on the device (cudaMemcpy2D), the whole layer freed. */
#ifndef PERFLAB_ENGINE_TP_LAYER_H
#define PERFLAB_ENGINE_TP_LAYER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "allreduce/allreduce.h"
#include "engine/dense_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_tp_allreduce {
    PL_TP_AR_NCCL = 0,    /* ncclAllReduce in place on the partial product, then the residual add kernel */
    PL_TP_AR_ONESHOT = 1, /* pl_ar_allreduce one-shot, the residual in the same kernel */
    PL_TP_AR_TWOSHOT = 2, /* pl_ar_allreduce two-shot, the residual in the same kernel */
} pl_tp_allreduce;

/* One rank's share of a dense layer. */
typedef struct pl_tp_weights {
    const pl_model_config *model; /* the whole model */
    /* the rank's share as a model of its own: heads/N, kv_heads/N, intermediate/N, the rest as the model's (what the
     * single-GPU layer's parts run on) */
    pl_model_config shard;
    int rank, nranks;
    /* device pointers into one allocation, bf16: attn_norm [hidden], qkv [(H + 2·KV)/N·hd][hidden] (the rank's q
     * heads, then its k heads, then its v heads), o [hidden][H/N·hd], mlp_norm [hidden], gate_up [2·I/N][hidden]
     * (its gate rows, then its up rows), down [hidden][I/N] */
    uint16_t *attn_norm, *qkv, *o, *mlp_norm, *gate_up, *down;
    void *block;
    uint64_t bytes;
} pl_tp_weights;

/* 1 when m splits over nranks GPUs (see above); else 0 with the reason and the fix in why. */
int pl_tp_splits(const pl_model_config *m, int nranks, char *why, size_t whylen);

/* Rank `rank` of `nranks`'s share of the layer pl_dense_weights_alloc(m, seed) makes, on the current device (it
 * needs the whole layer's bytes free for a moment). 0, or -1 with one line in err and nothing allocated. */
int pl_tp_weights_alloc(const pl_model_config *m, uint64_t seed, int rank, int nranks, pl_tp_weights *w, char *err,
                        size_t errlen);
void pl_tp_weights_free(pl_tp_weights *w);

typedef struct pl_tp_recipe {
    pl_layer_recipe layer; /* the single-GPU layer's recipe, for the rank's GEMMs, attention and norms */
    pl_tp_allreduce allreduce;
    ncclComm_t nccl;   /* PL_TP_AR_NCCL: the ranks' communicator (this rank's handle) */
    pl_ar_rank *peers; /* PL_TP_AR_ONESHOT/TWOSHOT: this rank's view (capacity >= batch·hidden·2 bytes) */
} pl_tp_recipe;

/* Bytes of a rank's workspace for up to max_rows sequences. */
size_t pl_tp_workspace_bytes(const pl_tp_weights *w, int max_rows, int sm_count);

/* The rank's decode step: x [batch][hidden] the whole residual stream (the same on every rank), out the stream after
 * the layer (may be x); kv the rank's pools, [pages·page_size][kv_heads/N][head_dim], the step's pages and slots as
 * the single-GPU layer's. Every rank calls it for the same step, each on its own stream from its own thread (the
 * all-reduces wait for the peers on the GPU, never on the host). Returns the first failing call's error,
 * cudaErrorInvalidValue for a malformed step (as pl_dense_layer_decode, and a missing communicator or peer view, or
 * one whose rank or count differs from the weights'), cudaErrorNotSupported for an NCCL failure. */
cudaError_t pl_tp_layer_decode(const pl_tp_weights *w, const pl_tp_recipe *r, const pl_decode_step *step,
                               const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                               size_t workspace_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
