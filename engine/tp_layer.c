/* The dense layer's tensor-parallel decode step (tp_layer.h): the single-GPU layer's parts (layer_parts.h) run on a
 * rank's share of the model, an all-reduce after each row-parallel projection. */
#include <stdio.h>
#include <string.h>

#include "engine/cuda_step.h"
#include "engine/layer_ops.h"
#include "engine/layer_parts.h"
#include "engine/tp_layer.h"

int pl_tp_splits(const pl_model_config *m, int nranks, char *why, size_t whylen)
{
    if (!m || nranks < 1 || nranks > PL_AR_MAX_RANKS) {
        snprintf(why, whylen, "tensor parallel over %d GPUs: use 1 to %d", nranks, PL_AR_MAX_RANKS);
        return 0;
    }
    if (pl_model_is_moe(m) || m->qk_norm) {
        snprintf(why, whylen, "%s is a %s model: the tensor-parallel layer takes a dense model without qk-norm",
                 m->name, m->qk_norm ? "qk-norm" : "MoE");
        return 0;
    }
    if (m->kv_heads % nranks || m->heads % nranks || m->intermediate % nranks) {
        snprintf(why, whylen,
                 "%s has %d kv heads, %d heads and an MLP of %d, not all multiples of %d: a kv head is never split, "
                 "use a GPU count that divides all three",
                 m->name, m->kv_heads, m->heads, m->intermediate, nranks);
        return 0;
    }
    return 1;
}

/* ---- the rank's weights ---- */

typedef struct shard_tensor {
    uint16_t **slot;
    size_t elems;
} shard_tensor;

/* Copies rows [row0, row0 + rows) of a [*][cols] tensor to dst. */
static cudaError_t copy_rows(uint16_t *dst, const uint16_t *src, size_t row0, size_t rows, size_t cols)
{
    return cudaMemcpy(dst, src + row0 * cols, rows * cols * 2, cudaMemcpyDeviceToDevice);
}

/* Copies columns [col0, col0 + cols) of every row of a [rows][width] tensor to dst [rows][cols]. */
static cudaError_t copy_cols(uint16_t *dst, const uint16_t *src, size_t rows, size_t width, size_t col0, size_t cols)
{
    return cudaMemcpy2D(dst, cols * 2, src + col0, width * 2, cols * 2, rows, cudaMemcpyDeviceToDevice);
}

/* The rank's slices of the whole layer f into w's block (tp_layer.h's layout). */
static cudaError_t slice(const pl_dense_weights *f, pl_tp_weights *w)
{
    const pl_model_config *m = w->model;
    const size_t D = (size_t)m->hidden, hd = (size_t)m->head_dim, r = (size_t)w->rank;
    const size_t H = (size_t)m->heads, KV = (size_t)m->kv_heads, I = (size_t)m->intermediate;
    const size_t Hs = (size_t)w->shard.heads, KVs = (size_t)w->shard.kv_heads, Is = (size_t)w->shard.intermediate;
    cudaError_t e;
    if ((e = cudaMemcpy(w->attn_norm, f->attn_norm, D * 2, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
        (e = cudaMemcpy(w->mlp_norm, f->mlp_norm, D * 2, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
        (e = copy_rows(w->qkv, f->qkv, r * Hs * hd, Hs * hd, D)) != cudaSuccess ||
        (e = copy_rows(w->qkv + Hs * hd * D, f->qkv, (H + r * KVs) * hd, KVs * hd, D)) != cudaSuccess ||
        (e = copy_rows(w->qkv + (Hs + KVs) * hd * D, f->qkv, (H + KV + r * KVs) * hd, KVs * hd, D)) != cudaSuccess ||
        (e = copy_cols(w->o, f->o, D, H * hd, r * Hs * hd, Hs * hd)) != cudaSuccess ||
        (e = copy_rows(w->gate_up, f->gate_up, r * Is, Is, D)) != cudaSuccess ||
        (e = copy_rows(w->gate_up + Is * D, f->gate_up, I + r * Is, Is, D)) != cudaSuccess ||
        (e = copy_cols(w->down, f->down, D, I, r * Is, Is)) != cudaSuccess)
        return e;
    return cudaDeviceSynchronize();
}

int pl_tp_weights_alloc(const pl_model_config *m, uint64_t seed, int rank, int nranks, pl_tp_weights *w, char *err,
                        size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (!pl_tp_splits(m, nranks, err, errlen))
        return -1;
    if (rank < 0 || rank >= nranks) {
        snprintf(err, errlen, "rank %d of %d GPUs: use a rank in 0..%d", rank, nranks, nranks - 1);
        return -1;
    }
    w->model = m;
    w->shard = *m;
    w->shard.heads /= nranks;
    w->shard.kv_heads /= nranks;
    w->shard.intermediate /= nranks;
    w->rank = rank;
    w->nranks = nranks;
    const pl_model_config *s = &w->shard;
    const size_t D = (size_t)m->hidden, hd = (size_t)m->head_dim, I = (size_t)s->intermediate;
    const shard_tensor t[] = {
        {&w->attn_norm, D},
        {&w->qkv, (size_t)(s->heads + 2 * s->kv_heads) * hd * D},
        {&w->o, D * (size_t)s->heads * hd},
        {&w->mlp_norm, D},
        {&w->gate_up, 2 * I * D},
        {&w->down, D * I},
    };
    const int n = (int)(sizeof t / sizeof t[0]);
    uint64_t at = 0, offsets[sizeof t / sizeof t[0]];
    for (int i = 0; i < n; i++) {
        offsets[i] = at;
        at += (t[i].elems * 2 + 255) & ~(uint64_t)255;
    }
    pl_dense_weights full;
    if (pl_dense_weights_alloc(m, seed, &full, err, errlen) != 0)
        return -1;
    cudaError_t e = cudaMalloc(&w->block, at);
    if (e == cudaSuccess) {
        w->bytes = at;
        for (int i = 0; i < n; i++)
            *t[i].slot = (uint16_t *)((char *)w->block + offsets[i]);
        e = slice(&full, w);
    }
    pl_dense_weights_free(&full);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s's rank %d of %d weights (%llu bytes): %s", m->name, rank, nranks,
                 (unsigned long long)at, cudaGetErrorString(e));
        pl_tp_weights_free(w);
        return -1;
    }
    return 0;
}

void pl_tp_weights_free(pl_tp_weights *w)
{
    if (w->block)
        cudaFree(w->block);
    memset(w, 0, sizeof *w);
}

/* ---- the step ---- */

static size_t carve(const pl_tp_weights *w, int rows, int sm_count, char *base, pl_layer_buffers *b)
{
    return pl_layer_carve(&w->shard, rows, rows, w->shard.intermediate, sm_count, base, b);
}

size_t pl_tp_workspace_bytes(const pl_tp_weights *w, int max_rows, int sm_count)
{
    pl_layer_buffers b;
    return carve(w, max_rows, sm_count, NULL, &b);
}

/* out = residual + Σ over ranks of part (part [n] bf16, the rank's partial product; NCCL reduces it in place). */
static cudaError_t all_reduce(const pl_tp_recipe *r, uint16_t *part, const uint16_t *residual, uint16_t *out, size_t n,
                              cudaStream_t stream)
{
    if (r->allreduce == PL_TP_AR_NCCL) {
        if (ncclAllReduce(part, part, n, ncclBfloat16, ncclSum, r->nccl, stream) != ncclSuccess)
            return cudaErrorNotSupported;
        return pl_engine_residual_add(residual, part, out, n, stream);
    }
    const pl_ar_algo algo = r->allreduce == PL_TP_AR_ONESHOT ? PL_AR_ONESHOT : PL_AR_TWOSHOT;
    return pl_ar_allreduce(r->peers, algo, part, out, n, residual, stream);
}

/* The recipe's all-reduce reaches the weights' ranks and holds a step of `rows` rows. */
static int allreduce_ok(const pl_tp_weights *w, const pl_tp_recipe *r, int rows)
{
    if (r->allreduce == PL_TP_AR_NCCL) {
        int count = 0, rank = -1;
        return r->nccl && ncclCommCount(r->nccl, &count) == ncclSuccess &&
               ncclCommUserRank(r->nccl, &rank) == ncclSuccess && count == w->nranks && rank == w->rank;
    }
    return (r->allreduce == PL_TP_AR_ONESHOT || r->allreduce == PL_TP_AR_TWOSHOT) && r->peers &&
           r->peers->rank == w->rank && r->peers->nranks == w->nranks &&
           (size_t)rows * w->model->hidden * 2 <= r->peers->capacity;
}

static int step_ok(const pl_tp_weights *w, const pl_tp_recipe *r, const pl_decode_step *step, const uint16_t *x,
                   const uint16_t *out, const void *workspace, size_t workspace_bytes)
{
    return w && w->model && w->block && r && step && step->batch >= 1 && x && out && workspace &&
           (r->layer.gemm != PL_LAYER_GEMM_CUBLAS || r->layer.cublas) && r->layer.weights == PL_LAYER_WEIGHTS_BF16 &&
           workspace_bytes >= pl_tp_workspace_bytes(w, step->batch, r->layer.sm_count) &&
           allreduce_ok(w, r, step->batch);
}

cudaError_t pl_tp_layer_decode(const pl_tp_weights *w, const pl_tp_recipe *r, const pl_decode_step *step,
                               const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                               size_t workspace_bytes, cudaStream_t stream)
{
    if (!step_ok(w, r, step, x, out, workspace, workspace_bytes))
        return cudaErrorInvalidValue;
    const pl_model_config *s = &w->shard;
    const int B = step->batch;
    const size_t n = (size_t)B * s->hidden;
    pl_layer_buffers b;
    carve(w, B, r->layer.sm_count, (char *)workspace, &b);
    const pl_attn_weights aw = {w->attn_norm, w->qkv, NULL, NULL, w->o, NULL};
    /* attention on the rank's heads; h = x + all-reduce(a_r · o_rᵀ) into out */
    PL_STEP(pl_layer_attention_heads(s, &aw, &r->layer, step, kv, x, &b, stream));
    PL_STEP(pl_layer_linear(&r->layer, b.attn, (pl_layer_weight){w->o, NULL}, b.proj, B, s->hidden,
                            s->heads * s->head_dim, NULL, NULL, &b, stream));
    PL_STEP(all_reduce(r, b.proj, x, out, n, stream));
    /* the MLP on the rank's share of the width; out = h + all-reduce(act_r · down_rᵀ) */
    PL_STEP(pl_layer_mlp(&r->layer, s, w->mlp_norm, (pl_layer_weight){w->gate_up, NULL},
                         (pl_layer_weight){w->down, NULL}, B, out, b.proj, NULL, &b, stream));
    PL_STEP(all_reduce(r, b.proj, out, out, n, stream));
    return cudaSuccess;
}
