/* One MoE layer's decode and prefill steps (moe_layer.h): the dense layer's attention half (layer_parts.c), then the
 * router, the grouping and the experts in the recipe's forms. */
#include <stdlib.h>
#include <string.h>

#include "common/device_cc.h"
#include "engine/layer_ops.h"
#include "engine/cuda_step.h"
#include "engine/layer_parts.h"
#include "engine/moe_layer.h"
#include "engine/moe_ops.h"
#include "gemm/cublas/gemm_cublas.h"
#include "gemm/grouped.h"

/* ---- the workspace: the dense layer's buffers (gu and act over the rows' expert slots), then the routing ---- */

enum { M_LOGITS, M_IDS, M_WEIGHTS, M_COUNTS, M_OFFSETS, M_ROW_OF_SLOT, M_TOKEN_OF_ROW, M_XG, M_Y, M_COUNT };

typedef struct moe_buffers {
    pl_layer_buffers layer;
    float *logits, *weights;
    int *ids, *counts, *offsets, *row_of_slot, *token_of_row;
    uint16_t *xg, *y; /* the gathered rows and the experts' outputs, [rows·top_k][hidden] */
} moe_buffers;

static size_t carve(const pl_model_config *m, int rows, int sm_count, char *base, moe_buffers *b)
{
    const size_t R = (size_t)rows, S = R * (size_t)m->top_k, E = (size_t)m->experts, H = (size_t)m->hidden;
    size_t at = pl_layer_carve(m, rows, (int)S, m->expert_intermediate, sm_count, base, &b->layer);
    const size_t bytes[M_COUNT] = {
        [M_LOGITS] = R * E * sizeof(float),
        [M_IDS] = S * sizeof(int),
        [M_WEIGHTS] = S * sizeof(float),
        [M_COUNTS] = E * sizeof(int),
        [M_OFFSETS] = (E + 1) * sizeof(int),
        [M_ROW_OF_SLOT] = S * sizeof(int),
        [M_TOKEN_OF_ROW] = S * sizeof(int),
        [M_XG] = S * H * 2,
        [M_Y] = S * H * 2,
    };
    void **const slots[M_COUNT] = {(void **)&b->logits,       (void **)&b->ids,     (void **)&b->weights,
                                   (void **)&b->counts,       (void **)&b->offsets, (void **)&b->row_of_slot,
                                   (void **)&b->token_of_row, (void **)&b->xg,      (void **)&b->y};
    for (int i = 0; i < M_COUNT; i++) {
        *slots[i] = base ? base + at : NULL;
        at += (bytes[i] + 255) & ~(size_t)255;
    }
    return at;
}

size_t pl_moe_workspace_bytes(const pl_model_config *m, int max_rows, int sm_count)
{
    moe_buffers b;
    return carve(m, max_rows, sm_count, NULL, &b);
}

void pl_moe_routing_in(const pl_model_config *m, int rows, int sm_count, const void *workspace,
                       pl_moe_routing_view *out)
{
    moe_buffers b;
    carve(m, rows, sm_count, (char *)workspace, &b);
    out->ids = b.ids;
    out->weights = b.weights;
    out->counts = b.counts;
    out->offsets = b.offsets;
}

/* ---- the phases ---- */

/* ids and weights of xn's rows: the fused router + top-k kernel, or cuBLAS's GEMM into fp32 logits and the top-k
 * kernel. */
static cudaError_t route(const pl_moe_weights *w, const pl_moe_recipe *r, int rows, const moe_buffers *b,
                         cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    if (r->layer.fused)
        return pl_moe_router_topk(b->layer.xn, w->router, rows, m->hidden, m->experts, m->top_k, b->ids, b->weights,
                                  stream);
    if (cublasSetStream(r->layer.cublas, stream) != CUBLAS_STATUS_SUCCESS ||
        pl_gemm_cublas(r->layer.cublas, rows, m->experts, m->hidden, PL_GEMM_B_NK, b->layer.xn, w->router, CUDA_R_16BF,
                       b->logits, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
        return cudaErrorNotSupported;
    return pl_moe_topk(b->logits, rows, m->experts, m->top_k, b->ids, b->weights, stream);
}

/* PyTorch's loop: the counts on the host (the one synchronisation), then each expert with tokens in turn. */
static cudaError_t experts_loop(const pl_moe_weights *w, const pl_layer_recipe *r, const moe_buffers *b,
                                cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    const int E = m->experts, H = m->hidden, I = m->expert_intermediate;
    int *offsets = malloc(((size_t)E + 1) * sizeof *offsets);
    if (!offsets)
        return cudaErrorMemoryAllocation;
    cudaError_t e =
        cudaMemcpyAsync(offsets, b->offsets, ((size_t)E + 1) * sizeof *offsets, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(stream);
    for (int x = 0; x < E && e == cudaSuccess; x++) {
        const int off = offsets[x], n = offsets[x + 1] - offsets[x];
        if (n == 0)
            continue;
        const uint16_t *gate_up = w->gate_up + (size_t)x * 2 * I * H, *down = w->down + (size_t)x * H * I;
        uint16_t *gu = b->layer.gu + (size_t)off * 2 * I, *act = b->layer.act + (size_t)off * I;
        e = pl_layer_linear(r, b->xg + (size_t)off * H, (pl_layer_weight){gate_up, NULL}, gu, n, 2 * I, H, NULL, NULL,
                            &b->layer, stream);
        if (e == cudaSuccess)
            e = pl_engine_swiglu(gu, act, n, I, stream);
        if (e == cudaSuccess)
            e = pl_layer_linear(r, act, (pl_layer_weight){down, NULL}, b->y + (size_t)off * H, n, H, I, NULL, NULL,
                                &b->layer, stream);
    }
    free(offsets);
    return e;
}

/* The grouped GEMMs' problems: gate_up (xg · gate_up[e]ᵀ into gu) and down (act · down[e]ᵀ into y). */
static void grouped_problems(const pl_moe_weights *w, int rows, const moe_buffers *b, pl_grouped_gemm_problem *p)
{
    const pl_model_config *m = w->model;
    const int H = m->hidden, I = m->expert_intermediate;
    for (int i = 0; i < 2; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].groups = m->experts;
        p[i].rows = rows * m->top_k;
        p[i].offsets = b->offsets;
        p[i].skip_idle = 1;
    }
    p[0].n = 2 * I, p[0].k = H, p[0].a = b->xg, p[0].b = w->gate_up, p[0].d = b->layer.gu;
    p[1].n = H, p[1].k = I, p[1].a = b->layer.act, p[1].b = w->down, p[1].d = b->y;
}

/* cudaSuccess when this GPU and the shapes take the grouped GEMM (checked before the step launches anything). */
static cudaError_t grouped_ok(const pl_moe_weights *w, int rows, const moe_buffers *b)
{
    int cc = 0;
    PL_STEP(pl_current_cc(&cc));
    pl_grouped_gemm_problem p[2];
    grouped_problems(w, rows, b, p);
    char why[200];
    if (cc != 90 || !pl_grouped_gemm_supports(&p[0], 0, why, sizeof why) ||
        !pl_grouped_gemm_supports(&p[1], 0, why, sizeof why))
        return cudaErrorNotSupported;
    return cudaSuccess;
}

/* The grouped GEMMs: every expert's gate_up in one launch, SwiGLU over all rows, every expert's down in one. */
static cudaError_t experts_grouped(const pl_moe_weights *w, int rows, const moe_buffers *b, cudaStream_t stream)
{
    pl_grouped_gemm_problem p[2];
    grouped_problems(w, rows, b, p);
    PL_STEP(pl_grouped_gemm_bf16(&p[0], stream));
    PL_STEP(pl_engine_swiglu(b->layer.gu, b->layer.act, p[0].rows, w->model->expert_intermediate, stream));
    return pl_grouped_gemm_bf16(&p[1], stream);
}

/* out = h + Σ weights · y (h in out): one rounding in the combine, or the sum rounded then a residual-add kernel. */
static cudaError_t combine(const pl_model_config *m, const pl_layer_recipe *r, int rows, const moe_buffers *b,
                           uint16_t *out, cudaStream_t stream)
{
    if (r->fused)
        return pl_moe_combine(b->y, b->row_of_slot, b->weights, rows, m->top_k, m->hidden, out, out, stream);
    PL_STEP(pl_moe_combine(b->y, b->row_of_slot, b->weights, rows, m->top_k, m->hidden, NULL, b->layer.proj, stream));
    return pl_engine_residual_add(out, b->layer.proj, out, (size_t)rows * m->hidden, stream);
}

/* The MoE half: out = h + experts(RMSNorm(h)), h in out. */
static cudaError_t moe_half(const pl_moe_weights *w, const pl_moe_recipe *r, int rows, uint16_t *out,
                            const moe_buffers *b, cudaStream_t stream)
{
    const pl_model_config *m = w->model;
    PL_STEP(pl_layer_rmsnorm(&r->layer, m, out, w->mlp_norm, rows, &b->layer, stream));
    PL_STEP(route(w, r, rows, b, stream));
    PL_STEP(pl_moe_group(b->ids, rows, m->top_k, m->experts, b->counts, b->offsets, b->row_of_slot, b->token_of_row,
                         stream));
    PL_STEP(pl_moe_gather(b->layer.xn, b->token_of_row, rows * m->top_k, m->hidden, b->xg, stream));
    PL_STEP(r->experts == PL_MOE_EXPERTS_LOOP ? experts_loop(w, &r->layer, b, stream)
                                              : experts_grouped(w, rows, b, stream));
    return combine(m, &r->layer, rows, b, out, stream);
}

static int layer_ok(const pl_moe_weights *w, const pl_moe_recipe *r, int rows, const uint16_t *x, const uint16_t *out,
                    const void *workspace, size_t workspace_bytes)
{
    const pl_model_config *m = w ? w->model : NULL;
    if (!m || !w->block || !r || rows < 1 || !pl_model_is_moe(m) || !x || !out || !workspace)
        return 0;
    const int needs_cublas = r->layer.gemm == PL_LAYER_GEMM_CUBLAS || !r->layer.fused;
    /* FP8 weights are the dense layer's alone */
    return m->experts <= PL_MOE_MAX_EXPERTS && m->top_k <= PL_MOE_MAX_TOP_K && (!needs_cublas || r->layer.cublas) &&
           r->layer.weights == PL_LAYER_WEIGHTS_BF16 &&
           (r->experts == PL_MOE_EXPERTS_LOOP || r->experts == PL_MOE_EXPERTS_GROUPED) &&
           workspace_bytes >= pl_moe_workspace_bytes(m, rows, r->layer.sm_count);
}

cudaError_t pl_moe_layer_decode(const pl_moe_weights *w, const pl_moe_recipe *r, const pl_decode_step *step,
                                const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                size_t workspace_bytes, cudaStream_t stream)
{
    if (!step || !layer_ok(w, r, step->batch, x, out, workspace, workspace_bytes))
        return cudaErrorInvalidValue;
    const pl_model_config *m = w->model;
    moe_buffers b;
    carve(m, step->batch, r->layer.sm_count, (char *)workspace, &b);
    if (r->experts == PL_MOE_EXPERTS_GROUPED)
        PL_STEP(grouped_ok(w, step->batch, &b));
    const pl_attn_weights aw = {w->attn_norm, w->qkv, w->q_norm, w->k_norm, w->o, NULL};
    PL_STEP(pl_layer_attention_decode(m, &aw, &r->layer, step, kv, x, out, &b.layer, stream));
    return moe_half(w, r, step->batch, out, &b, stream);
}

cudaError_t pl_moe_layer_prefill(const pl_moe_weights *w, const pl_moe_recipe *r, const pl_prefill_step *step,
                                 const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                 size_t workspace_bytes, cudaStream_t stream)
{
    const int T = pl_prefill_rows(step);
    if (T < 1 || !layer_ok(w, r, T, x, out, workspace, workspace_bytes))
        return cudaErrorInvalidValue;
    const pl_model_config *m = w->model;
    moe_buffers b;
    carve(m, T, r->layer.sm_count, (char *)workspace, &b);
    if (r->experts == PL_MOE_EXPERTS_GROUPED)
        PL_STEP(grouped_ok(w, T, &b));
    const pl_attn_weights aw = {w->attn_norm, w->qkv, w->q_norm, w->k_norm, w->o, NULL};
    PL_STEP(pl_layer_attention_prefill(m, &aw, &r->layer, step, kv, x, out, &b.layer, stream));
    return moe_half(w, r, T, out, &b, stream);
}
