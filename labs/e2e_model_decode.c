/* e2e:model_decode — a whole model's decode step (engine/model.h): the embedding, every layer, the final norm, the
 * LM head and the greedy argmax for a batch of sequences over the paged KV cache; the same technique ladder as
 * e2e:layer_decode, against the step's memory floor (every layer's weights, the LM head and the batch's K and V
 * pages read once, measured in the same process). Verified against the baseline recipe's logits on every row (the
 * float64 reference checks the recipes at the tiny configs: tests/gpu/test_engine_model.c). fp8_kv and fp8_kv_graph
 * run the fused step over an FP8 (e4m3) cache, the same cache quantized row by row, as e2e:layer_decode's do: checked
 * against the baseline recipe run over that FP8 cache at setup, and judged against a floor of their own (floor_fp8_kv:
 * the weights, the e4m3 pools with their scales and the LM head read once), since the counters, per target, are the
 * bf16 step's. */
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "common/e2e_layer.h"
#include "common/graph_capture.h"
#include "engine/layer_ops.h"
#include "engine/model.h"
#include "engine/step_cost.h"
#include "labs.h"
#include "perflab/device.h"

#define LENS_STREAM  0xe2e1u
#define TOKEN_STREAM 0xe2e5u

typedef struct model_state {
    pl_model M;
    pl_model_cache cache16, cache8; /* the model's bf16 cache; the FP8 one beside it, the same values quantized */
    int batch, max_pages, recipe_run, last_floor, last_fp8;
    cublasHandle_t cublas;
    pl_layer_recipe recipes[PL_LAYER_LADDER_STEPS];
    pl_model_rows rows;
    int *lens, *table, *positions_h, *out_rows_h;
    int64_t *slots_h;
    int *tokens, *positions, *table_d, *seq_lens, *out_rows, *out_tokens;
    int64_t *slots;
    cudaGraphExec_t graph, graph8;
    uint16_t *logits_h;
    double *base, *base8; /* the baseline recipe's logits over the bf16 cache, and over the FP8 one */
    e2e_floor floor;      /* every layer's weights, the K and V pools, the LM head */
    e2e_floor floor8;     /* every layer's weights, the e4m3 K and V pools and their scales, the LM head */
} model_state;

static const pl_param_def model_params[] = {
    E2E_LAYER_COMMON_PARAMS,
    PL_INT_PARAM("layers", "0", 0, 1024, "layers (0: the config's)", .small_value = "0"),
    PL_INT_PARAM("batch", "64", 1, 4096, "sequences in the step", .small_value = "3"),
    PL_INT_PARAM("cache-len", "2048", 1, 1 << 20, "tokens a sequence attends to, its new one included",
                 .small_value = "77"),
    PL_PARAMS_END,
};

static void model_counters(const pl_params *p, pl_counters *c)
{
    char err[256];
    const pl_model_config *m = pl_model_find(pl_param_str(p, "model"), err, sizeof err);
    const int B = (int)pl_param_int(p, "batch");
    int *lens = malloc((size_t)B * sizeof *lens);
    memset(c, 0, sizeof *c);
    if (m && lens) {
        pl_decode_lengths(B, (int)pl_param_int(p, "cache-len"), pl_param_float(p, "spread"), LENS_STREAM, lens);
        const pl_step_batch b = {.n = B, .lens = lens, .routing = NULL};
        pl_step_cost sc;
        if (pl_model_decode_cost(m, PL_WEIGHTS_BF16, (int)pl_param_int(p, "layers"), &b, &sc) == 0) {
            c->flops = sc.flops;
            c->bytes_read = sc.weight_bytes + sc.kv_read_bytes;
            c->bytes_written = sc.kv_write_bytes + sc.act_bytes;
            c->elements = B;
        }
    }
    free(lens);
}

static int model_check_params(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    PL_TRY(e2e_layer_check(p, 0, (int)pl_param_int(p, "batch"), (int)pl_param_int(p, "cache-len"), NULL, err, errlen));
    const pl_model_config *m = pl_model_find(pl_param_str(p, "model"), err, errlen);
    pl_weight_bytes wb;
    pl_weight_bytes_of(m, PL_WEIGHTS_BF16, (int)pl_param_int(p, "layers"), &wb);
    /* the bf16 cache and the FP8 one beside it (the fp8_kv variants) */
    const int layers = (int)pl_param_int(p, "layers");
    const double kv =
        (double)pl_param_int(p, "batch") * pl_param_int(p, "cache-len") *
        (double)(pl_kv_page_bytes(m, layers, 1, PL_KV_BF16) + pl_kv_page_bytes(m, layers, 1, PL_KV_FP8_E4M3));
    return pl_check_device_memory(gpu, (double)wb.total + kv * 1.05 + (1u << 30),
                                  "lower --layers, --batch or --cache-len, or pick a smaller model", err, errlen);
}

/* ---- setup ---- */

static int *upload_ints(pl_ctx *ctx, const void *h, size_t bytes)
{
    void *d = pl_device_alloc(ctx, bytes);
    if (d && cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        return NULL;
    return d;
}

static int make_rows(pl_ctx *ctx, const pl_params *p, model_state *s)
{
    const int B = s->batch, len = (int)pl_param_int(p, "cache-len"), ps = s->M.page_size;
    s->lens = pl_host_alloc(ctx, (size_t)B * sizeof(int));
    s->max_pages = (len + ps - 1) / ps;
    s->table = pl_host_alloc(ctx, (size_t)B * s->max_pages * sizeof(int));
    s->positions_h = pl_host_alloc(ctx, (size_t)B * sizeof(int));
    s->out_rows_h = pl_host_alloc(ctx, (size_t)B * sizeof(int));
    s->slots_h = pl_host_alloc(ctx, (size_t)B * sizeof(int64_t));
    int *tokens = pl_host_alloc(ctx, (size_t)B * sizeof(int));
    if (!s->lens || !s->table || !s->positions_h || !s->out_rows_h || !s->slots_h || !tokens)
        return -1;
    pl_decode_lengths(B, len, pl_param_float(p, "spread"), LENS_STREAM, s->lens);
    const int pages = pl_decode_block_table(B, s->lens, ps, s->max_pages, LENS_STREAM, s->table);
    if (pages > s->M.pages)
        return pl_fail(ctx, "the batch needs %d KV pages, the model holds %d", pages, s->M.pages);
    for (int b = 0; b < B; b++) {
        const int t = s->lens[b] - 1;
        s->positions_h[b] = t;
        s->slots_h[b] = (int64_t)s->table[(size_t)b * s->max_pages + t / ps] * ps + t % ps;
        s->out_rows_h[b] = b;
        tokens[b] = (int)(pl_uniform_host(ctx->seed, TOKEN_STREAM, (size_t)b, 0.0f, 1.0f) * (s->M.config->vocab - 1));
    }
    s->tokens = upload_ints(ctx, tokens, (size_t)B * sizeof(int));
    s->positions = upload_ints(ctx, s->positions_h, (size_t)B * sizeof(int));
    s->slots = (int64_t *)upload_ints(ctx, s->slots_h, (size_t)B * sizeof(int64_t));
    s->table_d = upload_ints(ctx, s->table, (size_t)B * s->max_pages * sizeof(int));
    s->seq_lens = upload_ints(ctx, s->lens, (size_t)B * sizeof(int));
    s->out_rows = upload_ints(ctx, s->out_rows_h, (size_t)B * sizeof(int));
    s->out_tokens = pl_device_alloc(ctx, (size_t)B * sizeof(int));
    if (!s->tokens || !s->positions || !s->slots || !s->table_d || !s->seq_lens || !s->out_rows || !s->out_tokens)
        return pl_fail(ctx, "copying the step's rows to the device failed");
    s->rows = (pl_model_rows){.n = B,
                              .tokens = s->tokens,
                              .positions = s->positions,
                              .slots = s->slots,
                              .n_decode = B,
                              .max_pages = s->max_pages,
                              .block_table = s->table_d,
                              .seq_lens = s->seq_lens,
                              .n_out = B,
                              .out_rows = s->out_rows,
                              .out_tokens = s->out_tokens};
    /* every layer's cache: random in ±1 (the pages the batch reads) */
    const size_t elems = s->M.cache.pool_elems * (size_t)s->M.layers;
    return pl_fill_uniform_bf16(ctx, s->M.cache.k, elems, -1.0f, 1.0f, 0xe2e2u) ||
           pl_fill_uniform_bf16(ctx, s->M.cache.v, elems, -1.0f, 1.0f, 0xe2e3u);
}

/* One step with recipes[which] over the bf16 cache or (fp8) the FP8 one, on `stream`. */
static int step_on(pl_ctx *ctx, model_state *s, int which, int fp8, cudaStream_t stream)
{
    s->last_floor = 0;
    s->last_fp8 = fp8;
    s->M.cache = fp8 ? s->cache8 : s->cache16;
    PL_CUDA(ctx, pl_model_step(&s->M, &s->recipes[which], &s->rows, stream));
    return 0;
}

static int run_recipe(pl_ctx *ctx, model_state *s, int which)
{
    return step_on(ctx, s, which, 0, ctx->stream);
}

static int capture_fused(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    return step_on(ctx, arg, E2E_FUSED, 0, stream);
}

static int capture_fused_fp8(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    return step_on(ctx, arg, E2E_FUSED, 1, stream);
}

/* The FP8 cache beside the model's bf16 one: every layer's pools quantized row by row (one call each for K and V:
 * the layers' pools and scales lie one after another). */
static int alloc_fp8(pl_ctx *ctx, model_state *s)
{
    const pl_model *M = &s->M;
    const pl_model_config *c = M->config;
    const size_t bytes = pl_model_cache_bytes(c, M->layers, M->pages, M->page_size, PL_KV_FP8_E4M3);
    void *base = pl_device_alloc(ctx, bytes);
    if (!base)
        return -1;
    pl_model_cache_place(c, M->layers, M->pages, M->page_size, PL_KV_FP8_E4M3, base, &s->cache8);
    const size_t slots = s->cache16.pool_elems * (size_t)M->layers / ((size_t)c->kv_heads * c->head_dim);
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(s->cache16.k, slots, c->kv_heads, c->head_dim, s->cache8.k8,
                                           s->cache8.k_scale, ctx->stream));
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(s->cache16.v, slots, c->kv_heads, c->head_dim, s->cache8.v8,
                                           s->cache8.v_scale, ctx->stream));
    return 0;
}

/* The baseline recipe's logits over the bf16 or the FP8 cache, every row, into base. */
static int baseline_logits(pl_ctx *ctx, model_state *s, int fp8, double *base)
{
    const size_t nl = (size_t)s->batch * s->M.config->vocab;
    PL_TRY(step_on(ctx, s, E2E_BASELINE, fp8, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->logits_h, s->M.logits, nl * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < nl; i++)
        base[i] = pl_bf16_to_double(s->logits_h[i]);
    return 0;
}

/* Every layer's weights, the cache's K and V pools of every layer (sized for the batch at the full cache length:
 * with --spread above 0 a little more than the batch reads; FP8: the e4m3 pools and their scales), then the LM
 * head. */
static int floor_setup(pl_ctx *ctx, const pl_model *M, const pl_model_cache *c, e2e_floor *f)
{
    const size_t elems = c->pool_elems * (size_t)M->layers;
    for (int l = 0; l < M->layers; l++)
        PL_TRY(e2e_floor_add(ctx, f, M->layer[l].block, M->layer[l].bytes));
    if (c->dtype == PL_KV_FP8_E4M3) {
        const size_t scales = elems / (size_t)M->config->head_dim * sizeof(float);
        PL_TRY(e2e_floor_add(ctx, f, c->k8, elems));
        PL_TRY(e2e_floor_add(ctx, f, c->v8, elems));
        PL_TRY(e2e_floor_add(ctx, f, c->k_scale, scales));
        PL_TRY(e2e_floor_add(ctx, f, c->v_scale, scales));
    } else {
        PL_TRY(e2e_floor_add(ctx, f, c->k, elems * 2));
        PL_TRY(e2e_floor_add(ctx, f, c->v, elems * 2));
    }
    PL_TRY(e2e_floor_add(ctx, f, M->lm_head, (size_t)M->config->vocab * M->config->hidden * 2));
    return e2e_floor_ready(ctx, f);
}

static int model_poison(pl_ctx *ctx, void *state);

static int model_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    char err[512];
    model_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    const pl_model_config *m = pl_model_find(pl_param_str(p, "model"), err, sizeof err);
    if (!m)
        return pl_fail(ctx, "%s", err);
    s->batch = (int)pl_param_int(p, "batch");
    const int ps = (int)pl_param_int(p, "page-size"), len = (int)pl_param_int(p, "cache-len");
    const pl_model_options o = {.model = m,
                                .layers = (int)pl_param_int(p, "layers"),
                                .page_size = ps,
                                .pages = s->batch * ((len + ps - 1) / ps),
                                .max_rows = s->batch,
                                .max_out = s->batch,
                                .max_context = (int)pl_param_int(p, "cache-len"),
                                .max_seqs = s->batch,
                                .seed = ctx->seed,
                                .sm_count = ctx->device->sm_count};
    if (pl_model_create(&o, &s->M, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    *state = s;
    if (cublasCreate(&s->cublas) != CUBLAS_STATUS_SUCCESS)
        return pl_fail(ctx, "cublasCreate failed");
    pl_layer_recipe_ladder(ctx->device->sm_count, s->cublas, s->recipes);
    s->cache16 = s->M.cache;
    PL_TRY(make_rows(ctx, p, s));
    PL_TRY(alloc_fp8(ctx, s));
    PL_TRY(floor_setup(ctx, &s->M, &s->cache16, &s->floor));
    PL_TRY(floor_setup(ctx, &s->M, &s->cache8, &s->floor8));
    const size_t nl = (size_t)s->batch * m->vocab;
    s->logits_h = pl_host_alloc(ctx, nl * 2);
    s->base = pl_host_alloc(ctx, nl * sizeof(double));
    s->base8 = pl_host_alloc(ctx, nl * sizeof(double));
    if (!s->logits_h || !s->base || !s->base8)
        return -1;
    /* the intermediates and logits written once before the baseline's run: cuBLAS's LM head may store with TMA,
     * which compute-sanitizer's initcheck does not track, and the copy below would read "uninitialized" logits */
    PL_TRY(model_poison(ctx, s));
    PL_TRY(baseline_logits(ctx, s, 0, s->base));
    PL_TRY(baseline_logits(ctx, s, 1, s->base8));
    /* the fused step once outside each capture (the GEMM picks are made), then the graphs */
    PL_TRY(step_on(ctx, s, E2E_FUSED, 1, ctx->stream));
    PL_TRY(pl_capture_graph(ctx, capture_fused_fp8, s, &s->graph8));
    PL_TRY(run_recipe(ctx, s, E2E_FUSED));
    return pl_capture_graph(ctx, capture_fused, s, &s->graph);
}

static void model_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    model_state *s = state;
    if (s->graph)
        cudaGraphExecDestroy(s->graph);
    if (s->graph8)
        cudaGraphExecDestroy(s->graph8);
    if (s->cublas)
        cublasDestroy(s->cublas);
    pl_model_destroy(&s->M);
}

/* ---- variants ---- */

static int run_baseline(pl_ctx *ctx, void *state)
{
    return run_recipe(ctx, state, E2E_BASELINE);
}
static int run_fast_attention(pl_ctx *ctx, void *state)
{
    return run_recipe(ctx, state, E2E_FAST_ATTENTION);
}
static int run_perflab_gemm(pl_ctx *ctx, void *state)
{
    return run_recipe(ctx, state, E2E_PERFLAB_GEMM);
}
static int run_fused(pl_ctx *ctx, void *state)
{
    return run_recipe(ctx, state, E2E_FUSED);
}

static int launch_graph(pl_ctx *ctx, model_state *s, int fp8)
{
    s->last_floor = 0;
    s->last_fp8 = fp8;
    PL_CUDA(ctx, cudaGraphLaunch(fp8 ? s->graph8 : s->graph, ctx->stream));
    return 0;
}

static int read_floor(pl_ctx *ctx, model_state *s, int fp8)
{
    s->last_floor = 1;
    s->last_fp8 = fp8;
    return e2e_floor_read(ctx, fp8 ? &s->floor8 : &s->floor);
}

static int run_graph(pl_ctx *ctx, void *state)
{
    return launch_graph(ctx, state, 0);
}

static int run_floor(pl_ctx *ctx, void *state)
{
    return read_floor(ctx, state, 0);
}

static int run_fp8_kv(pl_ctx *ctx, void *state)
{
    return step_on(ctx, state, E2E_FUSED, 1, ctx->stream);
}

static int run_fp8_kv_graph(pl_ctx *ctx, void *state)
{
    return launch_graph(ctx, state, 1);
}

static int run_floor_fp8_kv(pl_ctx *ctx, void *state)
{
    return read_floor(ctx, state, 1);
}

static int model_poison(pl_ctx *ctx, void *state)
{
    model_state *s = state;
    PL_TRY(e2e_floor_poison(ctx, &s->floor));
    PL_TRY(e2e_floor_poison(ctx, &s->floor8));
    /* the step's intermediates too (the residual stream, the layers' workspace, the picked and normed rows): a
     * kernel that skips a write then reads NaN rather than the previous run's value, and compute-sanitizer's
     * initcheck sees them written even where a GEMM stores with TMA, which it does not track */
    const size_t D = (size_t)s->M.config->hidden;
    PL_TRY(pl_poison(ctx, s->M.x, (size_t)s->M.max_rows * D * 2));
    PL_TRY(pl_poison(ctx, s->M.picked, (size_t)s->M.max_out * D * 2));
    PL_TRY(pl_poison(ctx, s->M.normed, (size_t)s->M.max_out * D * 2));
    PL_TRY(pl_poison(ctx, s->M.ws, s->M.ws_bytes));
    return pl_poison(ctx, s->M.logits, (size_t)s->batch * s->M.config->vocab * 2);
}

static int model_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    model_state *s = state;
    if (s->last_floor)
        return e2e_floor_check(ctx, s->last_fp8 ? &s->floor8 : &s->floor, v);
    const size_t nl = (size_t)s->batch * s->M.config->vocab;
    PL_CUDA(ctx, cudaMemcpyAsync(s->logits_h, s->M.logits, nl * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    /* an FP8 run against the baseline over the same FP8 cache */
    pl_verify_bf16(s->logits_h, s->last_fp8 ? s->base8 : s->base, nl, 2e-2, v);
    return 0;
}

static const pl_variant model_variants[] = {
    PL_VARIANT("baseline", run_baseline,
               "the eager way, every layer: cuBLAS GEMMs, a kernel per operation, a CTA per query head walking its "
               "paged cache"),
    PL_VARIANT("fast_attention", run_fast_attention, "+ the paged decode kernel rows_deep",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("perflab_gemm", run_perflab_gemm, "+ perflab's GEMMs (pl_gemm_bf16) instead of cuBLAS",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("fused", run_fused, "+ one-pass RMSNorm, RoPE with the KV write, residual adds in the GEMM epilogues",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("graph", run_graph, "+ the whole step (every layer, head and argmax) as one CUDA graph",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("floor", run_floor,
               "every layer's weights, the batch's K and V pages and the LM head read once (16-byte streaming "
               "loads): the step's memory floor at this GPU's read rate",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("fp8_kv", run_fp8_kv,
               "the fused step over an FP8 (e4m3) KV cache in every layer, a power-of-two scale per (token, kv head) "
               "row: the KV writes quantize, rows_deep_fp8 reads half the cache bytes",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("fp8_kv_graph", run_fp8_kv_graph, "+ fp8_kv's whole step captured once as a CUDA graph",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("floor_fp8_kv", run_floor_fp8_kv,
               "the FP8 variants' floor: every layer's weights, the e4m3 K and V pages with their scales and the LM "
               "head read once (the counters, per target, count the bf16 cache: judge fp8_kv against this row)",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_e2e_model_decode = {
    .group = "e2e",
    .name = "model_decode",
    .summary = "a whole model's decode step (every layer, LM head, greedy sampling) over a paged KV cache, "
               "technique by technique, against its memory floor",
    .req = {.needs_gpu = 1},
    .params = model_params,
    .variants = model_variants,
    .counters = model_counters,
    .setup = model_setup,
    .poison = model_poison,
    .check = model_check,
    .teardown = model_teardown,
    .check_params = model_check_params,
};
