/* Model configurations: the architecture numbers of the decoder models the engine builds (dense Llama-style and
 * mixture-of-experts), one table in model_config.c, looked up by name. Weights are never loaded: the engine fills
 * them with seeded random values, so a config is all a model needs. */
#ifndef PERFLAB_ENGINE_MODEL_CONFIG_H
#define PERFLAB_ENGINE_MODEL_CONFIG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_model_config {
    const char *name;
    int layers, hidden;
    int heads, kv_heads, head_dim; /* query heads, key/value heads (GQA: heads % kv_heads == 0), their width */
    int intermediate;              /* the dense MLP's width (SwiGLU: gate and up are [intermediate][hidden]) */
    int experts, top_k;            /* 0 for a dense model; a MoE model's every layer has `experts` experts */
    int expert_intermediate;       /* one expert's MLP width */
    int vocab;
    int tied_embeddings; /* 1: the LM head is the embedding table */
    int qk_norm;         /* 1: an RMSNorm of head_dim over each query and key head before RoPE (Qwen3) */
    double rope_theta, rms_eps;
    const char *source; /* where the numbers come from */
} pl_model_config;

extern const pl_model_config pl_models[];
extern const size_t pl_model_count;

/* The config named `name`, or NULL with one line in err naming every config ("unknown model 'x': use one of
 * llama3-8b, ..."). */
const pl_model_config *pl_model_find(const char *name, char *err, size_t errlen);

int pl_model_is_moe(const pl_model_config *m);

/* 1 when the numbers make a model the engine can build (GQA divides, widths >= 1, top_k <= experts); 0 with the
 * reason in why. */
int pl_model_valid(const pl_model_config *m, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
