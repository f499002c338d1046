/* The serving sweep (serve_bench.h): per rate, the workload, the run through the chosen executor with the energy
 * counter around it, the metrics, and the floor through the same scheduler as the ceiling. */
#include "serve/serve_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exit.h"
#include "core/util.h"
#include "engine/serve_disagg.h"
#include "engine/serve_floor.h"
#include "engine/serve_kv_mover.h"
#include "engine/step_cost.h"
#include "serve/serve_energy.h"
#include "engine/serve_gpu.h"

const char *pl_serve_rate_name(double rate, char *buf, size_t len)
{
    if (!isfinite(rate) || rate <= 0)
        pl_snprintf(buf, len, "inf");
    else
        pl_snprintf(buf, len, "%g", rate);
    return buf;
}

/* The GPU executor with each request's emitted tokens recorded (in emission order; a preempted request's
 * recompute emits its next token, never one it already has). */
typedef struct gpu_exec {
    pl_serve_gpu *g;
    int **tokens; /* NULL: not recorded (warm-up) */
    int *emitted;
    const pl_serve_request *reqs;
} gpu_exec;

static void record_part(gpu_exec *x, const pl_serve_work *w, int token)
{
    if (!w->emits || !x->tokens || token < 0)
        return;
    int r = w->req;
    if (x->emitted[r] < x->reqs[r].output_len)
        x->tokens[r][x->emitted[r]++] = token;
}

static int gpu_exec_step(void *ctx, const pl_serve_step *step, double *seconds)
{
    gpu_exec *x = ctx;
    int rc = pl_serve_gpu_step(x->g, step, seconds);
    if (rc != 0)
        return rc;
    const int *t = pl_serve_gpu_last_tokens(x->g);
    if (!t)
        return 0;
    for (int i = 0; i < step->n_prefill; i++)
        record_part(x, &step->prefill[i], t[i]);
    for (int i = 0; i < step->n_decode; i++)
        record_part(x, &step->decode[i], t[step->n_prefill + i]);
    return 0;
}

static int fail(int code, char *err, size_t errlen, const char *what)
{
    pl_snprintf(err, errlen, "%s", what);
    return code;
}

/* The floor's pool when none is given: the pages the plan leaves at the GPU's memory, else every request at once. */
static int floor_pages(const pl_serve_bench_config *c, int64_t all_pages, pl_serve_bench *out, char *err, size_t errlen)
{
    if (c->gpu_mem_bytes == 0) {
        out->num_pages = all_pages > 0x7fffffff ? 0x7fffffff : (int)all_pages;
        pl_snprintf(out->pages_source, sizeof out->pages_source,
                    "every request's pages at once (no GPU memory given: set --num-pages or --gpu-mem-gib)");
        return 0;
    }
    pl_plan_request req = {.model = c->model,
                           .layers = c->layers,
                           .dtype = c->dtype,
                           .kv_dtype = c->kv_dtype,
                           .page_size = c->sched.page_size,
                           .pages = 0,
                           .max_batch = c->sched.max_num_seqs > 0 ? c->sched.max_num_seqs : 256,
                           .max_tokens = c->sched.max_num_batched_tokens,
                           .max_context = 1,
                           .free_bytes = c->gpu_mem_bytes,
                           .reserve_bytes = 512ull << 20};
    pl_plan plan;
    char why[512];
    if (pl_plan_make(&req, &plan, why, sizeof why) != 0)
        return fail(PL_EXIT_USAGE, err, errlen, why);
    out->num_pages = plan.pages;
    pl_snprintf(out->pages_source, sizeof out->pages_source,
                "as many as fit in %.1f GiB after weights, activations and a 0.5 GiB reserve (engine/memory_plan)",
                (double)c->gpu_mem_bytes / PL_GIB);
    return 0;
}

/* The workload at one rate and a check that every request fits the pool alone. */
static int make_requests(const pl_serve_bench_config *c, double rate, pl_serve_request **reqs, int64_t *all_pages,
                         char *err, size_t errlen)
{
    pl_serve_workload_spec w = c->workload;
    w.request_rate = rate;
    *reqs = pl_xcalloc((size_t)w.num_prompts, sizeof **reqs);
    char why[512];
    if (pl_serve_workload_make(&w, *reqs, why, sizeof why) != 0) {
        free(*reqs);
        *reqs = NULL;
        return fail(PL_EXIT_USAGE, err, errlen, why);
    }
    *all_pages = 0;
    for (int i = 0; i < w.num_prompts; i++)
        *all_pages += ((*reqs)[i].input_len + (*reqs)[i].output_len + c->sched.page_size - 1) / c->sched.page_size;
    return 0;
}

/* One run through ex, or disaggregated through dis (ex unused then), and its metrics. */
static int run_one(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, const pl_serve_executor *ex,
                   const pl_serve_disagg *dis, const pl_serve_slo *slo, pl_serve_run *run, pl_serve_metrics *m,
                   char *err, size_t errlen)
{
    char why[512];
    int rc = dis ? pl_serve_disagg_simulate(reqs, n, cfg, dis, run, why, sizeof why)
                 : pl_serve_simulate(reqs, n, cfg, ex, run, why, sizeof why);
    if (rc != 0) {
        if (rc == -1)
            return fail(PL_EXIT_FAILED, err, errlen, why);
        pl_snprintf(err, errlen, "the executor's step failed (code %d)", rc);
        return PL_EXIT_FAILED;
    }
    if (pl_serve_metrics_compute(run, cfg->num_pages, slo, m) != 0) {
        pl_serve_run_free(run);
        return fail(PL_EXIT_FAILED, err, errlen, "out of host memory computing the metrics");
    }
    return 0;
}

typedef struct sweep {
    const pl_serve_bench_config *c;
    pl_serve_config cfg;
    pl_serve_floor floor;
    pl_serve_executor floor_ex, gpu_ex;
    gpu_exec gx;
    pl_serve_energy meter;
    /* disaggregated: the decode GPU's executor (gx is the prefill GPU's), the KV mover, the floor's link, each
     * executor pair as the scheduler takes it (NULL when not disaggregated) */
    gpu_exec gx2;
    pl_serve_kv_mover *mover;
    pl_serve_link link;
    pl_serve_disagg floor_dis, gpu_dis;
    const pl_serve_disagg *floor_d, *gpu_d;
    pl_serve_energy meter2;
} sweep;

/* Every GPU's energy counter summed (both GPUs of a disaggregated run). 0, or -1 (meter->why says why). */
static int energy_read(sweep *s, double *joules)
{
    double j2 = 0;
    if (pl_serve_energy_read(&s->meter, joules) != 0)
        return -1;
    if (s->c->disaggregate && pl_serve_energy_read(&s->meter2, &j2) != 0) {
        pl_snprintf(s->meter.why, sizeof s->meter.why, "the decode GPU: %s", s->meter2.why);
        s->meter.ok = 0;
        return -1;
    }
    *joules += j2;
    return 0;
}

static void energy_figures(pl_serve_rate *r, sweep *s, double j0, int have_j0)
{
    double j1;
    if (!have_j0 || energy_read(s, &j1) != 0) {
        r->energy_ok = 0;
        pl_snprintf(r->energy_note, sizeof r->energy_note, "%s", s->meter.why);
        return;
    }
    if (j1 - j0 <= 0) {
        /* the driver updates the counter periodically, not every millijoule: a short run may see no step */
        r->energy_ok = 0;
        pl_snprintf(r->energy_note, sizeof r->energy_note,
                    "the energy counter did not advance over the rate's %.3f s (it is updated less often): serve more "
                    "requests (--num-prompts)",
                    r->m.duration_s);
        return;
    }
    r->energy_ok = 1;
    r->energy_j = j1 - j0;
    r->j_per_output_token = r->m.total_output > 0 ? r->energy_j / (double)r->m.total_output : NAN;
    r->output_tokens_per_kwh = r->energy_j > 0 ? (double)r->m.total_output * 3.6e6 / r->energy_j : NAN;
}

static int run_rate(sweep *s, pl_serve_rate *r, char *err, size_t errlen)
{
    const pl_serve_bench_config *c = s->c;
    r->ceiling_pct = NAN;
    if (c->exec == PL_SERVE_EXEC_FLOOR) {
        pl_snprintf(r->energy_note, sizeof r->energy_note, "the floor executor runs no GPU work");
        int rc = run_one(r->reqs, r->n, &s->cfg, &s->floor_ex, s->floor_d, &c->slo, &r->run, &r->m, err, errlen);
        r->ceiling = r->m;
        return rc;
    }
    r->tokens = pl_xcalloc((size_t)r->n, sizeof *r->tokens);
    for (int i = 0; i < r->n; i++) {
        r->tokens[i] = pl_xmalloc((size_t)r->reqs[i].output_len * sizeof **r->tokens);
        for (int k = 0; k < r->reqs[i].output_len; k++)
            r->tokens[i][k] = -1;
    }
    s->gx.tokens = r->tokens;
    s->gx.reqs = r->reqs;
    s->gx.emitted = pl_xcalloc((size_t)r->n, sizeof *s->gx.emitted);
    s->gx2.tokens = s->gx.tokens, s->gx2.reqs = s->gx.reqs, s->gx2.emitted = s->gx.emitted; /* one per request */
    double j0 = 0;
    int have_j0 = energy_read(s, &j0) == 0;
    pl_serve_gpu_reset(s->gx.g); /* this run's request ids start again at 0 (the shared history too) */
    int rc = run_one(r->reqs, r->n, &s->cfg, &s->gpu_ex, s->gpu_d, &c->slo, &r->run, &r->m, err, errlen);
    energy_figures(r, s, j0, have_j0);
    free(s->gx.emitted);
    s->gx.emitted = s->gx2.emitted = NULL;
    if (rc != 0)
        return rc;
    pl_serve_run ceil_run;
    rc = run_one(r->reqs, r->n, &s->cfg, &s->floor_ex, s->floor_d, &c->slo, &ceil_run, &r->ceiling, err, errlen);
    if (rc != 0)
        return rc;
    pl_serve_run_free(&ceil_run);
    r->ceiling_pct =
        r->ceiling.output_throughput > 0 ? 100.0 * r->m.output_throughput / r->ceiling.output_throughput : NAN;
    return 0;
}

/* The GPU executor, created once for the sweep (its KV pool is the scheduler's), and warmed up. */
/* The decode GPU's executor beside the prefill GPU's (s->gx): the same model, weights' seed and pool sizing, the
 * request histories shared, and the KV mover between their caches. */
static int gpu_start_decode(sweep *s, pl_serve_gpu_options o, pl_serve_bench *out, char *err, size_t errlen)
{
    const pl_serve_bench_config *c = s->c;
    int pages = c->sched.num_pages;
    char why[512] = "";
    o.device = c->decode_device;
    if (pl_serve_gpu_create(&o, &s->gx2.g, &pages, why, sizeof why) != 0) {
        char line[640];
        pl_snprintf(line, sizeof line, "the decode GPU %d: %s", c->decode_device, why);
        return fail(PL_EXIT_NO_GPU, err, errlen, line);
    }
    out->decode_pages = pages;
    pl_serve_gpu_share_tokens(s->gx2.g, s->gx.g);
    if (pl_serve_kv_mover_create(s->gx.g, s->gx2.g, &s->mover, why, sizeof why) != 0)
        return fail(PL_EXIT_NO_GPU, err, errlen, why);
    const char *no_peer;
    out->peer_access = pl_serve_kv_mover_peer(s->mover, &no_peer);
    pl_snprintf(
        out->link_note, sizeof out->link_note,
        "KV copies GPU %d -> GPU %d: %s; the ceiling's copies at %.0f GB/s (--link-gbps)", c->device, c->decode_device,
        out->peer_access ? "peer to peer (cudaMemcpyPeerAsync on a stream of their own)" : no_peer, c->link_gbps);
    s->gpu_dis = (pl_serve_disagg){.prefill = {.ctx = &s->gx, .step = gpu_exec_step},
                                   .decode = {.ctx = &s->gx2, .step = gpu_exec_step},
                                   .transfer = {s->mover, pl_serve_kv_mover_begin, pl_serve_kv_mover_end},
                                   .decode_pages = pages};
    s->gpu_d = &s->gpu_dis;
    pl_serve_energy_open(c->decode_pci_bus_id, &s->meter2);
    return 0;
}

/* The GPU executor, created once for the sweep (its KV pool is the scheduler's), and warmed up; disaggregated, the
 * prefill GPU's and the decode GPU's. */
static int gpu_start(sweep *s, pl_serve_bench *out, char *err, size_t errlen)
{
    const pl_serve_bench_config *c = s->c;
    pl_serve_gpu_options o = {.model = c->model,
                              .dtype = c->dtype,
                              .kv_dtype = c->kv_dtype,
                              .layers = c->layers,
                              .page_size = c->sched.page_size,
                              .num_pages = c->sched.num_pages,
                              .max_num_seqs = s->cfg.max_num_seqs,
                              .max_num_batched_tokens = c->sched.max_num_batched_tokens,
                              .seed = c->workload.seed,
                              .device = c->device};
    int pages = c->sched.num_pages;
    char why[512] = "";
    if (pl_serve_gpu_create(&o, &s->gx.g, &pages, why, sizeof why) != 0)
        return fail(PL_EXIT_NO_GPU, err, errlen, why);
    if (c->sched.num_pages == 0) {
        out->num_pages = pages;
        pl_snprintf(out->pages_source, sizeof out->pages_source, "as many as fit in the GPU's free memory%s",
                    c->disaggregate ? " (each GPU's)" : "");
    }
    s->cfg.num_pages = out->num_pages;
    if (c->disaggregate) {
        const int rc = gpu_start_decode(s, o, out, err, errlen);
        if (rc != 0)
            return rc;
        s->floor_dis.decode_pages = out->decode_pages;
    }
    s->gpu_ex = (pl_serve_executor){.ctx = &s->gx, .step = gpu_exec_step};
    pl_serve_energy_open(c->pci_bus_id, &s->meter);
    int n = c->warmup_requests < c->workload.num_prompts ? c->warmup_requests : c->workload.num_prompts;
    if (n <= 0)
        return 0;
    pl_serve_request *reqs;
    int64_t all;
    int rc = make_requests(c, INFINITY, &reqs, &all, err, errlen);
    if (rc != 0)
        return rc;
    pl_serve_run run;
    pl_serve_metrics m;
    pl_serve_gpu_reset(s->gx.g);
    rc = run_one(reqs, n, &s->cfg, &s->gpu_ex, s->gpu_d, &c->slo, &run, &m, err, errlen);
    if (rc == 0)
        pl_serve_run_free(&run);
    free(reqs);
    return rc;
}

static int check_fit(const pl_serve_bench *out, const pl_serve_request *reqs, int n, int page_size, char *err,
                     size_t errlen)
{
    const int pool = out->decode_pages > 0 && out->decode_pages < out->num_pages ? out->decode_pages : out->num_pages;
    for (int i = 0; i < n; i++) {
        int pages = (reqs[i].input_len + reqs[i].output_len + page_size - 1) / page_size;
        if (pages > pool) {
            pl_snprintf(err, errlen,
                        "request %d (%d in + %d out tokens) needs %d KV pages of %d tokens, the pool has %d: "
                        "shorten --random-input-len/--random-output-len or give more pages (--num-pages)",
                        i, reqs[i].input_len, reqs[i].output_len, pages, page_size, pool);
            return PL_EXIT_USAGE;
        }
    }
    return 0;
}

static void judge(pl_serve_bench *out)
{
    out->gate_met = 1;
    pl_buf b = {0};
    for (int i = 0; i < out->n_rates; i++) {
        const pl_serve_rate *r = &out->rates[i];
        if (r->m.gate_met)
            continue;
        char name[32];
        out->gate_met = 0;
        pl_buf_printf(&b, "%srate %s/s: %s", b.len ? "; " : "", pl_serve_rate_name(r->rate, name, sizeof name),
                      r->m.miss);
    }
    pl_snprintf(out->miss, sizeof out->miss, "%s", b.data ? b.data : "");
    pl_buf_free(&b);
}

static int sweep_all(sweep *s, pl_serve_bench *out, char *err, size_t errlen)
{
    const pl_serve_bench_config *c = s->c;
    out->rates = pl_xcalloc((size_t)c->n_rates, sizeof *out->rates);
    out->n_rates = c->n_rates;
    int rc = 0;
    for (int i = 0; i < c->n_rates && rc == 0; i++) {
        pl_serve_rate *r = &out->rates[i];
        int64_t all;
        r->rate = c->rates[i];
        r->n = c->workload.num_prompts;
        rc = make_requests(c, c->rates[i], &r->reqs, &all, err, errlen);
        if (rc == 0 && i == 0 && c->exec == PL_SERVE_EXEC_GPU)
            rc = gpu_start(s, out, err, errlen);
        else if (rc == 0 && i == 0 && out->num_pages == 0)
            rc = floor_pages(c, all, out, err, errlen);
        s->cfg.num_pages = out->num_pages;
        if (c->disaggregate && c->exec == PL_SERVE_EXEC_FLOOR) { /* the same plan on both GPUs */
            out->decode_pages = s->floor_dis.decode_pages = out->num_pages;
            pl_snprintf(out->link_note, sizeof out->link_note,
                        "KV copies between the two GPUs computed at %.0f GB/s (--link-gbps)", c->link_gbps);
        }
        if (rc == 0)
            rc = check_fit(out, r->reqs, r->n, c->sched.page_size, err, errlen);
        if (rc == 0 && c->progress)
            c->progress(c->progress_arg, i, c->n_rates, r->rate);
        if (rc == 0)
            rc = run_rate(s, r, err, errlen);
    }
    return rc;
}

int pl_serve_bench_run(const pl_serve_bench_config *c, pl_serve_bench *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    sweep s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.cfg = c->sched;
    if (s.cfg.max_num_seqs <= 0)
        s.cfg.max_num_seqs = 256;
    out->num_pages = c->sched.num_pages;
    if (c->sched.num_pages > 0)
        pl_snprintf(out->pages_source, sizeof out->pages_source, "--num-pages");
    s.floor = (pl_serve_floor){.model = c->model,
                               .dtype = c->dtype,
                               .kv_dtype = c->kv_dtype,
                               .layers = c->layers,
                               .ceilings = {.flops_per_s = c->tensor_tflops * 1e12, .bytes_per_s = c->hbm_gbps * 1e9}};
    s.floor_ex = (pl_serve_executor){.ctx = &s.floor, .step = pl_serve_floor_step};
    if (c->disaggregate) { /* each lane at one GPU's ceilings, the copies at the link's rate */
        s.link = (pl_serve_link){.bytes_per_s = c->link_gbps * 1e9,
                                 .page_bytes = pl_kv_page_bytes(c->model, c->layers, c->sched.page_size, c->kv_dtype)};
        s.floor_dis = (pl_serve_disagg){.prefill = s.floor_ex,
                                        .decode = s.floor_ex,
                                        .transfer = {&s.link, pl_serve_link_begin, pl_serve_link_end},
                                        .decode_pages = c->sched.num_pages};
        s.floor_d = &s.floor_dis;
        if (c->sched.num_pages > 0)
            out->decode_pages = c->sched.num_pages;
    }
    int rc = sweep_all(&s, out, err, errlen);
    pl_serve_floor_free(&s.floor);
    pl_serve_link_free(&s.link);
    pl_serve_kv_mover_destroy(s.mover);
    if (s.gx2.g)
        pl_serve_gpu_destroy(s.gx2.g);
    if (s.gx.g)
        pl_serve_gpu_destroy(s.gx.g);
    if (rc != 0) {
        pl_serve_bench_free(out);
        return rc;
    }
    judge(out);
    return 0;
}

void pl_serve_bench_free(pl_serve_bench *b)
{
    for (int i = 0; i < b->n_rates; i++) {
        pl_serve_rate *r = &b->rates[i];
        if (r->run.rec)
            pl_serve_run_free(&r->run);
        if (r->tokens)
            for (int k = 0; k < r->n; k++)
                free(r->tokens[k]);
        free(r->tokens);
        free(r->reqs);
    }
    free(b->rates);
    memset(b, 0, sizeof *b);
}
