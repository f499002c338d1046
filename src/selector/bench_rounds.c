/* The interleaved rounds of perflab gemm's child (--rounds N > 1): every verified configuration of a shape timed in
 * turn, and the heuristic's pick re-timed head to head against the fastest native configuration. */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "perflab/stats.h"
#include "selector/bench_child.h"

/* Of a shape's budget, the head-to-head re-timing of the heuristic's pick (confirm_pick) takes this share; the
 * rounds of every configuration the rest. */
#define CONFIRM_SHARE 0.25

/* How long each configuration runs in a round. With a budget (perflab gemm --budget-s, the default), the `seconds`
 * of this set are shared evenly by its n configurations over the round at load and the kept rounds: each runs its
 * share (--min-samples / rounds samples where they fit in it, one at least), in place of --min-time-s and
 * --max-time-s; without one (--budget-s 0, or --iterations given), the rule of pl_round_quota_for. */
static pl_round_quota quota_of(const pl_gemm_bench *b, double seconds, size_t n, int rounds, int round)
{
    pl_round_quota q = pl_round_quota_for(b->req->settings, rounds, round);
    if (b->req->budget_s > 0 && b->req->settings->iterations <= 0)
        q.min_s = q.max_s = seconds / ((double)n * (rounds + 1));
    return q;
}

/* Kept rounds that fit what is left of the budget after the round at load took `load_s`: each kept round costs
 * about as much (every configuration one share, or one sample where a sample is longer). At least one. */
static int rounds_that_fit(const pl_gemm_bench *b, double seconds, double load_s, int rounds)
{
    if (!(b->req->budget_s > 0) || b->req->settings->iterations > 0 || !(load_s > 0))
        return rounds;
    const double fit = (seconds - load_s) / load_s;
    return fit >= rounds ? rounds : fit < 1 ? 1 : (int)fit;
}

/* Start each of the n configurations at `set` (warm-up, batch size) in order, then time them in rounds 0 (at load,
 * dropped) .. rounds, round r starting with configuration r mod n, within `seconds` when there is a budget (fewer
 * kept rounds when the round at load shows they do not fit). One that fails is marked done, with its record's
 * reason where `record` is set. The timings are left open (p->t) for the caller to end. Returns the kept rounds
 * run, or -1 when the CUDA context was lost. */
static int run_rounds(pl_gemm_bench *b, pending *set, size_t n, int rounds, double seconds, int record)
{
    pl_ctx *ctx = &b->ctx;
    int lost = 0;
    for (size_t i = 0; i < n && !lost; i++) {
        pending *p = &set[i];
        ctx->error[0] = '\0';
        if (!(p->t = pl_timing_begin(&b->env, &p->var, &p->c, &p->vr))) {
            if (record)
                pl_gemm_bench_record_failure(&p->list->items[p->index], pl_strfmt("timing failed: %s", ctx->error));
            p->done = 1;
            lost = pl_gemm_bench_context_lost();
        }
    }
    const int planned = rounds;
    for (int round = 0; round <= rounds && !lost; round++) {
        const pl_round_quota q = quota_of(b, seconds, n, planned, round);
        const double t0 = pl_now_s();
        for (size_t j = 0; j < n && !lost; j++) {
            pending *p = &set[pl_round_slot(n, round, j)];
            if (!p->t)
                continue;
            ctx->error[0] = '\0';
            if (pl_timing_round(&b->env, p->t, &p->vr, &q) != 0) {
                if (record)
                    pl_gemm_bench_record_failure(&p->list->items[p->index], pl_strfmt("timing failed: %s", ctx->error));
                p->done = 1;
                pl_timing_free(p->t);
                p->t = NULL;
                lost = pl_gemm_bench_context_lost();
            }
        }
        if (round == 0)
            rounds = rounds_that_fit(b, seconds, pl_now_s() - t0, planned);
    }
    return lost ? -1 : rounds;
}

/* The heuristic's pick against the fastest native configuration of the shape, when they differ. The fastest of
 * ~30 noisy medians is biased low (the winner's curse), so the two are timed again, head to head, in rounds of
 * their own, and the verdict (the pick within 3% of the best) is judged on those. Sets b->confirmed when both were
 * timed (run_shape clears it for every shape). -1 when the CUDA context was lost. */
static int confirm_pick(pl_gemm_bench *b, const pl_gemm_record_list *native, const char *pick)
{
    if (!native || !pick || !*pick)
        return 0;
    const pending *best = NULL, *mine = NULL;
    for (size_t i = 0; i < b->n_pend; i++) {
        const pending *p = &b->pend[i];
        const pl_gemm_record *r = &p->list->items[p->index];
        if (p->list != native || r->status != PL_GEMM_OK || !r->verified || !(r->median_ms > 0) || !r->kernel)
            continue;
        if (!best || r->median_ms < best->list->items[best->index].median_ms)
            best = p;
        if (strcmp(r->kernel, pick) == 0)
            mine = p;
    }
    if (!best || !mine || best == mine)
        return 0;
    pending two[2] = {*mine, *best};
    const int rounds = pl_gemm_bench_rounds(b);
    for (size_t i = 0; i < 2; i++) {
        two[i].t = NULL;
        two[i].done = 0;
        memset(&two[i].vr, 0, sizeof two[i].vr);
    }
    const int kept = run_rounds(b, two, 2, rounds, b->req->budget_s * CONFIRM_SHARE, 0), lost = kept < 0;
    pl_stats st[2];
    int ok = 1;
    for (size_t i = 0; i < 2; i++) {
        if (two[i].t && !lost)
            pl_timing_end(two[i].t, &two[i].vr, pl_strdup("head-to-head rounds"));
        else {
            pl_timing_free(two[i].t);
            ok = 0;
        }
        ok = ok && !two[i].done && pl_stats_compute(two[i].vr.samples_ms, two[i].vr.n_samples, &st[i]) == 0;
    }
    if (ok) {
        b->confirmed = 1;
        b->confirm_rounds = kept;
        b->confirm_pick_ms = st[0].median;
        b->confirm_best_ms = st[1].median;
        pl_snprintf(b->confirm_best, sizeof b->confirm_best, "%s", best->list->items[best->index].kernel);
    }
    for (size_t i = 0; i < 2; i++) {
        free(two[i].vr.samples_ms);
        free(two[i].vr.stop_reason);
    }
    return lost ? -1 : 0;
}

/* The verified configurations of every provider of the shape, timed in interleaved rounds (run_rounds); their
 * records get the samples of all kept rounds. Then the heuristic's pick is confirmed against the native best
 * (confirm_pick). Returns -1 when the CUDA context was lost (the records not finished say so). */
int pl_gemm_bench_time_in_rounds(pl_gemm_bench *b, const pl_gemm_record_list *native, const char *pick)
{
    const int rounds = pl_gemm_bench_rounds(b);
    for (size_t i = 0; i < b->n_pend; i++) {
        pending *p = &b->pend[i];
        p->var.name = p->list->items[p->index].kernel;
        p->var.technique = "";
        p->var.run = pl_gemm_bench_candidate_run;
    }
    const int kept = run_rounds(b, b->pend, b->n_pend, rounds, b->req->budget_s * (1 - CONFIRM_SHARE), 1);
    int lost = kept < 0;
    for (size_t i = 0; i < b->n_pend; i++) {
        pending *p = &b->pend[i];
        pl_gemm_record *r = &p->list->items[p->index];
        if (p->t && !lost) {
            pl_timing_end(p->t, &p->vr, pl_strfmt("%d interleaved rounds after one at load", kept));
            pl_gemm_bench_record_timing(r, p->c.shape->shape, &p->vr);
        } else {
            pl_timing_free(p->t);
            if (!p->done)
                pl_gemm_bench_record_failure(r, pl_strdup("not timed: the CUDA context was lost by another configuration"));
        }
        p->t = NULL;
        free(p->vr.samples_ms);
        free(p->vr.stop_reason);
        p->vr.samples_ms = NULL;
        p->vr.stop_reason = NULL;
    }
    if (!lost)
        lost = confirm_pick(b, native, pick) != 0;
    b->n_pend = 0;
    return lost ? -1 : 0;
}

/* The configurations queued for rounds that will not run (the context was lost while verifying another). */
void pl_gemm_bench_abandon_pending(pl_gemm_bench *b)
{
    for (size_t i = 0; i < b->n_pend; i++)
        pl_gemm_bench_record_failure(&b->pend[i].list->items[b->pend[i].index],
                       pl_strdup("not timed: the CUDA context was lost by another configuration"));
    b->n_pend = 0;
}
