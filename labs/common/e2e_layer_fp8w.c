/* The e2e: dense layer targets' FP8 weights (e2e_layer.h): the block-scaled e4m3 form of the layer's GEMM weights
 * (pl_dense_weights_add_fp8, 128×128 weight scales, 1×128 activation scales), the fused step on it over the bf16
 * cache and, captured, over the FP8 cache; their reference rows, baseline rows and floors. Block scaling rather than
 * per-tensor: the activations' scales are each row's own, so no amax over the step precedes each GEMM, and the
 * float64 reference of a few sampled rows quantizes them exactly as the whole step does. */
#include <stdlib.h>
#include <string.h>

#include "common/e2e_layer.h"
#include "common/fp8_quant_ref.h"
#include "common/graph_capture.h"
#include "perflab/device.h"

/* Each reference over the FP8 weights: the bf16 weights quantized on the host as the device quantizes them
 * (fp8_quant_ref.h; tests/gpu/test_engine_layer_fp8w.c checks the two bit for bit) and dequantized, exactly. */
int e2e_fp8w_reference(pl_ctx *ctx, e2e_layer *L, const uint16_t *wb, uint16_t *kc, uint16_t *vc, uint16_t *kc8,
                       uint16_t *vc8, const uint16_t *x)
{
    const pl_model_config *m = L->m;
    const size_t D = m->hidden;
    const int qkvw = (m->heads + 2 * m->kv_heads) * m->head_dim, qw = m->heads * m->head_dim;
    const int n[4] = {qkvw, m->hidden, 2 * m->intermediate, m->hidden},
              k[4] = {m->hidden, qw, m->hidden, m->intermediate};
    const uint16_t *const dev[4] = {L->w.qkv, L->w.o, L->w.gate_up, L->w.down};
    uint16_t *deq[4] = {NULL, NULL, NULL, NULL};
    int rc = -1;
    for (int i = 0; i < 4; i++) {
        const uint16_t *src = (const uint16_t *)((const char *)wb + ((const char *)dev[i] - (const char *)L->wblock));
        if (!(deq[i] = malloc((size_t)n[i] * k[i] * 2))) {
            pl_fail(ctx, "out of host memory for the FP8 weights' reference");
            goto done;
        }
        pl_fp8_ref_quantize(src, n[i], k[i], PL_FP8_SCALE_BLOCKS, pl_fp8_scale_b_ld(k[i]), NULL, NULL, deq[i]);
    }
#define HOST_OF(t) (const uint16_t *)((const char *)wb + ((const char *)L->w.t - (const char *)L->wblock))
    const pl_layer_ref_weights w8 = {HOST_OF(attn_norm), deq[0], deq[1], HOST_OF(mlp_norm), deq[2], deq[3]};
#undef HOST_OF
    L->ref8w = pl_host_alloc(ctx, (size_t)L->ref_n * D * sizeof(double));
    if (!L->ref8w || e2e_reference_rows(ctx, L, wb, &w8, kc, vc, x, 0, L->ref8w) != 0)
        goto done;
    if (kc8) {
        L->ref8w_kv = pl_host_alloc(ctx, (size_t)L->ref_n * D * sizeof(double));
        if (!L->ref8w_kv || e2e_reference_rows(ctx, L, wb, &w8, kc8, vc8, x, 1, L->ref8w_kv) != 0)
            goto done;
    }
    rc = 0;
done:
    for (int i = 0; i < 4; i++)
        free(deq[i]);
    return rc;
}

static int capture_fp8w_kv(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    e2e_layer *L = arg;
    cudaStream_t keep = ctx->stream;
    ctx->stream = stream;
    const int rc = e2e_layer_step(ctx, L, &L->recipe8w, 1, 1);
    ctx->stream = keep;
    return rc;
}

/* A floor's FP8 weights: the e4m3 weights with their scales (one region: the form's block) and the bf16 norms. */
static int floor_weights(pl_ctx *ctx, e2e_layer *L, e2e_floor *f)
{
    const pl_fp8_weights *w8 = &L->w.fp8[PL_FP8_SCALING_BLOCK];
    PL_TRY(e2e_floor_add(ctx, f, w8->block, w8->bytes));
    PL_TRY(e2e_floor_add(ctx, f, L->w.attn_norm, (size_t)L->m->hidden * 2));
    return e2e_floor_add(ctx, f, L->w.mlp_norm, (size_t)L->m->hidden * 2);
}

int e2e_fp8w_setup(pl_ctx *ctx, e2e_layer *L)
{
    const int sms = ctx->device->sm_count;
    L->recipe8w = L->recipes[E2E_FUSED];
    L->recipe8w.weights = PL_LAYER_WEIGHTS_FP8_BLOCK;
    L->recipe8w_base =
        (pl_layer_recipe){PL_LAYER_GEMM_PERFLAB, PL_LAYER_ATTN_SIMPLE, 0, sms, NULL, PL_LAYER_WEIGHTS_FP8_BLOCK};
    const size_t xn = (size_t)L->rows * L->m->hidden;
    L->base8w = pl_host_alloc(ctx, xn * sizeof(double));
    if (!L->base8w)
        return -1;
    PL_TRY(e2e_layer_baseline_rows(ctx, L, &L->recipe8w_base, 0, 1, L->base8w));
    PL_TRY(floor_weights(ctx, L, &L->floor8w));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w, L->kv.k, L->pool_elems * 2));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w, L->kv.v, L->pool_elems * 2));
    PL_TRY(e2e_floor_ready(ctx, &L->floor8w));
    if (!L->kv8.k8) /* a prefill: no FP8 cache */
        return 0;
    L->base8w_kv = pl_host_alloc(ctx, xn * sizeof(double));
    if (!L->base8w_kv)
        return -1;
    PL_TRY(e2e_layer_baseline_rows(ctx, L, &L->recipe8w_base, 1, 1, L->base8w_kv));
    const size_t rows = L->pool_elems / L->m->head_dim;
    PL_TRY(floor_weights(ctx, L, &L->floor8w_kv));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w_kv, L->kv8.k8, L->pool_elems));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w_kv, L->kv8.v8, L->pool_elems));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w_kv, L->kv8.k_scale, rows * sizeof(float)));
    PL_TRY(e2e_floor_add(ctx, &L->floor8w_kv, L->kv8.v_scale, rows * sizeof(float)));
    PL_TRY(e2e_floor_ready(ctx, &L->floor8w_kv));
    PL_TRY(e2e_layer_step(ctx, L, &L->recipe8w, 1, 1));
    return pl_capture_graph(ctx, capture_fp8w_kv, L, &L->graph8w);
}

/* ---- the variants ---- */

static int need_fp8w(pl_ctx *ctx, const e2e_layer *L)
{
    if (L->fp8w)
        return 0;
    return pl_fail(ctx, "the FP8 weights' variants run on sm_90 (the native FP8 GEMM kernels are sm_90a's)");
}

int e2e_layer_run_fp8_weights(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    PL_TRY(need_fp8w(ctx, L));
    return e2e_layer_step(ctx, L, &L->recipe8w, 0, 1);
}

int e2e_layer_run_fp8_weights_kv_graph(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    PL_TRY(need_fp8w(ctx, L));
    if (!L->graph8w)
        return pl_fail(ctx, "fp8_weights_kv_graph takes a decode step (FP8 cache)");
    L->last_floor = 0;
    L->last_fp8 = 1;
    L->last_fp8w = 1;
    PL_CUDA(ctx, cudaGraphLaunch(L->graph8w, ctx->stream));
    return 0;
}

static int run_floor(pl_ctx *ctx, e2e_layer *L, const e2e_floor *f)
{
    PL_TRY(need_fp8w(ctx, L));
    if (!f->n)
        return pl_fail(ctx, "this floor takes a decode step (FP8 cache)");
    L->last_floor = 1;
    L->floor_run = f;
    return e2e_floor_read(ctx, f);
}

int e2e_layer_run_floor_fp8_weights(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    return run_floor(ctx, L, &L->floor8w);
}

int e2e_layer_run_floor_fp8_weights_kv(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    return run_floor(ctx, L, &L->floor8w_kv);
}
