/* The model table. Adding a model: one line below with the numbers of its published config.json (and the source
 * in the last field); tests/host/test_engine_plan.c checks every line with pl_model_valid. */
#include "engine/model_config.h"

#include <stdio.h>
#include <string.h>

/* Sources (config.json on huggingface.co, checked 2026-11-28):
 *   meta-llama/Meta-Llama-3-8B: hidden 4096, 32 layers, 32 heads, 8 kv heads, intermediate 14336, vocab 128256,
 *     rope_theta 500000, rms_norm_eps 1e-5, tie_word_embeddings false;
 *   meta-llama/Meta-Llama-3-70B: hidden 8192, 80 layers, 64 heads, 8 kv heads, intermediate 28672, vocab 128256,
 *     rope_theta 500000;
 *   Qwen/Qwen3-30B-A3B: hidden 2048, 48 layers, 32 heads, 4 kv heads, head_dim 128, 128 experts, 8 per token,
 *     moe_intermediate_size 768, every layer sparse (decoder_sparse_step 1, mlp_only_layers []), vocab 151936,
 *     rope_theta 1e6, rms_norm_eps 1e-6, qk norm, tie_word_embeddings false;
 *   mistralai/Mixtral-8x7B-v0.1: hidden 4096, 32 layers, 32 heads, 8 kv heads, 8 experts, 2 per token, experts of
 *     14336, vocab 32000, rope_theta 1e6, rms_norm_eps 1e-5.
 * The tiny configs are for the tests: sizes that are no multiple of a GEMM tile (hidden 320, widths 864 and 200,
 * vocab 1000), GQA ratios 4 and 8, head_dim 64 and 128 (what the decode kernels take), tied and untied heads.
 * tiny-dense-tp is the tensor-parallel tests' (engine/tp_layer.h): 8 kv heads and 16 query heads split over 2, 4 or 8
 * GPUs (kv_heads % N == 0), an MLP of 1344 whose share 1344/N (672, 336, 168) stays a multiple of 8 (the K % 8 the
 * TMA GEMMs need) and no multiple of a 128 tile at any N. */
const pl_model_config pl_models[] = {
    /* name            layers hidden heads kv  hd  inter  E   k  e_inter vocab  tied qkn theta  eps   source */
    {"llama3-8b", 32, 4096, 32, 8, 128, 14336, 0, 0, 0, 128256, 0, 0, 500000.0, 1e-5,
     "meta-llama/Meta-Llama-3-8B config.json"},
    {"llama3-70b", 80, 8192, 64, 8, 128, 28672, 0, 0, 0, 128256, 0, 0, 500000.0, 1e-5,
     "meta-llama/Meta-Llama-3-70B config.json"},
    {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 0, 128, 8, 768, 151936, 0, 1, 1000000.0, 1e-6,
     "Qwen/Qwen3-30B-A3B config.json"},
    {"mixtral-8x7b", 32, 4096, 32, 8, 128, 0, 8, 2, 14336, 32000, 0, 0, 1000000.0, 1e-5,
     "mistralai/Mixtral-8x7B-v0.1 config.json"},
    {"tiny-dense", 3, 320, 8, 2, 64, 864, 0, 0, 0, 1000, 1, 0, 10000.0, 1e-5, "test config: GQA 4, tied head"},
    {"tiny-dense-gqa8", 2, 384, 8, 1, 128, 1056, 0, 0, 0, 1000, 0, 0, 10000.0, 1e-5, "test config: GQA 8"},
    {"tiny-dense-tp", 2, 512, 16, 8, 64, 1344, 0, 0, 0, 1000, 0, 0, 10000.0, 1e-5,
     "test config: tensor parallel over 2, 4, 8 GPUs, GQA 2"},
    {"tiny-moe", 2, 320, 8, 2, 64, 0, 6, 2, 200, 1000, 0, 1, 10000.0, 1e-6, "test config: MoE, GQA 4, qk norm"},
    {"tiny-moe-gqa8", 2, 256, 8, 1, 128, 0, 10, 3, 136, 1000, 1, 0, 10000.0, 1e-6, "test config: MoE, GQA 8"},
};
const size_t pl_model_count = sizeof pl_models / sizeof pl_models[0];

const pl_model_config *pl_model_find(const char *name, char *err, size_t errlen)
{
    for (size_t i = 0; i < pl_model_count; i++)
        if (name && strcmp(pl_models[i].name, name) == 0)
            return &pl_models[i];
    int n = snprintf(err, errlen, "unknown model '%s': use one of", name ? name : "(none)");
    for (size_t i = 0; i < pl_model_count && n >= 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - (size_t)n, "%s %s", i ? "," : "", pl_models[i].name);
    return NULL;
}

int pl_model_is_moe(const pl_model_config *m)
{
    return m->experts > 0;
}

int pl_model_valid(const pl_model_config *m, char *why, size_t whylen)
{
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->kv_heads < 1 || m->head_dim < 1 || m->vocab < 1) {
        snprintf(why, whylen, "%s: layers, hidden, heads, kv_heads, head_dim and vocab must be >= 1", m->name);
        return 0;
    }
    if (m->heads % m->kv_heads != 0) {
        snprintf(why, whylen, "%s: heads (%d) must be a multiple of kv_heads (%d)", m->name, m->heads, m->kv_heads);
        return 0;
    }
    if (pl_model_is_moe(m) ? (m->top_k < 1 || m->top_k > m->experts || m->expert_intermediate < 1)
                           : (m->intermediate < 1 || m->top_k != 0)) {
        snprintf(why, whylen, "%s: a MoE model needs 1 <= top_k <= experts and an expert width; a dense one an "
                 "intermediate width and no top_k", m->name);
        return 0;
    }
    return 1;
}
