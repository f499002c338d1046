/* A whole decoder model on one GPU: the embedding, every layer (dense_layer.h, or moe_layer.h for an MoE config), the
 * final norm, the LM head and
 * greedy sampling, over one paged KV cache (a K and a V pool per layer, all layers sharing the page ids), sized by
 * the memory plan before anything is allocated.
 *
 * A step is a set of rows (tokens), each at a position of its sequence: decode rows (a sequence's next token, or a
 * piece of a prompt continuing a cache that already holds its earlier tokens), which the paged decode kernel serves
 * row by row, each over its sequence's pages up to its own position; and prompts that start from an empty cache,
 * which the prefill's flash attention serves prompt by prompt. Every layer runs the decode rows, then the prompts
 * (two passes over the layer's weights when a step has both: the price of reusing the two layer steps as they are).
 * The rows whose next token is wanted go through the final norm, the LM head and an argmax. */
#ifndef PERFLAB_ENGINE_MODEL_H
#define PERFLAB_ENGINE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/dense_layer.h"
#include "engine/memory_plan.h"
#include "engine/moe_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_model_options {
    const pl_model_config *model;
    int layers;           /* 0: the config's */
    pl_kv_dtype kv_dtype; /* the KV cache: PL_KV_BF16 (0) or PL_KV_FP8_E4M3 (e4m3 with a scale per row) */
    int page_size;        /* tokens a KV page holds (a multiple of 8) */
    int pages;            /* KV pages; 0: as many as fit once the rest is placed */
    int max_rows;         /* rows a step may hold (decode sequences and prompt tokens together) */
    int max_out;          /* rows a step may sample (its logits are max_out × vocab) */
    int max_context;      /* tokens a sequence may reach */
    int max_seqs;         /* sequences of max_context the cache must hold at once (0: 1) */
    uint64_t seed;        /* the weights' seed: layer l's is seed + l */
    int sm_count;         /* the device's SMs */
    size_t reserve_bytes; /* kept free (context growth, cuBLAS, graphs); 0: 1 GiB */
} pl_model_options;

/* Every layer's K and V pools in one region (kv_pages.h's layout; layer l's pools at l · pool_elems elements):
 * PL_KV_BF16: k, v [layers][pool_elems] bf16; PL_KV_FP8_E4M3: k8, v8 [layers][pool_elems] e4m3 bytes and k_scale,
 * v_scale [layers][pool_elems / head_dim] float, a power-of-two scale a (slot, kv head) row (attention/kv_fp8.h).
 * The other dtype's pointers are NULL. base and bytes: the region, the pointers inside it. */
typedef struct pl_model_cache {
    pl_kv_dtype dtype;
    size_t pool_elems; /* one layer's pool: pages · page_size · kv_heads · head_dim elements */
    uint16_t *k, *v;
    uint8_t *k8, *v8;
    float *k_scale, *v_scale;
    void *base;
    size_t bytes;
} pl_model_cache;

/* Bytes of a cache of `layers` layers of `pages` pages of page_size tokens in `dtype` (each array 256-byte aligned;
 * within a few hundred bytes of pl_kv_page_bytes · pages); 0 for an unknown dtype. */
size_t pl_model_cache_bytes(const pl_model_config *c, int layers, int pages, int page_size, pl_kv_dtype dtype);
/* Points *out's arrays into base (pl_model_cache_bytes of the same sizes, 256-byte aligned); nothing is written. */
void pl_model_cache_place(const pl_model_config *c, int layers, int pages, int page_size, pl_kv_dtype dtype, void *base,
                          pl_model_cache *out);

typedef struct pl_model {
    const pl_model_config *config;
    int layers, page_size, pages, max_rows, max_out, sm_count;
    pl_dense_weights *layer; /* [layers]: a dense config's layers (NULL for an MoE config) */
    pl_moe_weights *moe;     /* [layers]: an MoE config's layers (NULL for a dense config) */
    pl_moe_experts experts;  /* an MoE model's expert GEMMs: the grouped GEMM on sm_90, else one an expert */
    uint16_t *embed;         /* [vocab][hidden] */
    uint16_t *final_norm;    /* [hidden] */
    uint16_t *lm_head;       /* [vocab][hidden] (the embedding when tied) */
    /* the KV cache the steps read and write, in the options' dtype; a program may point it at another cache of the
     * same sizes (pl_model_cache_place), as e2e:model_decode does to time one model over a bf16 and an FP8 cache */
    pl_model_cache cache;
    uint16_t *x;               /* the residual stream [max_rows][hidden] */
    uint16_t *picked, *normed; /* the sampled rows and their final norm [max_out][hidden] */
    uint16_t *logits;          /* [max_out][vocab] */
    void *ws;
    size_t ws_bytes;
    void *block; /* the one allocation of everything above but the layers' weights */
    pl_plan plan;
} pl_model;

/* Plans (pl_plan_make with the GPU's free memory, the cache in o->kv_dtype), then allocates and fills (the cache
 * zeroed: in FP8, bytes and scales 0, every row the value 0). 0, or -1 with one line in err and nothing left allocated
 * (a dense config with qk-norm, a cache dtype other than bf16 and fp8, sizes that do not fit, a CUDA failure). Every
 * recipe of pl_model_step takes either cache (dense and MoE layers alike). */
int pl_model_create(const pl_model_options *o, pl_model *out, char *err, size_t errlen);
void pl_model_destroy(pl_model *m);

/* The layer's view of layer l's KV pools in m->cache (its dtype, and the FP8 pools' scales). */
pl_layer_kv pl_model_kv(const pl_model *m, int l);

/* One step's rows (device arrays unless said otherwise). Rows [0, n_decode) are decode rows: row r is token
 * positions[r] of its sequence, attends to its sequence's tokens 0..positions[r] (seq_lens[r] = positions[r] + 1)
 * through block_table row r ([n_decode][max_pages]: rows of one sequence repeat its pages). Rows [n_decode, n) are
 * `prompts` prompts from an empty cache, prompt p rows n_decode + starts[p] .. n_decode + starts[p + 1] (starts:
 * host, prompts + 1 entries). Every row writes its K/V at slots[r]. out_rows[0..n_out) are the rows whose next
 * token is sampled into out_tokens. */
typedef struct pl_model_rows {
    int n;
    const int *tokens;
    const int *positions;
    const int64_t *slots;
    int n_decode, max_pages;
    const int *block_table, *seq_lens;
    int prompts;
    const int *starts;
    int n_out;
    const int *out_rows;
    int *out_tokens;
} pl_model_rows;

/* Enqueues the step on `stream` (never synchronises: graph-capturable once the GEMM picks for these shapes were
 * made; an MoE model off sm_90 reads its expert counts on the host, and synchronises there). An MoE model's layers
 * take the recipe's attention, GEMM and fused forms, with the model's expert GEMMs. cudaErrorInvalidValue for a
 * malformed step (no rows, more than max_rows or max_out, a part the layers refuse), else the first failing call's
 * error. */
cudaError_t pl_model_step(pl_model *m, const pl_layer_recipe *r, const pl_model_rows *rows, cudaStream_t stream);

/* ---- the model's kernels (model_ops.cu) ---- */
/* x[r][:] = embed[tokens[r]][:] for r < n (token ids outside [0, vocab) read row 0). */
cudaError_t pl_engine_embed(const uint16_t *embed, const int *tokens, int n, int hidden, int vocab, uint16_t *x,
                            cudaStream_t stream);
/* dst[i][:] = src[rows[i]][:] for i < n. */
cudaError_t pl_engine_gather_rows(const uint16_t *src, const int *rows, int n, int width, uint16_t *dst,
                                  cudaStream_t stream);
/* out[r] = the index of the largest of logits[r][0..vocab) (the lowest index among equals), r < n. */
cudaError_t pl_engine_argmax(const uint16_t *logits, int n, int vocab, int *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
