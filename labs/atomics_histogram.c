/* atomics:histogram — n uint32 keys into `bins` counters: one global atomic per key, the same behind warp
 * aggregation, per-block shared-memory bins (privatization), and those behind warp aggregation; against CUB's
 * DeviceHistogram. The input is even or
 * Zipf-skewed (--dist zipf --skew s: bin k drawn with probability ∝ 1/(k+1)^s), where atomics on a few hot bins
 * serialize. Exact check against a host count. */
#include <stdio.h>
#include <string.h>

#include "labs.h"
#include "perflab/perflab.h"
#include "atomics/histogram.h"
#include "atomics/keys.h"
#include "common/zipf.h"

#define INPUT_STREAM_ID 1

typedef struct hist_state {
    size_t n;
    unsigned bins;
    uint32_t *keys, *hist; /* device */
    uint32_t *keys_host;
    int32_t *ref, *hist_host;
    unsigned blocks[4]; /* the resident wave of each shared version (index: pl_hist_version) */
    void *cub_temp;
    size_t cub_bytes;
} hist_state;

static const pl_param_def hist_params[] = {
    PL_INT_PARAM("n", "256m", 1, 2147483647, "keys", .small_value = "1000003"),
    PL_INT_PARAM("bins", "256", 1, PL_HIST_MAX_BINS, "counters (keys are 0..bins-1)", .small_value = "250"),
    PL_CHOICE_PARAM("dist", "uniform", "uniform|zipf",
                    "key distribution: uniform, or zipf (bin k with probability proportional to 1/(k+1)^skew)"),
    PL_FLOAT_PARAM("skew", "1.2", 0, 8,
                   "Zipf exponent of --dist zipf (0: uniform; 1.2 with 256 bins puts 25% of the keys in bin 0)"),
    PL_PARAMS_END,
};

static void hist_counters(const pl_params *p, pl_counters *c)
{
    const double n = (double)pl_param_int(p, "n");
    c->bytes_read = 4.0 * n;
    c->bytes_written = 4.0 * (double)pl_param_int(p, "bins");
    c->elements = n;
}

static int hist_setup(pl_ctx *ctx, const pl_params *p, void **state)
{
    hist_state *s = pl_host_alloc(ctx, sizeof *s);
    if (!s)
        return -1;
    s->n = (size_t)pl_param_int(p, "n");
    s->bins = (unsigned)pl_param_int(p, "bins");
    const int zipf = strcmp(pl_param_str(p, "dist"), "zipf") == 0;
    const double skew = pl_param_float(p, "skew");
    s->keys = pl_device_alloc(ctx, s->n * sizeof(uint32_t));
    s->hist = pl_device_alloc(ctx, s->bins * sizeof(uint32_t));
    s->keys_host = pl_host_alloc(ctx, s->n * sizeof(uint32_t));
    s->ref = pl_host_alloc(ctx, s->bins * sizeof(int32_t));
    s->hist_host = pl_host_alloc(ctx, s->bins * sizeof(int32_t));
    if (!s->keys || !s->hist || !s->keys_host || !s->ref || !s->hist_host)
        return -1;

    /* keys: uniform numbers on the device, mapped in place (through the Zipf CDF when skewed) */
    double *cdf_dev = NULL;
    if (zipf) {
        double *cdf = pl_host_alloc(ctx, s->bins * sizeof(double));
        cdf_dev = pl_device_alloc(ctx, s->bins * sizeof(double));
        if (!cdf || !cdf_dev)
            return -1;
        pl_zipf_cdf(cdf, s->bins, skew);
        PL_CUDA(ctx, cudaMemcpyAsync(cdf_dev, cdf, s->bins * sizeof(double), cudaMemcpyHostToDevice, ctx->stream));
    }
    PL_TRY(pl_fill_uniform_f32(ctx, (float *)s->keys, s->n, 0.0f, 1.0f, INPUT_STREAM_ID));
    PL_CUDA(ctx, pl_keys_from_uniform(s->keys, s->n, s->bins, cdf_dev, ctx->stream));
    PL_CUDA(ctx, cudaMemcpyAsync(s->keys_host, s->keys, s->n * sizeof(uint32_t), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    for (size_t i = 0; i < s->n; i++) {
        if (s->keys_host[i] >= s->bins)
            return pl_fail(ctx, "atomics:histogram: key %zu is %u, outside the %u bins: the input generator is wrong",
                           i, s->keys_host[i], s->bins);
        s->ref[s->keys_host[i]]++;
    }
    unsigned hot = 0;
    for (unsigned k = 1; k < s->bins; k++)
        if (s->ref[k] > s->ref[hot])
            hot = k;
    printf("atomics:histogram: %s keys, the fullest bin (%u) holds %.1f%% of them\n", zipf ? "zipf" : "uniform", hot,
           100.0 * s->ref[hot] / (double)s->n);

    for (int v = PL_HIST_SHARED; v <= PL_HIST_WARP_AGG; v++) {
        int per_sm = 0;
        PL_CUDA(ctx, pl_hist_prepare((pl_hist_version)v, s->bins, &per_sm));
        if (per_sm < 1)
            return pl_fail(ctx, "atomics:histogram: %u bins do not fit in shared memory; pass fewer --bins", s->bins);
        s->blocks[v] = (unsigned)(per_sm * ctx->device->sm_count);
    }
    PL_CUDA(ctx, pl_hist_cub(s->keys, s->n, s->hist, s->bins, NULL, &s->cub_bytes, ctx->stream));
    s->cub_temp = pl_device_alloc(ctx, s->cub_bytes > 0 ? s->cub_bytes : 1);
    if (!s->cub_temp)
        return -1;
    *state = s;
    return 0;
}

static int hist_poison(pl_ctx *ctx, void *state)
{
    hist_state *s = state;
    return pl_poison(ctx, s->hist, s->bins * sizeof(uint32_t));
}

static int hist_check(pl_ctx *ctx, void *state, pl_verification *v)
{
    hist_state *s = state;
    PL_CUDA(ctx,
            cudaMemcpyAsync(s->hist_host, s->hist, s->bins * sizeof(uint32_t), cudaMemcpyDeviceToHost, ctx->stream));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    pl_verify_i32(s->hist_host, s->ref, s->bins, v);
    return 0;
}

static int run_version(pl_ctx *ctx, hist_state *s, pl_hist_version v)
{
    PL_CUDA(ctx, pl_hist_launch(v, s->keys, s->n, s->hist, s->bins, s->blocks[v], ctx->stream));
    return 0;
}

static int run_global(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_HIST_GLOBAL);
}

static int run_global_agg(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_HIST_GLOBAL_AGG);
}

static int run_shared(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_HIST_SHARED);
}

static int run_warp_agg(pl_ctx *ctx, void *state)
{
    return run_version(ctx, state, PL_HIST_WARP_AGG);
}

PL_LAUNCH_RUN(run_cub, hist_state,
              pl_hist_cub(s->keys, s->n, s->hist, s->bins, s->cub_temp, &s->cub_bytes, ctx->stream))

static const pl_variant hist_variants[] = {
    PL_VARIANT("baseline", run_global,
               "one global atomicAdd per key: every increment an L2 atomic, same-bin keys serialized"),
    PL_VARIANT("global_agg", run_global_agg,
               "global atomics behind warp aggregation: __match_any_sync groups equal keys of a warp, one atomic "
               "per group"),
    PL_VARIANT("shared_private", run_shared,
               "per-block bins in shared memory (shared atomics), 16-byte key loads, one global atomic per bin "
               "per block"),
    PL_VARIANT("shared_agg", run_warp_agg,
               "shared bins behind the same warp aggregation: one shared atomic per distinct key per warp"),
    PL_VARIANT("cub", run_cub, "CUB DeviceHistogram::HistogramEven (bins + 1 levels): the library reference",
               .flags = PL_VARIANT_REFERENCE),
    PL_VARIANTS_END,
};

const pl_target pl_target_atomics_histogram = {
    .group = "atomics",
    .name = "histogram",
    .summary = "histogram of n uint32 keys (uniform or Zipf): global atomics vs shared bins vs warp aggregation",
    .req = {.needs_gpu = 1},
    .params = hist_params,
    .variants = hist_variants,
    .counters = hist_counters,
    .setup = hist_setup,
    .poison = hist_poison,
    .check = hist_check,
};
