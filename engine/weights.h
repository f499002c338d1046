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
#include "gemm/fp8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A linear layer's weight [n][k] in e4m3 (gemm/fp8.h's B operand) and its scales: tensor scaling, one float;
 * block scaling, one float per 128×128 block at scale[nb · pl_fp8_scale_b_ld(k) + kb]. Device pointers. */
typedef struct pl_fp8_linear {
    uint8_t *q;
    float *scale;
} pl_fp8_linear;

/* The FP8 form of a dense layer's four GEMM weights in one scaling, quantized once from the bf16 weights (the norms
 * stay bf16), in one allocation of `bytes`; block NULL until made. */
typedef struct pl_fp8_weights {
    pl_fp8_linear qkv, o, gate_up, down;
    void *block;
    uint64_t bytes;
} pl_fp8_weights;

typedef struct pl_dense_weights {
    const pl_model_config *model;
    /* device pointers into one allocation, bf16 bits */
    uint16_t *attn_norm, *qkv, *o, *mlp_norm, *gate_up, *down;
    void *block;
    uint64_t bytes;
    /* the FP8 forms, indexed by pl_fp8_scaling (pl_dense_weights_add_fp8), beside the bf16 weights */
    pl_fp8_weights fp8[2];
} pl_dense_weights;

/* Allocates and fills one dense bf16 layer of m. 0 on success. -1 with one line in err, nothing left allocated:
 * m is a MoE or qk-norm model (not a dense layer this engine builds yet), its weights do not fit the free memory
 * (checked with cudaMemGetInfo before allocating), or a CUDA call failed (named with its error). */
int pl_dense_weights_alloc(const pl_model_config *m, uint64_t seed, pl_dense_weights *w, char *err, size_t errlen);

/* p[i] = uniform in [lo, hi] from (key, i) (the counter hash every engine weight is filled with), n bf16. */
cudaError_t pl_engine_fill_uniform(uint16_t *p, size_t n, uint64_t key, float lo, float hi, cudaStream_t stream);

/* Adds the FP8 form of w's GEMM weights in `scaling` (w->fp8[scaling]): each weight quantized on the device from its
 * bf16 values with power-of-two scales (gemm/fp8.h: pl_fp8_quantize_tensor, pl_fp8_quantize_blocks), so the e4m3
 * values times their scales are exact bf16 values. The bf16 weights stay (the norms are read from them, and a
 * recipe may take either form): the GEMM weights' bytes grow by half (Llama-3-8B's layer: 436 MB bf16 + 218 MB
 * e4m3). 0 on success (a form already made is kept); -1 with one line in err, nothing allocated: an unknown
 * scaling, not enough free memory, a CUDA call failed. Synchronises the device (a setup step). */
int pl_dense_weights_add_fp8(pl_dense_weights *w, pl_fp8_scaling scaling, char *err, size_t errlen);

/* Frees what pl_dense_weights_alloc and pl_dense_weights_add_fp8 allocated (a zeroed struct is a no-op) and zeroes
 * *w. */
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
