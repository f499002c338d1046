/* The serving benchmark's host core: the workload generator (the same seed gives the same requests, Poisson gaps of
 * mean 1/rate, vLLM's range-ratio bounds, the long tail's mean), the scheduler on a synthetic executor (every
 * request gets exactly its output tokens in order, the token budget and the page pool hold at every step, every
 * page comes back; preemption by recompute on a small pool, counted, every preempted request complete), the metrics
 * on a scripted two-request trace checked by hand, TTFT at rate inf above TTFT at a low rate, and the floor
 * executor against engine/step_cost.h's floor. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/serve_floor.h"
#include "engine/serve_metrics.h"
#include "engine/serve_sched.h"
#include "engine/serve_workload.h"
#include "testutil.h"

static pl_serve_request *make(const pl_serve_workload_spec *spec)
{
    char err[256];
    pl_serve_request *r = malloc((size_t)spec->num_prompts * sizeof *r);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(pl_serve_workload_make(spec, r, err, sizeof err) == 0, "%s", err);
    return r;
}

START_TEST(same_seed_same_requests)
{
    pl_serve_workload_spec spec = {
        .num_prompts = 500, .input_len = 1000, .output_len = 300, .range_ratio = 0.5, .request_rate = 8.0, .seed = 42};
    pl_serve_request *a = make(&spec), *b = make(&spec);
    int same = 0; /* field by field: the struct has padding */
    for (int i = 0; i < 500; i++)
        same += a[i].id == b[i].id && a[i].input_len == b[i].input_len && a[i].output_len == b[i].output_len &&
                a[i].arrival_s == b[i].arrival_s;
    ck_assert_int_eq(same, 500);
    spec.seed = 43;
    pl_serve_request *c = make(&spec);
    int differ = 0;
    for (int i = 0; i < 500; i++)
        differ += a[i].input_len != c[i].input_len;
    ck_assert_msg(differ > 400, "seeds 42 and 43 give %d different input lengths of 500", differ);
    /* the generator's first outputs are fixed by its definition (xoshiro256** from SplitMix64(0)) */
    pl_serve_rng r;
    pl_serve_rng_seed(&r, 0);
    const uint64_t first = pl_serve_rng_next(&r);
    pl_serve_rng_seed(&r, 0);
    ck_assert(first == pl_serve_rng_next(&r));
    ck_assert(first != pl_serve_rng_next(&r));
    free(a);
    free(b);
    free(c);
}
END_TEST

START_TEST(poisson_gaps)
{
    const int n = 20000;
    const double rate = 4.0;
    pl_serve_workload_spec spec = {.num_prompts = n, .input_len = 8, .output_len = 8, .request_rate = rate, .seed = 7};
    pl_serve_request *r = make(&spec);
    double sum = 0.0, sq = 0.0;
    int bad_order = 0;
    for (int i = 0; i < n; i++) {
        const double gap = r[i].arrival_s - (i ? r[i - 1].arrival_s : 0.0);
        bad_order += gap < 0;
        sum += gap;
        sq += gap * gap;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    /* exponential: mean 1/rate, sd of the mean (1/rate)/sqrt(n); 5 sd is a 1-in-3.5-million miss */
    ck_assert_int_eq(bad_order, 0);
    ck_assert_msg(fabs(mean - 1.0 / rate) < 5.0 * (1.0 / rate) / sqrt(n), "mean gap %.5f s, not %.5f", mean, 1 / rate);
    ck_assert_msg(fabs(sqrt(var) - 1.0 / rate) < 0.05 / rate, "gap sd %.5f s: an exponential's is its mean", sqrt(var));
    spec.request_rate = INFINITY;
    pl_serve_request *burst = make(&spec);
    ck_assert(burst[0].arrival_s == 0.0 && burst[n - 1].arrival_s == 0.0);
    free(r);
    free(burst);
}
END_TEST

/* Lengths stay in [lo, hi], both ends are drawn, the mean is the middle. */
static void check_uniform(int len, double ratio, int out_len, int lo, int hi)
{
    const int n = 20000;
    pl_serve_workload_spec spec = {
        .num_prompts = n, .input_len = len, .output_len = out_len, .range_ratio = ratio, .seed = 11};
    pl_serve_request *r = make(&spec);
    int in_min = 1 << 30, in_max = 0, out_min = 1 << 30, out_max = 0;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        in_min = r[i].input_len < in_min ? r[i].input_len : in_min;
        in_max = r[i].input_len > in_max ? r[i].input_len : in_max;
        out_min = r[i].output_len < out_min ? r[i].output_len : out_min;
        out_max = r[i].output_len > out_max ? r[i].output_len : out_max;
        sum += r[i].input_len;
    }
    ck_assert_msg(in_min == lo && in_max == hi, "len %d ratio %g: inputs in [%d, %d], not [%d, %d]", len, ratio, in_min,
                  in_max, lo, hi);
    ck_assert_msg(fabs(sum / n - 0.5 * (lo + hi)) < 0.02 * (hi - lo) + 1e-9, "mean %.2f", sum / n);
    ck_assert_int_ge(out_min, 1);
    int olo, ohi;
    pl_serve_len_bounds(out_len, ratio, 1, &olo, &ohi);
    ck_assert_msg(out_min == olo && out_max == ohi, "outputs in [%d, %d], not [%d, %d]", out_min, out_max, olo, ohi);
    free(r);
}

START_TEST(range_ratio_bounds)
{
    check_uniform(100, 0.5, 10, 50, 150);    /* vLLM: [floor(len(1-r)), ceil(len(1+r))] */
    check_uniform(1000, 0.0, 7, 1000, 1000); /* r = 0: the fixed length */
    check_uniform(3, 0.9, 1, 1, 6);          /* floor(0.3) = 0 is raised to 1; ceil(5.7) = 6 */
    char err[256];
    pl_serve_request r[4];
    pl_serve_workload_spec spec = {.num_prompts = 4, .input_len = 8, .output_len = 8, .range_ratio = 1.0};
    ck_assert_int_eq(pl_serve_workload_make(&spec, r, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--random-range-ratio"));
    spec.range_ratio = -0.1;
    ck_assert_int_eq(pl_serve_workload_make(&spec, r, err, sizeof err), -1);
    spec.range_ratio = 0.0;
    spec.num_prompts = 0;
    ck_assert_int_eq(pl_serve_workload_make(&spec, r, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "--num-prompts"));
}
END_TEST

START_TEST(lognormal_tail)
{
    const int n = 40000;
    pl_serve_workload_spec spec = {.num_prompts = n,
                                   .input_len = 500,
                                   .output_len = 200,
                                   .dist = PL_SERVE_LEN_LOGNORMAL,
                                   .lognormal_sigma = 0.8,
                                   .seed = 5};
    pl_serve_request *r = make(&spec);
    double sum = 0.0;
    int lo = 1 << 30, hi = 0, above_2x = 0;
    for (int i = 0; i < n; i++) {
        sum += r[i].input_len;
        lo = r[i].input_len < lo ? r[i].input_len : lo;
        hi = r[i].input_len > hi ? r[i].input_len : hi;
        above_2x += r[i].input_len > 1000;
    }
    ck_assert_msg(fabs(sum / n - 500) < 15, "mean %.1f, not 500", sum / n);
    ck_assert_int_ge(lo, 1);
    ck_assert_int_le(hi, 16 * 500);
    /* P(X > 2·mean) = P(Z > (ln 2 + σ²/2)/σ) = P(Z > 1.266) = 0.103 for σ = 0.8: a tail a uniform range lacks */
    ck_assert_msg(fabs((double)above_2x / n - 0.103) < 0.01, "%.4f above twice the mean", (double)above_2x / n);
    free(r);
}
END_TEST

/* An executor that checks every step against the scheduler's promises, then times it as the synthetic one. */
typedef struct checker {
    pl_serve_synthetic syn;
    int budget, nreq;
    int *kv_end, *emitted, restarts, steps;
    const char *bad;
} checker;

static int checking_step(void *ctx, const pl_serve_step *s, double *seconds)
{
    checker *c = ctx;
    c->steps++;
    int tokens = 0, held = 0;
    for (int k = 0; k < s->n_prefill + s->n_decode && !c->bad; k++) {
        const pl_serve_work *w = k < s->n_prefill ? &s->prefill[k] : &s->decode[k - s->n_prefill];
        tokens += w->tokens;
        held += w->seq->npages;
        if (w->start == 0 && c->kv_end[w->req] > 0)
            c->restarts++; /* a preempted request prefilling again */
        else if (w->start != c->kv_end[w->req])
            c->bad = "a request's KV positions are not contiguous from step to step";
        if (k >= s->n_prefill && w->tokens != 1)
            c->bad = "a decode computes other than one token";
        if (w->tokens < 1 || w->seq->len != w->start + w->tokens ||
            w->seq->npages != pl_kv_pages_for(w->seq->len, s->pool->page_size))
            c->bad = "a step's sequence holds the wrong tokens or pages";
        c->kv_end[w->req] = w->start + w->tokens;
        c->emitted[w->req] += w->emits;
    }
    if (!c->bad && (tokens != s->tokens || tokens > c->budget))
        c->bad = "a step's tokens are miscounted or over the budget";
    if (!c->bad && (s->pool->free_count < 0 || held > s->pool->num_pages - s->pool->free_count))
        c->bad = "the pages of a step's sequences are over-committed";
    return pl_serve_synthetic_step(&c->syn, s, seconds);
}

/* Serves the requests through the checker; checks the run's records; returns the run. */
static void serve_checked(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, pl_serve_run *run,
                          checker *c)
{
    char err[256];
    *c = (checker){.syn = {2e-3, 2e-5, 1e-7}, .budget = cfg->max_num_batched_tokens, .nreq = n};
    c->kv_end = calloc((size_t)n, sizeof *c->kv_end);
    c->emitted = calloc((size_t)n, sizeof *c->emitted);
    const pl_serve_executor ex = {c, checking_step};
    ck_assert_msg(pl_serve_simulate(reqs, n, cfg, &ex, run, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(!c->bad, "%s", c->bad ? c->bad : "");
    ck_assert_int_eq(run->free_pages_at_end, cfg->num_pages);
    ck_assert_int_eq(c->restarts, run->preemptions);
    const char *bad = NULL;
    int preempted_reqs = 0;
    for (int i = 0; i < n && !bad; i++) {
        const pl_serve_record *r = &run->rec[i];
        if (c->emitted[i] != reqs[i].output_len)
            bad = "a request emitted other than its output length";
        else if (c->kv_end[i] != reqs[i].input_len + reqs[i].output_len - 1)
            bad = "a request's KV ends elsewhere than input + output - 1";
        else if (r->finish_s != r->token_s[reqs[i].output_len - 1])
            bad = "a request's finish is not its last token's time";
        else if (r->send_s < r->arrival_s || r->token_s[0] < r->send_s)
            bad = "a request is sent before it arrives or answered before it is sent";
        for (int k = 1; k < reqs[i].output_len && !bad; k++)
            if (r->token_s[k] <= r->token_s[k - 1])
                bad = "a request's tokens are out of order";
        preempted_reqs += r->preemptions > 0;
    }
    ck_assert_msg(!bad, "%s", bad ? bad : "");
    ck_assert_int_le(run->peak_pages, cfg->num_pages);
    ck_assert_msg(run->host_sched_s > 0 && run->host_sched_s < 60, "scheduler host time %g s", run->host_sched_s);
    ck_assert_msg(run->preemptions == 0 || preempted_reqs > 0, "preemptions counted but no request preempted");
    free(c->kv_end);
    free(c->emitted);
}

START_TEST(scheduler_invariants)
{
    for (unsigned seed = 1; seed <= 6; seed++) {
        pl_serve_workload_spec spec = {.num_prompts = 300,
                                       .input_len = 300,
                                       .output_len = 120,
                                       .range_ratio = 0.9,
                                       .request_rate = seed % 2 ? 40.0 : INFINITY,
                                       .seed = seed};
        pl_serve_request *reqs = make(&spec);
        const pl_serve_config cfg = {.max_num_batched_tokens = 256 + 64 * (int)seed,
                                     .max_num_seqs = 48,
                                     .max_concurrency = seed == 3 ? 16 : 0,
                                     .num_pages = 4096,
                                     .page_size = 16};
        pl_serve_run run;
        checker c;
        serve_checked(reqs, 300, &cfg, &run, &c);
        ck_assert_int_eq(run.preemptions, 0); /* 4096 pages hold 48 of the longest requests */
        ck_assert_msg(run.peak_pages > 0 && run.steps > 0, "nothing ran");
        pl_serve_run_free(&run);
        free(reqs);
    }
}
END_TEST

START_TEST(preemption_on_a_small_pool)
{
    pl_serve_workload_spec spec = {.num_prompts = 64,
                                   .input_len = 200,
                                   .output_len = 200,
                                   .range_ratio = 0.5,
                                   .request_rate = INFINITY,
                                   .seed = 9};
    pl_serve_request *reqs = make(&spec);
    /* 80 pages of 16 tokens: 1280 tokens, room for 3 to 5 requests at their longest (600 tokens: 38 pages) */
    const pl_serve_config cfg = {.max_num_batched_tokens = 512, .max_num_seqs = 32, .num_pages = 80, .page_size = 16};
    pl_serve_run run;
    checker c;
    serve_checked(reqs, 64, &cfg, &run, &c);
    ck_assert_msg(run.preemptions > 0, "no preemption on a pool of 80 pages");
    ck_assert_int_eq(run.peak_pages, 80);
    pl_serve_metrics m;
    const pl_serve_slo slo = {0, 0};
    ck_assert_int_eq(pl_serve_metrics_compute(&run, cfg.num_pages, &slo, &m), 0);
    ck_assert_int_eq(m.preemptions, run.preemptions);
    ck_assert_int_eq(m.completed, 64);
    pl_serve_run_free(&run);
    /* a request that cannot fit the pool alone is refused, naming it */
    char err[256];
    const pl_serve_config tiny = {.max_num_batched_tokens = 512, .num_pages = 20, .page_size = 16};
    const pl_serve_executor ex = {&c.syn, pl_serve_synthetic_step};
    ck_assert_int_eq(pl_serve_simulate(reqs, 64, &tiny, &ex, &run, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "KV pages"));
    free(reqs);
}
END_TEST

/* Steps take the scripted durations in turn. */
typedef struct script {
    const double *dt;
    int next, tokens[8], seqs[8];
} script;

static int scripted_step(void *ctx, const pl_serve_step *s, double *seconds)
{
    script *sc = ctx;
    sc->tokens[sc->next] = s->tokens;
    sc->seqs[sc->next] = s->n_prefill + s->n_decode;
    *seconds = sc->dt[sc->next++];
    return 0;
}

START_TEST(metrics_by_hand)
{
    /* request 0: 4 in, 3 out; request 1: 4 in, 2 out; both at t = 0. Step 1 prefills both (8 tokens, 10 ms) and
     * emits their first tokens at 10 ms; step 2 decodes both (2 ms): 12 ms, request 1 done; step 3 decodes
     * request 0 (3 ms): 15 ms. TTFT 10, 10; E2E 15, 12; TPOT (15-10)/2 = 2.5 and (12-10)/1 = 2; ITL 2, 3, 2. */
    const pl_serve_request reqs[2] = {{0, 4, 3, 0.0}, {1, 4, 2, 0.0}};
    const double dt[3] = {10e-3, 2e-3, 3e-3};
    script sc = {.dt = dt};
    const pl_serve_config cfg = {.max_num_batched_tokens = 64, .num_pages = 8, .page_size = 4};
    const pl_serve_executor ex = {&sc, scripted_step};
    pl_serve_run run;
    char err[256];
    ck_assert_msg(pl_serve_simulate(reqs, 2, &cfg, &ex, &run, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(sc.next, 3);
    ck_assert(sc.tokens[0] == 8 && sc.tokens[1] == 2 && sc.tokens[2] == 1);
    pl_serve_metrics m;
    const pl_serve_slo slo = {.ttft_ms = 10.0, .tpot_ms = 2.2};
    ck_assert_int_eq(pl_serve_metrics_compute(&run, cfg.num_pages, &slo, &m), 0);
    const double eps = 1e-9;
    ck_assert_double_eq_tol(m.ttft.mean, 10.0, eps);
    ck_assert_double_eq_tol(m.ttft.p99, 10.0, eps);
    ck_assert_double_eq_tol(m.tpot.mean, 2.25, eps);
    ck_assert_double_eq_tol(m.tpot.p99, 2.0 + 0.99 * 0.5, eps); /* [2, 2.5] at position 0.99 */
    ck_assert_double_eq_tol(m.tpot.std, 0.25, eps);
    ck_assert_int_eq(m.itl.n, 3);
    ck_assert_double_eq_tol(m.itl.mean, 7.0 / 3.0, eps);
    ck_assert_double_eq_tol(m.itl.median, 2.0, eps);
    ck_assert_double_eq_tol(m.itl.p90, 2.8, eps); /* [2, 2, 3] at position 1.8 */
    ck_assert_double_eq_tol(m.e2el.mean, 13.5, eps);
    ck_assert_double_eq_tol(m.e2el.p50, 13.5, eps);
    ck_assert_double_eq_tol(m.duration_s, 15e-3, eps);
    ck_assert_double_eq_tol(m.request_throughput, 2 / 15e-3, 1e-6);
    ck_assert_double_eq_tol(m.output_throughput, 5 / 15e-3, 1e-6);
    ck_assert_double_eq_tol(m.total_token_throughput, 13 / 15e-3, 1e-6);
    ck_assert_double_eq_tol(m.mean_batch, 5.0 / 3.0, eps);
    ck_assert_int_eq(m.peak_pages, 4); /* 5 and 4 tokens held after step 2: 2 + 1 pages; 6 + 5 earlier: 2 + 2 */
    ck_assert_int_eq(m.good, 1);       /* request 1 only: request 0's TPOT 2.5 > 2.2 */
    ck_assert_double_eq_tol(m.goodput_fraction, 0.5, eps);
    ck_assert_double_eq_tol(m.request_goodput, 1 / 15e-3, 1e-6);
    ck_assert_int_eq(m.gate_met, 0);
    ck_assert_msg(strstr(m.miss, "TPOT") && !strstr(m.miss, "TTFT"), "miss: '%s'", m.miss);
    pl_serve_field f[PL_SERVE_FIELDS_MAX];
    const int nf = pl_serve_metrics_fields(&m, f);
    ck_assert_int_le(nf, PL_SERVE_FIELDS_MAX);
    int found = 0;
    for (int i = 0; i < nf; i++)
        found += !strcmp(f[i].key, "p99_tpot_ms") && fabs(f[i].value - m.tpot.p99) < eps;
    ck_assert_int_eq(found, 1);
    pl_serve_run_free(&run);

    /* --max-concurrency 1 and a 6-token budget: request 0 alone, its prompt in one step of 4 tokens (10 ms), then
     * decodes (2, 3 ms); request 1 is sent when request 0 finishes (15 ms) and its TTFT counts from there. */
    const double dt2[5] = {10e-3, 2e-3, 3e-3, 7e-3, 1e-3};
    script sc2 = {.dt = dt2};
    const pl_serve_config one = {.max_num_batched_tokens = 6, .max_concurrency = 1, .num_pages = 8, .page_size = 4};
    const pl_serve_executor ex2 = {&sc2, scripted_step};
    ck_assert_msg(pl_serve_simulate(reqs, 2, &one, &ex2, &run, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(sc2.next, 5);
    ck_assert_double_eq_tol(run.rec[1].send_s, 15e-3, eps);
    ck_assert_double_eq_tol(run.rec[1].token_s[0], 22e-3, eps);
    ck_assert_int_eq(pl_serve_metrics_compute(&run, one.num_pages, &slo, &m), 0);
    ck_assert_double_eq_tol(m.ttft.mean, (10.0 + 7.0) / 2, eps);
    /* p99 TTFT: [7, 10] at 0.99 is 9.97 <= 10, met; p99 TPOT: [1, 2.5] at 0.99 is 2.485 > 2.2, missed */
    ck_assert_double_eq_tol(m.ttft.p99, 9.97, eps);
    ck_assert_double_eq_tol(m.tpot.p99, 2.485, eps);
    ck_assert_msg(!m.gate_met && strstr(m.miss, "TPOT") && !strstr(m.miss, "TTFT"), "miss: '%s'", m.miss);
    pl_serve_run_free(&run);
}
END_TEST

static double median_ttft(double rate)
{
    pl_serve_workload_spec spec = {
        .num_prompts = 64, .input_len = 512, .output_len = 64, .request_rate = rate, .seed = 3};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {.max_num_batched_tokens = 1024, .num_pages = 4096, .page_size = 16};
    pl_serve_synthetic syn = {5e-3, 5e-5, 1e-8};
    const pl_serve_executor ex = {&syn, pl_serve_synthetic_step};
    pl_serve_run run;
    char err[256];
    ck_assert_msg(pl_serve_simulate(reqs, 64, &cfg, &ex, &run, err, sizeof err) == 0, "%s", err);
    pl_serve_metrics m;
    const pl_serve_slo slo = {0, 0};
    ck_assert_int_eq(pl_serve_metrics_compute(&run, cfg.num_pages, &slo, &m), 0);
    ck_assert_int_eq(m.gate_met, 1);
    pl_serve_run_free(&run);
    free(reqs);
    return m.ttft.median;
}

START_TEST(ttft_rises_with_rate)
{
    /* alone, a request's prompt takes one step of 5 + 25.6 ms; all 64 at once queue for 32 such steps */
    const double slow = median_ttft(0.5), burst = median_ttft(INFINITY);
    ck_assert_msg(slow < 40.0, "median TTFT %.2f ms at 0.5 requests/s: one prefill step is 30.6 ms", slow);
    ck_assert_msg(burst > 4.0 * slow, "median TTFT %.2f ms at rate inf, %.2f ms at 0.5/s", burst, slow);
}
END_TEST

START_TEST(floor_executor)
{
    char err[256];
    const pl_model_config *m = pl_model_find("llama3-8b", err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    pl_serve_floor f = {.model = m, .dtype = PL_WEIGHTS_BF16, .ceilings = {989e12, 4.3e12}};
    /* a decode of 64 sequences at 2048 tokens is step_cost's decode floor */
    pl_serve_work dec[64], pre[2] = {{.req = 64, .start = 0, .tokens = 512}, {.req = 65, .start = 0, .tokens = 300}};
    int lens[64];
    for (int i = 0; i < 64; i++) {
        dec[i] = (pl_serve_work){.req = i, .start = 2047, .tokens = 1, .emits = 1};
        lens[i] = 2048;
    }
    pl_serve_step st = {.n_decode = 64, .decode = dec};
    double got, mixed;
    ck_assert_int_eq(pl_serve_floor_step(&f, &st, &got), 0);
    pl_step_cost c;
    const pl_step_batch b = {.n = 64, .lens = lens};
    ck_assert_int_eq(pl_model_decode_cost(m, PL_WEIGHTS_BF16, 0, &b, &c), 0);
    ck_assert_double_eq_tol(got, pl_step_floor_s(&c, &f.ceilings), 1e-12);
    /* adding prefill chunks costs more than the decode alone, less than both steps apart (the weights read once) */
    double pre_alone;
    pl_serve_step only_pre = {.n_prefill = 2, .prefill = pre};
    ck_assert_int_eq(pl_serve_floor_step(&f, &only_pre, &pre_alone), 0);
    st.n_prefill = 2;
    st.prefill = pre;
    ck_assert_int_eq(pl_serve_floor_step(&f, &st, &mixed), 0);
    ck_assert_msg(mixed > got && mixed > pre_alone && mixed < got + pre_alone,
                  "mixed %.3g s, decode %.3g s, "
                  "prefill %.3g s",
                  mixed, got, pre_alone);

    /* a workload through the scheduler: each step emits at most max_num_seqs tokens and reads every weight, so the
     * output rate is under max_num_seqs · bandwidth / weight bytes (18.3k tokens/s); the prompts' compute (64 · 2048
     * tokens, about 2.1 s at 989 TFLOP/s) and a decode's KV reads (19 GB at 2048+ tokens, beside 16 GB of weights)
     * hold it near a quarter of that (4.2k tokens/s) */
    pl_serve_workload_spec spec = {
        .num_prompts = 64, .input_len = 2048, .output_len = 256, .request_rate = INFINITY, .seed = 1};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {
        .max_num_batched_tokens = 8192, .max_num_seqs = 64, .num_pages = 9216, .page_size = 16};
    const pl_serve_executor ex = {&f, pl_serve_floor_step};
    pl_serve_run run;
    ck_assert_msg(pl_serve_simulate(reqs, 64, &cfg, &ex, &run, err, sizeof err) == 0, "%s", err);
    pl_serve_metrics met;
    const pl_serve_slo slo = {0, 0};
    ck_assert_int_eq(pl_serve_metrics_compute(&run, cfg.num_pages, &slo, &met), 0);
    const double bound = 64 * f.ceilings.bytes_per_s / c.weight_bytes;
    ck_assert_msg(met.output_throughput > 0.15 * bound && met.output_throughput < 0.35 * bound,
                  "%.0f output tokens/s at the floor; the weight-read bound is %.0f", met.output_throughput, bound);
    pl_serve_run_free(&run);
    pl_serve_floor_free(&f);
    free(reqs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_serve");
    TCase *tc = tcase_create("serve");
    tcase_add_test(tc, same_seed_same_requests);
    tcase_add_test(tc, poisson_gaps);
    tcase_add_test(tc, range_ratio_bounds);
    tcase_add_test(tc, lognormal_tail);
    tcase_add_test(tc, scheduler_invariants);
    tcase_add_test(tc, preemption_on_a_small_pool);
    tcase_add_test(tc, metrics_by_hand);
    tcase_add_test(tc, ttft_rises_with_rate);
    tcase_add_test(tc, floor_executor);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
