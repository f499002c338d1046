/* The disaggregated scheduler: a prefill lane and a decode lane, each with its pool, joined by KV copies
 * (serve_disagg.h). */
#include "engine/serve_disagg.h"
#include "engine/serve_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the computed link ---- */

int pl_serve_link_begin(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes)
{
    pl_serve_link *l = ctx;
    (void)dst;
    if (req >= l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        while (cap <= req)
            cap *= 2;
        double *s = realloc(l->seconds, (size_t)cap * sizeof *s);
        if (!s)
            return -1;
        l->seconds = s, l->cap = cap;
    }
    *bytes = (int64_t)src->npages * (int64_t)l->page_bytes;
    l->seconds[req] = l->latency_s + (l->bytes_per_s > 0 ? (double)*bytes / l->bytes_per_s : 0.0);
    return 0;
}

int pl_serve_link_end(void *ctx, int req, double *seconds)
{
    const pl_serve_link *l = ctx;
    if (req < 0 || req >= l->cap)
        return -1;
    *seconds = l->seconds[req];
    return 0;
}

void pl_serve_link_free(pl_serve_link *l)
{
    free(l->seconds);
    l->seconds = NULL;
    l->cap = 0;
}

/* ---- the scheduler's state ---- */

typedef struct dreq {
    pl_kv_seq pseq, dseq; /* its pages on the prefill pool (the whole prefill's, from admission), on the decode pool */
    int generated, computed; /* output tokens emitted; prefill tokens computed so far */
    int slot;                /* its client slot under --max-concurrency */
    int resolved;            /* its last copy's duration was read (arrive_s is set) */
    double avail_s;          /* when it joined the waiting queue (sent, or preempted) */
    double ready_s, launch_s, arrive_s;
} dreq;

typedef struct lane {
    double clock;
    int idle; /* nothing ran at clock: it wakes at its next event */
} lane;

/* An ordered list of request ids. */
typedef struct idlist {
    int *id, n;
} idlist;

typedef struct dsched {
    const pl_serve_request *reqs;
    const pl_serve_config *cfg;
    const pl_serve_disagg *d;
    int n, max_seqs;
    pl_kv_pool pp, dp;
    dreq *st;
    int *ring, head, count; /* waiting for the prefill lane (a ring; preempted requests at its front) */
    idlist pre;             /* prefilling, admission order */
    idlist hand;            /* prefill done, waiting for the decode lane to take them, in ready order */
    idlist unresolved;      /* copies begun whose duration is not read yet, begin order */
    idlist moving;          /* copies begun, not yet in the decode batch, begin order */
    idlist rel;             /* prefill pages to return once their copy arrived */
    idlist dec;             /* decoding, admission order */
    double *slot_free;      /* --max-concurrency slots: when each was freed (-1: in use) */
    int next_send, done;
    double copy_free_s; /* when the copy lane finishes the copies begun so far */
    lane lp, ld;
    pl_serve_work *work;
    int nwork;
    double exec_wall_s;
    pl_serve_run *out;
} dsched;

static int target(const dsched *s, int r)
{
    return s->reqs[r].input_len + s->st[r].generated;
}

static void list_push(idlist *l, int r)
{
    l->id[l->n++] = r;
}

static void list_remove_at(idlist *l, int i)
{
    memmove(l->id + i, l->id + i + 1, (size_t)(l->n - i - 1) * sizeof *l->id);
    l->n--;
}

static void waiting_push(dsched *s, int r, int front)
{
    if (front) {
        s->head = (s->head + s->n - 1) % s->n;
        s->ring[s->head] = r;
    } else {
        s->ring[(s->head + s->count) % s->n] = r;
    }
    s->count++;
}

/* A request leaves the engine at t: its last token's time, its client slot freed then. */
static void finish(dsched *s, int r, double t)
{
    s->out->rec[r].finish_s = t;
    if (s->cfg->max_concurrency > 0)
        s->slot_free[s->st[r].slot] = t;
    s->done++;
}

/* ---- the prefill lane ---- */

/* Sends what has arrived by now: with --max-concurrency, into the slot freed earliest (at or before now); the send
 * time is the later of the arrival and the slot's freeing. */
static void send_arrivals(dsched *s, double now)
{
    const int limit = s->cfg->max_concurrency;
    while (s->next_send < s->n && s->reqs[s->next_send].arrival_s <= now) {
        const int r = s->next_send;
        double send = s->reqs[r].arrival_s;
        if (limit > 0) {
            int best = -1;
            for (int k = 0; k < limit; k++)
                if (s->slot_free[k] >= 0 && s->slot_free[k] <= now &&
                    (best < 0 || s->slot_free[k] < s->slot_free[best]))
                    best = k;
            if (best < 0)
                break;
            send = send > s->slot_free[best] ? send : s->slot_free[best];
            s->slot_free[best] = -1;
            s->st[r].slot = best;
        }
        s->out->rec[r].send_s = send;
        s->st[r].avail_s = send;
        waiting_push(s, r, 0);
        s->next_send++;
    }
}

/* Prefill pages whose copy has arrived by now go back to the pool. */
static void release_prefill(dsched *s, double now)
{
    for (int i = 0; i < s->rel.n;) {
        const int r = s->rel.id[i];
        if (s->st[r].arrive_s <= now) {
            pl_kv_seq_release(&s->pp, &s->st[r].pseq);
            list_remove_at(&s->rel, i);
        } else {
            i++;
        }
    }
}

static void add_prefill(dsched *s, int r, int tokens)
{
    dreq *q = &s->st[r];
    s->work[s->nwork++] = (pl_serve_work){.req = r,
                                          .start = q->computed,
                                          .tokens = tokens,
                                          .emits = q->computed + tokens == target(s, r),
                                          .seq = &q->pseq};
    q->computed += tokens;
}

/* The prefill step's parts: the prefilling requests' next chunks, then admissions. */
static void plan_prefill(dsched *s, double now)
{
    int budget = s->cfg->max_num_batched_tokens;
    for (int i = 0; i < s->pre.n && budget > 0; i++) {
        const int r = s->pre.id[i], need = target(s, r) - s->st[r].computed;
        const int t = need < budget ? need : budget;
        add_prefill(s, r, t);
        budget -= t;
    }
    while (s->count > 0 && budget > 0 && s->pre.n < s->max_seqs) {
        const int r = s->ring[s->head], total = target(s, r);
        if (s->st[r].avail_s > now || pl_kv_pages_for(total, s->pp.page_size) > s->pp.free_count)
            break;
        s->head = (s->head + 1) % s->n;
        s->count--;
        pl_kv_seq_append(&s->pp, &s->st[r].pseq, total); /* checked free */
        s->st[r].computed = 0;
        list_push(&s->pre, r);
        const int t = total < budget ? total : budget;
        add_prefill(s, r, t);
        budget -= t;
    }
}

/* One step of the lane's executor over s->work (prefill parts or decodes) on `pool`; its duration in *dt. */
static int run_lane_step(dsched *s, const pl_serve_executor *ex, const pl_kv_pool *pool, int decode, double *dt)
{
    pl_serve_step step = {.pool = pool};
    if (decode)
        step.n_decode = s->nwork, step.decode = s->work;
    else
        step.n_prefill = s->nwork, step.prefill = s->work;
    for (int k = 0; k < s->nwork; k++) {
        step.tokens += s->work[k].tokens;
        step.kv_tokens += s->work[k].start + s->work[k].tokens;
    }
    *dt = 0;
    const double t0 = pl_serve_mono_s();
    const int rc = ex->step(ex->ctx, &step, dt);
    s->exec_wall_s += pl_serve_mono_s() - t0;
    if (rc != 0)
        return rc;
    if (!(*dt >= 0.0))
        return -2;
    s->out->steps++;
    s->out->seqs_in_steps += s->nwork;
    s->out->tokens_in_steps += step.tokens;
    s->out->busy_s += *dt;
    return 0;
}

/* 1 a step ran, 0 nothing to run at the lane's clock, else an error code. */
static int prefill_lane(dsched *s, int *code)
{
    const double now = s->lp.clock;
    release_prefill(s, now);
    send_arrivals(s, now);
    s->nwork = 0;
    plan_prefill(s, now);
    if (s->nwork == 0)
        return 0;
    const int used = s->pp.num_pages - s->pp.free_count;
    s->out->peak_pages = used > s->out->peak_pages ? used : s->out->peak_pages;
    double dt;
    if ((*code = run_lane_step(s, &s->d->prefill, &s->pp, 0, &dt)) != 0)
        return -1;
    s->lp.clock += dt;
    s->out->prefill_steps++;
    s->out->prefill_busy_s += dt;
    for (int k = 0; k < s->nwork; k++) {
        const int r = s->work[k].req;
        if (!s->work[k].emits)
            continue;
        dreq *q = &s->st[r];
        s->out->rec[r].token_s[q->generated++] = s->lp.clock;
        for (int i = 0; i < s->pre.n; i++)
            if (s->pre.id[i] == r) {
                list_remove_at(&s->pre, i);
                break;
            }
        if (q->generated == s->reqs[r].output_len) { /* one output token: done at its prefill */
            pl_kv_seq_release(&s->pp, &q->pseq);
            finish(s, r, s->lp.clock);
        } else {
            q->ready_s = s->lp.clock;
            list_push(&s->hand, r);
        }
    }
    return 1;
}

/* ---- the handoff and the decode lane ---- */

/* Ready requests the decode pool has room for, in ready order, begin their copies at now. */
static int launch_copies(dsched *s, double now, int *code)
{
    while (s->hand.n > 0) {
        const int r = s->hand.id[0];
        dreq *q = &s->st[r];
        if (q->ready_s > now || pl_kv_pages_for(q->pseq.len, s->dp.page_size) > s->dp.free_count)
            break;
        list_remove_at(&s->hand, 0);
        pl_kv_seq_append(&s->dp, &q->dseq, q->pseq.len); /* checked free */
        int64_t bytes = 0;
        const double t0 = pl_serve_mono_s();
        *code = s->d->transfer.begin(s->d->transfer.ctx, r, &q->pseq, &q->dseq, &bytes);
        s->exec_wall_s += pl_serve_mono_s() - t0;
        if (*code != 0)
            return -1;
        q->launch_s = now;
        q->resolved = 0;
        pl_serve_record *rec = &s->out->rec[r];
        rec->transfers++;
        rec->transfer_bytes += bytes;
        s->out->transfers++;
        s->out->transfer_bytes += bytes;
        list_push(&s->unresolved, r);
        list_push(&s->moving, r);
    }
    return 0;
}

/* Reads the durations of the copies begun so far: each starts when the copy lane is free, after its launch. */
static int resolve_copies(dsched *s, int *code)
{
    for (int i = 0; i < s->unresolved.n; i++) {
        const int r = s->unresolved.id[i];
        double sec = 0;
        const double t0 = pl_serve_mono_s();
        *code = s->d->transfer.end(s->d->transfer.ctx, r, &sec);
        s->exec_wall_s += pl_serve_mono_s() - t0;
        if (*code != 0 || !(sec >= 0)) {
            *code = *code ? *code : -2;
            return -1;
        }
        dreq *q = &s->st[r];
        const double start = q->launch_s > s->copy_free_s ? q->launch_s : s->copy_free_s;
        q->arrive_s = s->copy_free_s = start + sec;
        q->resolved = 1;
        s->out->rec[r].transfer_s += sec;
        s->out->transfer_s += sec;
        list_push(&s->rel, r);
    }
    s->unresolved.n = 0;
    return 0;
}

static void preempt_newest_decode(dsched *s, double now)
{
    const int v = s->dec.id[--s->dec.n];
    pl_kv_seq_release(&s->dp, &s->st[v].dseq);
    s->out->rec[v].preemptions++;
    s->out->preemptions++;
    s->st[v].avail_s = now;
    waiting_push(s, v, 1);
}

/* The decode step's parts: arrived copies join (launch order), then one token of each decoding request. */
static void plan_decode(dsched *s, double now)
{
    while (s->moving.n > 0 && s->dec.n < s->max_seqs) {
        const int r = s->moving.id[0];
        if (!s->st[r].resolved || s->st[r].arrive_s > now)
            break;
        list_remove_at(&s->moving, 0);
        list_push(&s->dec, r);
    }
    int budget = s->cfg->max_num_batched_tokens;
    for (int i = 0; i < s->dec.n && budget > 0; i++) {
        const int r = s->dec.id[i];
        while (pl_kv_pages_needed(&s->dp, &s->st[r].dseq, 1) > s->dp.free_count && s->dec.n > i)
            preempt_newest_decode(s, now);
        if (s->dec.n <= i) /* it preempted itself */
            break;
        const int start = s->st[r].dseq.len;
        pl_kv_seq_append(&s->dp, &s->st[r].dseq, 1);
        s->work[s->nwork++] = (pl_serve_work){.req = r, .start = start, .tokens = 1, .emits = 1, .seq = &s->st[r].dseq};
        budget--;
    }
}

static int decode_lane(dsched *s, int *code)
{
    const double now = s->ld.clock;
    if (launch_copies(s, now, code) != 0)
        return -1;
    s->nwork = 0;
    plan_decode(s, now);
    if (s->nwork == 0)
        return 0;
    const int used = s->dp.num_pages - s->dp.free_count;
    s->out->peak_decode_pages = used > s->out->peak_decode_pages ? used : s->out->peak_decode_pages;
    double dt;
    if ((*code = run_lane_step(s, &s->d->decode, &s->dp, 1, &dt)) != 0)
        return -1;
    s->ld.clock += dt;
    s->out->decode_steps++;
    s->out->decode_busy_s += dt;
    for (int k = 0; k < s->nwork; k++) {
        const int r = s->work[k].req;
        dreq *q = &s->st[r];
        s->out->rec[r].token_s[q->generated++] = s->ld.clock;
        if (q->generated == s->reqs[r].output_len) {
            pl_kv_seq_release(&s->dp, &q->dseq);
            finish(s, r, s->ld.clock);
        }
    }
    int kept = 0;
    for (int i = 0; i < s->dec.n; i++)
        if (s->st[s->dec.id[i]].generated < s->reqs[s->dec.id[i]].output_len)
            s->dec.id[kept++] = s->dec.id[i];
    s->dec.n = kept;
    return 1;
}

/* ---- when an idle lane wakes ---- */

static double later_min(double best, double t, double after)
{
    return t > after && t < best ? t : best;
}

/* The prefill lane's next event after its clock: an arrival it may send, a queued request becoming available,
 * prefill pages coming back. INFINITY: only the decode lane can give it work. */
static double prefill_wake(const dsched *s)
{
    const double c = s->lp.clock;
    double best = INFINITY;
    if (s->next_send < s->n) {
        double t = s->reqs[s->next_send].arrival_s;
        if (s->cfg->max_concurrency > 0) {
            double slot = INFINITY;
            for (int k = 0; k < s->cfg->max_concurrency; k++)
                if (s->slot_free[k] >= 0 && s->slot_free[k] < slot)
                    slot = s->slot_free[k];
            t = t > slot ? t : slot;
        }
        best = later_min(best, t, c);
    }
    if (s->count > 0)
        best = later_min(best, s->st[s->ring[s->head]].avail_s, c);
    for (int i = 0; i < s->rel.n; i++)
        best = later_min(best, s->st[s->rel.id[i]].arrive_s, c);
    return best;
}

/* The decode lane's next event: a ready prompt, an arrived copy. */
static double decode_wake(const dsched *s)
{
    const double c = s->ld.clock;
    double best = INFINITY;
    if (s->hand.n > 0)
        best = later_min(best, s->st[s->hand.id[0]].ready_s, c);
    if (s->moving.n > 0) { /* an arrived copy joins at the first boundary at or after its arrival */
        const double a = s->st[s->moving.id[0]].arrive_s;
        best = a <= c ? c : later_min(best, a, c);
    }
    return best;
}

/* ---- the run ---- */

static void dsched_free(dsched *s)
{
    if (s->st)
        for (int i = 0; i < s->n; i++) {
            pl_kv_seq_destroy(&s->pp, &s->st[i].pseq);
            pl_kv_seq_destroy(&s->dp, &s->st[i].dseq);
        }
    pl_kv_pool_destroy(&s->pp);
    pl_kv_pool_destroy(&s->dp);
    idlist *lists[] = {&s->pre, &s->hand, &s->unresolved, &s->moving, &s->rel, &s->dec};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        free(lists[i]->id);
    free(s->st);
    free(s->ring);
    free(s->slot_free);
    free(s->work);
}

static int dsched_init(dsched *s, const pl_serve_request *reqs, int n, const pl_serve_config *cfg,
                       const pl_serve_disagg *d, pl_serve_run *out)
{
    memset(s, 0, sizeof *s);
    s->reqs = reqs, s->cfg = cfg, s->d = d, s->n = n, s->out = out;
    s->max_seqs = cfg->max_num_seqs > 0 ? cfg->max_num_seqs : 256;
    s->st = calloc((size_t)n, sizeof *s->st);
    s->ring = malloc((size_t)n * sizeof *s->ring);
    s->work = malloc((size_t)n * sizeof *s->work);
    s->slot_free = calloc((size_t)(cfg->max_concurrency > 0 ? cfg->max_concurrency : 1), sizeof *s->slot_free);
    idlist *lists[] = {&s->pre, &s->hand, &s->unresolved, &s->moving, &s->rel, &s->dec};
    int ok = s->st && s->ring && s->work && s->slot_free;
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        ok = (lists[i]->id = malloc((size_t)n * sizeof(int))) != NULL && ok;
    out->rec = calloc((size_t)n, sizeof *out->rec);
    out->n = out->rec ? n : 0;
    if (pl_kv_pool_init(&s->pp, cfg->num_pages, cfg->page_size) != 0 ||
        pl_kv_pool_init(&s->dp, d->decode_pages, cfg->page_size) != 0 || !ok || !out->rec)
        return -1;
    out->disaggregated = 1;
    out->decode_pages = d->decode_pages;
    return pl_serve_records_fill(out, reqs, n);
}

/* Runs the lane whose clock (or, asleep, whose next event) is earlier. 0, -1 with err, or a step's code. */
static int advance(dsched *s, char *err, size_t errlen)
{
    int code = 0;
    if (resolve_copies(s, &code) != 0)
        return code > 0 ? code : pl_serve_fail(err, errlen, "the KV transfer failed (code %d)", code);
    const double tp = s->lp.idle ? prefill_wake(s) : s->lp.clock;
    const double td = s->ld.idle ? decode_wake(s) : s->ld.clock;
    if (isinf(tp) && isinf(td))
        return pl_serve_fail(
            err, errlen,
            "the disaggregated schedule stalled at t = %.6f s: %d waiting, %d prefilling, %d handed off, "
            "%d moving, %d decoding",
            s->lp.clock > s->ld.clock ? s->lp.clock : s->ld.clock, s->count, s->pre.n, s->hand.n, s->moving.n,
            s->dec.n);
    lane *l = tp <= td ? &s->lp : &s->ld;
    l->clock = tp <= td ? tp : td;
    const int ran = tp <= td ? prefill_lane(s, &code) : decode_lane(s, &code);
    if (ran < 0) {
        if (code == -2)
            return pl_serve_fail(err, errlen, "a step executor returned a negative or NaN duration at t = %.6f s",
                                 l->clock);
        return code > 0 ? code
                        : pl_serve_fail(err, errlen, "a step executor failed (code %d) at t = %.6f s", code, l->clock);
    }
    l->idle = ran == 0;
    return 0;
}

int pl_serve_disagg_simulate(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, const pl_serve_disagg *d,
                             pl_serve_run *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    pl_serve_config dcfg = *cfg;
    dcfg.num_pages = d->decode_pages;
    if (pl_serve_config_check(reqs, n, cfg, err, errlen) != 0 ||
        pl_serve_config_check(reqs, n, &dcfg, err, errlen) != 0)
        return -1;
    dsched s;
    const double start = pl_serve_mono_s();
    int rc = dsched_init(&s, reqs, n, cfg, d, out) == 0
                 ? 0
                 : pl_serve_fail(err, errlen, "no host memory for %d requests", n);
    while (rc == 0 && s.done < n)
        rc = advance(&s, err, errlen);
    if (rc == 0) {
        for (int i = 0; i < n; i++)
            out->end_s = out->rec[i].finish_s > out->end_s ? out->rec[i].finish_s : out->end_s;
        out->host_sched_s = pl_serve_mono_s() - start - s.exec_wall_s;
        release_prefill(&s, INFINITY); /* pages the prefill lane had no boundary left to return */
        out->free_pages_at_end = s.pp.free_count;
        out->free_decode_pages_at_end = s.dp.free_count;
    }
    dsched_free(&s);
    if (rc != 0)
        pl_serve_run_free(out);
    return rc;
}
