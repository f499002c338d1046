/* CUDA-core FP32/FP64 FMA rates and the tensor-core microkernels (mma.sync everywhere, wgmma on sm_90a).
 * Each kernel's output is checked exactly before it is timed: the FMA chains are re-run on the host with the
 * same correctly rounded FMAs, and the MMAs multiply small integers whose sums are exact in fp32. */
#include <math.h>
#include <string.h>

#include "core/util.h"
#include "hw/peak.h"
#include "peak/peak_kernels.h"
#include "perflab/device.h"

typedef struct fma_run {
    int f64;
    int iterations;
    unsigned grid;
    void *out;
} fma_run;

#define FMA_B 0.999f /* x -> x * b + c converges to c / (1 - b) = 1: no overflow, no denormals */
#define FMA_C 0.001f

static int run_fma(pl_ctx *ctx, void *state)
{
    fma_run *r = state;
    if (r->f64)
        PL_CUDA(ctx, pl_fma_f64(r->iterations, r->grid, FMA_B, FMA_C, r->out, ctx->stream));
    else
        PL_CUDA(ctx, pl_fma_f32(r->iterations, r->grid, FMA_B, FMA_C, r->out, ctx->stream));
    return 0;
}

/* Threads whose result is re-computed on the host: the first, one in the middle, the last. */
static int check_fma(pl_ctx *ctx, const fma_run *r, char *why, size_t whylen)
{
    const unsigned threads = r->grid * PL_FMA_BLOCK, picks[3] = {0, threads / 2 + 17, threads - 1};
    PL_TRY(run_fma(ctx, (void *)r));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (int i = 0; i < 3; i++) {
        const unsigned t = picks[i];
        if (r->f64) {
            double got = 0, want = pl_fma_f64_expected(r->iterations, t, FMA_B, FMA_C);
            PL_CUDA(ctx, cudaMemcpy(&got, (double *)r->out + t, sizeof got, cudaMemcpyDeviceToHost));
            if (memcmp(&got, &want, sizeof got) != 0)
                pl_snprintf(why, whylen, "thread %u: %.17g, expected %.17g", t, got, want);
        } else {
            float got = 0, want = pl_fma_f32_expected(r->iterations, t, FMA_B, FMA_C);
            PL_CUDA(ctx, cudaMemcpy(&got, (float *)r->out + t, sizeof got, cudaMemcpyDeviceToHost));
            if (memcmp(&got, &want, sizeof got) != 0)
                pl_snprintf(why, whylen, "thread %u: %.9g, expected %.9g", t, got, want);
        }
    }
    return 0;
}

static int compute_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    pl_ctx *ctx = &g->ctx;
    const unsigned grid = (unsigned)g->dev.sm_count * (2048 / PL_FMA_BLOCK);
    for (int f64 = 0; f64 < 2; f64++) {
        fma_run r = {.f64 = f64, .iterations = f64 ? 4096 : 16384, .grid = grid};
        r.out = pl_device_alloc(ctx, (size_t)grid * PL_FMA_BLOCK * (f64 ? 8 : 4));
        if (!r.out)
            return -1;
        char method[256];
        pl_snprintf(method, sizeof method,
                    "%d independent FMA chains per thread, %u blocks of %d (full occupancy), %d iterations; FMA = 2 "
                    "FLOPs; three threads' results re-computed on the host and compared bit for bit",
                    PL_FMA_CHAINS, grid, PL_FMA_BLOCK, r.iterations);
        json_t *f = pl_peak_figure(f64 ? "fp64_fma" : "fp32_fma", "compute",
                                   f64 ? "FP64 FMA (CUDA cores)" : "FP32 FMA (CUDA cores)", "TFLOP/s", NULL, method,
                                   f64 ? "fp64" : "fp32");
        char why[160] = "";
        pl_stats st;
        if (check_fma(ctx, &r, why, sizeof why) != 0 || (!why[0] && pl_peak_measure(g, run_fma, &r, 0, &st) != 0)) {
            json_decref(f);
            return -1;
        }
        if (why[0])
            pl_peak_set_status(f, "failed", why);
        else
            pl_peak_set_value(f, pl_fma_flops(r.iterations, r.grid) / st.median / 1e9, &st, pl_peak_sm_clock(g));
        pl_hw_emit(c, f);
    }
    return 0;
}

int pl_peak_task_compute(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_COMPUTE, "FP32 and FP64 FMA", compute_figures);
}

/* ---- tensor-core microkernels ---- */

typedef struct mma_run {
    int wgmma;
    const uint16_t *a, *b;
    int iterations;
    unsigned grid;
    float *d;
} mma_run;

static int run_mma(pl_ctx *ctx, void *state)
{
    mma_run *r = state;
    if (r->wgmma)
        PL_CUDA(ctx, pl_wgmma_bf16(r->a, r->b, r->iterations, r->grid, r->d, ctx->stream));
    else
        PL_CUDA(ctx, pl_mma_bf16(r->a, r->b, r->iterations, r->grid, r->d, ctx->stream));
    return 0;
}

/* Random small integers as bf16 (exact): -2, -1, 1, 2. */
static void fill_small(uint16_t *bits, float *values, size_t n, pl_rng *rng)
{
    static const float choices[] = {-2.f, -1.f, 1.f, 2.f};
    for (size_t i = 0; i < n; i++) {
        values[i] = choices[pl_rng_below(rng, 4)];
        bits[i] = pl_bf16_round_host(values[i]);
    }
}

/* One microkernel: inputs, an exact check of D = iterations * A * B^T, then the best of a few grid sizes. */
static int mma_figure(pl_hw_child *c, pl_hw_gpu *g, int wgmma, json_t *f)
{
    const pl_peak_options *o = c->user;
    pl_ctx *ctx = &g->ctx;
    const int m = wgmma ? 64 : 16, n = wgmma ? PL_WGMMA_N : 8, k = 16;
    /* |D| <= 64 x the accumulations summed < 2^24: exact in fp32 */
    const int iterations = wgmma ? 8192 : 16384, sums = wgmma ? iterations : iterations * PL_MMA_ACCS;
    uint16_t *ha = pl_host_alloc(ctx, (size_t)m * k * 2), *hb = pl_host_alloc(ctx, (size_t)n * k * 2);
    float *fa = pl_host_alloc(ctx, (size_t)m * k * 4), *fb = pl_host_alloc(ctx, (size_t)n * k * 4);
    float *got = pl_host_alloc(ctx, (size_t)m * n * 4);
    mma_run r = {.wgmma = wgmma, .iterations = iterations};
    uint16_t *da = pl_device_alloc(ctx, (size_t)m * k * 2), *db = pl_device_alloc(ctx, (size_t)n * k * 2);
    r.d = pl_device_alloc(ctx, (size_t)m * n * 4);
    if (!ha || !hb || !fa || !fb || !got || !da || !db || !r.d)
        return -1;
    r.a = da;
    r.b = db;
    pl_rng rng;
    pl_rng_seed(&rng, ctx->seed + 7);
    fill_small(ha, fa, (size_t)m * k, &rng);
    fill_small(hb, fb, (size_t)n * k, &rng);
    PL_CUDA(ctx, cudaMemcpy(da, ha, (size_t)m * k * 2, cudaMemcpyHostToDevice));
    PL_CUDA(ctx, cudaMemcpy(db, hb, (size_t)n * k * 2, cudaMemcpyHostToDevice));
    PL_TRY(pl_poison(ctx, r.d, (size_t)m * n * 4));
    r.grid = (unsigned)g->dev.sm_count;
    PL_TRY(run_mma(ctx, &r));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    PL_CUDA(ctx, cudaMemcpy(got, r.d, (size_t)m * n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float want = 0;
            for (int kk = 0; kk < k; kk++)
                want += fa[i * k + kk] * fb[j * k + kk];
            want *= (float)sums;
            if (got[i * n + j] != want) {
                char why[160];
                pl_snprintf(why, sizeof why, "D[%d][%d] = %g after %d accumulations, expected %g", i, j, got[i * n + j],
                            sums, want);
                pl_peak_set_status(f, "failed", why);
                return 0;
            }
        }
    /* blocks per SM: enough warps to keep the tensor cores fed, not so many that they queue for nothing */
    static const int per_sm[] = {1, 2, 4};
    double best_ms = INFINITY;
    unsigned best_grid = 0;
    pl_peak_settings(g, o, 1);
    for (size_t i = 0; i < sizeof per_sm / sizeof per_sm[0]; i++) {
        pl_stats st;
        r.grid = (unsigned)(g->dev.sm_count * per_sm[i]);
        PL_TRY(pl_peak_measure(g, run_mma, &r, 0, &st));
        if (st.median < best_ms) {
            best_ms = st.median;
            best_grid = r.grid;
        }
    }
    r.grid = best_grid;
    pl_peak_settings(g, o, 0);
    pl_stats st;
    PL_TRY(pl_peak_measure(g, run_mma, &r, 0, &st));
    double flops = wgmma ? pl_wgmma_bf16_flops(iterations, r.grid) : pl_mma_bf16_flops(iterations, r.grid);
    char config[96];
    pl_snprintf(config, sizeof config, "%u blocks (%u per SM), %d iterations", r.grid, r.grid / g->dev.sm_count,
                iterations);
    json_object_set_new(f, "config", json_string(config));
    pl_peak_set_value(f, flops / st.median / 1e9, &st, pl_peak_sm_clock(g));
    return 0;
}

static int tensor_micro_figures(pl_hw_child *c, pl_hw_gpu *g)
{
    json_t *f = pl_peak_figure("mma_sync_bf16", "tensor", "BF16 mma.sync m16n8k16 (microkernel)", "TFLOP/s", NULL,
                               "warp-level mma.sync on fixed fragments, 4 independent accumulators per warp, 8 warps "
                               "per block; MMA = 2 FLOPs per multiply-add; result checked exactly (small integers)",
                               "bf16");
    if (mma_figure(c, g, 0, f) != 0) {
        json_decref(f);
        return -1;
    }
    pl_hw_emit(c, f);
    f = pl_peak_figure("wgmma_bf16", "tensor", "BF16 wgmma m64n128k16 (microkernel)", "TFLOP/s", NULL,
                       "warpgroup wgmma.mma_async, A in registers, B in shared memory, one warpgroup per block; "
                       "result checked exactly (small integers)",
                       "bf16");
    if (g->dev.cc_major != 9 || g->dev.cc_minor != 0) {
        pl_peak_set_status(f, "skipped", "wgmma is built for sm_90a and runs on compute capability 9.0 alone");
    } else if (mma_figure(c, g, 1, f) != 0) {
        json_decref(f);
        return -1;
    }
    pl_hw_emit(c, f);
    return 0;
}

int pl_peak_task_tensor_micro(pl_hw_child *c)
{
    return pl_peak_run_group(c, PL_PEAK_TENSOR, "tensor-core microkernels", tensor_micro_figures);
}
