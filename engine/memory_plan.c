/* Weight, KV-cache and activation bytes, and the plan that checks them against the GPU's free memory. */
#include "engine/memory_plan.h"

#include <stdio.h>
#include <string.h>

/* The index of name in names[0..n), or -1. */
static int name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n && name; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static const char *const dtype_names[] = {"bf16", "fp8", "fp8-block"};
static const char *const kv_dtype_names[] = {"bf16", "fp8"}; /* in pl_kv_dtype's order */

const char *pl_weight_dtype_name(pl_weight_dtype dt)
{
    return (unsigned)dt < 3 ? dtype_names[dt] : "?";
}

int pl_weight_dtype_parse(const char *name, pl_weight_dtype *out)
{
    const int i = name_index(dtype_names, 3, name);
    if (i >= 0)
        *out = (pl_weight_dtype)i;
    return i >= 0 ? 0 : -1;
}

const char *pl_kv_dtype_name(pl_kv_dtype dt)
{
    return (unsigned)dt < 2 ? kv_dtype_names[dt] : "?";
}

int pl_kv_dtype_parse(const char *name, pl_kv_dtype *out)
{
    const int i = name_index(kv_dtype_names, 2, name);
    if (i >= 0)
        *out = (pl_kv_dtype)i;
    return i >= 0 ? 0 : -1;
}

static pl_weight_tensor tensor(const char *name, int64_t rows, int64_t cols, int copies, int quantized)
{
    pl_weight_tensor t = {name, rows, cols, copies, quantized, 0};
    return t;
}

int pl_layer_tensors(const pl_model_config *m, pl_weight_tensor *out)
{
    const int64_t h = m->hidden, hd = m->head_dim, q = (int64_t)m->heads * hd;
    int n = 0;
    out[n++] = tensor("attn_norm", 1, h, 1, 0);
    out[n++] = tensor("qkv", q + 2 * (int64_t)m->kv_heads * hd, h, 1, 1);
    if (m->qk_norm) {
        out[n++] = tensor("q_norm", 1, hd, 1, 0);
        out[n++] = tensor("k_norm", 1, hd, 1, 0);
    }
    out[n++] = tensor("o", h, q, 1, 1);
    out[n++] = tensor("mlp_norm", 1, h, 1, 0);
    if (pl_model_is_moe(m)) {
        out[n++] = tensor("router", m->experts, h, 1, 0);
        out[n] = tensor("expert_gate_up", 2 * (int64_t)m->expert_intermediate, h, m->experts, 1);
        out[n++].per_expert = 1;
        out[n] = tensor("expert_down", h, m->expert_intermediate, m->experts, 1);
        out[n++].per_expert = 1;
    } else {
        out[n++] = tensor("gate_up", 2 * (int64_t)m->intermediate, h, 1, 1);
        out[n++] = tensor("down", h, m->intermediate, 1, 1);
    }
    return n;
}

uint64_t pl_tensor_bytes(const pl_weight_tensor *t, pl_weight_dtype dt, uint64_t *scales)
{
    const uint64_t elems = (uint64_t)t->rows * (uint64_t)t->cols;
    uint64_t s = 0, data = 2 * elems;
    if (t->quantized && dt != PL_WEIGHTS_BF16) {
        data = elems;
        s = dt == PL_WEIGHTS_FP8 ? 4
                                 : 4 * (uint64_t)((t->rows + PL_FP8_BLOCK - 1) / PL_FP8_BLOCK) *
                                       (uint64_t)((t->cols + PL_FP8_BLOCK - 1) / PL_FP8_BLOCK);
    }
    if (scales)
        *scales = s;
    return data + s;
}

void pl_layer_bytes_of(const pl_model_config *m, pl_weight_dtype dt, pl_layer_bytes *out)
{
    pl_weight_tensor t[PL_MAX_LAYER_TENSORS];
    const int n = pl_layer_tensors(m, t);
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n; i++) {
        uint64_t s;
        const uint64_t b = pl_tensor_bytes(&t[i], dt, &s);
        out->params += (uint64_t)t[i].rows * (uint64_t)t[i].cols * (uint64_t)t[i].copies;
        out->scales += s * (uint64_t)t[i].copies;
        if (t[i].per_expert)
            out->expert += b;
        else
            out->fixed += b;
    }
    out->total = out->fixed + (uint64_t)(m->experts > 0 ? m->experts : 0) * out->expert;
}

void pl_weight_bytes_of(const pl_model_config *m, pl_weight_dtype dt, int layers, pl_weight_bytes *out)
{
    memset(out, 0, sizeof *out);
    pl_layer_bytes_of(m, dt, &out->layer);
    out->layers = layers > 0 ? layers : m->layers;
    const pl_weight_tensor emb = tensor("embedding", m->vocab, m->hidden, 1, 0);
    const pl_weight_tensor head = tensor("lm_head", m->vocab, m->hidden, 1, 1);
    const uint64_t table = (uint64_t)m->vocab * (uint64_t)m->hidden;
    out->embedding = pl_tensor_bytes(&emb, dt, NULL);
    out->final_norm = 2 * (uint64_t)m->hidden;
    out->lm_head = m->tied_embeddings ? 0 : pl_tensor_bytes(&head, dt, NULL);
    out->layers_total = (uint64_t)out->layers * out->layer.total;
    out->params =
        (uint64_t)out->layers * out->layer.params + table * (m->tied_embeddings ? 1 : 2) + (uint64_t)m->hidden;
    out->total = out->layers_total + out->embedding + out->final_norm + out->lm_head;
}

uint64_t pl_kv_page_bytes(const pl_model_config *m, int layers, int page_size, pl_kv_dtype kv_dtype)
{
    /* one (token, kv head) row of K or V: bf16 elements, or e4m3 bytes and the row's float scale */
    const uint64_t row = kv_dtype == PL_KV_BF16       ? 2 * (uint64_t)m->head_dim
                         : kv_dtype == PL_KV_FP8_E4M3 ? (uint64_t)m->head_dim + sizeof(float)
                                                      : 0;
    return (uint64_t)(layers > 0 ? layers : m->layers) * 2 * (uint64_t)page_size * (uint64_t)m->kv_heads * row;
}

#define DECODE_CHUNK 256

uint64_t pl_activation_bytes(const pl_model_config *m, int max_batch, int max_tokens, int max_context)
{
    const uint64_t T = (uint64_t)(max_tokens > max_batch ? max_tokens : max_batch), B = (uint64_t)max_batch;
    const uint64_t h = (uint64_t)m->hidden, hd = (uint64_t)m->head_dim, heads = (uint64_t)m->heads;
    const int moe = pl_model_is_moe(m);
    const uint64_t rows = moe ? T * (uint64_t)m->top_k : T;
    const uint64_t width = (uint64_t)(moe ? m->expert_intermediate : m->intermediate);
    const uint64_t chunks = (uint64_t)((max_context + DECODE_CHUNK - 1) / DECODE_CHUNK);
    uint64_t bf16 = 2 * T * h + T * (heads + 2 * (uint64_t)m->kv_heads) * hd + T * heads * hd + rows * 3 * width;
    uint64_t fp32 = T * heads + B * heads * chunks * (hd + 2) + B * (uint64_t)m->vocab;
    uint64_t ints = B; /* sampled tokens */
    if (moe) {
        bf16 += 2 * rows * h;                        /* tokens gathered by expert, the experts' outputs */
        fp32 += T * (uint64_t)m->experts + rows;     /* router logits, routing weights */
        ints += 2 * rows + (uint64_t)m->experts + 1; /* expert ids, the permutation, per-expert offsets */
    }
    return 2 * bf16 + 4 * fp32 + 4 * ints;
}

static int plan_refuse(char *err, size_t errlen, const char *fmt_head, const pl_plan_request *r, const pl_plan *p,
                       uint64_t short_by, const char *fix)
{
    snprintf(err, errlen,
             "%s in %s needs %.1f GiB of weights, %.1f GiB of %s KV cache (%d sequences of %d tokens, %d pages) and "
             "%.1f GiB of activations and reserve; the GPU has %.1f GiB free, %.1f GiB short%s: %s",
             r->model->name, pl_weight_dtype_name(r->dtype), p->weights.total / PL_GIB, p->kv_bytes / PL_GIB,
             pl_kv_dtype_name(r->kv_dtype), r->max_batch, r->max_context, p->pages,
             (p->activation_bytes + p->reserve_bytes) / PL_GIB, p->free_bytes / PL_GIB, short_by / PL_GIB, fmt_head,
             fix);
    return -1;
}

static const char *fix_for(const pl_plan_request *r, int weights_alone)
{
    const int kv16 = r->kv_dtype == PL_KV_BF16;
    if (r->dtype == PL_WEIGHTS_BF16)
        return weights_alone ? "use --dtype fp8 or fewer layers"
               : kv16        ? "use --dtype fp8, --kv-dtype fp8, fewer layers, a smaller batch or shorter contexts"
                             : "use --dtype fp8, fewer layers, a smaller batch or shorter contexts";
    return weights_alone ? "use fewer layers or a GPU with more memory"
           : kv16        ? "use --kv-dtype fp8, fewer layers, a smaller batch or shorter contexts"
                         : "use fewer layers, a smaller batch or shorter contexts";
}

int pl_plan_make(const pl_plan_request *r, pl_plan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (!r->model || r->page_size < 1 || r->pages < 0 || r->max_batch < 1 || r->max_tokens < 1 || r->max_context < 1 ||
        r->layers < 0 || pl_kv_page_bytes(r->model, r->layers, 1, r->kv_dtype) == 0) {
        snprintf(err, errlen,
                 "memory plan: a model, page_size, max_batch, max_tokens and max_context >= 1, pages "
                 "and layers >= 0 and a KV cache dtype (bf16 or fp8) are needed");
        return -1;
    }
    pl_weight_bytes_of(r->model, r->dtype, r->layers, &p->weights);
    p->page_bytes = pl_kv_page_bytes(r->model, r->layers, r->page_size, r->kv_dtype);
    p->pages_needed = r->max_batch * ((r->max_context + r->page_size - 1) / r->page_size);
    p->activation_bytes = pl_activation_bytes(r->model, r->max_batch, r->max_tokens, r->max_context);
    p->reserve_bytes = r->reserve_bytes;
    p->free_bytes = r->free_bytes;
    const uint64_t rest = p->weights.total + p->activation_bytes + p->reserve_bytes;
    const uint64_t room = r->free_bytes > rest ? r->free_bytes - rest : 0;
    const uint64_t fit = room / p->page_bytes;
    p->pages = r->pages > 0 ? r->pages
                            : (int)(fit < (uint64_t)p->pages_needed ? (uint64_t)p->pages_needed
                                    : fit > 0x7fffffff              ? 0x7fffffff
                                                                    : fit);
    if (r->pages > 0 && r->pages < p->pages_needed) {
        snprintf(err, errlen,
                 "memory plan: %d KV pages of %d tokens do not hold %d sequences of %d tokens (%d pages): "
                 "pass --pages 0 (as many as fit) or at least %d",
                 r->pages, r->page_size, r->max_batch, r->max_context, p->pages_needed, p->pages_needed);
        return -1;
    }
    p->kv_bytes = (uint64_t)p->pages * p->page_bytes;
    p->total = rest + p->kv_bytes;
    if (p->total <= r->free_bytes)
        return 0;
    if (rest > r->free_bytes)
        return plan_refuse(err, errlen, " before the KV cache", r, p, rest - r->free_bytes, fix_for(r, 1));
    return plan_refuse(err, errlen, " after the KV cache", r, p, p->total - r->free_bytes, fix_for(r, 0));
}
