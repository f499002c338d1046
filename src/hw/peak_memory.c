/* Device memory and on-chip bandwidth. Device memory: read-only, write-only and copy kernels over buffers far
 * larger than L2, each tried in a few configurations (accesses in flight per thread, grid size, cache hints)
 * and the best kept, with cudaMemcpy D2D as the reference a user would compare with; a pointer chase for the
 * load latency. On chip: L2 reads over a working set a quarter of L2's size, shared-memory reads. Every kernel
 * is checked before it is timed (sums against a float64 reduction, written bytes counted on the device). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "hw/datasheet.h"
#include "hw/peak.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"

typedef struct stream_run {
    int op;
    const float *src;
    float *dst;
    size_t n;
    pl_stream_config cfg;
    unsigned grid;
    float *partial;
    float value;
} stream_run;

static int run_stream(pl_ctx *ctx, void *state)
{
    stream_run *s = state;
    switch (s->op) {
    case PL_STREAM_READ: PL_CUDA(ctx, pl_stream_read(s->src, s->n, &s->cfg, s->grid, s->partial, ctx->stream)); break;
    case PL_STREAM_WRITE: PL_CUDA(ctx, pl_stream_write(s->dst, s->n, s->value, &s->cfg, s->grid, ctx->stream)); break;
    default: PL_CUDA(ctx, pl_stream_copy(s->src, s->dst, s->n, &s->cfg, s->grid, ctx->stream)); break;
    }
    return 0;
}

static int run_memcpy(pl_ctx *ctx, void *state)
{
    stream_run *s = state;
    PL_CUDA(ctx, cudaMemcpyAsync(s->dst, s->src, s->n * sizeof(float), cudaMemcpyDeviceToDevice, ctx->stream));
    return 0;
}

/* Shared by every check: the device buffers and the float64 sum of the source. */
typedef struct memory_check {
    double src_sum;
    double *dsum;
    unsigned long long *dcount;
    float *host_partial;
} memory_check;

static int sum_partials(pl_ctx *ctx, const float *partial, unsigned grid, float *host, double *sum)
{
    PL_CUDA(ctx, cudaMemcpyAsync(host, partial, grid * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    *sum = 0;
    for (unsigned b = 0; b < grid; b++)
        *sum += host[b];
    return 0;
}

static int count_mismatches(pl_ctx *ctx, memory_check *mc, const float *a, const float *b, float value, size_t n,
                            unsigned long long *bad)
{
    PL_CUDA(ctx, cudaMemsetAsync(mc->dcount, 0, sizeof *mc->dcount, ctx->stream));
    PL_CUDA(ctx, pl_check_count_mismatches(a, b, value, n, mc->dcount, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(bad, mc->dcount, sizeof *bad, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    return 0;
}

/* Poison, run once, check. 0 with *ok set; -1 on a CUDA error. */
static int check_stream(pl_ctx *ctx, stream_run *s, memory_check *mc, int *ok, char *why, size_t whylen)
{
    unsigned long long bad = 0;
    *ok = 0;
    if (s->op != PL_STREAM_READ)
        PL_TRY(pl_poison(ctx, s->dst, s->n * sizeof(float)));
    PL_TRY(s->op == PL_STREAM_COPY && s->grid == 0 ? run_memcpy(ctx, s) : run_stream(ctx, s));
    if (s->op == PL_STREAM_READ) {
        double sum = 0;
        PL_TRY(sum_partials(ctx, s->partial, s->grid, mc->host_partial, &sum));
        double rel = fabs(sum - mc->src_sum) / mc->src_sum;
        *ok = rel <= 1e-4;
        if (!*ok)
            pl_snprintf(why, whylen, "the read kernel's sum is off by %.2e (relative) from a float64 reduction", rel);
        return 0;
    }
    PL_TRY(count_mismatches(ctx, mc, s->dst, s->op == PL_STREAM_COPY ? s->src : NULL, s->value, s->n, &bad));
    *ok = bad == 0;
    if (!*ok)
        pl_snprintf(why, whylen, "%llu of %zu elements wrong after the %s", bad, s->n,
                    s->op == PL_STREAM_COPY ? "copy" : "write");
    return 0;
}

static const pl_stream_config configs[] = {
    {4, 1, 0}, {8, 1, 0}, {4, 2, 0}, {2, 0, 0}, {4, 0, 0}, {8, 0, 0}, {4, 0, 1}, {8, 0, 1},
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])

static void describe(const pl_stream_config *c, unsigned grid, char *buf, size_t len)
{
    pl_snprintf(buf, len, "%d x 16 B in flight per thread, %u blocks of %d (%s)%s", c->unroll, grid, PL_PEAK_BLOCK,
                c->waves ? (c->waves == 1 ? "one resident wave, grid-stride" : "two resident waves, grid-stride")
                         : "one chunk per thread",
                c->streaming ? ", evict-first hints" : "");
}

/* Try every configuration (checked, then timed briefly), re-time the best with the full settings. */
static int best_stream(pl_hw_child *c, pl_hw_gpu *g, stream_run *s, memory_check *mc, json_t *fig, double bytes)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    json_t *tried = json_array();
    int best = -1;
    double best_ms = INFINITY;
    char why[256] = "";
    for (size_t i = 0; i < N_CONFIGS; i++) {
        stream_run t = *s;
        t.cfg = configs[i];
        unsigned resident = 0;
        PL_CUDA(ctx, pl_stream_resident_blocks(s->op, &t.cfg, &resident));
        t.grid = pl_stream_grid(s->n, &t.cfg, resident);
        int ok = 0;
        PL_TRY(check_stream(ctx, &t, mc, &ok, why, sizeof why));
        char desc[160];
        describe(&t.cfg, t.grid, desc, sizeof desc);
        if (!ok) {
            json_array_append_new(tried, json_pack("{s:s, s:s}", "config", desc, "check", why));
            continue;
        }
        pl_stats st;
        pl_peak_settings(g, o, 1);
        PL_TRY(pl_peak_measure(g, run_stream, &t, 0, &st));
        json_array_append_new(tried, json_pack("{s:s, s:f}", "config", desc, "gbps", bytes / st.median / 1e6));
        if (st.median < best_ms) {
            best_ms = st.median;
            best = (int)i;
            *s = t;
        }
    }
    json_object_set_new(fig, "configurations", tried);
    if (best < 0) {
        pl_peak_set_status(fig, "failed", why);
        return 0;
    }
    pl_stats st;
    pl_peak_settings(g, o, 0);
    PL_TRY(pl_peak_measure(g, run_stream, s, 0, &st));
    char desc[160];
    describe(&s->cfg, s->grid, desc, sizeof desc);
    json_object_set_new(fig, "config", json_string(desc));
    pl_peak_set_value(fig, bytes / st.median / 1e6, &st, pl_peak_sm_clock(g));
    return 0;
}

typedef struct chase_run {
    const unsigned *next;
    size_t n;
    unsigned start;
    int hops;
    unsigned *out;
} chase_run;

/* Each run starts somewhere else: the lines one run visits (hops x 128 B, far less than L2) must not be in L2
 * when a later run comes, or the chase would time L2 hits. */
static int run_chase(pl_ctx *ctx, void *state)
{
    chase_run *r = state;
    PL_CUDA(ctx, pl_chase(r->next, r->start, r->hops, r->out, ctx->stream));
    r->start = (unsigned)((r->start + 7919u * 32u) % r->n);
    return 0;
}

int pl_peak_chase_ns(pl_hw_gpu *g, unsigned *next, size_t n, int hops, double *ns, char *why, size_t whylen)
{
    pl_ctx *ctx = &g->ctx;
    const size_t stride = (4096 + 128) / sizeof(unsigned); /* a new line, page slot and channel every load */
    unsigned *out = pl_device_alloc(ctx, sizeof *out);
    if (!out)
        return -1;
    PL_CUDA(ctx, pl_chase_init(next, n, stride, ctx->stream));
    chase_run r = {next, n, 0, hops, out};
    PL_TRY(run_chase(ctx, &r));
    unsigned end = 0;
    PL_CUDA(ctx, cudaMemcpyAsync(&end, out, sizeof end, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    const unsigned want = (unsigned)(((size_t)hops * stride) % n);
    if (end != want) {
        pl_snprintf(why, whylen, "the chase ended at %u, not %u", end, want);
        *ns = NAN;
        return 0;
    }
    pl_stats st;
    PL_TRY(pl_peak_measure(g, run_chase, &r, 0, &st));
    *ns = st.median * 1e6 / hops;
    return 0;
}

static int memory_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    size_t free_b = 0, total_b = 0;
    PL_CUDA(ctx, cudaMemGetInfo(&free_b, &total_b));
    size_t bytes = o->hbm_bytes;
    while (bytes > (64u << 20) && 2 * bytes > free_b / 2)
        bytes /= 2;
    /* not a multiple of any chunk: the kernels' tails are part of what is checked */
    const size_t n = bytes / sizeof(float) - 13;
    stream_run s = {.n = n, .value = 1.25f};
    memory_check mc;
    memset(&mc, 0, sizeof mc);
    s.src = pl_device_alloc(ctx, n * sizeof(float));
    s.dst = pl_device_alloc(ctx, n * sizeof(float));
    /* one partial sum per block: the largest grid is one chunk of the smallest unroll per block */
    const size_t max_blocks = n / 4 / (2 * PL_PEAK_BLOCK) + 2;
    s.partial = pl_device_alloc(ctx, max_blocks * sizeof(float));
    mc.dsum = pl_device_alloc(ctx, sizeof *mc.dsum);
    mc.dcount = pl_device_alloc(ctx, sizeof *mc.dcount);
    mc.host_partial = pl_host_alloc(ctx, max_blocks * sizeof(float));
    if (!s.src || !s.dst || !s.partial || !mc.dsum || !mc.dcount || !mc.host_partial)
        return -1;
    PL_TRY(pl_fill_uniform_f32(ctx, (float *)s.src, n, 0.5f, 1.5f, 1));
    PL_CUDA(ctx, pl_check_sum_f64(s.src, n, mc.dsum, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(&mc.src_sum, mc.dsum, sizeof mc.src_sum, cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));

    char sizes[96];
    pl_snprintf(sizes, sizeof sizes, "%.0f MiB buffers (%.0fx L2)", (double)n * 4 / 1048576.0,
                (double)n * 4 / (double)g->dev.l2_bytes);
    static const struct {
        int op;
        const char *id, *label, *counted;
        double factor;
    } ops[] = {
        {PL_STREAM_READ, "hbm_read", "device memory read (kernel)", "read", 1},
        {PL_STREAM_WRITE, "hbm_write", "device memory write (kernel)", "written", 1},
        {PL_STREAM_COPY, "hbm_copy", "device memory copy (kernel)", "read+write", 2},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char method[320];
        pl_snprintf(method, sizeof method,
                    "16-byte accesses over %s; best of %zu configurations, each checked first (sums against a "
                    "float64 reduction, every written element compared on the device)",
                    sizes, N_CONFIGS);
        json_t *f = pl_peak_figure(ops[i].id, "memory", ops[i].label, "GB/s", ops[i].counted, method, "memory");
        s.op = ops[i].op;
        if (best_stream(c, g, &s, &mc, f, ops[i].factor * (double)n * sizeof(float)) != 0) {
            json_decref(f);
            return -1;
        }
        pl_hw_emit(c, f);
    }

    char method[256];
    pl_snprintf(method, sizeof method, "cudaMemcpyAsync device to device over %s; checked element by element", sizes);
    json_t *f = pl_peak_figure("hbm_memcpy", "memory", "device memory copy (cudaMemcpy D2D)", "GB/s", "read+write",
                               method, "memory");
    s.op = PL_STREAM_COPY;
    s.grid = 0; /* check_stream: the memcpy */
    int ok = 0;
    char why[256] = "";
    pl_stats st;
    if (check_stream(ctx, &s, &mc, &ok, why, sizeof why) != 0) {
        json_decref(f);
        return -1;
    }
    if (!ok) {
        pl_peak_set_status(f, "failed", why);
    } else if (pl_peak_measure(g, run_memcpy, &s, 0, &st) != 0) {
        json_decref(f);
        return -1;
    } else {
        pl_peak_set_value(f, 2.0 * (double)n * sizeof(float) / st.median / 1e6, &st, pl_peak_sm_clock(g));
    }
    pl_hw_emit(c, f);

    f = pl_peak_figure("hbm_latency", "memory", "device memory load latency", "ns", NULL,
                       "one thread, each 4-byte load (ld.global.cg) at the address the previous one returned, "
                       "4224 B apart: every load misses L2; median time over the loads",
                       NULL);
    double ns = NAN;
    size_t entries = n < 0xFFFFFFFFu ? n : 0xFFFFFFFFu;
    PL_TRY(pl_peak_chase_ns(g, (unsigned *)s.dst, entries, o->quick ? 4000 : 20000, &ns, why, sizeof why));
    if (isnan(ns))
        pl_peak_set_status(f, "failed", why);
    else
        pl_peak_set_value(f, ns, NULL, pl_peak_sm_clock(g));
    pl_hw_emit(c, f);
    return 0;
}

int pl_peak_task_memory(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_MEMORY, "device memory", memory_figures);
}

/* ---- L2 and shared memory ---- */

typedef struct l2_run {
    const float *buf;
    size_t n;
    int passes;
    unsigned grid;
    float *partial;
} l2_run;

static int run_l2(pl_ctx *ctx, void *state)
{
    l2_run *r = state;
    PL_CUDA(ctx, pl_l2_read(r->buf, r->n, r->passes, r->grid, r->partial, ctx->stream));
    return 0;
}

typedef struct smem_run {
    int iterations;
    unsigned grid;
    float *out;
} smem_run;

static int run_smem(pl_ctx *ctx, void *state)
{
    smem_run *r = state;
    PL_CUDA(ctx, pl_smem_read(r->iterations, r->grid, r->out, ctx->stream));
    return 0;
}

static double max_sm_clock_mhz(const pl_hw_gpu *g)
{
    if (g->dev.sm_clock_max_mhz > 0)
        return g->dev.sm_clock_max_mhz;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, g->dev.ordinal) != cudaSuccess)
        return NAN;
    return khz / 1000.0;
}

static int cache_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    pl_ctx *ctx = &g->ctx;

    /* L2: a quarter of it, so that both halves of a partitioned L2 (H100, H200) hold it with room to spare */
    l2_run r = {.n = g->dev.l2_bytes / 4 / 16 * 4, .grid = (unsigned)g->dev.sm_count * 8};
    r.passes = (int)((1u << 30) / (r.n * sizeof(float)));
    float *buf = pl_device_alloc(ctx, r.n * sizeof(float));
    r.partial = pl_device_alloc(ctx, r.grid * sizeof(float));
    float *host = pl_host_alloc(ctx, r.grid * sizeof(float));
    double *dsum = pl_device_alloc(ctx, sizeof *dsum);
    if (!buf || !r.partial || !host || !dsum)
        return -1;
    r.buf = buf;
    PL_TRY(pl_fill_uniform_f32(ctx, buf, r.n, 0.5f, 1.5f, 2));
    PL_CUDA(ctx, pl_check_sum_f64(buf, r.n, dsum, ctx->stream));
    double ref = 0, sum = 0;
    PL_CUDA(ctx, cudaMemcpyAsync(&ref, dsum, sizeof ref, cudaMemcpyDeviceToHost, ctx->stream));
    PL_TRY(run_l2(ctx, &r));
    PL_TRY(sum_partials(ctx, r.partial, r.grid, host, &sum));
    char method[256];
    pl_snprintf(method, sizeof method,
                "%d passes of 16-byte ld.global.cg (L1 bypassed) over %.1f MiB, a quarter of L2; sum checked "
                "against a float64 reduction",
                r.passes, (double)r.n * 4 / 1048576.0);
    json_t *f = pl_peak_figure("l2_read", "cache", "L2 read", "GB/s", "read", method, NULL);
    double rel = fabs(sum - r.passes * ref) / (r.passes * ref);
    if (rel > 1e-4) {
        char why[128];
        pl_snprintf(why, sizeof why, "the L2 kernel's sum is off by %.2e (relative)", rel);
        pl_peak_set_status(f, "failed", why);
    } else {
        pl_stats st;
        PL_TRY(pl_peak_measure(g, run_l2, &r, 0, &st));
        pl_peak_set_value(f, (double)r.passes * r.n * sizeof(float) / st.median / 1e6, &st, pl_peak_sm_clock(g));
    }
    pl_hw_emit(c, f);

    smem_run sr = {.iterations = 1024, .grid = (unsigned)g->dev.sm_count * 2};
    sr.out = pl_device_alloc(ctx, (size_t)sr.grid * PL_SMEM_BLOCK * sizeof(float));
    float *out = pl_host_alloc(ctx, (size_t)sr.grid * PL_SMEM_BLOCK * sizeof(float));
    if (!sr.out || !out)
        return -1;
    PL_TRY(pl_poison(ctx, sr.out, (size_t)sr.grid * PL_SMEM_BLOCK * sizeof(float)));
    PL_TRY(run_smem(ctx, &sr));
    PL_CUDA(ctx, cudaMemcpyAsync(out, sr.out, (size_t)sr.grid * PL_SMEM_BLOCK * sizeof(float), cudaMemcpyDeviceToHost,
                                 ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    f = pl_peak_figure("smem_read", "cache", "shared memory read", "GB/s", "read",
                       "LDS.128, 8 per thread per iteration, conflict-free (a warp reads 512 contiguous bytes); "
                       "2 blocks of 1024 threads per SM; every thread's sum checked exactly",
                       NULL);
    const double clock = max_sm_clock_mhz(g);
    pl_peak_set_reference(f, g->dev.sm_count * PL_SMEM_BYTES_PER_CLOCK_PER_SM * clock * 1e6 / 1e9, PL_SMEM_SOURCE);
    size_t wrong = 0, first_wrong = 0;
    for (size_t i = 0; i < (size_t)sr.grid * PL_SMEM_BLOCK; i++) {
        float want = pl_smem_read_expected(sr.iterations, (unsigned)(i % PL_SMEM_BLOCK));
        if (memcmp(&want, &out[i], sizeof want) != 0 && wrong++ == 0)
            first_wrong = i;
    }
    if (wrong) {
        char why[160];
        pl_snprintf(why, sizeof why, "%zu threads' sums are wrong (first: thread %zu)", wrong, first_wrong);
        pl_peak_set_status(f, "failed", why);
    } else {
        pl_stats st;
        PL_TRY(pl_peak_measure(g, run_smem, &sr, 0, &st));
        pl_peak_set_value(f, pl_smem_read_bytes(sr.iterations, sr.grid) / st.median / 1e6, &st, pl_peak_sm_clock(g));
    }
    pl_hw_emit(c, f);
    return 0;
}

int pl_peak_task_cache(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_CACHE, "L2 and shared memory", cache_figures);
}
