/* One dense layer's decode and prefill steps (dense_layer.h): the library's norms, GEMMs and attention kernels and
 * the engine's element-wise kernels (layer_ops.h), in the order and the forms the recipe names; the phases the MoE
 * layer shares are in layer_parts.c. */
#include <string.h>

#include "engine/dense_layer.h"
#include "engine/layer_ops.h"
#include "engine/cuda_step.h"
#include "engine/layer_parts.h"

static size_t carve(const pl_model_config *m, int rows, int sm_count, char *base, pl_layer_buffers *b)
{
    const size_t at = pl_layer_carve(m, rows, rows, m->intermediate, sm_count, base, b);
    return at + pl_layer_carve_fp8(m, rows, m->intermediate, base ? base + at : NULL, b);
}

size_t pl_dense_workspace_bytes(const pl_model_config *m, int max_rows, int sm_count)
{
    pl_layer_buffers b;
    return carve(m, max_rows, sm_count, NULL, &b);
}

/* The MLP half: out = h + down(SwiGLU(gate_up(RMSNorm(h)))), h in out. */
static cudaError_t mlp_half(const pl_dense_weights *w, const pl_layer_recipe *r, int rows, uint16_t *out,
                            const pl_layer_buffers *b, cudaStream_t stream)
{
    const pl_fp8_weights *f = pl_layer_fp8_of(w, r);
    const pl_layer_weight gate_up = {w->gate_up, f ? &f->gate_up : NULL}, down = {w->down, f ? &f->down : NULL};
    return pl_layer_mlp(r, w->model, w->mlp_norm, gate_up, down, rows, out, out, out, b, stream);
}

/* The recipe's weights: bf16, or an FP8 form that was made, with perflab's GEMMs and GEMM depths (hidden,
 * heads·head_dim, intermediate) the FP8 kernels take (K % 16 == 0: TMA rows of e4m3 are 16-byte multiples). */
static int weights_ok(const pl_dense_weights *w, const pl_layer_recipe *r)
{
    const pl_model_config *m = w->model;
    if (r->weights == PL_LAYER_WEIGHTS_BF16)
        return 1;
    return pl_layer_fp8_of(w, r) && r->gemm == PL_LAYER_GEMM_PERFLAB && m->hidden % 16 == 0 &&
           (m->heads * m->head_dim) % 16 == 0 && m->intermediate % 16 == 0;
}

/* The step's arguments, and its buffers carved from the workspace (once: the carve sizes the fast decode kernel's
 * partials by an occupancy query). 1 when the step can run. */
static int layer_ok(const pl_dense_weights *w, const pl_layer_recipe *r, int rows, const uint16_t *x,
                    const uint16_t *out, void *workspace, size_t workspace_bytes, pl_layer_buffers *b)
{
    const pl_model_config *m = w ? w->model : NULL;
    return m && w->block && r && rows >= 1 && !pl_model_is_moe(m) && !m->qk_norm && x && out && workspace &&
           (r->gemm != PL_LAYER_GEMM_CUBLAS || r->cublas) && weights_ok(w, r) &&
           carve(m, rows, r->sm_count, (char *)workspace, b) <= workspace_bytes;
}

void pl_layer_recipe_ladder(int sm_count, cublasHandle_t cublas, pl_layer_recipe *out)
{
    const pl_layer_recipe base = {PL_LAYER_GEMM_CUBLAS, PL_LAYER_ATTN_SIMPLE, 0, sm_count, cublas,
                                  PL_LAYER_WEIGHTS_BF16};
    for (int i = 0; i < PL_LAYER_LADDER_STEPS; i++)
        out[i] = base;
    for (int i = PL_LAYER_LADDER_FAST_ATTENTION; i < PL_LAYER_LADDER_STEPS; i++)
        out[i].attention = PL_LAYER_ATTN_FAST;
    out[PL_LAYER_LADDER_PERFLAB_GEMM].gemm = out[PL_LAYER_LADDER_FUSED].gemm = PL_LAYER_GEMM_PERFLAB;
    out[PL_LAYER_LADDER_FUSED].fused = 1;
}

/* ---- decode ---- */

cudaError_t pl_dense_layer_decode(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_decode_step *step,
                                  const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                  size_t workspace_bytes, cudaStream_t stream)
{
    pl_layer_buffers b;
    if (!step || !layer_ok(w, r, step->batch, x, out, workspace, workspace_bytes, &b))
        return cudaErrorInvalidValue;
    const pl_model_config *m = w->model;
    const pl_attn_weights aw = {w->attn_norm, w->qkv, NULL, NULL, w->o, pl_layer_fp8_of(w, r)};
    PL_STEP(pl_layer_attention_decode(m, &aw, r, step, kv, x, out, &b, stream));
    return mlp_half(w, r, step->batch, out, &b, stream);
}

/* ---- prefill ---- */

cudaError_t pl_dense_layer_prefill(const pl_dense_weights *w, const pl_layer_recipe *r, const pl_prefill_step *step,
                                   const pl_layer_kv *kv, const uint16_t *x, uint16_t *out, void *workspace,
                                   size_t workspace_bytes, cudaStream_t stream)
{
    const int T = pl_prefill_rows(step);
    pl_layer_buffers b;
    if (T < 1 || !layer_ok(w, r, T, x, out, workspace, workspace_bytes, &b))
        return cudaErrorInvalidValue;
    const pl_attn_weights aw = {w->attn_norm, w->qkv, NULL, NULL, w->o, pl_layer_fp8_of(w, r)};
    PL_STEP(pl_layer_attention_prefill(w->model, &aw, r, step, kv, x, out, &b, stream));
    return mlp_half(w, r, T, out, &b, stream);
}
