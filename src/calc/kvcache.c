/* perflab calc kv-cache: the KV cache's bytes and what fits (calc.h; formulas in docs/calc.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calc/calc.h"
#include "core/results_json.h"
#include "core/util.h"

/* Each from the model's config.json on its model card (num_hidden_layers, hidden_size, num_attention_heads,
 * num_key_value_heads, head_dim; DeepSeek-V3: kv_lora_rank + qk_rope_head_dim). */
const pl_kv_model pl_kv_models[] = {
    {"llama-3.1-8b", 32, 4096, 32, 8, 128, 0, 8.03, "meta-llama/Llama-3.1-8B config.json"},
    {"llama-3.1-70b", 80, 8192, 64, 8, 128, 0, 70.6, "meta-llama/Llama-3.1-70B config.json"},
    {"llama-3.1-405b", 126, 16384, 128, 8, 128, 0, 405, "meta-llama/Llama-3.1-405B config.json"},
    {"mistral-7b", 32, 4096, 32, 8, 128, 0, 7.24, "mistralai/Mistral-7B-v0.1 config.json"},
    {"qwen2.5-7b", 28, 3584, 28, 4, 128, 0, 7.62, "Qwen/Qwen2.5-7B config.json"},
    {"qwen2.5-72b", 80, 8192, 64, 8, 128, 0, 72.7, "Qwen/Qwen2.5-72B config.json"},
    {"deepseek-v3", 61, 7168, 128, 128, 128, 576, 671, "deepseek-ai/DeepSeek-V3 config.json (MLA: 512 + 64)"},
};
const size_t pl_kv_model_count = sizeof pl_kv_models / sizeof pl_kv_models[0];

const pl_kv_model *pl_kv_model_find(const char *name)
{
    for (size_t i = 0; name && i < pl_kv_model_count; i++)
        if (strcmp(pl_kv_models[i].name, name) == 0)
            return &pl_kv_models[i];
    return NULL;
}

double pl_calc_dtype_bytes(const char *dtype)
{
    static const struct {
        const char *name;
        double bytes;
    } t[] = {{"fp32", 4}, {"bf16", 2}, {"fp16", 2}, {"fp8", 1}, {"int8", 1}, {"fp4", 0.5}};
    for (size_t i = 0; dtype && i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].name, dtype) == 0)
            return t[i].bytes;
    return 0;
}

/* The attention shape: kv heads and head dim from what was given. */
static int shape(const pl_kv_request *q, pl_kv_result *r, char *err, size_t errlen)
{
    if (q->layers <= 0) {
        pl_snprintf(err, errlen, "--layers is missing: give the model's layer count (or --model NAME)");
        return -1;
    }
    if (q->kv_latent_dim > 0) { /* MLA: one latent per token and layer, shared by K and V */
        r->layout = "MLA";
        r->bytes_per_token_layer = q->kv_latent_dim * r->dtype_bytes;
        return 0;
    }
    int heads = q->heads, head_dim = q->head_dim;
    if (head_dim <= 0) {
        if (q->hidden <= 0) {
            pl_snprintf(err, errlen, "--hidden or --head-dim is missing: the cache's width per head is unknown");
            return -1;
        }
        if (heads <= 0) { /* no heads given: the width of K (and V) is the hidden size, as in plain MHA */
            heads = 1;
            head_dim = q->hidden;
        } else if (q->hidden % heads != 0) {
            pl_snprintf(err, errlen, "--hidden %d is not a multiple of --heads %d: give --head-dim", q->hidden, heads);
            return -1;
        } else {
            head_dim = q->hidden / heads;
        }
    }
    if (heads <= 0)
        heads = q->hidden > 0 && q->hidden % head_dim == 0 ? q->hidden / head_dim : 0;
    int kv = q->kv_heads > 0 ? q->kv_heads : heads;
    if (kv <= 0) {
        pl_snprintf(err, errlen, "--kv-heads (or --heads) is missing: how many K/V heads each layer caches is unknown");
        return -1;
    }
    if (heads > 0 && kv > heads) {
        pl_snprintf(err, errlen, "--kv-heads %d exceeds --heads %d: GQA shares one K/V head among several query heads",
                    kv, heads);
        return -1;
    }
    if (heads > 0 && heads % kv != 0) {
        pl_snprintf(err, errlen, "--heads %d is not a multiple of --kv-heads %d (each K/V head serves a whole group)",
                    heads, kv);
        return -1;
    }
    r->kv_heads = kv;
    r->head_dim = head_dim;
    r->layout = heads <= 0             ? (kv == 1 ? "MQA" : "GQA or MHA (query heads not given)")
                : kv == 1 && heads > 1 ? "MQA"
                : kv < heads           ? "GQA"
                                       : "MHA";
    r->bytes_per_token_layer = 2.0 * kv * head_dim * r->dtype_bytes; /* K and V */
    return 0;
}

static long long pages_round(long long tokens, long long page)
{
    return page > 0 ? (tokens + page - 1) / page * page : tokens;
}

int pl_kv_compute(const pl_kv_request *q, pl_kv_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->dtype_bytes = pl_calc_dtype_bytes(q->dtype);
    if (r->dtype_bytes <= 0) {
        pl_snprintf(err, errlen, "--dtype %s: not one of fp32, bf16, fp16, fp8, int8, fp4", q->dtype ? q->dtype : "");
        return -1;
    }
    if (q->tokens <= 0 || q->batch <= 0) {
        pl_snprintf(err, errlen, "--tokens and --batch must be positive (tokens per sequence, sequences)");
        return -1;
    }
    if (q->kv_overhead_frac < 0 || q->page_tokens < 0 || q->reserve_activations_gb < 0 || q->weights_gb < 0) {
        pl_snprintf(err, errlen,
                    "--kv-overhead-frac, --page-tokens, --reserve-activations-gb and --weights-gb cannot "
                    "be negative");
        return -1;
    }
    if (shape(q, r, err, errlen) != 0)
        return -1;
    const double ovh = 1.0 + q->kv_overhead_frac;
    r->bytes_per_token = r->bytes_per_token_layer * q->layers;
    r->tokens_padded = pages_round(q->tokens, q->page_tokens);
    r->bytes_per_seq = r->bytes_per_token * (double)r->tokens_padded;
    r->bytes_total = r->bytes_per_seq * (double)q->batch;
    r->bytes_total_with_overhead = r->bytes_total * ovh;
    r->budget_bytes = NAN;
    r->max_batch = r->max_tokens_seq = r->max_tokens = -1;
    if (q->budget_gb > 0) {
        r->budget_bytes = (q->budget_gb - q->reserve_activations_gb - q->weights_gb) * PL_GB;
        const double per_token = r->bytes_per_token * ovh;
        if (r->budget_bytes <= 0) {
            r->budget_bytes = fmax(r->budget_bytes, 0);
            r->max_batch = r->max_tokens_seq = r->max_tokens = 0;
        } else {
            r->max_batch = (long long)floor(r->budget_bytes / (r->bytes_per_seq * ovh));
            long long t = (long long)floor(r->budget_bytes / (per_token * (double)q->batch));
            r->max_tokens_seq = q->page_tokens > 0 ? t / q->page_tokens * q->page_tokens : t;
            r->max_tokens = (long long)floor(r->budget_bytes / per_token);
        }
        r->fits = r->bytes_total_with_overhead <= r->budget_bytes;
    }
    return 0;
}

json_t *pl_kv_json(const pl_kv_request *q, const pl_kv_result *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "layout", json_string(r->layout));
    json_object_set_new(j, "layers", json_integer(q->layers));
    if (q->kv_latent_dim > 0) {
        json_object_set_new(j, "kv_latent_dim", json_integer(q->kv_latent_dim));
    } else {
        json_object_set_new(j, "kv_heads", json_integer(r->kv_heads));
        json_object_set_new(j, "head_dim", json_integer(r->head_dim));
    }
    json_object_set_new(j, "dtype", json_string(q->dtype));
    json_object_set_new(j, "dtype_bytes", json_real(r->dtype_bytes));
    json_object_set_new(j, "tokens", json_integer(q->tokens));
    json_object_set_new(j, "tokens_padded", json_integer(r->tokens_padded));
    json_object_set_new(j, "page_tokens", json_integer(q->page_tokens));
    json_object_set_new(j, "batch", json_integer(q->batch));
    json_object_set_new(j, "bytes_per_token_per_layer", json_real(r->bytes_per_token_layer));
    json_object_set_new(j, "bytes_per_token", json_real(r->bytes_per_token));
    json_object_set_new(j, "bytes_per_sequence", json_real(r->bytes_per_seq));
    json_object_set_new(j, "bytes_total", json_real(r->bytes_total));
    json_object_set_new(j, "kv_overhead_frac", json_real(q->kv_overhead_frac));
    json_object_set_new(j, "bytes_total_with_overhead", json_real(r->bytes_total_with_overhead));
    json_t *fit = json_object();
    json_object_set_new(fit, "memory_gb", q->budget_gb > 0 ? json_real(q->budget_gb) : json_null());
    json_object_set_new(fit, "memory_from", q->budget_from ? json_string(q->budget_from) : json_null());
    json_object_set_new(fit, "reserve_activations_gb", json_real(q->reserve_activations_gb));
    json_object_set_new(fit, "weights_gb", json_real(q->weights_gb));
    json_object_set_new(fit, "cache_budget_bytes", pl_json_real(r->budget_bytes));
    if (isfinite(r->budget_bytes)) {
        json_object_set_new(fit, "fits", json_boolean(r->fits));
        json_object_set_new(fit, "max_batch_at_tokens", json_integer(r->max_batch));
        json_object_set_new(fit, "max_tokens_per_sequence_at_batch", json_integer(r->max_tokens_seq));
        json_object_set_new(fit, "max_tokens_total", json_integer(r->max_tokens));
    }
    json_object_set_new(j, "fit", fit);
    return j;
}
