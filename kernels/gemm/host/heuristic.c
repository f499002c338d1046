/* The pick of a native BF16 kernel for a problem (gemm/host/heuristic.h): a measured table first, then a roofline model
 * with wave quantization over every kernel of the table (kernel_table.c), scaled by its error at the measured points
 * near the problem. */
#include "gemm/host/heuristic.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gemm/fp8.h"
#include "gemm/host/kernel_row.h"
#include "gemm/host/splitk.h"

#define LAUNCH_US                3.0 /* a launch and its tail, common to every kernel (does not change the ranking) */
#define TILE_OVERHEAD_US         1.0 /* per tile an SM handles: the cooperative epilogue, or a CTA's pipeline fill */
#define SPLIT_US                 1.0 /* split-K: two cluster barriers and the partials read through DSMEM */
#define FLOP_PER_CLK_SM          4096.0

#define PL_GEMM_PICK_MAX_KERNELS 256 /* the kernel table's rows the pick weighs (it holds a few dozen) */

cudaError_t pl_gemm_gpu_query(pl_gemm_gpu *g)
{
    memset(g, 0, sizeof *g);
    int dev = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&g->clusters, cudaDevAttrClusterLaunch, dev);
    int l2_bytes = 0;
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev);
    g->cc = major * 10 + minor;
    g->l2_mib = pl_gemm_l2_mib(l2_bytes > 0 ? (size_t)l2_bytes : 0);
    return e;
}

int pl_gemm_kernel_runs_on(const pl_gemm_kernel *k, const pl_gemm_gpu *g)
{
    const pl_kernel_needs *n = &k->needs;
    if (n->min_cc && g->cc < n->min_cc)
        return 0;
    if (n->max_cc && g->cc > n->max_cc)
        return 0;
    if ((n->features & PL_KNEED_WGMMA) && g->cc != 90)
        return 0;
    if ((n->features & PL_KNEED_TMA) && g->cc < 90)
        return 0;
    if ((n->features & PL_KNEED_CLUSTERS) && !g->clusters)
        return 0;
    if ((n->features & PL_KNEED_TCGEN05) && g->cc < 100)
        return 0;
    if ((n->features & PL_KNEED_FP8) && g->cc < 89)
        return 0;
    return 1;
}

static long long ceil_div(long long a, long long b)
{
    return (a + b - 1) / b;
}

/* 2·M·N·K padded to whole tiles of k (the work its tensor cores do). */
static double padded_flop(const pl_gemm_kernel *k, const pl_gemm_problem *p)
{
    return 2.0 * (double)ceil_div(p->m, k->tile_m) * k->tile_m * (double)ceil_div(p->n, k->tile_n) * k->tile_n *
           (double)ceil_div(p->k, k->tile_k) * k->tile_k;
}

/* Bytes its CTAs load from L2: every tile reads a tile_m- and a tile_n-row panel of K (bf16, or e4m3 for an FP8
 * kernel). */
static double l2_panel_bytes(const pl_gemm_kernel *k, const pl_gemm_problem *p)
{
    const double tiles = (double)ceil_div(p->m, k->tile_m) * (double)ceil_div(p->n, k->tile_n);
    const double width = (k->needs.features & PL_KNEED_FP8) ? 1.0 : 2.0;
    return tiles * (k->tile_m + k->tile_n) * (double)ceil_div(p->k, k->tile_k) * k->tile_k * width;
}

double pl_gemm_model_us(const pl_gemm_kernel *k, const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    char why[160];
    if (!k->supports(p, why, sizeof why) || g->sms < 1)
        return INFINITY;
    const int fused = p->epi.bias || p->epi.residual || p->epi.gelu;
    const pl_gemm_model *mp = &k->model;
    const long long tiles = ceil_div(p->m, k->tile_m) * ceil_div(p->n, k->tile_n);
    const long long k_steps = ceil_div(p->k, k->tile_k);
    const int kb = (int)k_steps; /* a split-K kernel's k-blocks: 64 K of bf16, 128 of e4m3 (its tile_k) */
    const int split = !(k->flags & PL_GEMM_KERNEL_SPLIT_K)      ? 1
                      : (k->flags & PL_GEMM_KERNEL_SPLIT_WAVES) ? pl_gemm_sk_split_waves(tiles, kb, g->sms)
                      : (k->flags & PL_GEMM_KERNEL_SPLIT_W1)    ? pl_gemm_sk_split_w1(tiles, kb, g->sms)
                      : (k->flags & PL_GEMM_KERNEL_SPLIT_DEEP)  ? pl_gemm_sk_split_deep(tiles, kb, g->sms)
                                                                : pl_gemm_sk_split(tiles, kb, g->sms);
    const long long ctas = tiles * split;
    /* clusters of four fill fewer SMs at once: 30 of them (120 CTAs) on a 132-SM H100 (measured 2026-11-27); the
     * same share is assumed on other GPUs */
    const long long usable = k->cluster_m >= 4 ? (long long)g->sms * 10 / 11 : g->sms;
    const long long per_sm = ceil_div(ctas, usable); /* the busiest SM's tiles (or CTAs), one after another */
    /* an FP8 kernel: e4m3 operands (1 byte) at twice the tensor rate; D is bf16 either way */
    const int fp8 = (k->needs.features & PL_KNEED_FP8) != 0;
    const double tflops =
        (g->tensor_tflops > 0 ? g->tensor_tflops : g->sms * FLOP_PER_CLK_SM * PL_GEMM_MODEL_CLOCK_GHZ / 1e3) *
        (fp8 ? 2.0 : 1.0);
    const double sm_rate = tflops * 1e12 / g->sms * (fused ? mp->fused_eff : mp->eff); /* FLOP/s */
    const double cta_flop = 2.0 * k->tile_m * k->tile_n * k->tile_k * (double)ceil_div(k_steps, split);
    const double compute_us = (double)per_sm * cta_flop / sm_rate * 1e6;

    const double bytes = (fp8 ? 1.0 : 2.0) * ((double)p->m * p->k + (double)p->n * p->k) + 2.0 * (double)p->m * p->n;
    const double busy = ctas < g->sms ? (double)ctas : (double)g->sms;
    const double share = busy / (0.5 * g->sms); /* half the SMs can draw the whole bandwidth */
    const double bw = (g->hbm_gbps > 0 ? g->hbm_gbps : PL_GEMM_MODEL_HBM_GBPS) * 1e9 * (share < 1 ? share : 1);
    const double memory_us = bytes / (bw * mp->mem_eff) * 1e6;

    const double l2_us = l2_panel_bytes(k, p) / (PL_GEMM_MODEL_L2_GBPS * 1e9) * 1e6;
    double bound_us = compute_us > memory_us ? compute_us : memory_us;
    bound_us = l2_us > bound_us ? l2_us : bound_us;

    const double overhead_us =
        TILE_OVERHEAD_US * (double)per_sm / (mp->persistent ? 1 : mp->resident) + (split > 1 ? SPLIT_US : 0.0);
    return LAUNCH_US + bound_us + overhead_us;
}

/* A point measured on a GPU like g (its SM count and L2 size) with p's layout. */
static int point_applies(const pl_gemm_point *q, const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    return q->layout && strcmp(q->layout, pl_gemm_layout_name(p->b_layout)) == 0 && q->sms == g->sms &&
           q->l2_mib == g->l2_mib && q->m > 0 && q->n > 0 && q->k > 0 && q->us > 0;
}

double pl_gemm_model_measured_us(const pl_gemm_kernel *k, const pl_gemm_problem *p, const pl_gemm_gpu *g,
                                 const pl_gemm_point *points, size_t npoints)
{
    const double model = pl_gemm_model_us(k, p, g);
    if (!isfinite(model))
        return model;
    double weights = 0, sum = 0;
    for (size_t i = 0; i < npoints; i++) {
        const pl_gemm_point *q = &points[i];
        if (!q->kernel || strcmp(q->kernel, k->name) != 0 || !point_applies(q, p, g))
            continue;
        /* the model at the point's shape, with p's epilogue and operands */
        pl_gemm_problem at = *p;
        at.m = q->m, at.n = q->n, at.k = q->k;
        const double there = pl_gemm_model_us(k, &at, g);
        if (!isfinite(there) || there <= 0)
            continue;
        const double dm = log2((double)p->m / q->m), dn = log2((double)p->n / q->n), dk = log2((double)p->k / q->k);
        const double w = exp(-(dm * dm + dn * dn + dk * dk) / (2.0 * PL_GEMM_POINTS_SIGMA * PL_GEMM_POINTS_SIGMA));
        weights += w;
        sum += w * log(q->us / there);
    }
    return weights > 0 ? model * exp(sum / weights) : model;
}

/* A kernel the pick may choose: not a teaching rung nor a less accurate option, runs on g, takes p. */
static int eligible(const pl_gemm_kernel *k, const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    char why[160];
    return k && !(k->flags & PL_GEMM_KERNEL_UNSEARCHED) && pl_gemm_kernel_runs_on(k, g) &&
           k->supports(p, why, sizeof why);
}

/* The table's entry nearest p (sum of |log2| ratios), within PL_GEMM_TABLE_MAX_LOG2 in each dimension, among the
 * entries of g's SM count (or any) whose L2 size is l2_mib; -1 if none. */
static long nearest_entry(const pl_gemm_problem *p, const pl_gemm_gpu *g, int l2_mib, const pl_gemm_heuristic_entry *t,
                          size_t n)
{
    long best = -1;
    double best_d = INFINITY;
    const char *layout = pl_gemm_layout_name(p->b_layout);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].layout || strcmp(t[i].layout, layout) != 0 || (t[i].sms && t[i].sms != g->sms) ||
            t[i].l2_mib != l2_mib || t[i].m < 1 || t[i].n < 1 || t[i].k < 1)
            continue;
        const double dm = fabs(log2((double)p->m / t[i].m)), dn = fabs(log2((double)p->n / t[i].n)),
                     dk = fabs(log2((double)p->k / t[i].k));
        if (dm > PL_GEMM_TABLE_MAX_LOG2 || dn > PL_GEMM_TABLE_MAX_LOG2 || dk > PL_GEMM_TABLE_MAX_LOG2)
            continue;
        if (dm + dn + dk < best_d) {
            best_d = dm + dn + dk;
            best = (long)i;
        }
    }
    return best;
}

/* The model's stage of a pick over a table of kernels (at, count): among those eligible for p on g (and, where
 * `takes` is given, that it accepts with ctx), the fastest by the model scaled by the points; among those within
 * PL_GEMM_MODEL_TIE of it, the one that pads the least work (less energy, so a higher clock at the power limit),
 * then the one that moves the fewest bytes from L2, then the table's order. */
static int model_pick(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_kernel *(*at)(size_t), size_t count,
                      int (*takes)(const pl_gemm_kernel *, const void *), const void *ctx, const pl_gemm_point *points,
                      size_t npoints, pl_gemm_pick *out)
{
    double us[PL_GEMM_PICK_MAX_KERNELS], best_us = INFINITY;
    for (size_t i = 0; i < count && i < PL_GEMM_PICK_MAX_KERNELS; i++) {
        const pl_gemm_kernel *k = at(i);
        const int ok = eligible(k, p, g) && (!takes || takes(k, ctx));
        us[i] = ok ? pl_gemm_model_measured_us(k, p, g, points, npoints) : INFINITY;
        best_us = us[i] < best_us ? us[i] : best_us;
    }
    if (!isfinite(best_us)) {
        snprintf(out->why, sizeof out->why, "no enumerated kernel runs on this GPU (cc %d) and takes %dx%dx%d %s",
                 g->cc, p->m, p->n, p->k, pl_gemm_layout_name(p->b_layout));
        return -1;
    }
    double least_work = INFINITY, least_traffic = INFINITY;
    for (size_t i = 0; i < count && i < PL_GEMM_PICK_MAX_KERNELS; i++) {
        const pl_gemm_kernel *k = at(i);
        if (!(us[i] <= best_us * (1 + PL_GEMM_MODEL_TIE)))
            continue;
        const double work = padded_flop(k, p), traffic = l2_panel_bytes(k, p);
        if (work < least_work || (work == least_work && traffic < least_traffic)) {
            least_work = work;
            least_traffic = traffic;
            out->kernel = k;
            out->model_us = us[i];
        }
    }
    snprintf(out->why, sizeof out->why, "model%s: %.1f us (fastest %.1f us)",
             npoints ? ", scaled by the measured points" : "", out->model_us, best_us);
    return 0;
}

size_t pl_gemm_bf16_rank(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_point *points, size_t npoints,
                         const pl_gemm_kernel **kernels, double *us, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < pl_gemm_kernel_count() && i < PL_GEMM_PICK_MAX_KERNELS; i++) {
        const pl_gemm_kernel *k = pl_gemm_kernel_at(i);
        const double t = eligible(k, p, g) ? pl_gemm_model_measured_us(k, p, g, points, npoints) : INFINITY;
        if (!isfinite(t))
            continue;
        size_t j = n < max ? n++ : max; /* insertion into the sorted prefix; past max, only if faster than the last */
        if (j == max && !(t < us[max - 1]))
            continue;
        if (j == max)
            j = max - 1;
        for (; j > 0 && us[j - 1] > t; j--)
            us[j] = us[j - 1], kernels[j] = kernels[j - 1];
        us[j] = t, kernels[j] = k;
    }
    return n;
}

/* An empty pick; -1 with the reason when the problem is not one (ok = 0). */
static int start_pick(pl_gemm_pick *out, int ok, const char *why)
{
    memset(out, 0, sizeof *out);
    out->model_us = NAN;
    if (ok)
        return 0;
    snprintf(out->why, sizeof out->why, "%s", why);
    return -1;
}

int pl_gemm_bf16_pick_measured(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_heuristic_entry *table,
                               size_t n, const pl_gemm_point *points, size_t npoints, pl_gemm_pick *out)
{
    char why[160];
    if (start_pick(out, pl_gemm_problem_valid(p, why, sizeof why), why) != 0)
        return -1;
    /* the entries measured on a GPU like this one (its L2 size), then those of any L2 size */
    for (int tier = 0; tier < 2; tier++) {
        const int l2_mib = tier == 0 ? g->l2_mib : 0;
        if (tier == 0 && l2_mib <= 0)
            continue;
        const long e = nearest_entry(p, g, l2_mib, table, n);
        const pl_gemm_kernel *k = e >= 0 ? pl_gemm_kernel_find(table[e].kernel) : NULL;
        if (eligible(k, p, g)) {
            out->kernel = k;
            out->from_table = 1;
            snprintf(out->why, sizeof out->why, "table: measured best near %dx%dx%d %s%s", table[e].m, table[e].n,
                     table[e].k, table[e].layout, l2_mib ? " on a GPU of this L2 size" : "");
            return 0;
        }
    }
    return model_pick(p, g, pl_gemm_kernel_at, pl_gemm_kernel_count(), NULL, NULL, points, npoints, out);
}

int pl_gemm_bf16_pick_from(const pl_gemm_problem *p, const pl_gemm_gpu *g, const pl_gemm_heuristic_entry *table,
                           size_t n, pl_gemm_pick *out)
{
    return pl_gemm_bf16_pick_measured(p, g, table, n, NULL, 0, out);
}

/* ---- FP8 ---- */

static int fp8_takes(const pl_gemm_kernel *k, const void *ctx)
{
    return pl_gemm_fp8_row_takes(k, ctx);
}

int pl_gemm_fp8_pick(const pl_gemm_fp8_problem *q, const pl_gemm_gpu *g, pl_gemm_pick *out)
{
    char why[160];
    if (start_pick(out, pl_gemm_fp8_supports(q, why, sizeof why), why) != 0)
        return -1;
    /* the rows' own checks see the problem as the tables do: its sizes and pointers, B N×K */
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = q->m, p.n = q->n, p.k = q->k, p.b_layout = PL_GEMM_B_NK;
    p.a = (const uint16_t *)(const void *)q->a, p.b = (const uint16_t *)(const void *)q->b, p.d = q->d;
    return model_pick(&p, g, pl_gemm_fp8_kernel_at, pl_gemm_fp8_kernel_count(), fp8_takes, q, NULL, 0, out);
}

/* ---- the committed pick, remembered ---- */

/* What a pick depends on: the problem's shape, layout, epilogue and operands' 16-byte alignment, and the GPU. */
typedef struct pick_key {
    int m, n, k, layout, epi, aligned;
    int cc, sms, clusters, l2_mib;
    double hbm_gbps, tensor_tflops;
} pick_key;

#define PICK_MEMO 256
static struct {
    pthread_mutex_t lock;
    pick_key key[PICK_MEMO];
    pl_gemm_pick pick[PICK_MEMO];
    int used, next;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

int pl_gemm_problem_epilogue(const pl_gemm_problem *p)
{
    return (p->epi.bias != NULL) | (p->epi.residual != NULL) << 1 | (p->epi.gelu != 0) << 2;
}

int pl_gemm_problem_aligned(const pl_gemm_problem *p)
{
    return (((uintptr_t)p->a | (uintptr_t)p->b | (uintptr_t)p->d | (uintptr_t)p->epi.bias |
             (uintptr_t)p->epi.residual) &
            15) == 0;
}

static pick_key key_of(const pl_gemm_problem *p, const pl_gemm_gpu *g)
{
    pick_key key;
    memset(&key, 0, sizeof key); /* the padding too: keys are compared with memcmp */
    key.m = p->m, key.n = p->n, key.k = p->k, key.layout = (int)p->b_layout;
    key.epi = pl_gemm_problem_epilogue(p);
    key.aligned = pl_gemm_problem_aligned(p);
    key.cc = g->cc, key.sms = g->sms, key.clusters = g->clusters, key.l2_mib = g->l2_mib;
    key.hbm_gbps = g->hbm_gbps, key.tensor_tflops = g->tensor_tflops;
    return key;
}

int pl_gemm_bf16_pick(const pl_gemm_problem *p, const pl_gemm_gpu *g, pl_gemm_pick *out)
{
    double tuned_us = NAN;
    const pl_gemm_kernel *tk = pl_gemm_tuned_kernel(p, g, &tuned_us);
    if (tk && eligible(tk, p, g)) { /* timed on this kind of GPU on this very problem class: before table and model */
        start_pick(out, 1, "");
        out->kernel = tk;
        out->tuned = 1;
        out->model_us = NAN;
        snprintf(out->why, sizeof out->why, "tuned on this GPU: %.1f us", tuned_us);
        return 0;
    }
    const pick_key key = key_of(p, g);
    pthread_mutex_lock(&memo.lock);
    for (int i = 0; i < memo.used; i++)
        if (memcmp(&memo.key[i], &key, sizeof key) == 0) {
            *out = memo.pick[i];
            pthread_mutex_unlock(&memo.lock);
            return 0;
        }
    pthread_mutex_unlock(&memo.lock);
    size_t n, np;
    const pl_gemm_heuristic_entry *t = pl_gemm_heuristic_table(&n);
    const pl_gemm_point *points = pl_gemm_heuristic_points(&np);
    const int rc = pl_gemm_bf16_pick_measured(p, g, t, n, points, np, out);
    if (rc != 0)
        return rc; /* a refusal is not remembered: its reason names the problem */
    pthread_mutex_lock(&memo.lock);
    const int slot = memo.used < PICK_MEMO ? memo.used++ : memo.next++ % PICK_MEMO;
    memo.key[slot] = key;
    memo.pick[slot] = *out;
    pthread_mutex_unlock(&memo.lock);
    return 0;
}
