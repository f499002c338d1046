/* A decoder layer's weights on the GPU, dense or mixture-of-experts: bf16 tensors in memory_plan.h's layout, sized by
 * pl_layer_tensors / pl_tensor_bytes, checked against the GPU's free memory before any allocation, in one
 * cudaMalloc, filled on the device with seeded uniform values:
 *   GEMM weights [rows][cols] (the router and every expert's included): uniform in ±1/sqrt(cols) (cols is the
 *   fan-in), so each projection keeps its input's scale within a small factor and a layer's activations stay O(1);
 *   norm weights (the one-row tensors: attn_norm, mlp_norm, q_norm, k_norm): uniform in [0.5, 1.5] (not all ones,
 *   so a missing norm weight shows in a comparison).
 * The value of element i of tensor j depends on (seed, j, i) only (a counter hash), not on the launch. */
#ifndef PERFLAB_ENGINE_WEIGHTS_H
#define PERFLAB_ENGINE_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/memory_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_dense_weights {
    const pl_model_config *model;
    /* device pointers into one allocation, bf16 bits */
    uint16_t *attn_norm, *qkv, *o, *mlp_norm, *gate_up, *down;
    void *block;
    uint64_t bytes;
} pl_dense_weights;

/* Allocates and fills one dense bf16 layer of m. 0 on success. -1 with one line in err, nothing left allocated:
 * m is a MoE or qk-norm model (not a dense layer this engine builds yet), its weights do not fit the free memory
 * (checked with cudaMemGetInfo before allocating), or a CUDA call failed (named with its error). */
int pl_dense_weights_alloc(const pl_model_config *m, uint64_t seed, pl_dense_weights *w, char *err, size_t errlen);

/* p[i] = uniform in [lo, hi] from (key, i) (the counter hash every engine weight is filled with), n bf16. */
cudaError_t pl_engine_fill_uniform(uint16_t *p, size_t n, uint64_t key, float lo, float hi, cudaStream_t stream);

/* Frees what pl_dense_weights_alloc allocated (a zeroed struct is a no-op) and zeroes *w. */
void pl_dense_weights_free(pl_dense_weights *w);

/* A MoE layer: the attention part as the dense layer's (with q_norm and k_norm [head_dim] for a qk-norm model, else
 * NULL), router [experts][hidden], and every expert's gate_up [experts][2·expert_intermediate][hidden] (gate rows
 * first) and down [experts][hidden][expert_intermediate], expert after expert. */
typedef struct pl_moe_weights {
    const pl_model_config *model;
    uint16_t *attn_norm, *qkv, *q_norm, *k_norm, *o, *mlp_norm, *router, *gate_up, *down;
    void *block;
    uint64_t bytes;
} pl_moe_weights;

/* As pl_dense_weights_alloc for a MoE model (qk-norm or not); -1 with one line in err for a dense model. */
int pl_moe_weights_alloc(const pl_model_config *m, uint64_t seed, pl_moe_weights *w, char *err, size_t errlen);
void pl_moe_weights_free(pl_moe_weights *w);

#ifdef __cplusplus
}
#endif
#endif
