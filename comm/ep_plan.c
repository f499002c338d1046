/* The EP routing and plan (ep_plan.h): routing first, then the dispatch's rows, the expert-major layout and the
 * combine's rows, each a pass over every rank's (token, expert) pairs in (rank, token, k) order. */
#include "comm/ep_plan.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/kernels.h"
#include "core/util.h"
#include "perflab/stats.h"

double pl_ep_expert_scale(int expert)
{
    return PL_EP_EXPERT_SCALE(expert);
}

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

/* Rows of one rank's buffers at most, for any routing: tokens, dispatch send, the peer staging (two halves) and the
 * NCCL staging (each up to n·T·min(k, n)), expert-major input and output, combine send (each up to n·T·k), combine
 * receive (T·k) and the output (T). */
static double worst_rows(const pl_ep_shape *s)
{
    const double n = s->nranks, T = s->tokens, k = s->topk, kn = min_int(s->topk, s->nranks);
    return T + T * kn + 3 * n * T * kn + 3 * n * T * k + T * k + T;
}

double pl_ep_worst_rank_bytes(const pl_ep_shape *s)
{
    return worst_rows(s) * (double)s->hidden * 2.0;
}

int pl_ep_shape_check(const pl_ep_shape *s, char *err, size_t errlen)
{
    pl_ep_shape any = *s; /* nranks 0: the rank count is not known yet; the memory bound takes the most ranks */
    if (s->nranks == 0)
        any.nranks = PL_EP_MAX_RANKS;
    if (s->nranks != 0 && (s->nranks < 2 || s->nranks > PL_EP_MAX_RANKS))
        pl_snprintf(err, errlen, "expert parallelism over %d ranks: use 2 to %d GPUs", s->nranks, PL_EP_MAX_RANKS);
    else if (s->tokens < 1 || s->topk < 1 || s->experts < 1)
        pl_snprintf(err, errlen, "--tokens, --topk and --experts must be at least 1");
    else if (s->hidden < 8 || s->hidden % 8 != 0)
        pl_snprintf(err, errlen,
                    "--hidden %d is not a positive multiple of 8 (rows move 16 bytes at a time): pass e.g. "
                    "7168",
                    s->hidden);
    else if (s->nranks != 0 && s->experts % s->nranks != 0)
        pl_snprintf(err, errlen, "--experts %d is not divisible by the %d ranks: pass a multiple of %d", s->experts,
                    s->nranks, s->nranks);
    else if (s->topk > s->experts)
        pl_snprintf(err, errlen, "--topk %d exceeds --experts %d: a token picks distinct experts; lower --topk",
                    s->topk, s->experts);
    else if (!(s->alpha >= 0 && isfinite(s->alpha)))
        pl_snprintf(err, errlen, "the skew %g is not a Zipf alpha >= 0 (0 is uniform routing)", s->alpha);
    else if ((double)any.nranks * s->tokens * s->topk * s->hidden > 0x1p62 ||
             (double)any.nranks * s->tokens * s->topk > (double)INT_MAX)
        pl_snprintf(err, errlen, "%d ranks x %d tokens x top-%d rows exceed 2^31: lower --tokens", any.nranks,
                    s->tokens, s->topk);
    else if (pl_ep_worst_rank_bytes(&any) > (double)PL_EP_MAX_RANK_BYTES)
        pl_snprintf(err, errlen,
                    "--tokens %d x --hidden %d could need %.1f GiB of EP buffers per GPU on %d ranks (every token "
                    "routed to one rank), over the %d GiB allowed: lower --tokens or --hidden",
                    s->tokens, s->hidden, pl_ep_worst_rank_bytes(&any) / (1 << 30), any.nranks,
                    (int)(PL_EP_MAX_RANK_BYTES >> 30));
    else
        return 0;
    return -1;
}

/* ---- routing ---- */

/* popularity[r] = the r-th most popular expert: a seeded shuffle, the same on every rank. */
static void popularity(int experts, uint64_t seed, int *perm)
{
    pl_rng g;
    pl_rng_seed(&g, seed ^ 0x5EEDE9E27u);
    for (int i = 0; i < experts; i++)
        perm[i] = i;
    for (int i = experts - 1; i > 0; i--) { /* Fisher-Yates */
        const int j = (int)pl_rng_below(&g, (uint64_t)i + 1);
        const int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Token t of rank s: k distinct experts drawn without replacement with weights w (by popularity rank; scratch
 * holds a copy), and the softmax of k seeded logits. Seeded by (seed, s, t) alone: a token's routing does not depend
 * on how many tokens there are. */
static void route_token(const pl_ep_shape *sh, int s, int t, const int *perm, const double *w, double *scratch,
                        int *expert, float *weight)
{
    pl_rng g;
    pl_rng_seed(&g, sh->seed + 0x9E3779B97F4A7C15ull * (uint64_t)(s + 1) + 0xD1B54A32D192ED03ull * (uint64_t)(t + 1));
    const int E = sh->experts, k = sh->topk;
    double total = 0;
    for (int i = 0; i < E; i++)
        total += scratch[i] = w[i];
    for (int j = 0; j < k; j++) {
        const double u = pl_rng_uniform(&g) * total;
        double acc = 0;
        int pick = -1;
        for (int i = 0; i < E; i++) {
            if (scratch[i] <= 0)
                continue;
            pick = i; /* the last candidate, should rounding carry u past the end */
            acc += scratch[i];
            if (u < acc)
                break;
        }
        expert[j] = perm[pick];
        total -= scratch[pick];
        scratch[pick] = 0;
    }
    double logit[64], mx = -1, sum = 0;
    for (int j = 0; j < k && j < 64; j++) {
        logit[j] = 4.0 * pl_rng_uniform(&g);
        mx = logit[j] > mx ? logit[j] : mx;
    }
    for (int j = 0; j < k; j++)
        sum += exp(j < 64 ? logit[j] - mx : 0);
    for (int j = 0; j < k; j++)
        weight[j] = (float)(exp(j < 64 ? logit[j] - mx : 0) / sum);
}

static void route(pl_ep_plan *p)
{
    const pl_ep_shape *sh = &p->shape;
    const int E = sh->experts, k = sh->topk;
    int *perm = pl_xmalloc((size_t)E * sizeof *perm);
    double *w = pl_xmalloc((size_t)E * sizeof *w), *scratch = pl_xmalloc((size_t)E * sizeof *scratch);
    popularity(E, sh->seed, perm);
    for (int r = 0; r < E; r++)
        w[r] = pow((double)(r + 1), -sh->alpha);
    size_t *per_expert = pl_xcalloc((size_t)E, sizeof *per_expert);
    for (int s = 0; s < sh->nranks; s++) {
        pl_ep_rank_plan *rp = &p->rank[s];
        rp->expert = pl_xcalloc((size_t)sh->tokens * k, sizeof *rp->expert);
        rp->weight = pl_xcalloc((size_t)sh->tokens * k, sizeof *rp->weight);
        for (int t = 0; t < sh->tokens; t++) {
            route_token(sh, s, t, perm, w, scratch, rp->expert + (size_t)t * k, rp->weight + (size_t)t * k);
            for (int j = 0; j < k; j++)
                per_expert[rp->expert[(size_t)t * k + j]]++;
        }
    }
    p->expert_gini = pl_gini(per_expert, (size_t)E);
    p->expert_max_mean = pl_max_over_mean(per_expert, (size_t)E);
    free(per_expert);
    free(perm);
    free(w);
    free(scratch);
}

/* ---- dispatch: the distinct (token, rank) rows, the staging and expert-major layouts ---- */

/* idx[(s·T + t)·n + d]: the row of token t of s in chunk s -> d (its place among s's tokens bound for d), or -1. */
static int *dispatch_rows(pl_ep_plan *p, pl_a2a_plan *rows)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk, L = p->local_experts;
    int *idx = pl_xmalloc((size_t)n * T * n * sizeof *idx);
    size_t *count = pl_xcalloc((size_t)n * n, sizeof *count);
    for (int s = 0; s < n; s++)
        for (int t = 0; t < T; t++) {
            int *hit = idx + ((size_t)s * T + t) * n;
            for (int d = 0; d < n; d++)
                hit[d] = -1;
            for (int j = 0; j < k; j++)
                hit[p->rank[s].expert[(size_t)t * k + j] / L] = 0;
            for (int d = 0; d < n; d++)
                if (hit[d] == 0)
                    hit[d] = (int)count[(size_t)s * n + d]++;
        }
    pl_a2a_plan_from_counts(rows, n, count);
    free(count);
    return idx;
}

static void dispatch_send_tables(pl_ep_plan *p, const pl_a2a_plan *rows, const int *idx)
{
    const int n = p->shape.nranks, T = p->shape.tokens;
    for (int s = 0; s < n; s++) {
        pl_ep_rank_plan *rp = &p->rank[s];
        size_t total = 0;
        for (int d = 0; d < n; d++)
            total += rows->counts[(size_t)s * n + d];
        rp->send_rows = (int)total;
        rp->send_token = pl_xcalloc(total + 1, sizeof *rp->send_token);
        rp->send_dest = pl_xcalloc(total + 1, sizeof *rp->send_dest);
        rp->send_dest_row = pl_xcalloc(total + 1, sizeof *rp->send_dest_row);
        int i = 0;
        for (int d = 0; d < n; d++)
            for (int t = 0; t < T; t++) {
                const int at = idx[((size_t)s * T + t) * n + d];
                if (at < 0)
                    continue;
                rp->send_token[i] = t;
                rp->send_dest[i] = d;
                rp->send_dest_row[i] = (int)rows->recv_offset[(size_t)s * n + d] + at;
                i++;
            }
        rp->stage_rows = (int)rows->recv_total[s];
    }
}

static void alloc_recv_tables(pl_ep_rank_plan *rp, int rows)
{
    rp->recv_rows = rows;
    rp->recv_stage_row = pl_xcalloc((size_t)rows + 1, sizeof *rp->recv_stage_row);
    rp->recv_src = pl_xcalloc((size_t)rows + 1, sizeof *rp->recv_src);
    rp->recv_token = pl_xcalloc((size_t)rows + 1, sizeof *rp->recv_token);
    rp->recv_expert = pl_xcalloc((size_t)rows + 1, sizeof *rp->recv_expert);
}

/* Expert-major rows on every rank: counted per local expert, then placed in (source, token) order. */
static void expert_major(pl_ep_plan *p, const pl_a2a_plan *rows, const int *idx)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk, L = p->local_experts;
    int *cursor = pl_xcalloc((size_t)n * L, sizeof *cursor);
    for (int d = 0; d < n; d++)
        p->rank[d].expert_offset = pl_xcalloc((size_t)L + 1, sizeof(int));
    for (int s = 0; s < n; s++)
        for (size_t i = 0; i < (size_t)T * k; i++) {
            const int e = p->rank[s].expert[i];
            p->rank[e / L].expert_offset[e % L + 1]++;
        }
    for (int d = 0; d < n; d++) {
        int *off = p->rank[d].expert_offset;
        for (int l = 0; l < L; l++)
            off[l + 1] += off[l];
        alloc_recv_tables(&p->rank[d], off[L]);
    }
    for (int s = 0; s < n; s++) {
        pl_ep_rank_plan *src = &p->rank[s];
        src->pull_rank = pl_xcalloc((size_t)T * k, sizeof *src->pull_rank);
        src->pull_row = pl_xcalloc((size_t)T * k, sizeof *src->pull_row);
        for (int t = 0; t < T; t++)
            for (int j = 0; j < k; j++) {
                const int e = src->expert[(size_t)t * k + j], d = e / L, l = e % L;
                pl_ep_rank_plan *dst = &p->rank[d];
                const int r = dst->expert_offset[l] + cursor[(size_t)d * L + l]++;
                dst->recv_stage_row[r] = (int)rows->recv_offset[(size_t)s * n + d] + idx[((size_t)s * T + t) * n + d];
                dst->recv_src[r] = s;
                dst->recv_token[r] = t;
                dst->recv_expert[r] = l;
                src->pull_rank[(size_t)t * k + j] = d;
                src->pull_row[(size_t)t * k + j] = r;
            }
    }
    free(cursor);
}

/* ---- combine: one row per (token, expert) back to the token's rank ---- */

static void combine_rows(pl_ep_plan *p, pl_a2a_plan *rows)
{
    const int n = p->shape.nranks, T = p->shape.tokens, k = p->shape.topk;
    const size_t tk = (size_t)T * k;
    size_t *count = pl_xcalloc((size_t)n * n, sizeof *count); /* [d·n + s]: d returns to s */
    int *cidx = pl_xmalloc((size_t)n * tk * sizeof *cidx);
    for (int s = 0; s < n; s++)
        for (size_t i = 0; i < tk; i++)
            cidx[(size_t)s * tk + i] = (int)count[(size_t)p->rank[s].pull_rank[i] * n + s]++;
    pl_a2a_plan_from_counts(rows, n, count);
    for (int d = 0; d < n; d++) {
        size_t total = 0;
        for (int s = 0; s < n; s++)
            total += count[(size_t)d * n + s];
        p->rank[d].comb_send_rows = (int)total;
        p->rank[d].comb_send_row = pl_xcalloc(total + 1, sizeof(int));
    }
    for (int s = 0; s < n; s++) {
        pl_ep_rank_plan *src = &p->rank[s];
        src->comb_recv_rows = (int)tk;
        src->comb_recv_row = pl_xcalloc(tk, sizeof *src->comb_recv_row);
        for (size_t i = 0; i < tk; i++) {
            const int d = src->pull_rank[i], at = cidx[(size_t)s * tk + i];
            p->rank[d].comb_send_row[rows->send_offset[(size_t)d * n + s] + (size_t)at] = src->pull_row[i];
            src->comb_recv_row[i] = (int)rows->recv_offset[(size_t)d * n + s] + at;
        }
    }
    free(cidx);
    free(count);
}

/* The row plan in bf16 elements (rows · H), and the rows crossing to another rank. */
static void to_elements(const pl_a2a_plan *rows, int hidden, pl_a2a_plan *out, size_t *fabric_rows)
{
    const size_t n = (size_t)rows->nranks;
    size_t *count = pl_xmalloc(n * n * sizeof *count);
    *fabric_rows = 0;
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++) {
            count[s * n + d] = rows->counts[s * n + d] * (size_t)hidden;
            *fabric_rows += s != d ? rows->counts[s * n + d] : 0;
        }
    pl_a2a_plan_from_counts(out, rows->nranks, count);
    free(count);
}

static void maxima(pl_ep_plan *p)
{
    for (int s = 0; s < p->shape.nranks; s++) {
        const pl_ep_rank_plan *rp = &p->rank[s];
        p->max_send_rows = rp->send_rows > p->max_send_rows ? rp->send_rows : p->max_send_rows;
        p->max_stage_rows = rp->stage_rows > p->max_stage_rows ? rp->stage_rows : p->max_stage_rows;
        p->max_recv_rows = rp->recv_rows > p->max_recv_rows ? rp->recv_rows : p->max_recv_rows;
        p->max_comb_send_rows = rp->comb_send_rows > p->max_comb_send_rows ? rp->comb_send_rows : p->max_comb_send_rows;
    }
}

size_t pl_ep_plan_rank_bytes(const pl_ep_plan *p)
{
    const size_t T = (size_t)p->shape.tokens, k = (size_t)p->shape.topk;
    const size_t rows = T + (size_t)p->max_send_rows + 3 * (size_t)p->max_stage_rows + 2 * (size_t)p->max_recv_rows +
                        (size_t)p->max_comb_send_rows + T * k + T;
    return rows * (size_t)p->shape.hidden * 2;
}

int pl_ep_plan_make(pl_ep_plan *p, const pl_ep_shape *s, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (s->nranks == 0) {
        pl_snprintf(err, errlen, "an EP plan needs the rank count");
        return -1;
    }
    if (pl_ep_shape_check(s, err, errlen) != 0)
        return -1;
    p->shape = *s;
    p->local_experts = s->experts / s->nranks;
    p->rank = pl_xcalloc((size_t)s->nranks, sizeof *p->rank);
    route(p);
    pl_a2a_plan drows, crows;
    int *idx = dispatch_rows(p, &drows);
    dispatch_send_tables(p, &drows, idx);
    expert_major(p, &drows, idx);
    free(idx);
    combine_rows(p, &crows);
    to_elements(&drows, s->hidden, &p->dispatch, &p->dispatch_fabric_rows);
    to_elements(&crows, s->hidden, &p->combine, &p->combine_fabric_rows);
    pl_a2a_plan_free(&drows);
    pl_a2a_plan_free(&crows);
    maxima(p);
    return 0;
}

void pl_ep_plan_free(pl_ep_plan *p)
{
    for (int s = 0; p->rank && s < p->shape.nranks; s++) {
        pl_ep_rank_plan *rp = &p->rank[s];
        void *all[] = {rp->expert,      rp->weight,        rp->pull_rank,      rp->pull_row,     rp->send_token,
                       rp->send_dest,   rp->send_dest_row, rp->recv_stage_row, rp->recv_src,     rp->recv_token,
                       rp->recv_expert, rp->expert_offset, rp->comb_send_row,  rp->comb_recv_row};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            free(all[i]);
    }
    free(p->rank);
    pl_a2a_plan_free(&p->dispatch);
    pl_a2a_plan_free(&p->combine);
    memset(p, 0, sizeof *p);
}
