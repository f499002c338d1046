/* The e2e: layer targets' shared glue: one dense or MoE layer of a model config (engine/), its paged KV cache with
 * the sequences' pages scattered through the pool, the inputs, the recipes the variants run, the checks and the
 * floor.
 *
 * Verification is two-sided: (1) rows the host can afford are computed by the float64 reference (layer_ref.h) from
 * the very inputs and weights the GPU holds, independently of any kernel: decode, three whole sequences (first,
 * middle, last: their attention over the whole cache); prefill, the first tokens of the first and last prompts;
 * (2) every row against the baseline recipe's output (cuBLAS and the simple kernels, run once at setup), which the
 * GPU test (tests/gpu/test_engine_layer.c) checks against the float64 reference at the tiny configs. A variant
 * passes when both are within the bf16 tolerance and nothing is NaN or unwritten.
 * A MoE layer's routing can differ between two correct runs where a row's top_k-th and next router logits are
 * within a rounding of each other (the bf16 roundings of h differ between recipes): the check compares each run's
 * experts with the baseline's and the reference's (the layer leaves them in its workspace); a row that took other
 * experts is left out of the value comparison, counted in the message, and fails the check unless the reference
 * calls its choice a near tie (margin under PL_LAYER_REF_NEAR_TIE) for a reference row, or unless such rows are at most
 * one in eight for the rest. */
#ifndef PERFLAB_LABS_E2E_LAYER_H
#define PERFLAB_LABS_E2E_LAYER_H

#include <stdint.h>
#include <cublas_v2.h>

#include "common/e2e_floor.h"
#include "common/layer_ref.h"
#include "engine/dense_layer.h"
#include "engine/moe_layer.h"
#include "perflab/declare.h"

/* The parameters every layer target takes (the lengths' spread, the page size), as pl_param_def initializers. */
#define E2E_LAYER_SHAPE_PARAMS                                                                                         \
    PL_FLOAT_PARAM("spread", "0", 0, 1, "lengths uniform in [(1 - spread)·len, len]"),                                 \
        PL_INT_PARAM("page-size", "16", 1, 4096, "tokens a KV page holds")
/* ... and the dense targets' model. */
#define E2E_LAYER_COMMON_PARAMS                                                                                        \
    PL_TEXT_PARAM("model", "llama3-8b", "a dense model config (engine/model_config.c): llama3-8b, llama3-70b, ...",    \
                  .small_value = "tiny-dense"),                                                                        \
        E2E_LAYER_SHAPE_PARAMS

/* A decode step's batch: the sequences and the cache length each attends to (the decode targets' parameters). */
#define E2E_DECODE_PARAMS                                                                                              \
    PL_INT_PARAM("batch", "64", 1, 4096, "sequences in the step (one new token each)", .small_value = "3"),            \
        PL_INT_PARAM("cache-len", "2048", 1, 1 << 20, "tokens a sequence attends to, its new one included",            \
                     .small_value = "77")

static inline int e2e_decode_seqs(const pl_params *p)
{
    return (int)pl_param_int(p, "batch");
}

static inline int e2e_decode_len(const pl_params *p)
{
    return (int)pl_param_int(p, "cache-len");
}

typedef struct e2e_layer {
    int prefill, moe;
    const pl_model_config *m;
    pl_dense_weights w;
    pl_moe_weights mw;
    const void *wblock; /* whichever of the two holds the weights */
    uint64_t wbytes;
    pl_layer_kv kv;
    int seqs, rows, page_size, max_pages, pages;
    size_t pool_elems; /* one pool's bf16 elements */
    int *lens;         /* decode: each sequence's length with its new token; prefill: each prompt's length */
    int *table;        /* [seqs][max_pages], host */
    int *starts;       /* prefill: [seqs + 1] */
    int *positions_h;
    int64_t *slots_h;
    int *positions_d, *seq_lens_d, *table_d;
    int64_t *slots_d;
    uint16_t *x, *out;
    void *ws;
    size_t ws_bytes;
    cublasHandle_t cublas;
    pl_layer_recipe recipes[PL_LAYER_LADDER_STEPS];
    pl_moe_recipe moe_recipes[3];
    cudaGraphExec_t graph;
    /* the checks */
    int ref_n, ref_rows[8];
    double *ref;  /* ref_n rows of the float64 reference */
    double *base; /* every row of the baseline recipe's output */
    uint16_t *out_h;
    /* MoE: the expert ids [rows][top_k] of the baseline's run and of the last run (host), the reference rows' ids
     * and margins, the experts the baseline's routing touched */
    int *ids_base, *ids_run, *ids_ref;
    double *margin_ref;
    int touched;
    /* the floor: the weights (MoE: the fixed part and the touched experts') and the pools read once */
    e2e_floor floor; /* the weights (MoE: the fixed part, the touched experts' gate_up and down), K, V */
    int last_floor;  /* the last run was the floor's: the check looks at its reads, not at the layer's output */
    /* the FP8 cache (a dense decode step): the same cache quantized row by row (pl_engine_kv_quantize_fp8), its
     * float64 reference rows and the baseline recipe's output over it, its graph, and its floor (the weights, the
     * e4m3 pools and their scales read once); the checks use these after an FP8 run */
    pl_layer_kv kv8;
    double *ref8, *base8;
    e2e_floor floor8;
    cudaGraphExec_t graph8;
    int last_fp8;
    /* FP8 weights (a dense layer on sm_90, e2e_layer_fp8w.c): the block-scaled form (pl_dense_weights_add_fp8), the
     * fused recipe on it and the baseline-like one (perflab's FP8 GEMMs, simple attention, unfused: every row is
     * checked against it), the float64 reference rows over the dequantized FP8 weights and the 1×128-quantized
     * activations, over the bf16 cache and (decode) the FP8 one; the graph of FP8 weights over the FP8 cache; the
     * floors (the e4m3 weights with their scales and the norms, with the bf16 pools or the FP8 pools and scales) */
    int fp8w, last_fp8w;
    pl_layer_recipe recipe8w, recipe8w_base;
    double *ref8w, *ref8w_kv, *base8w, *base8w_kv;
    cudaGraphExec_t graph8w;
    e2e_floor floor8w, floor8w_kv;
    const e2e_floor *floor_run; /* the last run's floor (last_floor) */
} e2e_layer;

enum {
    E2E_BASELINE = PL_LAYER_LADDER_BASELINE,
    E2E_FAST_ATTENTION = PL_LAYER_LADDER_FAST_ATTENTION,
    E2E_PERFLAB_GEMM = PL_LAYER_LADDER_PERFLAB_GEMM,
    E2E_FUSED = PL_LAYER_LADDER_FUSED
};
enum { E2E_MOE_BASELINE, E2E_MOE_GROUPED, E2E_MOE_FUSED };

/* check_params: the model is a dense config, the sizes fit the attention kernels and the GPU's memory. */
int e2e_layer_check(const pl_params *p, int prefill, int seqs, int len, const struct pl_gpu_record *gpu, char *err,
                    size_t errlen);
/* Counters: the FLOPs and the fewest bytes of the step (engine/step_cost.h). */
void e2e_layer_counters(const pl_params *p, int prefill, int seqs, int len, pl_counters *c);
/* Everything above; the baseline run and the graph capture included. */
int e2e_layer_setup(pl_ctx *ctx, const pl_params *p, int prefill, int seqs, int len, e2e_layer **out);
/* A decode step's layer in bf16 alone, without the FP8 cache's and FP8 weights' forms (e2e:tp_layer_decode's
 * single-GPU reference layer). */
int e2e_layer_setup_bf16(pl_ctx *ctx, const pl_params *p, int seqs, int len, e2e_layer **out);
void e2e_layer_teardown(pl_ctx *ctx, void *state);
/* The float64 reference of the rows the host can afford (e2e_layer_check.c), called by the setup. */
int e2e_layer_reference(pl_ctx *ctx, e2e_layer *L);
int e2e_layer_poison(pl_ctx *ctx, void *state);
int e2e_layer_check_output(pl_ctx *ctx, void *state, pl_verification *v);

/* One step with recipes[which]; the variants' run functions for each recipe; the captured graph of the fused
 * recipe; the floor's reads. */
int e2e_layer_run(pl_ctx *ctx, e2e_layer *L, int which);
int e2e_layer_run_baseline(pl_ctx *ctx, void *state);
int e2e_layer_run_fast_attention(pl_ctx *ctx, void *state);
int e2e_layer_run_perflab_gemm(pl_ctx *ctx, void *state);
int e2e_layer_run_fused(pl_ctx *ctx, void *state);
int e2e_layer_run_graph(pl_ctx *ctx, void *state);
int e2e_layer_run_floor(pl_ctx *ctx, void *state);
/* The same over the FP8 cache (e2e:layer_decode): the fused recipe, its graph, the FP8 floor. */
int e2e_layer_run_fp8_kv(pl_ctx *ctx, void *state);
int e2e_layer_run_fp8_kv_graph(pl_ctx *ctx, void *state);
int e2e_layer_run_floor_fp8_kv(pl_ctx *ctx, void *state);

/* ---- e2e_layer_fp8w.c: FP8 (e4m3) weights, block-scaled ---- */
/* One step with recipe r over the bf16 cache or (fp8_kv) the FP8 one; fp8w: r runs the FP8 weights (the checks
 * then use their reference and baseline rows). */
int e2e_layer_step(pl_ctx *ctx, e2e_layer *L, const pl_layer_recipe *r, int fp8_kv, int fp8w);
/* Recipe r's output over the bf16 or (fp8_kv) the FP8 cache, every row, into base (a baseline the checks compare every
 * row with). */
int e2e_layer_baseline_rows(pl_ctx *ctx, e2e_layer *L, const pl_layer_recipe *r, int fp8_kv, int fp8w, double *base);
/* Setup of the FP8 weights' variants (a dense layer, on sm_90 only: elsewhere they are left unset and their runs
 * fail with the reason): the FP8 form, the recipes, the baseline rows, the floors and (decode) the graph. */
int e2e_fp8w_setup(pl_ctx *ctx, e2e_layer *L);
/* The float64 reference of the picked rows into ref, over the host pools kc, vc (kv_fp8: the FP8 cache's values),
 * with the bf16 weights (wb: the weights' block, host copy) or w8 (FP8 weights dequantized; the GEMM inputs then
 * 1×128-quantized). 0, or -1 (failed, with the reason). */
int e2e_reference_rows(pl_ctx *ctx, e2e_layer *L, const uint16_t *wb, const pl_layer_ref_weights *w8, uint16_t *kc,
                       uint16_t *vc, const uint16_t *x, int kv_fp8, double *ref);
/* The float64 reference rows of the FP8 weights (called by e2e_layer_reference with the host copies). */
int e2e_fp8w_reference(pl_ctx *ctx, e2e_layer *L, const uint16_t *wb, uint16_t *kc, uint16_t *vc, uint16_t *kc8,
                       uint16_t *vc8, const uint16_t *x);
/* The variants: the fused step with FP8 weights over the bf16 cache; captured over the FP8 cache; the floors. */
int e2e_layer_run_fp8_weights(pl_ctx *ctx, void *state);
int e2e_layer_run_fp8_weights_kv_graph(pl_ctx *ctx, void *state);
int e2e_layer_run_floor_fp8_weights(pl_ctx *ctx, void *state);
int e2e_layer_run_floor_fp8_weights_kv(pl_ctx *ctx, void *state);

/* e2e:moe_layer_decode: the same for a MoE model's decode step (moe_layer.h). Counters: the expected experts
 * touched under uniform routing (pl_expected_experts: the counters see the parameters, not the routing); the floor
 * reads the experts the batch's routing touched (the baseline's run at setup). */
int e2e_moe_check(const pl_params *p, int seqs, int len, const struct pl_gpu_record *gpu, char *err, size_t errlen);
void e2e_moe_counters(const pl_params *p, int seqs, int len, pl_counters *c);
int e2e_moe_setup(pl_ctx *ctx, const pl_params *p, int seqs, int len, e2e_layer **out);
int e2e_moe_run_baseline(pl_ctx *ctx, void *state);
int e2e_moe_run_grouped(pl_ctx *ctx, void *state);
int e2e_moe_run_fused(pl_ctx *ctx, void *state);

/* ---- e2e_moe.c: the MoE parts of the glue ---- */
/* The MoE weights' floor regions: the fixed part, the first `touched` experts' gate_up and down (as many bytes as the
 * touched ones). 0, or -1 (failed, with the reason). */
int e2e_moe_floor_regions(pl_ctx *ctx, e2e_layer *L);
/* The last run's expert ids into L->ids_run (or L->ids_base when base); 0 or -1 (failed, with the reason). */
int e2e_moe_read_ids(pl_ctx *ctx, e2e_layer *L, int base);
/* Marks the rows whose experts (as sets) differ from the baseline's (differs[row] = 1); returns how many. A reference
 * row that differs from the reference's choice beyond a near tie sets *bad_ref. */
int e2e_moe_route_diff(const e2e_layer *L, unsigned char *differs, int *bad_ref);

#endif
