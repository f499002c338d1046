/* Continuous batching with chunked prefill, paged KV admission and preemption by recompute, on a simulated clock. */
#include "engine/serve_sched.h"
#include "engine/serve_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pl_serve_synthetic_step(void *ctx, const pl_serve_step *step, double *seconds)
{
    const pl_serve_synthetic *s = ctx;
    *seconds = s->a + s->b * step->tokens + s->c * (double)step->kv_tokens;
    return 0;
}

typedef struct req_state {
    pl_kv_seq seq;
    int generated;
} req_state;

/* The whole state of a run: the pool, per-request state, the waiting queue (a ring, preempted requests pushed at
 * its front), the running list in admission order, and the step under construction. */
typedef struct sched {
    const pl_serve_request *reqs;
    const pl_serve_config *cfg;
    int n, max_seqs;
    pl_kv_pool pool;
    req_state *st;
    int *ring, head, count; /* waiting */
    int *running, nrun;
    int next_send, in_flight, done;
    int free_slots_old; /* client slots free since before the last step's end */
    pl_serve_work *prefill, *decode;
    int n_prefill, n_decode;
    double now, exec_wall_s; /* the simulated clock; host time inside the executor */
    pl_serve_run *out;
} sched;

static int target(const sched *s, int r)
{
    return s->reqs[r].input_len + s->st[r].generated;
}

static void waiting_push_back(sched *s, int r)
{
    s->ring[(s->head + s->count++) % s->n] = r;
}

static void waiting_push_front(sched *s, int r)
{
    s->head = (s->head + s->n - 1) % s->n;
    s->ring[s->head] = r;
    s->count++;
}

static void waiting_pop(sched *s)
{
    s->head = (s->head + 1) % s->n;
    s->count--;
}

/* Phase 1: sends what has arrived, as far as --max-concurrency allows. Slots free since before this step's end go
 * to requests at their arrival; slots freed at this step's end (finishes) at `now`. */
static void send_arrivals(sched *s)
{
    const int limit = s->cfg->max_concurrency;
    while (s->next_send < s->n && s->reqs[s->next_send].arrival_s <= s->now) {
        if (limit > 0 && s->in_flight >= limit)
            break;
        pl_serve_record *rec = &s->out->rec[s->next_send];
        const int old_slot = limit <= 0 || s->free_slots_old > 0;
        rec->send_s = old_slot ? rec->arrival_s : s->now;
        if (limit > 0 && s->free_slots_old > 0)
            s->free_slots_old--;
        s->in_flight++;
        waiting_push_back(s, s->next_send++);
    }
    s->free_slots_old = limit > 0 ? limit - s->in_flight : 0;
}

static void add_work(sched *s, int r, int tokens)
{
    const int start = s->st[r].seq.len;
    pl_kv_seq_append(&s->pool, &s->st[r].seq, tokens); /* its pages were checked free */
    const int emits = start + tokens == target(s, r);
    const int is_decode = s->st[r].generated > 0 && start == target(s, r) - 1;
    pl_serve_work w = {.req = r, .start = start, .tokens = tokens, .emits = emits, .seq = &s->st[r].seq};
    if (is_decode)
        s->decode[s->n_decode++] = w;
    else
        s->prefill[s->n_prefill++] = w;
}

static void preempt_newest(sched *s)
{
    const int v = s->running[--s->nrun];
    pl_kv_seq_release(&s->pool, &s->st[v].seq);
    s->out->rec[v].preemptions++;
    s->out->preemptions++;
    waiting_push_front(s, v);
}

/* Phase 2: running requests in admission order take their tokens, preempting the newest when pages run out.
 * Returns the budget left, and sets *preempted. */
static int schedule_running(sched *s, int budget, int *preempted)
{
    *preempted = 0;
    for (int i = 0; i < s->nrun && budget > 0; i++) {
        const int r = s->running[i];
        const int need = target(s, r) - s->st[r].seq.len;
        const int t = need < budget ? need : budget;
        while (pl_kv_pages_needed(&s->pool, &s->st[r].seq, t) > s->pool.free_count && s->nrun > i) {
            preempt_newest(s);
            *preempted = 1;
        }
        if (s->nrun <= i) /* it preempted itself */
            break;
        add_work(s, r, t);
        budget -= t;
    }
    return budget;
}

/* Phase 3: first come first served admission while the budget, max_num_seqs and the free pages allow. */
static void admit_waiting(sched *s, int budget)
{
    while (s->count > 0 && budget > 0 && s->nrun < s->max_seqs) {
        const int r = s->ring[s->head];
        const int total = target(s, r);
        if (pl_kv_pages_needed(&s->pool, &s->st[r].seq, total) > s->pool.free_count)
            break;
        waiting_pop(s);
        s->running[s->nrun++] = r;
        const int t = total < budget ? total : budget;
        add_work(s, r, t);
        budget -= t;
    }
}

/* After the step: emitted tokens get the step's end time; finished requests free their pages and client slots. */
static void finish_step(sched *s)
{
    for (int k = 0; k < s->n_prefill + s->n_decode; k++) {
        const pl_serve_work *w = k < s->n_prefill ? &s->prefill[k] : &s->decode[k - s->n_prefill];
        if (!w->emits)
            continue;
        req_state *st = &s->st[w->req];
        s->out->rec[w->req].token_s[st->generated++] = s->now;
        if (st->generated == s->reqs[w->req].output_len) {
            s->out->rec[w->req].finish_s = s->now;
            pl_kv_seq_release(&s->pool, &st->seq);
            s->in_flight--;
            s->done++;
        }
    }
    int kept = 0;
    for (int i = 0; i < s->nrun; i++) {
        const int r = s->running[i];
        if (s->st[r].generated < s->reqs[r].output_len)
            s->running[kept++] = r;
    }
    s->nrun = kept;
}

static int run_step(sched *s, const pl_serve_executor *ex, char *err, size_t errlen)
{
    s->n_prefill = s->n_decode = 0;
    int preempted;
    const int budget = schedule_running(s, s->cfg->max_num_batched_tokens, &preempted);
    if (!preempted)
        admit_waiting(s, budget);
    pl_serve_step step = {.n_prefill = s->n_prefill,
                          .n_decode = s->n_decode,
                          .prefill = s->prefill,
                          .decode = s->decode,
                          .pool = &s->pool};
    for (int k = 0; k < s->n_prefill + s->n_decode; k++) {
        const pl_serve_work *w = k < s->n_prefill ? &s->prefill[k] : &s->decode[k - s->n_prefill];
        step.tokens += w->tokens;
        step.kv_tokens += w->start + w->tokens;
    }
    if (step.tokens == 0)
        return pl_serve_fail(err, errlen, "the schedule stalled at t = %.6f s with %d running and %d waiting", s->now,
                             s->nrun, s->count);
    const int used = s->pool.num_pages - s->pool.free_count;
    s->out->peak_pages = used > s->out->peak_pages ? used : s->out->peak_pages;
    double dt = 0.0;
    const double t0 = pl_serve_mono_s();
    const int rc = ex->step(ex->ctx, &step, &dt);
    s->exec_wall_s += pl_serve_mono_s() - t0;
    if (rc != 0) {
        pl_serve_fail(err, errlen, "the step executor failed (code %d) at t = %.6f s", rc, s->now);
        return rc;
    }
    if (!(dt >= 0.0))
        return pl_serve_fail(err, errlen, "the step executor returned a negative or NaN duration at t = %.6f s",
                             s->now);
    s->now += dt;
    s->out->busy_s += dt;
    s->out->steps++;
    s->out->seqs_in_steps += s->n_prefill + s->n_decode;
    s->out->tokens_in_steps += step.tokens;
    finish_step(s);
    return 0;
}

int pl_serve_config_check(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, char *err, size_t errlen)
{
    if (n < 1)
        return pl_serve_fail(err, errlen, "no requests to serve: --num-prompts must be at least 1");
    if (cfg->max_num_batched_tokens < 1 || cfg->num_pages < 1 || cfg->page_size < 1 || cfg->max_num_seqs < 0 ||
        cfg->max_concurrency < 0)
        return pl_serve_fail(err, errlen,
                             "--max-num-batched-tokens, the KV pages and the page size must be at least 1, "
                             "--max-num-seqs and --max-concurrency at least 0");
    for (int i = 0; i < n; i++) {
        const int pages = pl_kv_pages_for(reqs[i].input_len + reqs[i].output_len - 1, cfg->page_size);
        if (reqs[i].id != i || reqs[i].input_len < 1 || reqs[i].output_len < 1 ||
            (i > 0 && reqs[i].arrival_s < reqs[i - 1].arrival_s))
            return pl_serve_fail(err, errlen,
                                 "request %d is malformed: ids in order, lengths >= 1, arrivals not decreasing", i);
        if (pages > cfg->num_pages)
            return pl_serve_fail(err, errlen,
                                 "request %d (%d in, %d out) needs %d KV pages alone and the pool has %d: give "
                                 "more pages or shorter lengths",
                                 i, reqs[i].input_len, reqs[i].output_len, pages, cfg->num_pages);
    }
    return 0;
}

static void sched_free(sched *s)
{
    if (s->st)
        for (int i = 0; i < s->n; i++)
            pl_kv_seq_destroy(&s->pool, &s->st[i].seq);
    pl_kv_pool_destroy(&s->pool);
    free(s->st);
    free(s->ring);
    free(s->running);
    free(s->prefill);
    free(s->decode);
}

static int sched_init(sched *s, const pl_serve_request *reqs, int n, const pl_serve_config *cfg, pl_serve_run *out)
{
    memset(s, 0, sizeof *s);
    s->reqs = reqs;
    s->cfg = cfg;
    s->n = n;
    s->max_seqs = cfg->max_num_seqs > 0 ? cfg->max_num_seqs : 256;
    s->out = out;
    s->free_slots_old = cfg->max_concurrency;
    s->st = calloc((size_t)n, sizeof *s->st);
    s->ring = malloc((size_t)n * sizeof *s->ring);
    s->running = malloc((size_t)n * sizeof *s->running);
    s->prefill = malloc((size_t)n * sizeof *s->prefill);
    s->decode = malloc((size_t)n * sizeof *s->decode);
    out->rec = calloc((size_t)n, sizeof *out->rec);
    out->n = out->rec ? n : 0; /* token_s NULL until filled: pl_serve_run_free frees a partial run */
    if (pl_kv_pool_init(&s->pool, cfg->num_pages, cfg->page_size) != 0 || !s->st || !s->ring || !s->running ||
        !s->prefill || !s->decode || !out->rec)
        return -1;
    return pl_serve_records_fill(out, reqs, n);
}

int pl_serve_simulate(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, const pl_serve_executor *ex,
                      pl_serve_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (pl_serve_config_check(reqs, n, cfg, err, errlen) != 0)
        return -1;
    sched s;
    const double start = pl_serve_mono_s();
    int rc =
        sched_init(&s, reqs, n, cfg, out) == 0 ? 0 : pl_serve_fail(err, errlen, "no host memory for %d requests", n);
    while (rc == 0 && s.done < n) {
        send_arrivals(&s);
        if (s.nrun == 0 && s.count == 0) { /* idle: the next arrival (a client slot is free: nothing is in flight) */
            s.now = reqs[s.next_send].arrival_s > s.now ? reqs[s.next_send].arrival_s : s.now;
            continue;
        }
        rc = run_step(&s, ex, err, errlen);
    }
    if (rc == 0) {
        out->end_s = s.now;
        out->host_sched_s = pl_serve_mono_s() - start - s.exec_wall_s;
        out->free_pages_at_end = s.pool.free_count;
    }
    sched_free(&s);
    if (rc != 0)
        pl_serve_run_free(out);
    return rc;
}

void pl_serve_run_free(pl_serve_run *run)
{
    for (int i = 0; run->rec && i < run->n; i++)
        free(run->rec[i].token_s);
    free(run->rec);
    memset(run, 0, sizeof *run);
}
