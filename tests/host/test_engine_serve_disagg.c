/* The disaggregated scheduler on the host (engine/serve_disagg.h) with synthetic steps and the computed link: the
 * prefill lane runs prefill chunks only and the decode lane decodes only; each request's KV positions run on without
 * a gap from its prefill into its decode; every copy moves the prefill pages of the KV computed, into as many
 * decode pages; a request's second token comes after its first by at least its copy; both pools end with every page
 * free; --max-concurrency holds; a small decode pool preempts, and a preempted request is prefilled and moved again;
 * a one-token request finishes at its prefill without a copy; a request that cannot fit the decode pool is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/serve_disagg.h"
#include "engine/serve_workload.h"
#include "testutil.h"

#define PAGE_BYTES 4096

typedef struct lane_check {
    pl_serve_synthetic syn;
    int decode; /* the lane: 0 prefill, 1 decode */
    int *kv_end, *emitted;
    int budget, restarts;
    const char *bad;
} lane_check;

typedef struct world {
    lane_check pf, dc;
    pl_serve_link link;
    int *moved_len; /* the KV tokens of each request's last copy */
    const char *bad;
} world;

static int lane_step(void *ctx, const pl_serve_step *s, double *seconds)
{
    lane_check *c = ctx;
    int tokens = 0;
    if ((c->decode ? s->n_prefill : s->n_decode) != 0)
        c->bad = c->decode ? "the decode lane ran a prefill" : "the prefill lane ran a decode";
    for (int k = 0; k < s->n_prefill + s->n_decode && !c->bad; k++) {
        const pl_serve_work *w = k < s->n_prefill ? &s->prefill[k] : &s->decode[k - s->n_prefill];
        tokens += w->tokens;
        if (!c->decode && w->start == 0 && c->kv_end[w->req] > 0)
            c->restarts++;
        else if (w->start != c->kv_end[w->req])
            c->bad = "a request's KV positions are not contiguous";
        if (c->decode && (w->tokens != 1 || !w->emits || w->seq->len != w->start + 1))
            c->bad = "a decode is other than one emitting token at the end of its sequence";
        if (w->seq->npages != pl_kv_pages_for(w->seq->len, s->pool->page_size) || w->start + w->tokens > w->seq->len)
            c->bad = "a step's sequence holds the wrong pages";
        c->kv_end[w->req] = w->start + w->tokens;
        c->emitted[w->req] += w->emits;
    }
    if (!c->bad && (tokens != s->tokens || tokens > c->budget))
        c->bad = "a step's tokens are miscounted or over the budget";
    return pl_serve_synthetic_step(&c->syn, s, seconds);
}

/* The computed link, with the copy's sides checked: the prefill KV whole, into as many decode tokens. */
static int checked_begin(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes)
{
    world *w = ctx;
    if (src->len != dst->len || src->len != w->pf.kv_end[req] || dst->npages != src->npages)
        w->bad = "a copy's sides differ, or it moves other than the prefill's KV";
    w->moved_len[req] = src->len;
    w->dc.kv_end[req] = src->len; /* the decode lane continues from there */
    return pl_serve_link_begin(&w->link, req, src, dst, bytes);
}

static int checked_end(void *ctx, int req, double *seconds)
{
    world *w = ctx;
    return pl_serve_link_end(&w->link, req, seconds);
}

static pl_serve_request *make(const pl_serve_workload_spec *spec)
{
    char err[256];
    pl_serve_request *r = malloc((size_t)spec->num_prompts * sizeof *r);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(pl_serve_workload_make(spec, r, err, sizeof err) == 0, "%s", err);
    return r;
}

/* Serves reqs disaggregated with checks; the link takes latency + bytes / 50 GB/s. */
static void serve_disagg(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, int decode_pages,
                         double latency, pl_serve_run *run)
{
    world w = {.pf = {.syn = {2e-3, 2e-5, 1e-7}, .decode = 0, .budget = cfg->max_num_batched_tokens},
               .dc = {.syn = {1e-3, 1e-5, 1e-7}, .decode = 1, .budget = cfg->max_num_batched_tokens},
               .link = {.latency_s = latency, .bytes_per_s = 50e9, .page_bytes = PAGE_BYTES}};
    w.pf.kv_end = calloc((size_t)n, sizeof(int));
    w.pf.emitted = calloc((size_t)n, sizeof(int));
    w.dc.kv_end = calloc((size_t)n, sizeof(int));
    w.dc.emitted = calloc((size_t)n, sizeof(int));
    w.moved_len = calloc((size_t)n, sizeof(int));
    const pl_serve_disagg d = {.prefill = {&w.pf, lane_step},
                               .decode = {&w.dc, lane_step},
                               .transfer = {&w, checked_begin, checked_end},
                               .decode_pages = decode_pages};
    char err[256];
    ck_assert_msg(pl_serve_disagg_simulate(reqs, n, cfg, &d, run, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(!w.pf.bad && !w.dc.bad && !w.bad, "%s", w.pf.bad ? w.pf.bad : w.dc.bad ? w.dc.bad : w.bad);
    ck_assert_int_eq(run->free_pages_at_end, cfg->num_pages);
    ck_assert_int_eq(run->free_decode_pages_at_end, decode_pages);
    ck_assert_int_eq(w.pf.restarts, run->preemptions);
    ck_assert_int_le(run->peak_pages, cfg->num_pages);
    ck_assert_int_le(run->peak_decode_pages, decode_pages);
    ck_assert(run->disaggregated && run->prefill_steps + run->decode_steps == run->steps);
    const char *bad = NULL;
    int64_t transfers = 0;
    for (int i = 0; i < n && !bad; i++) {
        const pl_serve_record *r = &run->rec[i];
        const int out = reqs[i].output_len;
        if (w.pf.emitted[i] + w.dc.emitted[i] != out)
            bad = "a request emitted other than its output length";
        else if (out > 1 && w.dc.kv_end[i] != reqs[i].input_len + out - 1)
            bad = "a request's KV ends elsewhere than input + output - 1";
        else if (r->transfers != (out > 1 ? 1 + r->preemptions : 0))
            bad = "a request moved other than once, and again after each preemption";
        else if (out > 1 &&
                 r->transfer_bytes < (int64_t)pl_kv_pages_for(reqs[i].input_len, cfg->page_size) * PAGE_BYTES)
            bad = "a copy moved fewer bytes than the prompt's pages";
        else if (r->finish_s != r->token_s[out - 1] || r->send_s < r->arrival_s || r->token_s[0] < r->send_s)
            bad = "a request's send, first token or finish is out of place";
        else if (out > 1 && r->preemptions == 0 && r->token_s[1] < r->token_s[0] + r->transfer_s)
            bad = "a request decoded before its KV arrived";
        for (int k = 1; k < out && !bad; k++)
            if (r->token_s[k] <= r->token_s[k - 1])
                bad = "a request's tokens are out of order";
        transfers += r->transfers;
    }
    ck_assert_msg(!bad, "%s", bad ? bad : "");
    ck_assert_int_eq((int)transfers, (int)run->transfers);
    free(w.pf.kv_end), free(w.pf.emitted), free(w.dc.kv_end), free(w.dc.emitted), free(w.moved_len);
    pl_serve_link_free(&w.link);
}

START_TEST(lanes_and_copies_hold)
{
    for (unsigned seed = 1; seed <= 6; seed++) {
        pl_serve_workload_spec spec = {.num_prompts = 200,
                                       .input_len = 300,
                                       .output_len = 60,
                                       .range_ratio = 0.9,
                                       .request_rate = seed % 2 ? 40.0 : INFINITY,
                                       .seed = seed};
        pl_serve_request *reqs = make(&spec);
        const pl_serve_config cfg = {.max_num_batched_tokens = 256 + 64 * (int)seed,
                                     .max_num_seqs = 48,
                                     .max_concurrency = seed == 3 ? 16 : 0,
                                     .num_pages = 600 + 100 * (int)seed,
                                     .page_size = 16};
        pl_serve_run run;
        serve_disagg(reqs, 200, &cfg, 4096, 1e-4, &run);
        ck_assert_int_eq(run.preemptions, 0); /* 4096 decode pages hold 48 of the longest requests */
        ck_assert_msg(run.transfer_s > 0 && run.transfer_bytes > 0 && run.prefill_busy_s > 0 && run.decode_busy_s > 0,
                      "no copy or no step on a lane");
        if (cfg.max_concurrency > 0) /* at each send, at most 16 requests sent and not finished */
            for (int i = 0; i < 200; i++) {
                int in_flight = 0;
                for (int k = 0; k < 200; k++)
                    in_flight += run.rec[k].send_s <= run.rec[i].send_s && run.rec[k].finish_s > run.rec[i].send_s;
                ck_assert_int_le(in_flight, 16);
            }
        pl_serve_run_free(&run);
        free(reqs);
    }
}
END_TEST

START_TEST(small_decode_pool_preempts_and_moves_again)
{
    pl_serve_workload_spec spec = {.num_prompts = 64,
                                   .input_len = 200,
                                   .output_len = 200,
                                   .range_ratio = 0.5,
                                   .request_rate = INFINITY,
                                   .seed = 5};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {.max_num_batched_tokens = 512, .max_num_seqs = 64, .num_pages = 200, .page_size = 16};
    pl_serve_run run;
    serve_disagg(reqs, 64, &cfg, 60, 5e-4, &run); /* 60 pages: about two of the longest requests at once */
    ck_assert_msg(run.preemptions > 0, "a 60-page decode pool should preempt");
    ck_assert_int_gt((int)run.transfers, 64);
    pl_serve_run_free(&run);
    free(reqs);
}
END_TEST

START_TEST(small_prefill_pool_waits_for_copies)
{
    /* the prefill pool holds one long prompt: each waits for the one before it to leave through the slow link */
    pl_serve_workload_spec spec = {
        .num_prompts = 12, .input_len = 150, .output_len = 8, .request_rate = INFINITY, .seed = 2};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .num_pages = 10, .page_size = 16};
    pl_serve_run run;
    serve_disagg(reqs, 12, &cfg, 400, 0.05, &run);
    for (int i = 1; i < 12; i++) /* request i's prefill starts after request i-1's copy: first tokens 50 ms apart */
        ck_assert_double_ge(run.rec[i].token_s[0], run.rec[i - 1].token_s[0] + 0.05);
    pl_serve_run_free(&run);
    free(reqs);
}
END_TEST

START_TEST(one_token_requests_never_move)
{
    pl_serve_workload_spec spec = {.num_prompts = 10, .input_len = 40, .output_len = 1, .request_rate = 5, .seed = 1};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .num_pages = 50, .page_size = 16};
    pl_serve_run run;
    serve_disagg(reqs, 10, &cfg, 50, 1e-3, &run);
    ck_assert_int_eq((int)run.transfers, 0);
    ck_assert_int_eq((int)run.decode_steps, 0);
    pl_serve_run_free(&run);
    free(reqs);
}
END_TEST

START_TEST(too_big_for_the_decode_pool_is_refused)
{
    pl_serve_workload_spec spec = {.num_prompts = 3, .input_len = 100, .output_len = 50, .seed = 1};
    pl_serve_request *reqs = make(&spec);
    const pl_serve_config cfg = {.max_num_batched_tokens = 64, .max_num_seqs = 8, .num_pages = 50, .page_size = 16};
    pl_serve_link link = {.bytes_per_s = 1e9, .page_bytes = 1};
    pl_serve_synthetic syn = {1e-3, 0, 0};
    const pl_serve_disagg d = {.prefill = {&syn, pl_serve_synthetic_step},
                               .decode = {&syn, pl_serve_synthetic_step},
                               .transfer = {&link, pl_serve_link_begin, pl_serve_link_end},
                               .decode_pages = 5}; /* 149 tokens need 10 pages */
    pl_serve_run run;
    char err[256];
    ck_assert_int_eq(pl_serve_disagg_simulate(reqs, 3, &cfg, &d, &run, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "needs 10 KV pages alone and the pool has 5") != NULL, "%s", err);
    ck_assert_ptr_null(run.rec);
    pl_serve_link_free(&link);
    free(reqs);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine_serve_disagg");
    TCase *tc = tcase_create("disagg");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, lanes_and_copies_hold);
    tcase_add_test(tc, small_decode_pool_preempts_and_moves_again);
    tcase_add_test(tc, small_prefill_pool_waits_for_copies);
    tcase_add_test(tc, one_token_requests_never_move);
    tcase_add_test(tc, too_big_for_the_decode_pool_is_refused);
    suite_add_tcase(s, tc);
    return pl_run_suite(s);
}
