/* attention:decode_paged — one new query token per sequence against a paged KV cache (a block table per
 * sequence, pages scattered through the pool, sequences of different lengths in one batch, grouped-query
 * attention): one CTA per (sequence, head) against flash-decoding, which splits the KV over CTAs, shares each K/V
 * load among the query heads of a GQA group and combines the chunks. The work is memory-bound: both are judged by
 * K and V read once, against cudaMemcpyAsync moving the same bytes in the same process (the HBM ceiling). */
#include <math.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "attention/attention.h"
#include "attention/kv_fp8.h"
#include "common/attention_host.h"
#include "engine/layer_ops.h"
#include "perflab/device.h"
#include "perflab/stats.h"

#define STREAM_Q      41 /* per-buffer seed streams of the inputs */
#define STREAM_K      42
#define STREAM_V      43
#define STREAM_SPREAD 44 /* --row-spread's exponents */

/* What the check compares after a run: O against the bf16 cache's reference, O against the FP8 cache's, the copy
 * ceiling's destination against its source, or the read ceilings' XOR against the host's. */
typedef enum decode_verdict_kind { CHECK_O, CHECK_O_FP8, CHECK_COPY, CHECK_READ } decode_verdict_kind;

typedef struct decode_state {
    pl_decode_problem p;
    int max_len, chunk, pages;
    int ctas, pages_ctas, rows_ctas, evict_first; /* the balanced kernels' grids, their L2 hint */
    int read_ctas;                                /* the read-only references' grid */
    int rows_warps;                               /* rows_deep's warps a CTA */
    int bulk_ctas;                                /* rows_bulk's grid */
    int read_heads;                               /* read_head_rows' kv heads a CTA */
    int *lens_host;
    size_t o_elems, cache_elems;
    double *ref; /* [batch][heads][head_dim] float64 */
    uint16_t *o_host;
    void *workspace;    /* split_kv's partial results */
    void *bal_ws;       /* balanced_mma's */
    void *pages_ws;     /* balanced_pages' */
    void *rows_ws;      /* rows_deep's */
    void *bulk_ws;      /* rows_bulk's */
    uint16_t *copy_dst; /* cuda_memcpy's destination */
    unsigned long long *diff;
    uint32_t *read_xor;       /* the read references' result */
    uint32_t read_xor_host;   /* every 32-bit word of K and V XORed, from the host's copies */
    decode_verdict_kind last; /* which check the last run needs */
    /* rows_deep_fp8 and rows_frag_fp8: the same caches quantized to e4m3 (a scale per token and kv head row), the
     * problem over them, their grids and workspaces, and the float64 reference over the FP8 cache's values */
    pl_decode_problem p8;
    int fp8_ctas, frag_ctas;
    void *fp8_ws, *frag_ws;
    double *ref8;
} decode_state;

static const pl_param_def decode_params[] = {
    PL_INT_PARAM("batch", "64", 1, 65535, "sequences, one new token each", .small_value = "5"),
    PL_INT_PARAM("heads", "32", 1, 4096, "query heads", .small_value = "8"),
    PL_INT_PARAM("kv-heads", "8", 0, 4096,
                 "key/value heads (divide heads, at most 8 query heads each); 0: as many as heads", .small_value = "2"),
    PL_INT_PARAM("head-dim", "128", 64, 128, "64 or 128"),
    PL_INT_PARAM("kv-len", "8192", 1, 1 << 24, "the longest context (tokens already in the cache)",
                 .small_value = "1000"),
    PL_INT_PARAM("page-size", "16", 8, 4096, "tokens per page (a multiple of 8)"),
    PL_FLOAT_PARAM("len-spread", "0.5", 0, 1,
                   "lengths uniform in [(1 - spread)·kv-len, kv-len]; 0: every sequence kv-len long",
                   .small_value = "1"),
    PL_INT_PARAM("len-seed", "1", 0, 1e15, "seed of the lengths' draw"),
    PL_INT_PARAM("chunk", "0", 0, 1 << 24,
                 "split_kv's tokens per CTA (a multiple of 64); 0: about 32 CTAs an SM over the longest sequence"),
    PL_INT_PARAM("evict-first", "0", 0, 1,
                 "1: balanced_mma's and balanced_pages' K/V loads carry an L2 evict-first hint"),
    PL_INT_PARAM("waves", "1", 1, 64,
                 "the balanced kernels' grid, in multiples of the CTAs the GPU holds at once: 1 persistent (one even "
                 "range each), more: shorter ranges that the hardware hands out as CTAs finish"),
    PL_INT_PARAM("rows-warps", "4", 4, 8,
                 "rows_deep's warps a CTA: 4 (two CTAs an SM, 4 kv heads each) or 8 (one, 8 kv heads)"),
    PL_INT_PARAM("read-heads", "1", 1, 8,
                 "read_head_rows' kv heads a CTA (a divisor of kv-heads): 1 the per-head kernels' pattern, 4 or 8 "
                 "rows_deep's"),
    PL_INT_PARAM("row-spread", "0", 0, 24,
                 "N: every (token, kv head) row of K times 2^k, k uniform in [-N/2, N/2], of V times 2^v, v in [-N, N] "
                 "(rows whose FP8 scales differ: a scale applied to the wrong token fails the check); 0: none"),
    PL_FLOAT_PARAM("scale", "0", 0, 1e6, "softmax scale; 0: 1/sqrt(head_dim)"),
    PL_PARAMS_END,
};

static int kv_heads_of(const pl_params *p)
{
    const int kv = (int)pl_param_int(p, "kv-heads");
    return kv == 0 ? (int)pl_param_int(p, "heads") : kv;
}

static void decode_counters(const pl_params *p, pl_counters *c)
{
    const int batch = (int)pl_param_int(p, "batch");
    const double h = (double)pl_param_int(p, "heads"), d = (double)pl_param_int(p, "head-dim");
    const double kv = (double)kv_heads_of(p);
    const double tokens = (double)pl_decode_total_tokens(
        batch, (int)pl_param_int(p, "kv-len"), pl_param_float(p, "len-spread"), (uint64_t)pl_param_int(p, "len-seed"));
    c->flops = 4.0 * tokens * h * d;                                   /* q·k and p·v per query head and token */
    c->bytes_read = 2.0 * 2.0 * tokens * kv * d + 2.0 * batch * h * d; /* K and V once, Q */
    c->bytes_written = 2.0 * batch * h * d;
    c->elements = batch * h * d;
}

/* The shapes the kernels take, before any work (in the parent, and again by the setup). */
static int decode_check_params(const pl_params *params, const struct pl_gpu_record *gpu, char *err, size_t errlen)
{
    (void)gpu;
    const int head_dim = (int)pl_param_int(params, "head-dim"), heads = (int)pl_param_int(params, "heads");
    const int kv_heads = kv_heads_of(params), page_size = (int)pl_param_int(params, "page-size");
    const int chunk = (int)pl_param_int(params, "chunk"), rows_warps = (int)pl_param_int(params, "rows-warps");
    const int read_heads = (int)pl_param_int(params, "read-heads");
    if (head_dim != 64 && head_dim != 128)
        return pl_params_refuse(err, errlen, "--head-dim %d is not supported: use 64 or 128", head_dim);
    if (heads % kv_heads != 0 || heads / kv_heads > 8)
        return pl_params_refuse(err, errlen,
                                "--heads %d over --kv-heads %d: kv heads must divide the heads, with at most 8 "
                                "query heads each",
                                heads, kv_heads);
    if (page_size % 8 != 0)
        return pl_params_refuse(err, errlen, "--page-size %d is not a multiple of 8: use 16 or 64", page_size);
    if (chunk % 64 != 0)
        return pl_params_refuse(err, errlen, "--chunk %d is not a multiple of 64: use 0 (chosen) or e.g. 1024", chunk);
    if (rows_warps != 4 && rows_warps != 8)
        return pl_params_refuse(err, errlen, "--rows-warps %d: use 4 (two CTAs an SM) or 8 (one)", rows_warps);
    if (kv_heads % read_heads != 0)
        return pl_params_refuse(err, errlen, "--read-heads %d does not divide --kv-heads %d: use a divisor", read_heads,
                                kv_heads);
    return 0;
}

/* --row-spread: each row of `rows` rows of d bf16 at x (device) times 2^k, k uniform in [-n, n] (exact in bf16); the
 * host copy is the context's, freed with it. */
static int spread_rows(pl_ctx *ctx, uint16_t *x, size_t rows, size_t d, int n, pl_rng *rng)
{
    uint16_t *h = pl_host_alloc(ctx, rows * d * 2);
    if (!h)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(h, x, rows * d * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t r = 0; r < rows; r++) {
        const float f = ldexpf(1.0f, (int)pl_rng_below(rng, (uint64_t)(2 * n + 1)) - n);
        for (size_t i = r * d; i < (r + 1) * d; i++) {
            const uint32_t bits = (uint32_t)h[i] << 16;
            float v;
            memcpy(&v, &bits, sizeof v);
            h[i] = pl_bf16_round_host(v * f);
        }
    }
    PL_CUDA(ctx, cudaMemcpyAsync(x, h, rows * d * 2, cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* The FP8 cache: kc and vc quantized row by row (what the engine's KV write would have stored), the problem over it,
 * rows_deep_fp8's and rows_frag_fp8's grids and workspaces. */
static int fp8_setup(pl_ctx *ctx, decode_state *s, const uint16_t *kc, const uint16_t *vc)
{
    const size_t slots = s->cache_elems / ((size_t)s->p.kv_heads * s->p.head_dim), rows = slots * s->p.kv_heads;
    uint8_t *k8 = pl_device_alloc(ctx, s->cache_elems), *v8 = pl_device_alloc(ctx, s->cache_elems);
    float *ks = pl_device_alloc(ctx, rows * sizeof(float)), *vs = pl_device_alloc(ctx, rows * sizeof(float));
    s->ref8 = pl_host_alloc(ctx, s->o_elems * sizeof(double));
    if (!k8 || !v8 || !ks || !vs || !s->ref8)
        return -1;
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(kc, slots, s->p.kv_heads, s->p.head_dim, k8, ks, ctx->stream));
    PL_CUDA(ctx, pl_engine_kv_quantize_fp8(vc, slots, s->p.kv_heads, s->p.head_dim, v8, vs, ctx->stream));
    s->p8 = s->p;
    s->p8.k_cache = s->p8.v_cache = NULL;
    s->p8.kv_dtype = PL_KV_FP8_E4M3;
    s->p8.k_fp8 = k8;
    s->p8.v_fp8 = v8;
    s->p8.k_scale = ks;
    s->p8.v_scale = vs;
    s->fp8_ctas = pl_decode_rows_fp8_ctas(&s->p8, ctx->device->sm_count);
    s->frag_ctas = pl_decode_rows_frag_fp8_ctas(&s->p8, ctx->device->sm_count);
    if (s->fp8_ctas < 1 || s->frag_ctas < 1)
        return pl_fail(ctx, "attention:decode_paged: no CTA of rows_deep_fp8 or rows_frag_fp8 fits an SM (the "
                            "occupancy query failed)");
    s->fp8_ws = pl_device_alloc(ctx, pl_decode_rows_fp8_workspace_bytes(&s->p8, s->fp8_ctas));
    s->frag_ws = pl_device_alloc(ctx, pl_decode_rows_frag_fp8_workspace_bytes(&s->p8, s->frag_ctas));
    return s->fp8_ws && s->frag_ws ? 0 : -1;
}

/* The float64 reference over the FP8 cache's values (each e4m3 byte times its row's scale, exactly bf16). */
static int fp8_reference(pl_ctx *ctx, decode_state *s, const uint16_t *qh, uint16_t *kh, uint16_t *vh, const int *table)
{
    const size_t rows = s->cache_elems / s->p.head_dim, d = (size_t)s->p.head_dim;
    uint8_t *k8 = pl_host_alloc(ctx, s->cache_elems), *v8 = pl_host_alloc(ctx, s->cache_elems);
    float *ks = pl_host_alloc(ctx, rows * sizeof(float)), *vs = pl_host_alloc(ctx, rows * sizeof(float));
    if (!k8 || !v8 || !ks || !vs)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(k8, s->p8.k_fp8, s->cache_elems, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(v8, s->p8.v_fp8, s->cache_elems, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(ks, s->p8.k_scale, rows * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(vs, s->p8.v_scale, rows * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->cache_elems; i++) { /* the bf16 copies are no longer needed: overwritten */
        kh[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(k8[i]) * ks[i / d]);
        vh[i] = pl_bf16_round_host(pl_kv_e4m3_to_float(v8[i]) * vs[i / d]);
    }
    pl_decode_reference_host(&s->p8, qh, kh, vh, table, s->lens_host, s->ref8);
    return 0;
}

static int decode_setup(pl_ctx *ctx, const pl_params *params, void **state)
{
    char refused[256];
    if (decode_check_params(params, NULL, refused, sizeof refused) != 0)
        return pl_fail(ctx, "attention:decode_paged: %s", refused);
    decode_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    pl_decode_problem *p = &s->p;
    p->batch = (int)pl_param_int(params, "batch");
    p->heads = (int)pl_param_int(params, "heads");
    p->kv_heads = kv_heads_of(params);
    p->head_dim = (int)pl_param_int(params, "head-dim");
    p->page_size = (int)pl_param_int(params, "page-size");
    const int kv_len = (int)pl_param_int(params, "kv-len");
    const double scale = pl_param_float(params, "scale");
    p->scale = scale > 0 ? (float)scale : (float)(1.0 / sqrt((double)p->head_dim));
    p->max_pages = (kv_len + p->page_size - 1) / p->page_size;

    s->lens_host = pl_host_alloc(ctx, (size_t)p->batch * sizeof(int));
    int *table = pl_host_alloc(ctx, (size_t)p->batch * p->max_pages * sizeof(int));
    if (!s->lens_host || !table)
        return -1;
    pl_decode_lengths(p->batch, kv_len, pl_param_float(params, "len-spread"),
                      (uint64_t)pl_param_int(params, "len-seed"), s->lens_host);
    s->max_len = 1;
    for (int b = 0; b < p->batch; b++)
        if (s->lens_host[b] > s->max_len)
            s->max_len = s->lens_host[b];
    s->pages = pl_decode_block_table(p->batch, s->lens_host, p->page_size, p->max_pages, ctx->seed, table);
    s->cache_elems = (size_t)s->pages * p->page_size * p->kv_heads * p->head_dim;
    s->o_elems = (size_t)p->batch * p->heads * p->head_dim;
    const int chunk = (int)pl_param_int(params, "chunk");
    s->chunk = chunk > 0 ? chunk : pl_decode_split_chunk(p, s->max_len, ctx->device->sm_count);
    s->evict_first = (int)pl_param_int(params, "evict-first");
    s->ctas = pl_decode_balanced_ctas(p, ctx->device->sm_count);
    s->pages_ctas = pl_decode_pages_ctas(p, ctx->device->sm_count);
    s->rows_warps = (int)pl_param_int(params, "rows-warps");
    s->read_heads = (int)pl_param_int(params, "read-heads");
    s->rows_ctas = pl_decode_rows_ctas(p, s->rows_warps, ctx->device->sm_count);
    s->bulk_ctas = pl_decode_rows_bulk_ctas(p, ctx->device->sm_count);
    s->read_ctas = 8 * (ctx->device->sm_count > 0 ? ctx->device->sm_count : 1);
    const int waves = (int)pl_param_int(params, "waves");
    s->ctas *= waves;
    s->pages_ctas *= waves;
    s->rows_ctas *= waves;
    s->bulk_ctas *= waves;
    if (s->ctas < 1 || s->pages_ctas < 1 || s->rows_ctas < 1 || s->bulk_ctas < 1)
        return pl_fail(ctx,
                       "attention:decode_paged: no CTA of a balanced kernel (balanced_mma, balanced_pages, rows_deep, "
                       "rows_bulk) fits an SM (the occupancy query failed)");

    uint16_t *q = pl_device_alloc(ctx, s->o_elems * 2), *kc = pl_device_alloc(ctx, s->cache_elems * 2),
             *vc = pl_device_alloc(ctx, s->cache_elems * 2);
    int *table_dev = pl_device_alloc(ctx, (size_t)p->batch * p->max_pages * sizeof(int));
    int *lens_dev = pl_device_alloc(ctx, (size_t)p->batch * sizeof(int));
    p->o = pl_device_alloc(ctx, s->o_elems * 2);
    s->workspace = pl_device_alloc(ctx, pl_decode_split_workspace_bytes(p, s->max_len, s->chunk));
    s->bal_ws = pl_device_alloc(ctx, pl_decode_balanced_workspace_bytes(p, s->ctas));
    s->pages_ws = pl_device_alloc(ctx, pl_decode_pages_workspace_bytes(p, s->pages_ctas));
    s->rows_ws = pl_device_alloc(ctx, pl_decode_rows_workspace_bytes(p, s->rows_warps, s->rows_ctas));
    s->bulk_ws = pl_device_alloc(ctx, pl_decode_rows_bulk_workspace_bytes(p, s->bulk_ctas));
    s->read_xor = pl_device_alloc(ctx, sizeof *s->read_xor);
    s->copy_dst = pl_device_alloc(ctx, s->cache_elems * 2);
    s->diff = pl_device_alloc(ctx, sizeof *s->diff);
    s->ref = pl_host_alloc(ctx, s->o_elems * sizeof(double));
    s->o_host = pl_host_alloc(ctx, s->o_elems * 2);
    if (!q || !kc || !vc || !table_dev || !lens_dev || !p->o || !s->workspace || !s->bal_ws || !s->pages_ws ||
        !s->rows_ws || !s->bulk_ws || !s->read_xor || !s->copy_dst || !s->diff || !s->ref || !s->o_host)
        return -1;
    PL_TRY(pl_fill_uniform_bf16(ctx, q, s->o_elems, -2.0f, 2.0f, STREAM_Q));
    PL_TRY(pl_fill_uniform_bf16(ctx, kc, s->cache_elems, -2.0f, 2.0f, STREAM_K));
    PL_TRY(pl_fill_uniform_bf16(ctx, vc, s->cache_elems, -1.0f, 1.0f, STREAM_V));
    PL_CUDA(ctx, cudaMemcpyAsync(table_dev, table, (size_t)p->batch * p->max_pages * sizeof(int),
                                 cudaMemcpyHostToDevice, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(lens_dev, s->lens_host, (size_t)p->batch * sizeof(int), cudaMemcpyHostToDevice,
                                 ctx->stream));
    p->q = q;
    p->k_cache = kc;
    p->v_cache = vc;
    p->block_table = table_dev;
    p->seq_lens = lens_dev;
    char why[256];
    if (!pl_decode_problem_valid(p, why, sizeof why))
        return pl_fail(ctx, "attention:decode_paged: %s", why);

    const int spread = (int)pl_param_int(params, "row-spread");
    if (spread > 0) {
        pl_rng rng;
        pl_rng_seed(&rng, ctx->seed ^ STREAM_SPREAD);
        const size_t rows = s->cache_elems / p->head_dim;
        PL_TRY(spread_rows(ctx, kc, rows, p->head_dim, spread / 2, &rng));
        PL_TRY(spread_rows(ctx, vc, rows, p->head_dim, spread, &rng));
    }
    PL_TRY(fp8_setup(ctx, s, kc, vc));

    /* the float64 reference from the inputs as the GPU holds them */
    uint16_t *qh = pl_host_alloc(ctx, s->o_elems * 2), *kh = pl_host_alloc(ctx, s->cache_elems * 2),
             *vh = pl_host_alloc(ctx, s->cache_elems * 2);
    if (!qh || !kh || !vh)
        return -1;
    PL_CUDA(ctx, cudaMemcpyAsync(qh, q, s->o_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(kh, kc, s->cache_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(vh, vc, s->cache_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_decode_reference_host(p, qh, kh, vh, table, s->lens_host, s->ref);
    s->read_xor_host = 0;
    for (size_t i = 0; i + 1 < s->cache_elems; i += 2)
        s->read_xor_host ^=
            ((uint32_t)kh[i] | (uint32_t)kh[i + 1] << 16) ^ ((uint32_t)vh[i] | (uint32_t)vh[i + 1] << 16);
    PL_TRY(fp8_reference(ctx, s, qh, kh, vh, table)); /* last: it overwrites kh and vh */
    *state = s;
    return 0;
}

static int decode_poison(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    PL_TRY(pl_poison(ctx, s->p.o, s->o_elems * 2));
    PL_TRY(pl_poison(ctx, s->read_xor, sizeof *s->read_xor));
    return pl_poison(ctx, s->copy_dst, s->cache_elems * 2);
}

static int decode_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    decode_state *s = state;
    if (s->last == CHECK_READ) {
        uint32_t x = 0;
        PL_CUDA(ctx, cudaMemcpyAsync(&x, s->read_xor, sizeof x, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        pl_verify_set(v, x == s->read_xor_host, "XOR of the %zu K and V bytes: 0x%08x, the host's 0x%08x",
                      s->cache_elems * 4, x, s->read_xor_host);
        return 0;
    }
    if (s->last == CHECK_COPY) {
        unsigned long long diff = 0;
        PL_CUDA(ctx, pl_attn_count_diff_u32((const uint32_t *)s->p.k_cache, (const uint32_t *)s->copy_dst,
                                            s->cache_elems / 2, s->diff, ctx->stream));
        PL_CUDA(ctx, cudaMemcpyAsync(&diff, s->diff, sizeof diff, cudaMemcpyDeviceToHost, ctx->stream));
        PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
        pl_verify_set(v, diff == 0, "copy of %zu bytes: %llu words differ", s->cache_elems * 2, diff);
        return 0;
    }
    PL_CUDA(ctx, cudaMemcpyAsync(s->o_host, s->p.o, s->o_elems * 2, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_bf16(s->o_host, s->last == CHECK_O_FP8 ? s->ref8 : s->ref, s->o_elems, 0.0, v);
    return 0;
}

static int run_baseline(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_baseline(&s->p, ctx->stream));
    return 0;
}

static int run_split_kv(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_split_kv(&s->p, s->max_len, s->chunk, s->workspace, ctx->stream));
    return 0;
}

static int run_split_mma(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_split_mma(&s->p, s->max_len, s->chunk, s->workspace, ctx->stream));
    return 0;
}

static int run_balanced_mma(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_balanced_mma(&s->p, s->ctas, s->evict_first, s->bal_ws, ctx->stream));
    return 0;
}

static int run_balanced_pages(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_balanced_pages(&s->p, s->pages_ctas, s->evict_first, s->pages_ws, ctx->stream));
    return 0;
}

static int run_rows_deep(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_rows_deep(&s->p, s->rows_warps, s->rows_ctas, s->evict_first, s->rows_ws, ctx->stream));
    return 0;
}

static int run_rows_bulk(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O;
    PL_CUDA(ctx, pl_decode_rows_bulk(&s->p, s->bulk_ctas, s->evict_first, s->bulk_ws, ctx->stream));
    return 0;
}

static int run_rows_deep_fp8(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O_FP8;
    PL_CUDA(ctx, pl_decode_rows_deep_fp8(&s->p8, s->fp8_ctas, s->evict_first, s->fp8_ws, ctx->stream));
    return 0;
}

static int run_rows_frag_fp8(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_O_FP8;
    PL_CUDA(ctx, pl_decode_rows_frag_fp8(&s->p8, s->frag_ctas, s->evict_first, s->frag_ws, ctx->stream));
    return 0;
}

/* The read ceilings: K and V read once, nothing written (a flat stream; the per-head kernels' row pattern). */
static int run_read(pl_ctx *ctx, decode_state *s, int hb)
{
    s->last = CHECK_READ;
    PL_CUDA(ctx, pl_decode_read(&s->p, s->pages, hb, s->read_ctas, s->read_xor, ctx->stream));
    return 0;
}

static int run_read_stream(pl_ctx *ctx, void *state)
{
    return run_read(ctx, state, 0);
}

static int run_read_head_rows(pl_ctx *ctx, void *state)
{
    return run_read(ctx, state, ((decode_state *)state)->read_heads);
}

/* The HBM ceiling for the same bytes: the K cache copied (K bytes read + K bytes written = the K and V bytes the
 * kernels read). */
static int run_memcpy(pl_ctx *ctx, void *state)
{
    decode_state *s = state;
    s->last = CHECK_COPY;
    PL_CUDA(ctx, cudaMemcpyAsync(s->copy_dst, s->p.k_cache, s->cache_elems * 2, cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

static const pl_variant decode_variants[] = {
    PL_VARIANT("baseline", run_baseline,
               "one CTA per (sequence, query head) walking the whole KV, a token per warp per step"),
    PL_VARIANT("split_kv", run_split_kv,
               "flash-decoding: KV split over CTAs + a combine kernel, the GQA group shares each K/V row, "
               "16-byte cp.async 3-stage pipeline, fp32 FMAs"),
    PL_VARIANT("split_kv_mma", run_split_mma,
               "split_kv with the GQA group as the rows of mma.sync m16n8k16 (FlashAttention-2 on 16 tokens "
               "a warp): ~6x fewer instructions per token",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("balanced_mma", run_balanced_mma,
               "split_kv_mma's tile step on a persistent grid (the CTAs the GPU holds at once), all pairs' "
               "64-token tiles cut into equal ranges (stream-K): one pipeline fill per CTA, no tail wave",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("balanced_pages", run_balanced_pages,
               "balanced_mma's grid, but a CTA of 8 warps computes all the kv heads of a token (one warp each): "
               "each stage is whole contiguous 32 KB pages of K and V instead of 256 B of every 2 KB",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("rows_deep", run_rows_deep,
               "balanced_pages in CTAs of 4 warps, two an SM, each a block of up to 4 kv heads (1 KB contiguous "
               "per token), each stage refilled before the wait for the next (three in flight)",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("rows_bulk", run_rows_bulk,
               "rows_deep (4 warps, 4 kv heads a CTA, early refill) with each stage's token rows copied by one "
               "warp's bulk copies (TMA engine, one per 1 KB row) onto an mbarrier instead of 16-byte cp.async",
               .req = {.needs_gpu = 1, .min_cc = 90, .features = PL_FEAT_TMA}),
    PL_VARIANT("rows_deep_fp8", run_rows_deep_fp8,
               "rows_deep over the same cache in FP8 (e4m3, a power-of-two scale per token and kv head row): half "
               "the K/V bytes, each warp converting its head's rows to bf16 on chip for the same mma step (checked "
               "against the float64 reference over the FP8 values; its GB/s counts the bf16 bytes)",
               .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("rows_frag_fp8", run_rows_frag_fp8,
               "rows_deep_fp8 without the bf16 tile: each lane loads its e4m3 bytes once (16-byte shared loads) and "
               "converts them in registers into f16 mma operands (K's scales on the scores, V's folded into P), one "
               "shared-memory pass instead of three (checked against the float64 reference over the FP8 values; "
               "its GB/s counts the bf16 bytes)",
               .req = {.needs_gpu = 1, .min_cc = 89}),
    PL_VARIANT("cuda_memcpy", run_memcpy,
               "cudaMemcpyAsync device-to-device of the K cache (the same bytes moved): the HBM ceiling",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANT("read_stream", run_read_stream,
               "a read-only XOR of every word of K and V, a flat 16-byte stream: the read ceiling",
               .flags = PL_VARIANT_REFERENCE, .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANT("read_head_rows", run_read_head_rows,
               "the same read in the per-head kernels' pattern (a kv head's 256 B rows of each token): what "
               "the pattern costs the DRAM",
               .flags = PL_VARIANT_REFERENCE, .req = {.needs_gpu = 1, .min_cc = 80}),
    PL_VARIANTS_END,
};

const pl_target pl_target_attention_decode_paged = {
    .group = "attention",
    .name = "decode_paged",
    .summary = "decode attention over a paged KV cache (GQA, mixed lengths): per-head CTAs vs flash-decoding, "
               "against the HBM ceiling",
    .req = {.needs_gpu = 1},
    .params = decode_params,
    .variants = decode_variants,
    .counters = decode_counters,
    .setup = decode_setup,
    .poison = decode_poison,
    .check = decode_check,
    .check_params = decode_check_params,
};
