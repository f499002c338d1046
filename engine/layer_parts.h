/* The phases the dense and the MoE layer share (dense_layer.c, moe_layer.c): the step's workspace, the norm, the
 * linear layer and the MLP in the recipe's forms, and a decode or prefill step's whole attention half
 * (x → h = x + attention(RMSNorm(x))·oᵀ, with RoPE and the KV write inside). Engine-internal: the public steps are in
 * dense_layer.h and moe_layer.h. */
#ifndef PERFLAB_ENGINE_LAYER_PARTS_H
#define PERFLAB_ENGINE_LAYER_PARTS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "engine/dense_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A step's buffers in the workspace (256-byte aligned): the attention half's for `rows` rows and the MLP's gate_up
 * [mlp_rows][2·width] and activation [mlp_rows][width] (dense: the rows and the intermediate width; MoE: the
 * rows' top_k expert rows and one expert's width). */
typedef struct pl_layer_buffers {
    uint16_t *xn, *qkv, *q, *k, *v, *attn, *proj, *gu, *act;
    float *rinv, *lse;
    void *attn_ws;
    size_t attn_ws_bytes;
    /* FP8 weights (pl_layer_carve_fp8; NULL otherwise): a GEMM's input quantized to e4m3 [rows][k], its scales (one,
     * or 1×128: [⌈k/128⌉][pl_fp8_scale_a_ld(rows)]) and the amax word of a per-tensor quantization */
    uint8_t *a8;
    float *a8_scale;
    unsigned *a8_amax;
} pl_layer_buffers;

/* Carves the buffers from base (NULL: only the size is computed); returns their bytes. */
size_t pl_layer_carve(const pl_model_config *m, int rows, int mlp_rows, int width, int sm_count, char *base,
                      pl_layer_buffers *b);
/* Carves the FP8 GEMMs' quantized inputs for `rows` rows of up to max(hidden, heads·head_dim, width) columns from
 * base (NULL: only the size); returns their bytes. */
size_t pl_layer_carve_fp8(const pl_model_config *m, int rows, int width, char *base, pl_layer_buffers *b);

/* A linear layer's weight [n][k]: bf16, and its FP8 form when the recipe runs FP8 weights (else NULL). */
typedef struct pl_layer_weight {
    const uint16_t *bf16;
    const pl_fp8_linear *fp8;
} pl_layer_weight;

/* The FP8 form of w's GEMM weights the recipe runs: NULL for bf16 weights (or a form not made). */
const pl_fp8_weights *pl_layer_fp8_of(const pl_dense_weights *w, const pl_layer_recipe *r);

/* b->xn = RMSNorm(x, w): one pass (fused) or two kernels. */
cudaError_t pl_layer_rmsnorm(const pl_layer_recipe *r, const pl_model_config *m, const uint16_t *x, const uint16_t *w,
                             int rows, const pl_layer_buffers *b, cudaStream_t stream);

/* d [rows][n] = a [rows][k] · wᵀ (w [n][k], a linear layer's weight), plus residual [rows][n] when not NULL (d may
 * be the residual itself): in the GEMM's epilogue with perflab's bf16 GEMMs and the fused recipe, else by a kernel
 * of its own on d (then `scratch` holds the product first). FP8 weights (r->weights): a quantized into b->a8 with
 * its scales, then pl_gemm_fp8 into bf16; cudaErrorInvalidValue before any launch without w.fp8, b->a8 or perflab's
 * GEMMs. */
cudaError_t pl_layer_linear(const pl_layer_recipe *r, const uint16_t *a, pl_layer_weight w, uint16_t *d, int rows,
                            int n, int k, const uint16_t *residual, uint16_t *scratch, const pl_layer_buffers *b,
                            cudaStream_t stream);

/* A dense MLP: d = [residual +] down(SwiGLU(gate_up(RMSNorm(h, mlp_norm)))), widths m->hidden and m->intermediate
 * (gate_up [2·intermediate][hidden], gate first; down [hidden][intermediate]); d may be h or the residual. With a
 * residual and no epilogue add, b->proj holds the product first (so d must not be b->proj then). */
cudaError_t pl_layer_mlp(const pl_layer_recipe *r, const pl_model_config *m, const uint16_t *mlp_norm,
                         pl_layer_weight gate_up, pl_layer_weight down, int rows, const uint16_t *h, uint16_t *d,
                         const uint16_t *residual, const pl_layer_buffers *b, cudaStream_t stream);

/* The attention part of a layer's weights (q_norm and k_norm NULL unless the model norms q and k; fp8 the FP8 form
 * of qkv and o the recipe runs, else NULL). */
typedef struct pl_attn_weights {
    const uint16_t *attn_norm, *qkv, *q_norm, *k_norm, *o;
    const pl_fp8_weights *fp8;
} pl_attn_weights;

/* The attention of a decode step up to the O projection: RMSNorm of x, the QKV GEMM, the qk-norm where the model has
 * it, RoPE with the KV write, paged decode attention into b->attn [batch][heads·head_dim]. cudaErrorInvalidValue
 * before any launch when the attention kernels do not take the step. (The tensor-parallel layer runs it on a rank's
 * heads, m being the rank's share of the model: tp_layer.c.) */
cudaError_t pl_layer_attention_heads(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                     const pl_decode_step *step, const pl_layer_kv *kv, const uint16_t *x,
                                     const pl_layer_buffers *b, cudaStream_t stream);

/* h = x + attention(RMSNorm(x))·oᵀ for a decode step (h may be x): RMSNorm, the QKV GEMM, the qk-norm where the
 * model has it, RoPE with the KV write, paged decode attention, the O GEMM with the residual. cudaErrorInvalidValue
 * before any launch when the attention kernels do not take the step. */
cudaError_t pl_layer_attention_decode(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                      const pl_decode_step *step, const pl_layer_kv *kv, const uint16_t *x, uint16_t *h,
                                      const pl_layer_buffers *b, cudaStream_t stream);

/* The rows of a prefill step: the last prompt's end, when the starts begin at 0 and grow; else 0. */
int pl_prefill_rows(const pl_prefill_step *s);

/* h = x + attention(RMSNorm(x))·oᵀ for a prefill step (h may be x): RMSNorm, the QKV GEMM, the qk-norm where the
 * model has it, RoPE with the KV write (k and v also contiguous in b), each prompt's causal attention over its own
 * tokens (flash attention: the wgmma kernel with the fast recipe on sm_90, else the mma.sync one), the O GEMM with
 * the residual. cudaErrorInvalidValue before any launch when the step is malformed or the attention kernels do not
 * take a prompt. */
cudaError_t pl_layer_attention_prefill(const pl_model_config *m, const pl_attn_weights *w, const pl_layer_recipe *r,
                                       const pl_prefill_step *step, const pl_layer_kv *kv, const uint16_t *x,
                                       uint16_t *h, const pl_layer_buffers *b, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
