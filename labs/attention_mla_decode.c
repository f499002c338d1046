/* attention:mla_decode — DeepSeek-style multi-head latent attention at decode: one new query token per sequence,
 * 16-128 query heads all attending to one latent KV head of 576 (the value its first 512), a paged cache of 64-token
 * pages with a block table per sequence, sequences of mixed lengths. A plain fp32 kernel against the tensor-core
 * split-KV kernels (mma.sync, and wgmma on sm_90a), judged by the latent rows read once (memory-bound at 16 heads)
 * and by the FLOPs (compute-bound at 128), beside a read-only stream of the same bytes (the HBM read ceiling of the
 * same process). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "attention/mla.h"
#include "common/attention_host.h"

#define STREAM_Q  51 /* per-buffer seed streams of the inputs */
#define STREAM_KV 52

/* Host-reference budget in multiply-adds: above it the reference covers an evenly spaced subset of the sequences
 * (every head of each), and only those outputs are checked. */
#define MLA_REF_MACS 1.5e9

typedef struct mla_state {
    pl_mla_problem p;
    int max_len, chunk, pages, read_ctas;
    long long tokens;
    int *lens_host, *table_host;
    int ref_stride;          /* sequences b with b % ref_stride == 0 are checked */
    size_t o_elems, checked; /* outputs, and those the reference covers */
    double *ref;             /* [checked] float64, in the order of the checked sequences */
    uint16_t *o_host, *o_checked;
    void *workspace;
    uint32_t *read_xor, read_xor_host;
    int last_was_read;
} mla_state;

static const pl_param_def mla_params[] = {
    PL_INT_PARAM("batch", "64", 1, 65535, "sequences, one new token each", .small_value = "3"),
    PL_INT_PARAM("heads", "128", 1, 4096, "query heads (16-128 in DeepSeek's models; any count, the last block padded)",
                 .small_value = "20"),
    PL_INT_PARAM("kv-len", "8192", 1, 1 << 24, "the longest context (tokens already in the cache)",
                 .small_value = "333"),
    PL_FLOAT_PARAM("len-spread", "0.5", 0, 1,
                   "lengths uniform in [(1 - spread)·kv-len, kv-len]; 0: every sequence kv-len long",
                   .small_value = "1"),
    PL_INT_PARAM("len-seed", "1", 0, 1e15, "seed of the lengths' draw"),
    PL_INT_PARAM("page-size", "64", 1, 4096, "tokens per page (64 in FlashMLA's cache)"),
    PL_INT_PARAM(
        "chunk", "0", 0, 1 << 24,
        "the split kernels' tokens per CTA (a multiple of 64); 0: about four waves of one CTA an SM over the batch"),
    PL_FLOAT_PARAM("scale", "0", 0, 1e6, "softmax scale; 0: 1/sqrt(192), DeepSeek-V3's (128 + 64 query-key dims)"),
    PL_PARAMS_END,
};

static long long mla_total_tokens(const pl_params *p)
{
    return pl_decode_total_tokens((int)pl_param_int(p, "batch"), (int)pl_param_int(p, "kv-len"),
                                  pl_param_float(p, "len-spread"), (uint64_t)pl_param_int(p, "len-seed"));
}

static void mla_counters(const pl_params *p, pl_counters *c)
{
    const double batch = (double)pl_param_int(p, "batch"), h = (double)pl_param_int(p, "heads");
    const double tokens = (double)mla_total_tokens(p);
    c->flops = 2.0 * h * tokens * (PL_MLA_D_QK + PL_MLA_D_V);                   /* q·k over 576, p·v over 512 */
    c->bytes_read = 2.0 * tokens * PL_MLA_D_QK + 2.0 * batch * h * PL_MLA_D_QK; /* each latent row once, Q */
    c->bytes_written = 2.0 * batch * h * PL_MLA_D_V;
    c->elements = batch * h * PL_MLA_D_V;
}

static int mla_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    const int chunk = (int)pl_param_int(params, "chunk"), kv_len = (int)pl_param_int(params, "kv-len");
    if (chunk % 64 != 0)
        return pl_params_refuse(err, errlen, "--chunk %d is not a multiple of 64: use 0 (chosen) or e.g. 1024", chunk);
    if (chunk > 0 && (kv_len + (long long)chunk - 1) / chunk > 65535)
        return pl_params_refuse(err, errlen,
                                "--chunk %d splits --kv-len %d into more than 65535 chunks: use a larger "
                                "chunk or 0",
                                chunk, kv_len);
    if (!gpu)
        return 0;
    /* the cache (the pages rounded up), Q, O and the workspace at the finest split the chooser makes */
    const double tokens = (double)mla_total_tokens(params) +
                          (double)pl_param_int(params, "batch") * (double)pl_param_int(params, "page-size");
    const double rows = (double)pl_param_int(params, "batch") * (double)pl_param_int(params, "heads");
    return pl_check_device_memory(gpu,
                                  2.0 * tokens * PL_MLA_D_QK + rows * (2.0 * PL_MLA_D_QK + 2.0 * PL_MLA_D_V) +
                                      rows * 64.0 * (PL_MLA_D_V + 1) * 4.0,
                                  "pass a smaller --batch, --heads or --kv-len", err, errlen);
}

/* float64 reference of sequence b, every head, into out [heads][512]: two passes over the sequence's latent rows
 * (rows: its len × 576 elements gathered through the block table, as doubles). */
static void mla_reference_seq(const mla_state *s, const uint16_t *q, const double *rows, int b, double *sc, double *out)
{
    const pl_mla_problem *p = &s->p;
    const int len = s->lens_host[b];
    double qd[PL_MLA_D_QK];
    for (int h = 0; h < p->heads; h++) {
        for (int e = 0; e < PL_MLA_D_QK; e++)
            qd[e] = pl_bf16_to_double(q[((size_t)b * p->heads + h) * PL_MLA_D_QK + e]);
        double mx = -INFINITY;
        for (int t = 0; t < len; t++) {
            const double *r = rows + (size_t)t * PL_MLA_D_QK;
            double acc = 0;
            for (int e = 0; e < PL_MLA_D_QK; e++)
                acc += qd[e] * r[e];
            sc[t] = acc * (double)p->scale;
            if (sc[t] > mx)
                mx = sc[t];
        }
        double *o = out + (size_t)h * PL_MLA_D_V, l = 0;
        memset(o, 0, PL_MLA_D_V * sizeof *o);
        for (int t = 0; t < len; t++) {
            const double w = exp(sc[t] - mx), *r = rows + (size_t)t * PL_MLA_D_QK;
            l += w;
            for (int e = 0; e < PL_MLA_D_V; e++)
                o[e] += w * r[e];
        }
        for (int e = 0; e < PL_MLA_D_V; e++)
            o[e] /= l;
    }
}

/* The reference of the checked sequences from the inputs as the GPU holds them (host copies q and kv). */
static int mla_reference(pl_ctx *ctx, mla_state *s, const uint16_t *q, const uint16_t *kv)
{
    const pl_mla_problem *p = &s->p;
    double *rows = malloc((size_t)s->max_len * PL_MLA_D_QK * sizeof *rows);
    double *sc = malloc((size_t)s->max_len * sizeof *sc);
    if (!rows || !sc) {
        free(rows);
        free(sc);
        return pl_fail(ctx, "attention:mla_decode: out of host memory for the reference (%d tokens)", s->max_len);
    }
    size_t at = 0;
    for (int b = 0; b < p->batch; b += s->ref_stride) {
        for (int t = 0; t < s->lens_host[b]; t++) {
            const long long page = s->table_host[(size_t)b * p->max_pages + t / p->page_size];
            const uint16_t *r = kv + ((size_t)page * p->page_size + t % p->page_size) * PL_MLA_D_QK;
            for (int e = 0; e < PL_MLA_D_QK; e++)
                rows[(size_t)t * PL_MLA_D_QK + e] = pl_bf16_to_double(r[e]);
        }
        mla_reference_seq(s, q, rows, b, sc, s->ref + at);
        at += (size_t)p->heads * PL_MLA_D_V;
    }
    free(rows);
    free(sc);
    return 0;
}

/* Lengths, block table and the chunk: a pure function of the parameters and the seed. */
static void mla_shape(pl_ctx *ctx, const pl_params *params, mla_state *s)
{
    pl_mla_problem *p = &s->p;
    p->batch = (int)pl_param_int(params, "batch");
    p->heads = (int)pl_param_int(params, "heads");
    p->page_size = (int)pl_param_int(params, "page-size");
    const int kv_len = (int)pl_param_int(params, "kv-len");
    const double scale = pl_param_float(params, "scale");
    p->scale = scale > 0 ? (float)scale : (float)(1.0 / sqrt(192.0));
    p->max_pages = (kv_len + p->page_size - 1) / p->page_size;
    pl_decode_lengths(p->batch, kv_len, pl_param_float(params, "len-spread"),
                      (uint64_t)pl_param_int(params, "len-seed"), s->lens_host);
    s->max_len = 1;
    s->tokens = 0;
    for (int b = 0; b < p->batch; b++) {
        s->max_len = s->lens_host[b] > s->max_len ? s->lens_host[b] : s->max_len;
        s->tokens += s->lens_host[b];
    }
    s->pages = pl_decode_block_table(p->batch, s->lens_host, p->page_size, p->max_pages, ctx->seed, s->table_host);
    const int chunk = (int)pl_param_int(params, "chunk");
    s->chunk = chunk > 0 ? chunk : pl_mla_decode_chunk(p, s->tokens, s->max_len, ctx->device->sm_count);
    s->read_ctas = 8 * (ctx->device->sm_count > 0 ? ctx->device->sm_count : 1);
    const double macs = (double)s->tokens * p->heads * (PL_MLA_D_QK + PL_MLA_D_V);
    s->ref_stride = macs > MLA_REF_MACS ? (int)ceil(macs / MLA_REF_MACS) : 1;
    if (s->ref_stride > p->batch)
        s->ref_stride = p->batch;
    s->o_elems = (size_t)p->batch * p->heads * PL_MLA_D_V;
    s->checked = (size_t)((p->batch + s->ref_stride - 1) / s->ref_stride) * p->heads * PL_MLA_D_V;
}

static int mla_copy_back(pl_ctx *ctx, const mla_state *s, uint16_t *qh, size_t q_elems, uint16_t *kvh, size_t kv_elems)
{
    PL_CUDA(ctx, cudaMemcpyAsync(qh, s->p.q, q_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(kvh, s->p.kv_cache, kv_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* The float64 reference and the read reference's XOR, from host copies of the inputs as the GPU holds them. */
static int mla_host_side(pl_ctx *ctx, mla_state *s, size_t q_elems, size_t kv_elems)
{
    uint16_t *qh = malloc(q_elems * 2), *kvh = malloc(kv_elems * 2);
    int rc = -1;
    if (!qh || !kvh) {
        pl_fail(ctx, "attention:mla_decode: out of host memory for copies of the inputs (%zu bytes)",
                (q_elems + kv_elems) * 2);
        goto out;
    }
    if (mla_copy_back(ctx, s, qh, q_elems, kvh, kv_elems) != 0 || mla_reference(ctx, s, qh, kvh) != 0)
        goto out;
    /* the read reference covers the first `tokens` latent rows of the pool: the bytes the counters count */
    s->read_xor_host = 0;
    for (size_t i = 0; i + 1 < (size_t)s->tokens * PL_MLA_D_QK; i += 2)
        s->read_xor_host ^= (uint32_t)kvh[i] | (uint32_t)kvh[i + 1] << 16;
    rc = 0;
out:
    free(qh);
    free(kvh);
    return rc;
}

static int mla_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char refused[256];
    if (mla_check_params(params, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "attention:mla_decode: %s", refused);
    mla_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    const int batch = (int)pl_param_int(params, "batch"), kv_len = (int)pl_param_int(params, "kv-len");
    const int page_size = (int)pl_param_int(params, "page-size");
    s->lens_host = pl_host_alloc(ctx, (size_t)batch * sizeof(int));
    s->table_host = pl_host_alloc(ctx, (size_t)batch * ((kv_len + page_size - 1) / page_size) * sizeof(int));
    if (!s->lens_host || !s->table_host)
        return -1;
    mla_shape(ctx, params, s);
    pl_mla_problem *p = &s->p;
    const size_t q_elems = (size_t)p->batch * p->heads * PL_MLA_D_QK;
    const size_t kv_elems = (size_t)s->pages * p->page_size * PL_MLA_D_QK;
    const size_t table_bytes = (size_t)p->batch * p->max_pages * sizeof(int);
    uint16_t *q = pl_device_alloc(ctx, q_elems * 2), *kv = pl_device_alloc(ctx, kv_elems * 2);
    int *table = pl_device_alloc(ctx, table_bytes), *lens = pl_device_alloc(ctx, (size_t)p->batch * sizeof(int));
    p->o = pl_device_alloc(ctx, s->o_elems * 2);
    s->workspace = pl_device_alloc(ctx, pl_mla_decode_workspace_bytes(p, s->max_len, s->chunk));
    s->read_xor = pl_device_alloc(ctx, sizeof *s->read_xor);
    s->ref = pl_host_alloc(ctx, s->checked * sizeof(double));
    s->o_host = pl_host_alloc(ctx, s->o_elems * 2);
    s->o_checked = pl_host_alloc(ctx, s->checked * 2);
    if (!q || !kv || !table || !lens || !p->o || !s->workspace || !s->read_xor || !s->ref || !s->o_host ||
        !s->o_checked)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, q, q_elems, -1.0f, 1.0f, STREAM_Q));
    PL_TRY(pl_fill_uniform_bf16(ctx, kv, kv_elems, -1.0f, 1.0f, STREAM_KV));
    PL_CUDA(ctx, cudaMemcpyAsync(table, s->table_host, table_bytes, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx,
            cudaMemcpyAsync(lens, s->lens_host, (size_t)p->batch * sizeof(int), cudaMemcpyHostToDevice, ctx->stream));
    p->q = q;
    p->kv_cache = kv;
    p->block_table = table;
    p->seq_lens = lens;
    char why[256];
    if (!pl_mla_problem_valid(p, why, sizeof why))
        return pl_fail(ctx, "attention:mla_decode: %s", why);
    PL_TRY(mla_host_side(ctx, s, q_elems, kv_elems));
    *state = s;
    return 0;
}

static int mla_poison(pl_ctx *ctx, void *state)
{
    mla_state *s = state;
    PL_TRY(pl_poison(ctx, s->read_xor, sizeof *s->read_xor));
    return pl_poison(ctx, s->p.o, s->o_elems * 2);
}

static int mla_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    mla_state *s = state;
    if (s->last_was_read) {
        uint32_t x = 0;
        PL_CUDA(ctx, cudaMemcpyAsync(&x, s->read_xor, sizeof x, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        pl_verify_set(v, x == s->read_xor_host, "XOR of the %lld latent rows: 0x%08x, the host's 0x%08x", s->tokens, x,
                      s->read_xor_host);
        return 0;
    }
    PL_CUDA(ctx, cudaMemcpyAsync(s->o_host, s->p.o, s->o_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    const size_t per_seq = (size_t)s->p.heads * PL_MLA_D_V;
    size_t at = 0;
    for (int b = 0; b < s->p.batch; b += s->ref_stride, at += per_seq)
        memcpy(s->o_checked + at, s->o_host + (size_t)b * per_seq, per_seq * 2);
    pl_verify_bf16(s->o_checked, s->ref, s->checked, 0.0, v);
    return 0;
}

static int run_baseline(pl_ctx *ctx, void *state)
{
    mla_state *s = state;
    s->last_was_read = 0;
    PL_CUDA(ctx, pl_mla_decode_baseline(&s->p, ctx->stream));
    return 0;
}

static int run_mma(pl_ctx *ctx, void *state)
{
    mla_state *s = state;
    s->last_was_read = 0;
    PL_CUDA(ctx, pl_mla_decode_mma(&s->p, s->max_len, s->chunk, s->workspace, ctx->stream));
    return 0;
}

static int run_wgmma(pl_ctx *ctx, void *state)
{
    mla_state *s = state;
    s->last_was_read = 0;
    PL_CUDA(ctx, pl_mla_decode_wgmma(&s->p, s->max_len, s->chunk, s->workspace, ctx->stream));
    return 0;
}

/* The read ceiling: the counted latent rows read once, nothing written but one word. */
static int run_read_stream(pl_ctx *ctx, void *state)
{
    mla_state *s = state;
    s->last_was_read = 1;
    PL_CUDA(ctx, pl_mla_read(&s->p, s->tokens, s->read_ctas, s->read_xor, ctx->stream));
    return 0;
}

static const pl_variant mla_variants[] = {
    PL_VARIANT("baseline", run_baseline,
               "one CTA per (sequence, 8 query heads), a warp per head walking every latent row with fp32 FMAs"),
    PL_VARIANT("split_mma", run_mma,
               "the query heads as the M rows of mma.sync m16n8k16 (16/32/64 a CTA), 32-token latent tiles through "
               "a cp.async ring (one tile feeds Q·Kᵀ over 576 and P·V over 512), the sequence split over CTAs and "
               "merged by log-sum-exp",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("split_wgmma", run_wgmma,
               "split_mma's split with 64 heads as the M of wgmma m64n32k16 (S, a warpgroup per 32 tokens) and "
               "m64n256k16 (P·V, a warpgroup per 256 columns) from 128-byte-swizzled shared memory, 64-token tiles "
               "in two cp.async stages",
               .req = {.needs_gpu = 1, .min_cc = 90, .max_cc = 90, .features = PL_FEAT_WGMMA}),
    PL_VARIANT("read_stream", run_read_stream,
               "a read-only XOR of every word of the counted latent rows, a flat 16-byte stream: the read ceiling",
               .flags = PL_VARIANT_REFERENCE, .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANTS_END,
};

const pl_target pl_target_attention_mla_decode = {
    .group = "attention",
    .name = "mla_decode",
    .summary = "DeepSeek-style MLA decode (one 576-wide latent KV head, 16-128 query heads, 64-token pages): fp32 "
               "baseline vs tensor-core split-KV (mma.sync, wgmma), against the HBM read ceiling",
    .req = {.needs_gpu = 1},
    .params = mla_params,
    .variants = mla_variants,
    .counters = mla_counters,
    .setup = mla_setup,
    .poison = mla_poison,
    .check = mla_check,
    .check_params = mla_check_params,
};
