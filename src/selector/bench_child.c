/* The child of perflab gemm: per shape, operands (rotated over sets larger than 3× L2 for small shapes), the
 * reference, then every configuration of each GPU provider verified and timed through the harness. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/piped_child.h"
#include "core/util.h"
#include "common/gemm_host.h"
#include "common/kernel_req.h"
#include "gemm/fp8.h"
#include "gemm/host/heuristic.h"
#include "gemm/tune.h"
#include "perflab/device.h"
#include "perflab/stats.h"
#include "selector/bench.h"
#include "selector/bench_child.h"

#define LT_WORKSPACE_BYTES (32u << 20) /* what NVIDIA suggests for cuBLASLt on Hopper */
#define MAX_SETS           64
#define HEADROOM_BYTES     (512.0 * 1024 * 1024) /* library workspaces, the L2 flush buffer, fragmentation */

/* N interleaved rounds (--rounds N), or 1: each configuration timed as soon as it is verified. */
int pl_gemm_bench_rounds(const pl_gemm_bench *b)
{
    return b->req->settings->rounds > 1 ? b->req->settings->rounds : 1;
}

static void send_msg(pl_gemm_bench *b, json_t *m)
{
    pl_child_send(b->fd, m);
    json_decref(m);
}

cublasLtHandle_t pl_gemm_bench_lt_handle(pl_gemm_bench *b, void **workspace, size_t *workspace_bytes, int *max_algos)
{
    *workspace = b->lt_ws;
    *workspace_bytes = LT_WORKSPACE_BYTES;
    *max_algos = b->req->max_algos;
    return b->lt;
}

pl_gemm_b_layout pl_gemm_bench_layout(pl_gemm_bench *b)
{
    return b->req->layout;
}

static int bench_init(pl_gemm_bench *b)
{
    pl_ctx *ctx = &b->ctx;
    char err[256];
    ctx->seed = b->req->settings->seed;
    PL_CUDA(ctx, cudaSetDevice(b->req->settings->device));
    PL_CUDA(ctx, cudaGetDeviceCount(&ctx->device_count));
    if (pl_device_info_query(b->req->settings->device, &b->dev, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    ctx->device = &b->dev;
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    PL_CUBLAS(ctx, cublasCreate(&b->cublas));
    PL_CUBLAS(ctx, cublasLtCreate(&b->lt));
    if (!(b->lt_ws = pl_device_alloc(ctx, LT_WORKSPACE_BYTES)))
        return -1;
    PL_TRY(pl_measure_env_init(&b->env, ctx, b->req->settings, 0));
    b->env_ready = 1;
    return 0;
}

/* After a failure: 1 when the context is broken (a sticky error), after clearing a non-sticky one. */
int pl_gemm_bench_context_lost(void)
{
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    (void)cudaGetLastError();
    return 0;
}

int pl_gemm_bench_candidate_run(pl_ctx *ctx, void *state)
{
    pl_gemm_candidate *c = state;
    const pl_gemm_operands *ops = &c->shape->sets[c->next_set];
    c->next_set = (c->next_set + 1) % c->shape->n_sets;
    return c->launch(c, ctx, ops);
}

/* The record's timing from its samples. */
void pl_gemm_bench_record_timing(pl_gemm_record *r, const pl_gemm_shape *sh, const pl_variant_result *vr)
{
    pl_stats st;
    free(r->reason);
    r->reason = NULL;
    if (pl_stats_compute(vr->samples_ms, vr->n_samples, &st) != 0) {
        r->status = PL_GEMM_FAILED;
        r->reason = pl_strdup("no sample was kept (every one throttled?)");
        return;
    }
    r->status = PL_GEMM_OK;
    r->median_ms = st.median;
    r->tflops = 2.0 * (double)sh->m * sh->n * sh->k / (st.median * 1e9);
    r->noise = st.rel_noise;
    r->samples = (long long)st.n;
}

void pl_gemm_bench_record_failure(pl_gemm_record *r, char *reason)
{
    free(r->reason);
    r->reason = reason;
    r->status = PL_GEMM_FAILED;
}

int pl_gemm_bench_evaluate(pl_gemm_bench *b, pl_gemm_candidate *c, const char *provider, const char *kernel,
                           json_t *config, pl_gemm_record_list *out)
{
    pl_gemm_bench_shape *s = c->shape;
    const pl_gemm_shape *sh = s->shape;
    pl_ctx *ctx = &b->ctx;
    pl_gemm_record r;
    memset(&r, 0, sizeof r);
    r.provider = pl_strdup(provider);
    r.shape = pl_strdup(sh->name);
    r.m = sh->m;
    r.n = sh->n;
    r.k = sh->k;
    r.dtype = pl_strdup(b->req->dtype);
    r.layout = pl_strdup(pl_gemm_layout_name(b->req->layout));
    r.kernel = pl_strdup(kernel);
    r.config = config;
    r.median_ms = r.tflops = r.noise = r.rel_l2_error = NAN;
    r.status = PL_GEMM_FAILED;
    ctx->error[0] = '\0';

    int lost = 0, queued = 0;
    double rtol, atol;
    pl_gemm_elementwise_tolerance(s->in_dtype, &rtol, &atol);
    const double tol = s->in_dtype == PL_DTYPE_FP8 ? pl_default_tolerance(PL_DTYPE_FP8) : 0.0;
    pl_verification v;
    c->next_set = 0;
    if (pl_poison(ctx, s->sets[0].d, (size_t)sh->m * sh->n * 2) != 0 || pl_gemm_bench_candidate_run(ctx, c) != 0 ||
        cudaStreamSynchronize(ctx->stream) != cudaSuccess || cudaGetLastError() != cudaSuccess) {
        r.reason = pl_strfmt("run failed: %s", ctx->error[0] ? ctx->error : "a CUDA error while it ran");
        lost = pl_gemm_bench_context_lost();
    } else if (pl_gemm_verify(ctx, &s->ref, s->sets[0].d, s->out_dtype, tol, rtol, atol, &v) != 0) {
        r.reason = pl_strfmt("verification could not run: %s", ctx->error);
        lost = pl_gemm_bench_context_lost();
    } else if (!v.passed) {
        r.rel_l2_error = v.rel_l2_error;
        r.reason = pl_strfmt("failed verification: %s", v.message);
    } else if (pl_gemm_bench_rounds(b) > 1) { /* timed later, in the shape's rounds */
        r.verified = 1;
        r.rel_l2_error = v.rel_l2_error;
        r.reason = pl_strdup("not timed: the rounds did not run");
        queued = 1;
    } else {
        r.verified = 1;
        r.rel_l2_error = v.rel_l2_error;
        pl_variant var = {.name = kernel, .technique = "", .run = pl_gemm_bench_candidate_run};
        pl_variant_result vr;
        memset(&vr, 0, sizeof vr);
        if (pl_measure_variant(&b->env, &var, c, &vr) != 0) {
            r.reason = pl_strfmt("timing failed: %s", ctx->error);
            lost = pl_gemm_bench_context_lost();
        } else {
            pl_gemm_bench_record_timing(&r, sh, &vr);
        }
        free(vr.samples_ms);
        free(vr.stop_reason);
    }
    pl_gemm_record_list_push(out, &r);
    if (queued) {
        pl_reserve(&b->pend, &b->cap_pend, b->n_pend + 1, sizeof *b->pend);
        pending *p = &b->pend[b->n_pend++];
        memset(p, 0, sizeof *p);
        p->c = *c;
        p->list = out;
        p->index = out->n - 1;
    }
    return lost ? -1 : 0;
}

/* ---- the providers ---- */

static int launch_cublas(pl_gemm_candidate *c, pl_ctx *ctx, const pl_gemm_operands *ops)
{
    const pl_gemm_shape *sh = c->shape->shape;
    const int f16 = c->shape->in_dtype == PL_DTYPE_F16;
    cublasHandle_t h = c->bench->cublas;
    PL_CUBLAS(ctx, cublasSetStream(h, ctx->stream));
    PL_CUBLAS(ctx, pl_gemm_cublas(h, (int)sh->m, (int)sh->n, (int)sh->k, c->bench->req->layout, ops->a, ops->b,
                                  f16 ? CUDA_R_16F : CUDA_R_16BF, ops->d, f16 ? CUDA_R_16F : CUDA_R_16BF));
    return 0;
}

static int launch_native(pl_gemm_candidate *c, pl_ctx *ctx, const pl_gemm_operands *ops)
{
    const pl_gemm_shape *sh = c->shape->shape;
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = (int)sh->m;
    p.n = (int)sh->n;
    p.k = (int)sh->k;
    p.b_layout = c->bench->req->layout;
    p.a = ops->a;
    p.b = ops->b;
    p.d = ops->d;
    PL_CUDA(ctx, c->kernel->launch(&p, ctx->stream));
    return 0;
}

static int run_cublas(pl_gemm_bench *b, pl_gemm_bench_shape *s, pl_gemm_record_list *out, char *why, size_t len)
{
    if (s->in_dtype == PL_DTYPE_FP8) {
        pl_snprintf(why, len, "cublasGemmEx has no FP8 path: use the cublaslt provider");
        return 0;
    }
    pl_gemm_candidate c;
    memset(&c, 0, sizeof c);
    c.bench = b;
    c.shape = s;
    c.launch = launch_cublas;
    json_t *config = json_pack("{s:s, s:s}", "algo", "CUBLAS_GEMM_DEFAULT", "compute", "CUBLAS_COMPUTE_32F");
    return pl_gemm_bench_evaluate(b, &c, "cublas", "cublasGemmEx (default algorithm)", config, out);
}

/* --tune-file: its tuned picks, read once by the measuring process before its first shape. */
static void tune_file_load(const pl_gemm_bench_request *req)
{
    char err[512];
    if (req->tune_file && access(req->tune_file, F_OK) == 0 &&
        pl_gemm_tune_load(req->tune_file, NULL, err, sizeof err) < 0)
        fprintf(stderr, "perflab gemm: %s\n", err);
}

/* --tune: the pick tuned on the device now (gemm/tune.h) and the tune file rewritten (a run cut short keeps what it
 * tuned). A failure is said in the child's log and leaves the model's pick (the configurations are still all timed). */
static void tune_pick(pl_gemm_bench *b, const pl_gemm_problem *p)
{
    char err[512];
    if (!b->req->tune)
        return;
    pl_gemm_tune_result r;
    const cudaError_t e = pl_gemm_bf16_tune(p, b->ctx.stream, NULL, &r);
    if (e != cudaSuccess) {
        fprintf(stderr, "perflab gemm: tuning %dx%dx%d failed: %s\n", p->m, p->n, p->k, cudaGetErrorString(e));
        return;
    }
    fprintf(stderr, "perflab gemm: %dx%dx%d tuned over %d candidates: %s %.1f us (the model's pick %s %.1f us)\n", p->m,
            p->n, p->k, r.timed, r.kernel->name, r.us, r.model_pick ? r.model_pick->name : "-", r.model_pick_us);
    if (b->req->tune_file && pl_gemm_tune_save(b->req->tune_file, err, sizeof err) != 0)
        fprintf(stderr, "perflab gemm: %s\n", err);
}

/* The heuristic's kernel for the shape on this GPU into s->pick: pl_gemm_bf16's, or for fp8 pl_gemm_fp8's with the
 * FP8 table's unit scales (tensor scaling). */
static void heuristic_pick(pl_gemm_bench *b, pl_gemm_bench_shape *s, const pl_gemm_problem *p)
{
    s->pick[0] = '\0';
    if (s->in_dtype != PL_DTYPE_BF16 && s->in_dtype != PL_DTYPE_FP8)
        return;
    pl_gemm_gpu g;
    memset(&g, 0, sizeof g);
    g.cc = b->dev.cc_major * 10 + b->dev.cc_minor;
    g.sms = b->dev.sm_count;
    g.clusters = b->dev.cluster_launch;
    g.l2_mib = pl_gemm_l2_mib(b->dev.l2_bytes);
    pl_gemm_pick pick;
    int rc;
    if (s->in_dtype == PL_DTYPE_FP8) {
        pl_gemm_fp8_problem q;
        memset(&q, 0, sizeof q);
        q.m = p->m, q.n = p->n, q.k = p->k, q.scaling = PL_FP8_SCALING_TENSOR; /* scales NULL: 1 */
        q.a = (const uint8_t *)(const void *)p->a, q.b = (const uint8_t *)(const void *)p->b, q.d = p->d;
        rc = pl_gemm_fp8_pick(&q, &g, &pick);
    } else {
        tune_pick(b, p);
        rc = pl_gemm_bf16_pick(p, &g, &pick);
    }
    if (rc == 0)
        pl_snprintf(s->pick, sizeof s->pick, "%s", pick.kernel->name);
}

static int run_perflab(pl_gemm_bench *b, pl_gemm_bench_shape *s, pl_gemm_record_list *out, char *why, size_t len)
{
    pl_buf reasons = {0};
    if (s->in_dtype != PL_DTYPE_BF16 && s->in_dtype != PL_DTYPE_FP8) {
        pl_snprintf(why, len, "perflab's kernels are bf16 and fp8 only (%s asked for)", b->req->dtype);
        return 0;
    }
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = (int)s->shape->m;
    p.n = (int)s->shape->n;
    p.k = (int)s->shape->k;
    p.b_layout = b->req->layout;
    p.a = s->sets[0].a;
    p.b = s->sets[0].b;
    p.d = s->sets[0].d;
    heuristic_pick(b, s, &p);
    /* the table of the dtype (fp8: the e4m3 kernels', unit scales), the heuristic's pick first, then the others */
    const int fp8 = s->in_dtype == PL_DTYPE_FP8;
    const size_t count = fp8 ? pl_gemm_fp8_kernel_count() : pl_gemm_kernel_count();
    size_t first = 0;
    for (size_t i = 0; s->pick[0] && i < count; i++)
        if (strcmp((fp8 ? pl_gemm_fp8_kernel_at(i) : pl_gemm_kernel_at(i))->name, s->pick) == 0)
            first = i;
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < count; j++) {
        const size_t i = j == 0 ? first : j <= first ? j - 1 : j; /* first, then the rest in table order */
        const pl_gemm_kernel *k = fp8 ? pl_gemm_fp8_kernel_at(i) : pl_gemm_kernel_at(i);
        if (k->flags & PL_GEMM_KERNEL_UNSEARCHED)
            continue;
        const pl_requirements kreq = pl_requirements_of_kernel(k->needs);
        char no[256];
        if (!pl_requirements_met(&kreq, &b->dev, b->ctx.device_count, NULL, no, sizeof no) ||
            !k->supports(&p, no, sizeof no)) {
            pl_buf_printf(&reasons, "%s%s: %s", reasons.len ? "; " : "", k->name, no);
            continue;
        }
        pl_gemm_candidate c;
        memset(&c, 0, sizeof c);
        c.bench = b;
        c.shape = s;
        c.launch = launch_native;
        c.kernel = k;
        char tile[64];
        pl_snprintf(tile, sizeof tile, "%dx%dx%d", k->tile_m, k->tile_n, k->tile_k);
        json_t *config = json_pack("{s:s, s:s, s:i, s:i, s:i}", "rung", k->rung, "tile", tile, "stages", k->stages,
                                   "cluster_m", k->cluster_m, "threads", k->threads);
        if (k->flags & PL_GEMM_KERNEL_SPLIT_K)
            json_object_set_new(config, "split_k", json_string("chosen at launch (gemm/host/splitk.h)"));
        if (k->flags & PL_GEMM_KERNEL_SWAP_AB)
            json_object_set_new(config, "swap_ab", json_true());
        if (strcmp(k->name, s->pick) == 0)
            json_object_set_new(config, "heuristic_pick", json_true());
        rc = pl_gemm_bench_evaluate(b, &c, "perflab", k->name, config, out);
    }
    if (out->n == 0)
        pl_snprintf(why, len, "no native kernel takes this problem (%s)", reasons.data ? reasons.data : "");
    pl_buf_free(&reasons);
    return rc;
}

/* ---- one shape ---- */

static int fill_operand(pl_gemm_bench_shape *s, void *dst, size_t count, uint16_t *scratch, uint64_t stream_id)
{
    pl_ctx *ctx = &s->alloc;
    if (s->in_dtype == PL_DTYPE_BF16)
        return pl_fill_uniform_bf16(ctx, dst, count, -1.0f, 1.0f, stream_id);
    PL_TRY(pl_fill_uniform_bf16(ctx, scratch, count, -1.0f, 1.0f, stream_id));
    if (s->in_dtype == PL_DTYPE_F16)
        PL_CUDA(ctx, pl_convert_bf16_to_f16(scratch, dst, count, ctx->stream));
    else
        PL_CUDA(ctx, pl_convert_bf16_to_e4m3(scratch, dst, count, ctx->stream));
    return 0;
}

/* Operand sets and the reference. */
static int prepare_shape(pl_gemm_bench *b, pl_gemm_bench_shape *s)
{
    pl_ctx *ctx = &s->alloc;
    const pl_gemm_shape *sh = s->shape;
    const size_t m = (size_t)sh->m, n = (size_t)sh->n, k = (size_t)sh->k;
    const size_t es = s->in_dtype == PL_DTYPE_FP8 ? 1 : 2, big = m * k > n * k ? m * k : n * k;
    const double set_bytes = (double)es * (m * k + n * k) + 2.0 * m * n;
    const double l2 = b->dev.l2_bytes ? (double)b->dev.l2_bytes : 50e6;
    const double fixed = 4.0 * m * n + (s->in_dtype == PL_DTYPE_BF16 ? 0.0 : 2.0 * big) +
                         (s->in_dtype == PL_DTYPE_FP8 ? 2.0 * (m * k + n * k) : 0.0) + HEADROOM_BYTES;
    int sets = set_bytes >= 3 * l2 ? 1 : (int)(3 * l2 / set_bytes) + 1;
    if (sets > MAX_SETS)
        sets = MAX_SETS;
    size_t free_b = 0, total_b = 0;
    PL_CUDA(ctx, cudaMemGetInfo(&free_b, &total_b));
    while (sets > 1 && fixed + sets * set_bytes > (double)free_b)
        sets--;
    if (fixed + set_bytes > (double)free_b)
        return pl_fail(ctx, "this shape needs %.1f GB of GPU memory; %.1f GB are free", (fixed + set_bytes) / 1e9,
                       free_b / 1e9);
    s->n_sets = sets;
    s->sets = pl_host_alloc(ctx, sets * sizeof *s->sets);
    uint16_t *scratch = s->in_dtype == PL_DTYPE_BF16 ? NULL : pl_device_alloc(ctx, big * 2);
    if (!s->sets || (s->in_dtype != PL_DTYPE_BF16 && !scratch))
        return -1;
    for (int i = 0; i < sets; i++) {
        pl_gemm_operands *o = &s->sets[i];
        if (!(o->a = pl_device_alloc(ctx, m * k * es)) || !(o->b = pl_device_alloc(ctx, n * k * es)) ||
            !(o->d = pl_device_alloc(ctx, m * n * 2)))
            return -1;
        PL_TRY(fill_operand(s, o->a, m * k, scratch, 100 + 2 * (uint64_t)i));
        PL_TRY(fill_operand(s, o->b, n * k, scratch, 101 + 2 * (uint64_t)i));
    }
    pl_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.m = (int)m;
    p.n = (int)n;
    p.k = (int)k;
    p.b_layout = b->req->layout;
    p.a = s->sets[0].a;
    p.b = s->sets[0].b;
    p.d = s->sets[0].d;
    pl_dtype ref_dtype = s->in_dtype;
    if (s->in_dtype == PL_DTYPE_FP8) { /* the reference multiplies the same values, widened exactly to bf16 */
        uint16_t *a16 = pl_device_alloc(ctx, m * k * 2), *b16 = pl_device_alloc(ctx, n * k * 2);
        if (!a16 || !b16)
            return -1;
        PL_CUDA(ctx, pl_convert_e4m3_to_bf16(s->sets[0].a, a16, m * k, ctx->stream));
        PL_CUDA(ctx, pl_convert_e4m3_to_bf16(s->sets[0].b, b16, n * k, ctx->stream));
        p.a = a16;
        p.b = b16;
        ref_dtype = PL_DTYPE_BF16;
    }
    return pl_gemm_reference_make(ctx, b->cublas, &p, ref_dtype, &s->ref);
}

/* pick: the heuristic's kernel (perflab), or NULL. */
static void send_cell(pl_gemm_bench *b, size_t index, const char *provider, pl_gemm_record_list *records,
                      const char *why, const char *pick)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < records->n; i++)
        json_array_append_new(arr, pl_gemm_record_to_json(&records->items[i]));
    /* with no record at all, the provider could not take the problem; with records, none passed */
    const char *fallback = pl_gemm_status_name(records->n ? PL_GEMM_FAILED : PL_GEMM_UNSUPPORTED);
    json_t *m = json_pack("{s:s, s:I, s:s, s:s, s:s, s:o}", "t", "cell", "i", (json_int_t)index, "provider", provider,
                          "fallback", fallback, "reason", why[0] ? why : "", "records", arr);
    if (pick && *pick) {
        json_object_set_new(m, "pick", json_string(pick));
        if (b->confirmed)
            json_object_set_new(m, "confirm",
                                json_pack("{s:s, s:f, s:f, s:i}", "best", b->confirm_best, "pick_ms",
                                          b->confirm_pick_ms, "best_ms", b->confirm_best_ms, "rounds",
                                          b->confirm_rounds));
    }
    send_msg(b, m);
}

typedef int (*provider_fn)(pl_gemm_bench *, pl_gemm_bench_shape *, pl_gemm_record_list *, char *, size_t);

/* Returns -1 when the context was lost. */
static int run_shape(pl_gemm_bench *b, size_t index)
{
    pl_gemm_bench_shape s;
    memset(&s, 0, sizeof s);
    s.alloc = b->ctx;
    s.alloc.allocs = NULL;
    s.alloc.error[0] = '\0';
    s.shape = &b->req->shapes[index];
    s.in_dtype = (pl_dtype)pl_dtype_from_name(b->req->dtype);
    s.out_dtype = s.in_dtype == PL_DTYPE_F16 ? PL_DTYPE_F16 : PL_DTYPE_BF16;
    const struct {
        int wanted;
        const char *name;
        provider_fn fn;
    } providers[] = {{b->req->cublas, "cublas", run_cublas},
                     {b->req->cublaslt, "cublaslt", pl_gemm_bench_cublaslt},
                     {b->req->perflab, "perflab", run_perflab}};
    pl_gemm_record_list records[3];
    char why[3][512];
    int ran[3] = {0, 0, 0}, rc = 0;
    memset(records, 0, sizeof records);
    memset(why, 0, sizeof why);
    if (prepare_shape(b, &s) != 0) {
        int lost = pl_gemm_bench_context_lost();
        for (size_t p = 0; p < 3; p++) {
            if (!providers[p].wanted)
                continue;
            char failed[700];
            pl_snprintf(failed, sizeof failed, "setting up the shape failed: %s", s.alloc.error);
            json_t *arr = json_array();
            send_msg(b, json_pack("{s:s, s:I, s:s, s:s, s:s, s:o}", "t", "cell", "i", (json_int_t)index, "provider",
                                  providers[p].name, "fallback", "failed", "reason", failed, "records", arr));
        }
        rc = lost ? -1 : 0;
    } else {
        /* one round: each provider's cell as soon as its configurations are timed; N rounds: every configuration
         * verified first, then all timed together, then the cells */
        const int interleaved = pl_gemm_bench_rounds(b) > 1;
        for (size_t p = 0; p < 3 && rc == 0; p++) {
            if (!providers[p].wanted)
                continue;
            rc = providers[p].fn(b, &s, &records[p], why[p], sizeof why[p]);
            ran[p] = 1;
            if (!interleaved)
                send_cell(b, index, providers[p].name, &records[p], why[p], p == 2 ? s.pick : NULL);
        }
        b->confirmed = 0;
        if (interleaved) {
            if (rc == 0)
                rc = pl_gemm_bench_time_in_rounds(b, providers[2].wanted ? &records[2] : NULL, s.pick);
            else
                pl_gemm_bench_abandon_pending(b);
            for (size_t p = 0; p < 3; p++)
                if (ran[p])
                    send_cell(b, index, providers[p].name, &records[p], why[p], p == 2 ? s.pick : NULL);
        }
    }
    for (size_t p = 0; p < 3; p++)
        pl_gemm_record_list_free(&records[p]);
    if (rc == 0)
        cudaStreamSynchronize(b->ctx.stream);
    pl_gemm_bench_lt_release(&s);
    pl_free_all(&s.alloc);
    return rc;
}

void pl_gemm_bench_child(const pl_gemm_bench_request *req, size_t first, int fd)
{
    pl_gemm_bench b;
    memset(&b, 0, sizeof b);
    b.req = req;
    b.fd = fd;
    if (bench_init(&b) != 0) {
        send_msg(&b, json_pack("{s:s, s:s}", "t", "fatal", "reason", b.ctx.error));
        return;
    }
    tune_file_load(req);
    for (size_t i = first; i < req->n_shapes; i++) {
        send_msg(&b, json_pack("{s:s, s:I}", "t", "shape", "i", (json_int_t)i));
        if (run_shape(&b, i) != 0) {
            send_msg(&b, json_pack("{s:s, s:I}", "t", "lost", "i", (json_int_t)i));
            return; /* the context is broken: the parent starts a new process for the next shape */
        }
    }
    free(b.pend);
    pl_measure_env_free(&b.env);
    cublasLtDestroy(b.lt);
    cublasDestroy(b.cublas);
    pl_free_all(&b.ctx);
    send_msg(&b, json_pack("{s:s}", "t", "done"));
}
