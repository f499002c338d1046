/* The e2e: layer targets' glue (e2e_layer.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "common/e2e_layer.h"
#include "common/graph_capture.h"
#include "common/layer_ref.h"
#include "engine/layer_ops.h"
#include "engine/step_cost.h"
#include "perflab/device.h"
#include "perflab/results.h"

#define LENS_STREAM 0xe2e1u /* the lengths' and the pages' seed, from the parameters alone (counters recompute it) */
#define K_STREAM    0xe2e2u
#define V_STREAM    0xe2e3u
#define X_STREAM    0xe2e4u

/* ---- sizes, from the parameters alone ---- */

static const pl_model_config *model_of(const pl_params *p, char *err, size_t errlen)
{
    return pl_model_find(pl_param_str(p, "model"), err, errlen);
}

static void lengths(const pl_params *p, int seqs, int len, int *lens)
{
    pl_decode_lengths(seqs, len, pl_param_float(p, "spread"), LENS_STREAM, lens);
}

static int step_cost(const pl_model_config *m, int prefill, int seqs, const int *lens, pl_step_cost *c)
{
    const pl_step_batch b = {.n = seqs, .lens = lens, .routing = NULL};
    return prefill ? pl_layer_prefill_cost(m, PL_WEIGHTS_BF16, &b, c) : pl_layer_decode_cost(m, PL_WEIGHTS_BF16, &b, c);
}

void e2e_layer_counters(const pl_params *p, int prefill, int seqs, int len, pl_counters *c)
{
    char err[256];
    const pl_model_config *m = model_of(p, err, sizeof err);
    int *lens = malloc((size_t)seqs * sizeof *lens);
    pl_step_cost sc;
    memset(c, 0, sizeof *c);
    if (m && lens) {
        lengths(p, seqs, len, lens);
        if (step_cost(m, prefill, seqs, lens, &sc) == 0) {
            c->flops = sc.flops;
            c->bytes_read = sc.weight_bytes + sc.kv_read_bytes + sc.act_bytes / 2;
            c->bytes_written = sc.kv_write_bytes + sc.act_bytes / 2;
            for (int i = 0; i < seqs; i++)
                c->elements += prefill ? lens[i] : 1;
        }
    }
    free(lens);
}

void e2e_moe_counters(const pl_params *p, int seqs, int len, pl_counters *c)
{
    e2e_layer_counters(p, 0, seqs, len, c);
}

/* The model is of the target's kind (and a MoE one within what the routing kernels and the grouped GEMM take). */
static int kind_check(const pl_model_config *m, int moe, char *err, size_t errlen)
{
    if (!moe && (pl_model_is_moe(m) || m->qk_norm))
        return pl_params_refuse(err, errlen,
                                "--model %s: the dense layer takes a dense model without qk-norm: use "
                                "llama3-8b, llama3-70b or tiny-dense",
                                m->name);
    if (moe && !pl_model_is_moe(m))
        return pl_params_refuse(err, errlen,
                                "--model %s is dense: the MoE layer takes qwen3-30b-a3b, mixtral-8x7b, "
                                "tiny-moe or tiny-moe-gqa8",
                                m->name);
    if (moe && (m->experts > PL_MOE_MAX_EXPERTS || m->top_k > PL_MOE_MAX_TOP_K || m->hidden % 8 != 0 ||
                m->expert_intermediate % 8 != 0))
        return pl_params_refuse(err, errlen,
                                "--model %s: the MoE layer takes at most %d experts, %d a token, and a "
                                "hidden size and expert width that are multiples of 8 (the grouped GEMM's rows)",
                                m->name, PL_MOE_MAX_EXPERTS, PL_MOE_MAX_TOP_K);
    return 0;
}

static int layer_check(const pl_params *p, int prefill, int moe, int seqs, int len, const struct pl_gpu_record *gpu,
                       char *err, size_t errlen)
{
    const pl_model_config *m = model_of(p, err, errlen);
    if (!m || kind_check(m, moe, err, errlen) != 0)
        return -1;
    if (m->head_dim != 64 && m->head_dim != 128)
        return pl_params_refuse(err, errlen, "--model %s: head_dim %d: the attention kernels take 64 or 128", m->name,
                                m->head_dim);
    const int page_size = (int)pl_param_int(p, "page-size");
    if (!prefill && page_size % 8 != 0)
        return pl_params_refuse(err, errlen, "--page-size %d: the decode kernels take multiples of 8 (e.g. 16)",
                                page_size);
    if (!prefill && m->heads / m->kv_heads > 8)
        return pl_params_refuse(err, errlen, "--model %s: %d query heads a kv head: the decode kernels take at most 8",
                                m->name, m->heads / m->kv_heads);
    int *lens = malloc((size_t)seqs * sizeof *lens);
    if (!lens)
        return pl_params_refuse(err, errlen, "out of host memory for %d lengths", seqs);
    lengths(p, seqs, len, lens);
    pl_step_cost c;
    const int ok = step_cost(m, prefill, seqs, lens, &c);
    double rows = 0;
    for (int i = 0; i < seqs; i++)
        rows += prefill ? lens[i] : 1;
    free(lens);
    if (ok != 0)
        return pl_params_refuse(err, errlen, "the lengths make no step: raise the lengths");
    if (rows > 1 << 20)
        return pl_params_refuse(err, errlen, "%.0f rows in one step: at most 1048576; lower the batch or the lengths",
                                rows);
    const double qkvw = (double)(m->heads + 2 * m->kv_heads) * m->head_dim;
    const double slots = moe ? (double)m->top_k : 1.0, width = moe ? m->expert_intermediate : m->intermediate;
    const double act = rows * (10.0 * m->hidden + slots * (6.0 * width + 4.0 * m->hidden) + 6.0 * qkvw);
    /* a dense decode step also holds the FP8 cache beside the bf16 one (its variants): ~0.52x the bf16 bytes */
    const double kv = prefill ? c.kv_write_bytes : (c.kv_read_bytes + c.kv_write_bytes) * (moe ? 1.0 : 1.52);
    pl_layer_bytes lb, lb8;
    pl_layer_bytes_of(m, PL_WEIGHTS_BF16, &lb); /* every expert is allocated, whichever the step touches */
    /* a dense layer also holds its block-scaled FP8 weights beside the bf16 ones (the fp8_weights variants) */
    pl_layer_bytes_of(m, PL_WEIGHTS_FP8_BLOCK, &lb8);
    const double weights = (double)lb.total + (moe ? 0.0 : (double)lb8.total);
    return pl_check_device_memory(gpu, weights + kv + act, "lower the batch, the lengths or pick a smaller model", err,
                                  errlen);
}

int e2e_layer_check(const pl_params *p, int prefill, int seqs, int len, const struct pl_gpu_record *gpu, char *err,
                    size_t errlen)
{
    return layer_check(p, prefill, 0, seqs, len, gpu, err, errlen);
}

int e2e_moe_check(const pl_params *p, int seqs, int len, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    return layer_check(p, 0, 1, seqs, len, gpu, err, errlen);
}

/* ---- setup ---- */

/* The step's rows: positions, slots (from the scattered tables) and, for a prefill, the prompts' starts. */
static int layout_rows(pl_ctx *ctx, e2e_layer *L)
{
    L->rows = 0;
    for (int s = 0; s < L->seqs; s++)
        L->rows += L->prefill ? L->lens[s] : 1;
    L->positions_h = pl_host_alloc(ctx, (size_t)L->rows * sizeof(int));
    L->slots_h = pl_host_alloc(ctx, (size_t)L->rows * sizeof(int64_t));
    L->starts = pl_host_alloc(ctx, (size_t)(L->seqs + 1) * sizeof(int));
    if (!L->positions_h || !L->slots_h || !L->starts)
        return -1;
    int r = 0;
    for (int s = 0; s < L->seqs; s++) {
        L->starts[s] = r;
        const int first = L->prefill ? 0 : L->lens[s] - 1;
        for (int t = first; t < L->lens[s]; t++, r++) {
            L->positions_h[r] = t;
            L->slots_h[r] =
                (int64_t)L->table[(size_t)s * L->max_pages + t / L->page_size] * L->page_size + t % L->page_size;
        }
    }
    L->starts[L->seqs] = r;
    return 0;
}

static int upload(pl_ctx *ctx, void **dev, const void *host, size_t bytes)
{
    *dev = pl_device_alloc(ctx, bytes);
    if (!*dev)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, ctx->stream));
    return 0;
}

static int alloc_step(pl_ctx *ctx, const pl_params *p, e2e_layer *L, int len)
{
    L->lens = pl_host_alloc(ctx, (size_t)L->seqs * sizeof(int));
    if (!L->lens)
        return -1;
    lengths(p, L->seqs, len, L->lens);
    L->max_pages = (len + L->page_size - 1) / L->page_size;
    L->table = pl_host_alloc(ctx, (size_t)L->seqs * L->max_pages * sizeof(int));
    if (!L->table)
        return -1;
    L->pages = pl_decode_block_table(L->seqs, L->lens, L->page_size, L->max_pages, LENS_STREAM, L->table);
    PL_TRY(layout_rows(ctx, L));
    int *seq_lens = pl_host_alloc(ctx, (size_t)L->seqs * sizeof(int));
    if (!seq_lens)
        return -1;
    memcpy(seq_lens, L->lens, (size_t)L->seqs * sizeof(int));
    PL_TRY(upload(ctx, (void **)&L->positions_d, L->positions_h, (size_t)L->rows * sizeof(int)));
    PL_TRY(upload(ctx, (void **)&L->slots_d, L->slots_h, (size_t)L->rows * sizeof(int64_t)));
    PL_TRY(upload(ctx, (void **)&L->seq_lens_d, seq_lens, (size_t)L->seqs * sizeof(int)));
    PL_TRY(upload(ctx, (void **)&L->table_d, L->table, (size_t)L->seqs * L->max_pages * sizeof(int)));
    L->pool_elems = (size_t)L->pages * L->page_size * L->m->kv_heads * L->m->head_dim;
    L->kv.k = pl_device_alloc(ctx, L->pool_elems * 2);
    L->kv.v = pl_device_alloc(ctx, L->pool_elems * 2);
    const size_t xn = (size_t)L->rows * L->m->hidden;
    L->x = pl_device_alloc(ctx, xn * 2);
    L->out = pl_device_alloc(ctx, xn * 2);
    L->out_h = pl_host_alloc(ctx, xn * 2);
    L->base = pl_host_alloc(ctx, xn * sizeof(double));
    if (!L->kv.k || !L->kv.v || !L->x || !L->out || !L->out_h || !L->base)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, L->kv.k, L->pool_elems, -1.0f, 1.0f, K_STREAM));
    PL_TRY(pl_fill_uniform_bf16(ctx, L->kv.v, L->pool_elems, -1.0f, 1.0f, V_STREAM));
    PL_TRY(pl_fill_uniform_bf16(ctx, L->x, xn, -1.0f, 1.0f, X_STREAM));
    L->ws_bytes = L->moe ? pl_moe_workspace_bytes(L->m, L->rows, ctx->device->sm_count)
                         : pl_dense_workspace_bytes(L->m, L->rows, ctx->device->sm_count);
    L->ws = pl_device_alloc(ctx, L->ws_bytes);
    if (!L->ws)
        return -1;
    /* written once here: the setup runs the baseline before any checked run poisons them, and a GEMM that stores
     * with TMA writes what compute-sanitizer's initcheck does not track */
    PL_TRY(pl_poison(ctx, L->ws, L->ws_bytes));
    return pl_poison(ctx, L->out, xn * 2);
}

int e2e_layer_step(pl_ctx *ctx, e2e_layer *L, const pl_layer_recipe *r, int fp8, int fp8w)
{
    const pl_layer_kv *kv = fp8 ? &L->kv8 : &L->kv;
    L->last_floor = 0;
    L->last_fp8 = fp8;
    L->last_fp8w = fp8w;
    if (L->moe) {
        const pl_decode_step s = {L->seqs,    L->page_size, L->max_pages, L->positions_d,
                                  L->slots_d, L->table_d,   L->seq_lens_d};
        const pl_moe_recipe *mr = &L->moe_recipes[r - L->recipes]; /* a MoE step: r is one of L->recipes */
        PL_CUDA(ctx, pl_moe_layer_decode(&L->mw, mr, &s, kv, L->x, L->out, L->ws, L->ws_bytes, ctx->stream));
    } else if (L->prefill) {
        const pl_prefill_step s = {L->seqs, L->starts, L->positions_d, L->slots_d};
        PL_CUDA(ctx, pl_dense_layer_prefill(&L->w, r, &s, kv, L->x, L->out, L->ws, L->ws_bytes, ctx->stream));
    } else {
        const pl_decode_step s = {L->seqs,    L->page_size, L->max_pages, L->positions_d,
                                  L->slots_d, L->table_d,   L->seq_lens_d};
        PL_CUDA(ctx, pl_dense_layer_decode(&L->w, r, &s, kv, L->x, L->out, L->ws, L->ws_bytes, ctx->stream));
    }
    return 0;
}

/* One step with recipes[which] over the bf16 cache or (fp8) the FP8 one. */
static int layer_run(pl_ctx *ctx, e2e_layer *L, int which, int fp8)
{
    return e2e_layer_step(ctx, L, &L->recipes[which], fp8, 0);
}

static int capture(pl_ctx *ctx, e2e_layer *L, int fp8, cudaStream_t stream)
{
    cudaStream_t keep = ctx->stream;
    ctx->stream = stream;
    const int rc = layer_run(ctx, L, L->moe ? E2E_MOE_FUSED : E2E_FUSED, fp8);
    ctx->stream = keep;
    return rc;
}

static int capture_fused(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    return capture(ctx, arg, 0, stream);
}

static int capture_fused_fp8(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    return capture(ctx, arg, 1, stream);
}

/* The FP8 cache beside the bf16 one (a dense decode step): e4m3 pools and their rows' scales, the bf16 pools
 * quantized into them. */
static int alloc_fp8(pl_ctx *ctx, e2e_layer *L)
{
    const size_t rows = L->pool_elems / L->m->head_dim;
    L->kv8.dtype = PL_KV_FP8_E4M3;
    L->kv8.k8 = pl_device_alloc(ctx, L->pool_elems);
    L->kv8.v8 = pl_device_alloc(ctx, L->pool_elems);
    L->kv8.k_scale = pl_device_alloc(ctx, rows * sizeof(float));
    L->kv8.v_scale = pl_device_alloc(ctx, rows * sizeof(float));
    L->base8 = pl_host_alloc(ctx, (size_t)L->rows * L->m->hidden * sizeof(double));
    if (!L->kv8.k8 || !L->kv8.v8 || !L->kv8.k_scale || !L->kv8.v_scale || !L->base8)
        return -1;
    const size_t slots = rows / L->m->kv_heads;
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(L->kv.k, slots, L->m->kv_heads, L->m->head_dim, L->kv8.k8, L->kv8.k_scale,
                                           ctx->stream));
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(L->kv.v, slots, L->m->kv_heads, L->m->head_dim, L->kv8.v8, L->kv8.v_scale,
                                           ctx->stream));
    return 0;
}

int e2e_layer_baseline_rows(pl_ctx *ctx, e2e_layer *L, const pl_layer_recipe *r, int fp8, int fp8w, double *base)
{
    PL_TRY(e2e_layer_step(ctx, L, r, fp8, fp8w));
    const size_t xn = (size_t)L->rows * L->m->hidden;
    PL_CUDA(ctx, cudaMemcpyAsync(L->out_h, L->out, xn * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < xn; i++)
        base[i] = pl_bf16_to_double(L->out_h[i]);
    return 0;
}

/* The FP8 floor (the weights, the e4m3 pools and their scales), its graph, its baseline rows. */
static int fp8_setup(pl_ctx *ctx, e2e_layer *L)
{
    const size_t rows = L->pool_elems / L->m->head_dim;
    PL_TRY(e2e_layer_baseline_rows(ctx, L, &L->recipes[E2E_BASELINE], 1, 0, L->base8));
    PL_TRY(e2e_floor_add(ctx, &L->floor8, L->wblock, L->wbytes));
    PL_TRY(e2e_floor_add(ctx, &L->floor8, L->kv8.k8, L->pool_elems));
    PL_TRY(e2e_floor_add(ctx, &L->floor8, L->kv8.v8, L->pool_elems));
    PL_TRY(e2e_floor_add(ctx, &L->floor8, L->kv8.k_scale, rows * sizeof(float)));
    PL_TRY(e2e_floor_add(ctx, &L->floor8, L->kv8.v_scale, rows * sizeof(float)));
    PL_TRY(e2e_floor_ready(ctx, &L->floor8));
    PL_TRY(layer_run(ctx, L, E2E_FUSED, 1));
    return pl_capture_graph(ctx, capture_fused_fp8, L, &L->graph8);
}

static void recipes(e2e_layer *L, int sm_count)
{
    pl_layer_recipe_ladder(sm_count, L->cublas, L->recipes);
    const pl_layer_recipe base = L->recipes[E2E_BASELINE];
    L->moe_recipes[E2E_MOE_BASELINE] = (pl_moe_recipe){base, PL_MOE_EXPERTS_LOOP};
    L->moe_recipes[E2E_MOE_GROUPED] = (pl_moe_recipe){base, PL_MOE_EXPERTS_GROUPED};
    L->moe_recipes[E2E_MOE_FUSED] = (pl_moe_recipe){L->recipes[E2E_FUSED], PL_MOE_EXPERTS_GROUPED};
}

/* The floor's regions: the weights (whole, or the MoE layer's fixed part and touched experts), the K and V pools. */
static int floor_setup(pl_ctx *ctx, e2e_layer *L)
{
    if (L->moe)
        PL_TRY(e2e_moe_floor_regions(ctx, L));
    else
        PL_TRY(e2e_floor_add(ctx, &L->floor, L->wblock, L->wbytes));
    PL_TRY(e2e_floor_add(ctx, &L->floor, L->kv.k, L->pool_elems * 2));
    PL_TRY(e2e_floor_add(ctx, &L->floor, L->kv.v, L->pool_elems * 2));
    return e2e_floor_ready(ctx, &L->floor);
}

static int alloc_weights(pl_ctx *ctx, e2e_layer *L)
{
    char err[512];
    if (L->moe ? pl_moe_weights_alloc(L->m, ctx->seed, &L->mw, err, sizeof err)
               : pl_dense_weights_alloc(L->m, ctx->seed, &L->w, err, sizeof err))
        return pl_fail(ctx, "%s", err);
    L->wblock = L->moe ? L->mw.block : L->w.block;
    L->wbytes = L->moe ? L->mw.bytes : L->w.bytes;
    return 0;
}

/* MoE: host room for the routing of the baseline's run, of each run and of the reference rows. */
static int alloc_routing(pl_ctx *ctx, e2e_layer *L)
{
    if (!L->moe)
        return 0;
    const size_t ids = (size_t)L->rows * L->m->top_k * sizeof(int);
    L->ids_base = pl_host_alloc(ctx, ids);
    L->ids_run = pl_host_alloc(ctx, ids);
    L->ids_ref = pl_host_alloc(ctx, 8 * (size_t)L->m->top_k * sizeof(int));
    L->margin_ref = pl_host_alloc(ctx, 8 * sizeof(double));
    return L->ids_base && L->ids_run && L->ids_ref && L->margin_ref ? 0 : -1;
}

/* fp8_forms: also the FP8 cache's and FP8 weights' forms of a dense layer (their variants' targets) */
static int layer_setup(pl_ctx *ctx, const pl_params *p, int prefill, int moe, int fp8_forms, int seqs, int len,
                       e2e_layer **out)
{
    char err[512];
    e2e_layer *L = pl_host_alloc(ctx, sizeof *L);
    if (!L)
        return -1;
    L->prefill = prefill;
    L->moe = moe;
    L->seqs = seqs;
    L->page_size = (int)pl_param_int(p, "page-size");
    if (!(L->m = model_of(p, err, sizeof err)))
        return pl_fail(ctx, "%s", err);
    PL_TRY(alloc_weights(ctx, L));
    *out = L; /* from here on the teardown frees the weights, the handle and the graph */
    if (cublasCreate(&L->cublas) != CUBLAS_STATUS_SUCCESS)
        return pl_fail(ctx, "cublasCreate failed");
    recipes(L, ctx->device->sm_count);
    PL_TRY(alloc_step(ctx, p, L, len));
    PL_TRY(alloc_routing(ctx, L));
    const int fp8 = fp8_forms && !moe && !prefill; /* the FP8 cache's variants: e2e:layer_decode */
    if (fp8)
        PL_TRY(alloc_fp8(ctx, L));
    /* FP8 weights: the native FP8 GEMM kernels are sm_90a's */
    L->fp8w = fp8_forms && !moe && ctx->device->cc_major == 9 && ctx->device->cc_minor == 0;
    if (L->fp8w) {
        if (pl_dense_weights_add_fp8(&L->w, PL_FP8_SCALING_BLOCK, err, sizeof err) != 0)
            return pl_fail(ctx, "%s", err);
    }
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    PL_TRY(e2e_layer_reference(ctx, L));
    /* the baseline's output, every row (and its routing); then the fused recipe once outside the capture (the GEMM
     * picks are made) */
    PL_TRY(e2e_layer_baseline_rows(ctx, L, &L->recipes[L->moe ? E2E_MOE_BASELINE : E2E_BASELINE], 0, 0, L->base));
    if (moe) {
        PL_TRY(e2e_moe_read_ids(ctx, L, 1));
        L->touched = pl_distinct_experts(L->ids_base, (int64_t)L->rows * L->m->top_k, L->m->experts);
        fprintf(stderr, "perflab: the batch's routing touches %d of %d experts (%.1f expected under uniform routing)\n",
                L->touched, L->m->experts, pl_expected_experts(L->m->experts, L->m->top_k, L->rows));
    }
    PL_TRY(floor_setup(ctx, L));
    if (fp8)
        PL_TRY(fp8_setup(ctx, L));
    if (L->fp8w)
        PL_TRY(e2e_fp8w_setup(ctx, L));
    PL_TRY(e2e_layer_run(ctx, L, moe ? E2E_MOE_FUSED : E2E_FUSED));
    return pl_capture_graph(ctx, capture_fused, L, &L->graph);
}

int e2e_layer_setup(pl_ctx *ctx, const pl_params *p, int prefill, int seqs, int len, e2e_layer **out)
{
    return layer_setup(ctx, p, prefill, 0, 1, seqs, len, out);
}

int e2e_layer_setup_bf16(pl_ctx *ctx, const pl_params *p, int seqs, int len, e2e_layer **out)
{
    return layer_setup(ctx, p, 0, 0, 0, seqs, len, out);
}

int e2e_moe_setup(pl_ctx *ctx, const pl_params *p, int seqs, int len, e2e_layer **out)
{
    return layer_setup(ctx, p, 0, 1, 0, seqs, len, out);
}

void e2e_layer_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    e2e_layer *L = state;
    if (L->graph)
        cudaGraphExecDestroy(L->graph);
    if (L->graph8)
        cudaGraphExecDestroy(L->graph8);
    if (L->graph8w)
        cudaGraphExecDestroy(L->graph8w);
    if (L->cublas)
        cublasDestroy(L->cublas);
    pl_dense_weights_free(&L->w);
    pl_moe_weights_free(&L->mw);
}

/* ---- runs and checks ---- */

int e2e_layer_run(pl_ctx *ctx, e2e_layer *L, int which)
{
    return layer_run(ctx, L, which, 0);
}

int e2e_layer_run_baseline(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_BASELINE);
}

int e2e_layer_run_fast_attention(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_FAST_ATTENTION);
}

int e2e_layer_run_perflab_gemm(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_PERFLAB_GEMM);
}

int e2e_layer_run_fused(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_FUSED);
}

int e2e_moe_run_baseline(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_MOE_BASELINE);
}

int e2e_moe_run_grouped(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_MOE_GROUPED);
}

int e2e_moe_run_fused(pl_ctx *ctx, void *state)
{
    return e2e_layer_run(ctx, state, E2E_MOE_FUSED);
}

static int run_graph(pl_ctx *ctx, e2e_layer *L, int fp8)
{
    L->last_floor = 0;
    L->last_fp8 = fp8;
    L->last_fp8w = 0;
    PL_CUDA(ctx, cudaGraphLaunch(fp8 ? L->graph8 : L->graph, ctx->stream));
    return 0;
}

static int run_floor(pl_ctx *ctx, e2e_layer *L, int fp8)
{
    L->last_floor = 1;
    L->floor_run = fp8 ? &L->floor8 : &L->floor;
    return e2e_floor_read(ctx, L->floor_run);
}

int e2e_layer_run_graph(pl_ctx *ctx, void *state)
{
    return run_graph(ctx, state, 0);
}

int e2e_layer_run_floor(pl_ctx *ctx, void *state)
{
    return run_floor(ctx, state, 0);
}

int e2e_layer_run_fp8_kv(pl_ctx *ctx, void *state)
{
    return layer_run(ctx, state, E2E_FUSED, 1);
}

int e2e_layer_run_fp8_kv_graph(pl_ctx *ctx, void *state)
{
    return run_graph(ctx, state, 1);
}

int e2e_layer_run_floor_fp8_kv(pl_ctx *ctx, void *state)
{
    return run_floor(ctx, state, 1);
}

int e2e_layer_poison(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    PL_TRY(e2e_floor_poison(ctx, &L->floor));
    if (L->floor8.n)
        PL_TRY(e2e_floor_poison(ctx, &L->floor8));
    if (L->floor8w.n)
        PL_TRY(e2e_floor_poison(ctx, &L->floor8w));
    if (L->floor8w_kv.n)
        PL_TRY(e2e_floor_poison(ctx, &L->floor8w_kv));
    /* the workspace too (the step's intermediates): a kernel that skips a write then reads NaN rather than the
     * previous run's value, and compute-sanitizer's initcheck sees them written even where a GEMM stores with TMA,
     * which it does not track */
    PL_TRY(pl_poison(ctx, L->ws, L->ws_bytes));
    return pl_poison(ctx, L->out, (size_t)L->rows * L->m->hidden * 2);
}
