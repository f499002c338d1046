/* The float64 host reference of one decoder layer, dense (engine/dense_layer.h) or MoE (engine/moe_layer.h), rounding
 * to bf16 wherever the engine stores bf16, so that the engine and the reference differ only by summation order and the
 * rare rounding that order flips. Rows are tokens: a decode step's one token per sequence, or a prefill's prompt
 * tokens; row r sits at positions[r] of its sequence, whose pages are table[r] (max_pages entries) in caches of
 * page_size-token pages, and its K/V go to slot slots[r]. Row r attends to its sequence's tokens 0..positions[r], read
 * from the caches after every row's K/V was written (the layer writes them before its attention reads). */
#ifndef PERFLAB_LABS_LAYER_REF_H
#define PERFLAB_LABS_LAYER_REF_H

#include <stdint.h>

#include "engine/model_config.h"

typedef struct pl_layer_ref_weights {
    const uint16_t *attn_norm, *qkv, *o, *mlp_norm, *gate_up, *down; /* host copies, bf16 bits */
} pl_layer_ref_weights;

/* A MoE layer's: gate_up [experts][2·expert_intermediate][hidden] and down [experts][hidden][expert_intermediate]
 * in `layer`, and the rest. */
typedef struct pl_layer_ref_moe_weights {
    pl_layer_ref_weights layer;
    const uint16_t *q_norm, *k_norm; /* qk-norm models: [head_dim] each; else NULL */
    const uint16_t *router;          /* [experts][hidden] */
} pl_layer_ref_moe_weights;

typedef struct pl_layer_ref_rows {
    int rows, page_size;
    const int *positions;
    const int64_t *slots;
    const int *const *table; /* table[r]: row r's sequence's pages */
    /* 1: an FP8 cache (kernels/attention/kv_fp8.h). kc and vc hold its dequantized values (each e4m3 byte times its
     * row's scale: exact bf16 values), and each new K and V row (RoPE'd and rounded to bf16 as before) is written as
     * the FP8 cache holds it: quantized with its own power-of-two scale and dequantized, in both the decode and the
     * prefill attention (the engine's prefill reads the dequantized rows too). */
    int kv_fp8;
    /* FP8 weights (engine/dense_layer.h's pl_layer_weights): each GEMM's input quantized and dequantized as the
     * engine quantizes it before its FP8 GEMM (fp8_quant_ref.h): PL_LAYER_REF_ACT_TENSOR, one scale over the
     * GEMM's whole input (the rows must then be the engine step's, all of them); PL_LAYER_REF_ACT_ROWS, 1×128 scales
     * (a row's own). 0: bf16 inputs. The weights passed are then the FP8 weights dequantized (exact bf16 values) and
     * epilogue_residual 0 (the FP8 GEMMs add the residual in a kernel of their own). */
    int act_fp8;
} pl_layer_ref_rows;

enum { PL_LAYER_REF_ACT_BF16 = 0, PL_LAYER_REF_ACT_TENSOR = 1, PL_LAYER_REF_ACT_ROWS = 2 };

/* A bf16 row of n values as the FP8 cache holds it: q (n e4m3 bytes) and *scale when not NULL, and the dequantized
 * row in deq (may be row itself). */
void pl_layer_ref_fp8_row(const uint16_t *row, int n, uint8_t *q, float *scale, uint16_t *deq);

/* out [rows][hidden] = the layer of x [rows][hidden]; the rows' K and V written into kc and vc (host pools,
 * [slots][kv_heads][head_dim]). epilogue_residual 0: the O and down projections are rounded to bf16 before the
 * residual is added (a kernel of its own adds them, as the unfused recipes do); 1: the residual is added to the
 * unrounded product and the sum rounded once (the fused recipe's GEMM epilogue). 0, or -1 when host memory runs
 * out. */
int pl_layer_ref(const pl_model_config *m, const pl_layer_ref_weights *w, const pl_layer_ref_rows *rows,
                 int epilogue_residual, uint16_t *kc, uint16_t *vc, const uint16_t *x, uint16_t *out);

#define PL_LAYER_REF_MAX_EXPERTS 4096
#define PL_LAYER_REF_MAX_TOP_K   32

/* A routing margin (the top_k-th logit minus the next) under which the engine may choose otherwise than the
 * reference without being wrong: the recipes' bf16 roundings of h (a flipped ulp in a few hundred elements) move a
 * logit by about 1e-3 at the tiny and the real configs alike. */
#define PL_LAYER_REF_NEAR_TIE 1e-2

/* The MoE layer's routing, in and out of its reference. The router's logits are float64 (the engine's are fp32), a
 * row's experts the top_k by logit (a tie to the lower id), their weights the softmax over the chosen logits. */
typedef struct pl_layer_ref_routing {
    /* [rows][top_k] or NULL: where force[r·top_k] >= 0, row r takes those experts instead of its top_k (a check that
     * found the engine's choice differing at a near tie recomputes the row with the engine's) */
    const int *force;
    int *ids;       /* out [rows][top_k], the experts the rows took (may be NULL) */
    double *margin; /* out [rows]: the top_k-th largest logit minus the next (may be NULL; HUGE_VAL when top_k ==
                       experts) */
} pl_layer_ref_routing;

/* pl_layer_ref for a MoE model (qk-norm or not): the attention half as the dense layer's, then RMSNorm, the router,
 * each row's top_k experts (gate_up, SwiGLU, down each rounded to bf16) and their weighted sum with the residual:
 * epilogue_residual 0, the sum rounded to bf16 before the residual add; 1, one rounding. routing may be NULL. */
int pl_layer_ref_moe(const pl_model_config *m, const pl_layer_ref_moe_weights *w, const pl_layer_ref_rows *rows,
                     int epilogue_residual, const pl_layer_ref_routing *routing, uint16_t *kc, uint16_t *vc,
                     const uint16_t *x, uint16_t *out);

/* The tests' acceptance of a layer's output `got` against the reference's `ref` (x the layer's input), n elements:
 * none NaN, output and update (out - x) relative L2 <= 1e-2, every element within 0.02·|ref| + 0.03·rms(ref).
 * 1 when it passes, with the two relative L2 errors reached in why; else 0 with the first failure in why. */
int pl_layer_ref_accept(const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n, char *why,
                        size_t whylen);
/* The same with the relative L2 bound rel in place of 1e-2 and the element bound scaled alike: two bf16 results
 * each within 1e-2 of the exact one are within 2e-2 of each other. */
int pl_layer_ref_accept_within(const uint16_t *got, const uint16_t *ref, const uint16_t *x, size_t n, double rel,
                               char *why, size_t whylen);

#endif
