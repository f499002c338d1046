/* The e2e: layer targets' glue (e2e_layer.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "common/e2e_layer.h"
#include "common/graph_capture.h"
#include "common/layer_ref.h"
#include "engine/step_cost.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"
#include "perflab/results.h"

#define LENS_STREAM        0xe2e1u /* the lengths' and the pages' seed, from the parameters alone (counters recompute it) */
#define K_STREAM           0xe2e2u
#define V_STREAM           0xe2e3u
#define X_STREAM           0xe2e4u
#define PREFILL_REF_TOKENS 2 /* a prompt's first tokens the float64 reference computes */

static const pl_stream_config read_config = {.unroll = 8, .waves = 0, .streaming = 1};

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

int e2e_layer_check(const pl_params *p, int prefill, int seqs, int len, const struct pl_gpu_record *gpu, char *err,
                    size_t errlen)
{
    const pl_model_config *m = model_of(p, err, errlen);
    if (!m)
        return -1;
    if (pl_model_is_moe(m) || m->qk_norm)
        return pl_params_refuse(err, errlen,
                                "--model %s: the dense layer takes a dense model without qk-norm: use "
                                "llama3-8b, llama3-70b or tiny-dense",
                                m->name);
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
    const double act = rows * (10.0 * m->hidden + 6.0 * m->intermediate + 6.0 * qkvw);
    const double kv = prefill ? c.kv_write_bytes : c.kv_read_bytes + c.kv_write_bytes;
    return pl_check_device_memory(gpu, c.weight_bytes + kv + act,
                                  "lower the batch, the lengths or pick a smaller model", err, errlen);
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
    L->ws_bytes = pl_dense_workspace_bytes(L->m, L->rows, ctx->device->sm_count);
    L->ws = pl_device_alloc(ctx, L->ws_bytes);
    return L->ws ? 0 : -1;
}

static void *host_copy(pl_ctx *ctx, const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (!h) {
        pl_fail(ctx, "out of host memory (%zu bytes) for the reference", bytes);
        return NULL;
    }
    if (cudaMemcpy(h, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        pl_fail(ctx, "copying %zu bytes back for the reference failed", bytes);
        return NULL;
    }
    return h;
}

/* Which rows the float64 reference computes, and their tables (row r's sequence's pages). */
static void pick_ref_rows(e2e_layer *L)
{
    L->ref_n = 0;
    if (L->prefill) {
        const int prompts[2] = {0, L->seqs - 1};
        for (int i = 0; i < (L->seqs > 1 ? 2 : 1); i++)
            for (int t = 0; t < PREFILL_REF_TOKENS && t < L->lens[prompts[i]]; t++)
                L->ref_rows[L->ref_n++] = L->starts[prompts[i]] + t;
        return;
    }
    const int seqs[3] = {0, L->seqs / 2, L->seqs - 1};
    for (int i = 0; i < 3; i++)
        if (L->ref_n == 0 || L->ref_rows[L->ref_n - 1] < seqs[i])
            L->ref_rows[L->ref_n++] = seqs[i];
}

static int seq_of_row(const e2e_layer *L, int row)
{
    int s = 0;
    while (s + 1 < L->seqs && L->starts[s + 1] <= row)
        s++;
    return s;
}

/* The float64 reference of the picked rows, from host copies of the weights, the pools and x. */
static int reference(pl_ctx *ctx, e2e_layer *L)
{
    pick_ref_rows(L);
    const pl_model_config *m = L->m;
    const size_t D = m->hidden;
    uint16_t *wb = host_copy(ctx, L->w.block, L->w.bytes);
    uint16_t *kc = host_copy(ctx, L->kv.k, L->pool_elems * 2), *vc = host_copy(ctx, L->kv.v, L->pool_elems * 2);
    uint16_t *x = host_copy(ctx, L->x, (size_t)L->rows * D * 2);
    uint16_t *xr = malloc((size_t)L->ref_n * D * 2), *out = malloc((size_t)L->ref_n * D * 2);
    L->ref = pl_host_alloc(ctx, (size_t)L->ref_n * D * sizeof(double));
    int rc = -1;
    if (!wb || !kc || !vc || !x || !xr || !out || !L->ref)
        goto done;
#define HOST_OF(t) (const uint16_t *)((const char *)wb + ((const char *)L->w.t - (const char *)L->w.block))
    const pl_layer_ref_weights hw = {HOST_OF(attn_norm), HOST_OF(qkv),     HOST_OF(o),
                                     HOST_OF(mlp_norm),  HOST_OF(gate_up), HOST_OF(down)};
#undef HOST_OF
    int pos[8];
    int64_t slots[8];
    const int *tables[8];
    for (int i = 0; i < L->ref_n; i++) {
        const int r = L->ref_rows[i];
        pos[i] = L->positions_h[r];
        slots[i] = L->slots_h[r];
        tables[i] = L->table + (size_t)seq_of_row(L, r) * L->max_pages;
        memcpy(xr + (size_t)i * D, x + (size_t)r * D, D * 2);
    }
    const pl_layer_ref_rows rows = {L->ref_n, L->page_size, pos, slots, tables};
    if (pl_layer_ref(m, &hw, &rows, 0, kc, vc, xr, out) != 0) {
        pl_fail(ctx, "out of host memory for the reference layer");
        goto done;
    }
    for (size_t i = 0; i < (size_t)L->ref_n * D; i++)
        L->ref[i] = pl_bf16_to_double(out[i]);
    rc = 0;
done:
    free(wb), free(kc), free(vc), free(x), free(xr), free(out);
    return rc;
}

static int capture_fused(pl_ctx *ctx, void *arg, cudaStream_t stream)
{
    e2e_layer *L = arg;
    cudaStream_t keep = ctx->stream;
    ctx->stream = stream;
    const int rc = e2e_layer_run(ctx, L, E2E_FUSED);
    ctx->stream = keep;
    return rc;
}

static void recipes(e2e_layer *L, int sm_count)
{
    const pl_layer_recipe base = {PL_LAYER_GEMM_CUBLAS, PL_LAYER_ATTN_SIMPLE, 0, sm_count, L->cublas};
    for (int i = 0; i < 4; i++)
        L->recipes[i] = base;
    L->recipes[E2E_FAST_ATTENTION].attention = PL_LAYER_ATTN_FAST;
    L->recipes[E2E_PERFLAB_GEMM].attention = PL_LAYER_ATTN_FAST;
    L->recipes[E2E_PERFLAB_GEMM].gemm = PL_LAYER_GEMM_PERFLAB;
    L->recipes[E2E_FUSED] = L->recipes[E2E_PERFLAB_GEMM];
    L->recipes[E2E_FUSED].fused = 1;
}

static int floor_setup(pl_ctx *ctx, e2e_layer *L)
{
    unsigned resident = 0, most = 1;
    PL_CUDA(ctx, pl_stream_resident_blocks(PL_STREAM_READ, &read_config, &resident));
    const size_t n[3] = {L->w.bytes / 4, L->pool_elems / 2, L->pool_elems / 2};
    for (int i = 0; i < 3; i++) {
        L->read_grid[i] = pl_stream_grid(n[i], &read_config, resident);
        most = L->read_grid[i] > most ? L->read_grid[i] : most;
    }
    L->read_most = most;
    L->read_partial = pl_device_alloc(ctx, most * sizeof(float));
    return L->read_partial ? 0 : -1;
}

int e2e_layer_setup(pl_ctx *ctx, const pl_params *p, int prefill, int seqs, int len, e2e_layer **out)
{
    char err[512];
    e2e_layer *L = pl_host_alloc(ctx, sizeof *L);
    if (!L)
        return -1;
    L->prefill = prefill;
    L->seqs = seqs;
    L->page_size = (int)pl_param_int(p, "page-size");
    if (!(L->m = model_of(p, err, sizeof err)))
        return pl_fail(ctx, "%s", err);
    if (pl_dense_weights_alloc(L->m, ctx->seed, &L->w, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    *out = L; /* from here on the teardown frees the weights, the handle and the graph */
    if (cublasCreate(&L->cublas) != CUBLAS_STATUS_SUCCESS)
        return pl_fail(ctx, "cublasCreate failed");
    recipes(L, ctx->device->sm_count);
    PL_TRY(alloc_step(ctx, p, L, len));
    PL_TRY(floor_setup(ctx, L));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    PL_TRY(reference(ctx, L));
    /* the baseline's output, every row; then the fused recipe once outside the capture (the GEMM picks are made) */
    PL_TRY(e2e_layer_run(ctx, L, E2E_BASELINE));
    const size_t xn = (size_t)L->rows * L->m->hidden;
    PL_CUDA(ctx, cudaMemcpyAsync(L->out_h, L->out, xn * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < xn; i++)
        L->base[i] = pl_bf16_to_double(L->out_h[i]);
    PL_TRY(e2e_layer_run(ctx, L, E2E_FUSED));
    return pl_capture_graph(ctx, capture_fused, L, &L->graph);
}

void e2e_layer_teardown(pl_ctx *ctx, void *state)
{
    (void)ctx;
    e2e_layer *L = state;
    if (L->graph)
        cudaGraphExecDestroy(L->graph);
    if (L->cublas)
        cublasDestroy(L->cublas);
    pl_dense_weights_free(&L->w);
}

/* ---- runs and checks ---- */

int e2e_layer_run(pl_ctx *ctx, e2e_layer *L, int which)
{
    const pl_layer_recipe *r = &L->recipes[which];
    L->last_floor = 0;
    if (L->prefill) {
        const pl_prefill_step s = {L->seqs, L->starts, L->positions_d, L->slots_d};
        PL_CUDA(ctx, pl_dense_layer_prefill(&L->w, r, &s, &L->kv, L->x, L->out, L->ws, L->ws_bytes, ctx->stream));
    } else {
        const pl_decode_step s = {L->seqs,    L->page_size, L->max_pages, L->positions_d,
                                  L->slots_d, L->table_d,   L->seq_lens_d};
        PL_CUDA(ctx, pl_dense_layer_decode(&L->w, r, &s, &L->kv, L->x, L->out, L->ws, L->ws_bytes, ctx->stream));
    }
    return 0;
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

int e2e_layer_run_graph(pl_ctx *ctx, void *state)
{
    ((e2e_layer *)state)->last_floor = 0;
    PL_CUDA(ctx, cudaGraphLaunch(((e2e_layer *)state)->graph, ctx->stream));
    return 0;
}

int e2e_layer_run_floor(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    const float *src[3] = {(const float *)L->w.block, (const float *)L->kv.k, (const float *)L->kv.v};
    const size_t n[3] = {L->w.bytes / 4, L->pool_elems / 2, L->pool_elems / 2};
    L->last_floor = 1;
    for (int i = 0; i < 3; i++)
        PL_CUDA(ctx, pl_stream_read(src[i], n[i], &read_config, L->read_grid[i], L->read_partial, ctx->stream));
    return 0;
}

int e2e_layer_poison(pl_ctx *ctx, void *state)
{
    e2e_layer *L = state;
    PL_TRY(pl_poison(ctx, L->read_partial, L->read_most * sizeof(float)));
    return pl_poison(ctx, L->out, (size_t)L->rows * L->m->hidden * 2);
}

/* The floor computes nothing to compare: its reads are checked for having run (every block's partial sum written
 * over the poison). */
static int check_floor(pl_ctx *ctx, e2e_layer *L, pl_verification *v)
{
    uint32_t *h = malloc(L->read_most * sizeof *h);
    if (!h)
        return pl_fail(ctx, "out of host memory for the check");
    if (cudaMemcpy(h, L->read_partial, L->read_most * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return pl_fail(ctx, "copying the floor's partial sums back failed");
    }
    size_t unwritten = 0;
    for (unsigned i = 0; i < L->read_most; i++)
        unwritten += h[i] == 0xffffffffu;
    free(h);
    pl_verify_set(v, unwritten == 0, "the floor's reads ran: %zu of %u blocks' partial sums unwritten", unwritten,
                  L->read_most);
    return 0;
}

int e2e_layer_check_output(pl_ctx *ctx, void *state, pl_verification *v)
{
    e2e_layer *L = state;
    if (L->last_floor)
        return check_floor(ctx, L, v);
    const size_t D = L->m->hidden, xn = (size_t)L->rows * D;
    PL_CUDA(ctx, cudaMemcpyAsync(L->out_h, L->out, xn * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verification host, base;
    uint16_t *picked = malloc((size_t)L->ref_n * D * 2);
    if (!picked)
        return pl_fail(ctx, "out of host memory for the check");
    for (int i = 0; i < L->ref_n; i++)
        memcpy(picked + (size_t)i * D, L->out_h + (size_t)L->ref_rows[i] * D, D * 2);
    pl_verify_bf16(picked, L->ref, (size_t)L->ref_n * D, 0, &host);
    free(picked);
    pl_verify_bf16(L->out_h, L->base, xn, 0, &base);
    *v = host.passed && !base.passed ? base : host;
    snprintf(v->message, sizeof v->message,
             "%s; %d rows against the float64 reference: rel L2 %.2e; every row against the baseline: rel L2 %.2e, "
             "%zu NaN/Inf, %zu unwritten",
             host.passed && base.passed ? "ok" : "FAILED", L->ref_n, host.rel_l2_error, base.rel_l2_error,
             base.nonfinite, base.unwritten);
    v->passed = host.passed && base.passed;
    return 0;
}
