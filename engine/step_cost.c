/* FLOPs and bytes of a step, and its floor.
 *
 * Cross-check (the figure measured beside PyTorch on an H200, 2026): a Llama-3-8B layer's decode step, 64 sequences
 * with 2048-token caches, bf16. These counters give weights 436,224,000 bytes (218,112,000 parameters), KV read
 * 64·2048·8·128·2·2 = 536,870,912, KV written 262,144 and activations 1,048,576: 974,405,632 bytes, a floor of
 * 226.6 µs at 4.3 TB/s (232.0 µs at 4.2 TB/s), the ~226 µs of weights and KV read once at the copy rate; the step's
 * 30.1 GFLOP (27.9 of GEMMs, 2.1 of attention) take 30 µs at 989 TFLOP/s, so it is memory-bound
 * (tests/host/test_engine_step_cost.c checks these figures). */
#include "engine/step_cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double pl_expected_experts(int experts, int top_k, int64_t tokens)
{
    if (experts < 1 || tokens < 1)
        return 0.0;
    return experts * (1.0 - pow(1.0 - (double)top_k / experts, (double)tokens));
}

int pl_distinct_experts(const int *routing, int64_t count, int experts)
{
    unsigned char *seen = calloc((size_t)experts, 1);
    int n = 0;
    if (!seen)
        return -1;
    for (int64_t i = 0; i < count; i++)
        if (routing[i] >= 0 && routing[i] < experts && !seen[routing[i]]) {
            seen[routing[i]] = 1;
            n++;
        }
    free(seen);
    return n;
}

/* Tokens of the step and the (query, key) pairs its attention computes. */
static int batch_tokens(const pl_step_batch *b, int prefill, int64_t *tokens, double *pairs)
{
    if (!b || b->n < 1 || !b->lens)
        return -1;
    *tokens = 0;
    *pairs = 0.0;
    for (int i = 0; i < b->n; i++) {
        const double L = b->lens[i];
        if (b->lens[i] < 1)
            return -1;
        *tokens += prefill ? b->lens[i] : 1;
        *pairs += prefill ? L * (L + 1) / 2 : L; /* causal: query j sees keys 0..j */
    }
    return 0;
}

/* A token's K and V rows of every kv head: bf16, or e4m3 with a float scale a row. */
static double kv_row_bytes(const pl_model_config *m, pl_kv_dtype dtype)
{
    if (dtype == PL_KV_FP8_E4M3)
        return 2.0 * m->kv_heads * (m->head_dim * 1.0 + 4.0);
    return 2.0 * m->kv_heads * m->head_dim * 2;
}

static int layer_cost(const pl_model_config *m, pl_weight_dtype dt, const pl_step_batch *b, int prefill,
                      pl_step_cost *c)
{
    int64_t tokens;
    double pairs;
    memset(c, 0, sizeof *c);
    if (batch_tokens(b, prefill, &tokens, &pairs) != 0)
        return -1;
    const double T = (double)tokens, h = m->hidden, hd = m->head_dim, q = (double)m->heads * hd;
    const double qkv = q + 2.0 * m->kv_heads * hd;
    pl_layer_bytes lb;
    pl_layer_bytes_of(m, dt, &lb);
    c->flops = 2 * T * h * qkv + 2 * T * q * h + 4 * hd * m->heads * pairs;
    c->weight_bytes = (double)lb.fixed;
    if (pl_model_is_moe(m)) {
        const double e_inter = m->expert_intermediate;
        c->flops += 2 * T * h * m->experts + 2 * T * m->top_k * 3 * h * e_inter;
        if (b->routing) {
            const int d = pl_distinct_experts(b->routing, tokens * m->top_k, m->experts);
            if (d < 0)
                return -1;
            c->experts_touched = d;
        } else {
            c->experts_touched = pl_expected_experts(m->experts, m->top_k, tokens);
        }
        c->weight_bytes += c->experts_touched * (double)lb.expert;
    } else {
        c->flops += 2 * T * 3 * h * m->intermediate;
    }
    c->kv_read_bytes = prefill ? 0.0 : pairs * kv_row_bytes(m, b->kv_dtype);
    c->kv_write_bytes = T * kv_row_bytes(m, b->kv_dtype);
    c->act_bytes = 2 * T * h * 2;
    c->bytes = c->weight_bytes + c->kv_read_bytes + c->kv_write_bytes + c->act_bytes;
    return 0;
}

int pl_layer_prefill_cost(const pl_model_config *m, pl_weight_dtype dt, const pl_step_batch *b, pl_step_cost *out)
{
    return layer_cost(m, dt, b, 1, out);
}

int pl_layer_decode_cost(const pl_model_config *m, pl_weight_dtype dt, const pl_step_batch *b, pl_step_cost *out)
{
    return layer_cost(m, dt, b, 0, out);
}

/* layers · one layer, then the embedding rows, the final norm and the LM head over one row per sequence. */
static int model_cost(const pl_model_config *m, pl_weight_dtype dt, int layers, const pl_step_batch *b, int prefill,
                      pl_step_cost *c)
{
    if (layer_cost(m, dt, b, prefill, c) != 0)
        return -1;
    const double L = layers > 0 ? layers : m->layers;
    int64_t tokens = 0;
    double pairs = 0.0;
    batch_tokens(b, prefill, &tokens, &pairs);
    pl_weight_bytes wb;
    pl_weight_bytes_of(m, dt, layers, &wb);
    const double rows = b->n, h = m->hidden, V = m->vocab; /* one row of logits a sequence */
    c->flops = L * c->flops + 2 * rows * h * V;
    c->weight_bytes =
        L * c->weight_bytes + (double)wb.final_norm + (m->tied_embeddings ? (double)wb.embedding : (double)wb.lm_head);
    c->kv_read_bytes *= L;
    c->kv_write_bytes *= L;
    /* every layer's input and output, the tokens' embedding rows read and the fp32 logits written */
    c->act_bytes = L * c->act_bytes + (double)tokens * h * 2 + rows * V * 4;
    c->bytes = c->weight_bytes + c->kv_read_bytes + c->kv_write_bytes + c->act_bytes;
    return 0;
}

int pl_model_prefill_cost(const pl_model_config *m, pl_weight_dtype dt, int layers, const pl_step_batch *b,
                          pl_step_cost *out)
{
    return model_cost(m, dt, layers, b, 1, out);
}

int pl_model_decode_cost(const pl_model_config *m, pl_weight_dtype dt, int layers, const pl_step_batch *b,
                         pl_step_cost *out)
{
    return model_cost(m, dt, layers, b, 0, out);
}

double pl_step_floor_s(const pl_step_cost *c, const pl_ceilings *ceil)
{
    const double t_math = ceil->flops_per_s > 0 ? c->flops / ceil->flops_per_s : 0.0;
    const double t_mem = ceil->bytes_per_s > 0 ? c->bytes / ceil->bytes_per_s : 0.0;
    return t_math > t_mem ? t_math : t_mem;
}
