/* Each probe: decide whether the feature can exist here (compute capability, device attributes, this build),
 * then run its tiny kernel on random inputs and check the result exactly on the host. */
#include "hw/probes.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/capabilities.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "probe/probe_kernels.h"

typedef struct probe_out {
    pl_probe_status status;
    double value;
    char detail[512];
} probe_out;

static int set(probe_out *o, pl_probe_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set(probe_out *o, pl_probe_status st, const char *fmt, ...)
{
    o->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->detail, sizeof o->detail, fmt, ap);
    va_end(ap);
    return 0;
}

static int cc_of(const pl_device_info *d)
{
    return d->cc_major * 10 + d->cc_minor;
}

/* A salt for each run, so that a result left over from an earlier launch cannot pass a check. */
static unsigned salt_of(pl_rng *rng)
{
    return (unsigned)pl_rng_next(rng) | 1u;
}

static int probe_clusters(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    const pl_device_info *d = ctx->device;
    if (cc_of(d) < 90 || !d->cluster_launch)
        return set(o, PL_PROBE_NOT_AVAILABLE, "thread-block clusters need compute capability 9.0+; %s is %d.%d",
                   d->name, d->cc_major, d->cc_minor);
    int portable = 0, nonportable = 0;
    PL_CUDA(ctx, pl_probe_cluster_max_size(&portable, &nonportable));
    const int clusters = 4, max_size = 16;
    unsigned *out = pl_device_alloc(ctx, (size_t)max_size * clusters * PL_PROBE_CLUSTER_THREADS * sizeof *out);
    unsigned *host = pl_host_alloc(ctx, (size_t)max_size * clusters * PL_PROBE_CLUSTER_THREADS * sizeof *host);
    if (!out || !host)
        return -1;
    int largest = 0;
    char refused[160] = "";
    for (int size = 2; size <= max_size; size *= 2) {
        const int blocks = size * clusters;
        const unsigned salt = salt_of(rng);
        cudaError_t e = pl_probe_cluster_dsmem(size, blocks, salt, out, ctx->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess) {
            /* a size the hardware refuses is a finding, not a failure; a broken context is */
            if (!pl_hw_context_ok())
                return pl_fail_cuda(ctx, e, "cluster launch", __FILE__, __LINE__);
            pl_snprintf(refused, sizeof refused, "; clusters of %d refused (%s)", size, cudaGetErrorName(e));
            break;
        }
        PL_CUDA(ctx, cudaMemcpy(host, out, (size_t)blocks * PL_PROBE_CLUSTER_THREADS * sizeof *host,
                                cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; b++) {
            const int rank = b % size, neighbour = b - rank + (rank + 1) % size;
            for (int i = 0; i < PL_PROBE_CLUSTER_THREADS; i++) {
                unsigned want = pl_probe_cluster_word(salt, (unsigned)neighbour, (unsigned)i);
                if (host[b * PL_PROBE_CLUSTER_THREADS + i] != want)
                    return set(o, PL_PROBE_FAILED,
                               "clusters of %d launched, but block %d read 0x%08x from its neighbour's shared "
                               "memory word %d, not 0x%08x",
                               size, b, host[b * PL_PROBE_CLUSTER_THREADS + i], i, want);
            }
        }
        largest = size;
    }
    o->value = largest;
    if (largest < 2)
        return set(o, PL_PROBE_FAILED, "no cluster of 2 blocks launched%s", refused);
    return set(o, PL_PROBE_PASSED,
               "clusters of 2..%d blocks launched, each block read its neighbour's shared memory through DSMEM "
               "correctly (occupancy calculator: %d portable, %d non-portable)%s",
               largest, portable, nonportable, refused);
}

static int probe_tma(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    const pl_device_info *d = ctx->device;
    if (cc_of(d) < 90)
        return set(o, PL_PROBE_NOT_AVAILABLE, "TMA (cp.async.bulk.tensor) needs compute capability 9.0+; %s is %d.%d",
                   d->name, d->cc_major, d->cc_minor);
    /* 100 x 77: neither a multiple of the box; the second box sticks out on both sides */
    const int w = 100, h = 77, box = PL_PROBE_TMA_BOX_W * PL_PROBE_TMA_BOX_H;
    const int origins[2][2] = {{32, 16}, {80, 64}};
    float *src = pl_device_alloc(ctx, (size_t)w * h * sizeof(float));
    float *out = pl_device_alloc(ctx, box * sizeof(float));
    float *host = pl_host_alloc(ctx, (size_t)w * h * sizeof(float));
    float *got = pl_host_alloc(ctx, box * sizeof(float));
    if (!src || !out || !host || !got)
        return -1;
    for (int i = 0; i < w * h; i++)
        host[i] = (float)pl_rng_uniform(rng) + 0.5f; /* never zero: zero is what out-of-bounds reads give */
    PL_CUDA(ctx, cudaMemcpy(src, host, (size_t)w * h * sizeof(float), cudaMemcpyHostToDevice));
    for (int t = 0; t < 2; t++) {
        const int x0 = origins[t][0], y0 = origins[t][1];
        PL_TRY(pl_poison(ctx, out, box * sizeof(float)));
        char why[256] = "";
        cudaError_t e = pl_probe_tma_box(src, w, h, x0, y0, out, why, sizeof why, ctx->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(ctx->stream);
        if (e != cudaSuccess) {
            if (!pl_hw_context_ok())
                return pl_fail_cuda(ctx, e, "TMA probe kernel", __FILE__, __LINE__);
            return set(o, PL_PROBE_FAILED, "%s", why[0] ? why : cudaGetErrorString(e));
        }
        PL_CUDA(ctx, cudaMemcpy(got, out, box * sizeof(float), cudaMemcpyDeviceToHost));
        for (int r = 0; r < PL_PROBE_TMA_BOX_H; r++) {
            for (int col = 0; col < PL_PROBE_TMA_BOX_W; col++) {
                const int x = x0 + col, y = y0 + r;
                const float want = x < w && y < h ? host[y * w + x] : 0.0f;
                const float have = got[r * PL_PROBE_TMA_BOX_W + col];
                if (memcmp(&want, &have, sizeof want) != 0)
                    return set(o, PL_PROBE_FAILED, "box at (%d, %d): element (%d, %d) is %g, expected %g%s", x0, y0, x,
                               y, have, want, x < w && y < h ? "" : " (out of bounds: zero fill)");
            }
        }
    }
    return set(o, PL_PROBE_PASSED,
               "cp.async.bulk.tensor.2d of a %dx%d fp32 box completed on an mbarrier: exact, with zero fill past "
               "the edges of a %dx%d matrix",
               PL_PROBE_TMA_BOX_W, PL_PROBE_TMA_BOX_H, w, h);
}

/* Small integers (never zero) whose products and sums are exact in fp32, so the checks can be exact. */
static float small_int(pl_rng *rng)
{
    static const float values[] = {-2.f, -1.f, 1.f, 2.f};
    return values[pl_rng_below(rng, 4)];
}

static int probe_wgmma(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    const pl_device_info *d = ctx->device;
    if (d->cc_major != 9 || d->cc_minor != 0)
        return set(o, PL_PROBE_NOT_AVAILABLE, "wgmma exists on sm_90a (compute capability 9.0) alone; %s is %d.%d",
                   d->name, d->cc_major, d->cc_minor);
    const int m = 64, n = PL_WGMMA_N, k = 16, iterations = 3;
    uint16_t *a = pl_host_alloc(ctx, (size_t)m * k * 2), *b = pl_host_alloc(ctx, (size_t)n * k * 2);
    float *got = pl_host_alloc(ctx, (size_t)m * n * sizeof(float));
    float *fa = pl_host_alloc(ctx, (size_t)m * k * sizeof(float)), *fb = pl_host_alloc(ctx, (size_t)n * k * 4);
    uint16_t *da = pl_device_alloc(ctx, (size_t)m * k * 2), *db = pl_device_alloc(ctx, (size_t)n * k * 2);
    float *dd = pl_device_alloc(ctx, (size_t)m * n * sizeof(float));
    if (!a || !b || !got || !fa || !fb || !da || !db || !dd)
        return -1;
    for (int i = 0; i < m * k; i++)
        a[i] = pl_bf16_round_host(fa[i] = small_int(rng));
    for (int i = 0; i < n * k; i++)
        b[i] = pl_bf16_round_host(fb[i] = small_int(rng));
    PL_CUDA(ctx, cudaMemcpy(da, a, (size_t)m * k * 2, cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(db, b, (size_t)n * k * 2, cudaMemcpyHostToDevice));
    PL_TRY(pl_poison(ctx, dd, (size_t)m * n * sizeof(float)));
    cudaError_t e = pl_wgmma_bf16(da, db, iterations, 1, dd, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        if (!pl_hw_context_ok())
            return pl_fail_cuda(ctx, e, "wgmma probe kernel", __FILE__, __LINE__);
        return set(o, PL_PROBE_FAILED, "the wgmma kernel did not run: %s", cudaGetErrorString(e));
    }
    PL_CUDA(ctx, cudaMemcpy(got, dd, (size_t)m * n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float want = 0.f;
            for (int kk = 0; kk < k; kk++)
                want += fa[i * k + kk] * fb[j * k + kk];
            want *= (float)iterations;
            if (got[i * n + j] != want)
                return set(o, PL_PROBE_FAILED, "wgmma m64n%dk16 bf16: D[%d][%d] = %g, expected %g", n, i, j,
                           got[i * n + j], want);
        }
    return set(o, PL_PROBE_PASSED,
               "wgmma.mma_async m64n%dk16 bf16 -> fp32 (A in registers, B from shared memory), %d accumulations: "
               "exact",
               n, iterations);
}

static int probe_tcgen05(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    const pl_device_info *d = ctx->device;
#ifndef PERFLAB_HAVE_SM100A
    (void)rng;
    return set(o, PL_PROBE_NOT_AVAILABLE, "this build has no sm_100a code (nvcc older than 12.8)");
#else
    if (d->cc_major != 10 || d->cc_minor != 0)
        return set(o, PL_PROBE_NOT_AVAILABLE, "tcgen05 is built for sm_100a (compute capability 10.0); %s is %d.%d",
                   d->name, d->cc_major, d->cc_minor);
    unsigned *out = pl_device_alloc(ctx, PL_PROBE_TCGEN05_THREADS * sizeof *out);
    unsigned *host = pl_host_alloc(ctx, PL_PROBE_TCGEN05_THREADS * sizeof *host);
    if (!out || !host)
        return -1;
    const unsigned salt = salt_of(rng);
    cudaError_t e = pl_probe_tcgen05_tmem(salt, out, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        if (!pl_hw_context_ok())
            return pl_fail_cuda(ctx, e, "tcgen05 probe kernel", __FILE__, __LINE__);
        return set(o, PL_PROBE_FAILED, "the tcgen05 kernel did not run: %s", cudaGetErrorString(e));
    }
    PL_CUDA(ctx, cudaMemcpy(host, out, PL_PROBE_TCGEN05_THREADS * sizeof *host, cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < PL_PROBE_TCGEN05_THREADS; t++)
        if (host[t] != (salt ^ t))
            return set(o, PL_PROBE_FAILED, "thread %u read 0x%08x back from tensor memory, not 0x%08x", t, host[t],
                       salt ^ t);
    return set(o, PL_PROBE_PASSED,
               "tcgen05.alloc of 32 TMEM columns, tcgen05.st/ld round trip over 128 lanes exact, dealloc (the MMA "
               "itself is not probed)");
#endif
}

/* e4m3 codes of exact small values: 0.5, 1, 1.5, 2, 3 (sign in bit 7). */
static uint8_t e4m3_small(pl_rng *rng, float *value)
{
    static const uint8_t codes[] = {0x30, 0x38, 0x3C, 0x40, 0x44};
    static const float values[] = {0.5f, 1.f, 1.5f, 2.f, 3.f};
    int i = (int)pl_rng_below(rng, 5), negative = (int)pl_rng_below(rng, 2);
    *value = negative ? -values[i] : values[i];
    return (uint8_t)(codes[i] | (negative ? 0x80 : 0));
}

static int probe_fp8(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    const pl_device_info *d = ctx->device;
    if (cc_of(d) < 89)
        return set(o, PL_PROBE_NOT_AVAILABLE, "FP8 tensor cores need compute capability 8.9+; %s is %d.%d", d->name,
                   d->cc_major, d->cc_minor);
    enum { M = 16, N = 8, K = 32 };
    uint8_t a[M * K], b[N * K];
    float fa[M * K], fb[N * K], got[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = e4m3_small(rng, &fa[i]);
    for (int i = 0; i < N * K; i++)
        b[i] = e4m3_small(rng, &fb[i]);
    uint8_t *da = pl_device_alloc(ctx, sizeof a), *db = pl_device_alloc(ctx, sizeof b);
    float *dd = pl_device_alloc(ctx, sizeof got);
    if (!da || !db || !dd)
        return -1;
    PL_CUDA(ctx, cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
    PL_TRY(pl_poison(ctx, dd, sizeof got));
    cudaError_t e = pl_probe_fp8_mma(da, db, dd, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        if (!pl_hw_context_ok())
            return pl_fail_cuda(ctx, e, "FP8 mma probe kernel", __FILE__, __LINE__);
        return set(o, PL_PROBE_FAILED, "the FP8 mma kernel did not run: %s", cudaGetErrorString(e));
    }
    PL_CUDA(ctx, cudaMemcpy(got, dd, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float want = 0.f;
            for (int kk = 0; kk < K; kk++)
                want += fa[i * K + kk] * fb[j * K + kk];
            if (got[i * N + j] != want)
                return set(o, PL_PROBE_FAILED, "mma m16n8k32 e4m3: D[%d][%d] = %g, expected %g", i, j, got[i * N + j],
                           want);
        }
    return set(o, PL_PROBE_PASSED, "mma.sync m16n8k32 e4m3 x e4m3 -> fp32: exact");
}

static int probe_cooperative(pl_ctx *ctx, pl_rng *rng, probe_out *o)
{
    (void)rng;
    int blocks = 0;
    cudaError_t e = pl_probe_cooperative_blocks(&blocks);
    if (e == cudaErrorNotSupported)
        return set(o, PL_PROBE_NOT_AVAILABLE, "the device does not support cooperative launch");
    PL_CUDA(ctx, e);
    unsigned *counter = pl_device_alloc(ctx, sizeof *counter);
    unsigned *out = pl_device_alloc(ctx, (size_t)blocks * sizeof *out);
    unsigned *host = pl_host_alloc(ctx, (size_t)blocks * sizeof *host);
    if (!counter || !out || !host)
        return -1;
    PL_CUDA(ctx, cudaMemset(counter, 0, sizeof *counter));
    PL_TRY(pl_poison(ctx, out, (size_t)blocks * sizeof *out));
    e = pl_probe_cooperative(blocks, counter, out, ctx->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(ctx->stream);
    if (e != cudaSuccess) {
        if (!pl_hw_context_ok())
            return pl_fail_cuda(ctx, e, "cooperative launch", __FILE__, __LINE__);
        return set(o, PL_PROBE_FAILED, "cudaLaunchCooperativeKernel of %d blocks: %s", blocks, cudaGetErrorString(e));
    }
    PL_CUDA(ctx, cudaMemcpy(host, out, (size_t)blocks * sizeof *host, cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        if (host[b] != (unsigned)blocks)
            return set(o, PL_PROBE_FAILED, "block %d saw %u arrivals after grid.sync(), not %d", b, host[b], blocks);
    o->value = blocks;
    return set(o, PL_PROBE_PASSED, "%d co-resident blocks met at grid.sync(): every block saw all %d arrivals", blocks,
               blocks);
}

typedef int (*probe_fn)(pl_ctx *ctx, pl_rng *rng, probe_out *o);

static int run_probe(pl_hw_child *c, const char *name, probe_fn fn)
{
    const pl_probe_options *opt = c->user;
    char why[512];
    double t0 = pl_now_s();
    probe_out o = {.status = PL_PROBE_FAILED, .value = NAN};
    int rc = 0;
    pl_hw_gpu *g = pl_hw_gpu_get(c, opt->device, why, sizeof why);
    if (!g) {
        set(&o, PL_PROBE_FAILED, "cannot use GPU %d: %s", opt->device, why);
    } else {
        pl_rng rng;
        pl_rng_seed(&rng, (uint64_t)pl_now_s() * 1000003u ^ (uint64_t)opt->device);
        g->ctx.error[0] = '\0';
        if (fn(&g->ctx, &rng, &o) != 0) {
            set(&o, PL_PROBE_FAILED, "%s", g->ctx.error);
            rc = pl_hw_context_ok() ? 0 : -1;
        }
        pl_free_all(&g->ctx);
    }
    json_t *m = json_pack("{s:s, s:s, s:s, s:f}", "probe", name, "status", pl_probe_status_name(o.status), "detail",
                          o.detail, "ms", (pl_now_s() - t0) * 1e3);
    if (!isnan(o.value))
        json_object_set_new(m, "value", json_real(o.value));
    pl_hw_emit(c, m);
    return rc;
}

#define PROBE_TASK(name, fn)                                                                                           \
    static int task_##fn(pl_hw_child *c)                                                                               \
    {                                                                                                                  \
        return run_probe(c, name, fn);                                                                                 \
    }
PROBE_TASK("clusters", probe_clusters)
PROBE_TASK("tma", probe_tma)
PROBE_TASK("wgmma", probe_wgmma)
PROBE_TASK("tcgen05", probe_tcgen05)
PROBE_TASK("fp8_mma", probe_fp8)
PROBE_TASK("cooperative_launch", probe_cooperative)

static const pl_hw_task tasks[] = {
    {"clusters", task_probe_clusters}, {"tma", task_probe_tma},     {"wgmma", task_probe_wgmma},
    {"tcgen05", task_probe_tcgen05},   {"fp8_mma", task_probe_fp8}, {"cooperative_launch", task_probe_cooperative},
};

const pl_hw_task *pl_probe_tasks(size_t *count)
{
    *count = sizeof tasks / sizeof tasks[0];
    return tasks;
}
