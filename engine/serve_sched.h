/* The serving scheduler: continuous batching over an abstract step executor, on a simulated clock.
 *
 * Each request holds `computed` KV tokens (its pl_kv_seq's length) and a target of input_len + generated tokens;
 * a step gives it min(target − computed, what is left of the token budget) tokens, and the step that brings
 * computed to the target emits its next output token at the step's end (as vLLM's v1 scheduler counts tokens: a
 * prefill's last chunk yields the first token, each decode one more). Every step:
 *   1. Arrivals: requests whose arrival time has passed are sent, at most --max-concurrency in flight (sent and not
 *      finished); one held back is sent when a slot frees (its send time is then that step's end). TTFT counts from
 *      the send, as vLLM's client starts its timer after its concurrency semaphore.
 *   2. Running requests, oldest admitted first, take their tokens from the budget (--max-num-batched-tokens): a
 *      decode takes 1, a prefill a chunk of what is left of it. Its new tokens' pages come from the pool; when too
 *      few are free the newest running request is preempted (recompute): its pages are freed, its computed tokens
 *      dropped, and it goes back to the front of the waiting queue to prefill its prompt and the tokens it already
 *      emitted again (those keep their times). A request may preempt itself.
 *   3. When no request was preempted in this step, waiting requests are admitted first come first served while the
 *      budget lasts and fewer than max_num_seqs run: one is admitted when the pages of its whole prefill fit in the
 *      free pages; its first chunk is scheduled at once. The first that does not fit stops admission.
 *   4. The executor runs the step and returns its duration; the clock moves by it. With nothing to run the clock
 *      jumps to the next arrival.
 * Every request's pages are checked to fit the pool alone at the start (a request that cannot ever fit is refused),
 * so the oldest running request always progresses and the run ends. */
#ifndef PERFLAB_ENGINE_SERVE_SCHED_H
#define PERFLAB_ENGINE_SERVE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kv_pages.h"
#include "engine/serve_workload.h"

/* One request's part of a step: KV positions [start, start + tokens) are computed; its seq already holds them. */
typedef struct pl_serve_work {
    int req; /* the request's id */
    int start, tokens;
    int emits; /* 1: the step completes the request's pending tokens and emits its next output token */
    const pl_kv_seq *seq;
} pl_serve_work;

/* A step: prefill chunks (a prompt, or a preempted request's prompt and emitted tokens, in pieces) and decodes (one
 * token each, fed from the request's last output token). tokens = the sum of every part's tokens; kv_tokens = the
 * sum of every part's start + tokens (the keys its queries attend to, causal within a chunk aside). */
typedef struct pl_serve_step {
    int n_prefill, n_decode;
    const pl_serve_work *prefill, *decode;
    int tokens;
    int64_t kv_tokens;
    const pl_kv_pool *pool;
} pl_serve_step;

/* The engine's side: step() runs one step and sets its duration in seconds (>= 0). Nonzero: the run stops and
 * returns that code. */
typedef struct pl_serve_executor {
    void *ctx;
    int (*step)(void *ctx, const pl_serve_step *step, double *seconds);
} pl_serve_executor;

/* A synthetic executor for host tests and what-if runs: a step takes a + b·tokens + c·kv_tokens seconds. */
typedef struct pl_serve_synthetic {
    double a, b, c;
} pl_serve_synthetic;
int pl_serve_synthetic_step(void *ctx, const pl_serve_step *step, double *seconds);

typedef struct pl_serve_config {
    int max_num_batched_tokens; /* the token budget of a step (vLLM --max-num-batched-tokens) */
    int max_num_seqs;           /* running requests at most (vLLM --max-num-seqs); 0: 256 */
    int max_concurrency;        /* requests in flight on the client side (--max-concurrency); 0: no limit */
    int num_pages, page_size;   /* the KV pool */
} pl_serve_config;

typedef struct pl_serve_record {
    int id, input_len, output_len;
    double arrival_s, send_s; /* when the workload sends it; when --max-concurrency let it go */
    double *token_s;          /* output_len times: when each output token was emitted (its step's end) */
    double finish_s;          /* its last token's time, when it left the engine (pages and client slot freed) */
    int preemptions;
    /* disaggregated runs (serve_disagg.h): the KV moves from the prefill GPU to the decode GPU (a preempted request
     * moves again), their bytes and seconds summed; 0 on one GPU */
    int transfers;
    int64_t transfer_bytes;
    double transfer_s;
} pl_serve_record;

typedef struct pl_serve_run {
    int n;
    pl_serve_record *rec;
    int64_t steps, seqs_in_steps, tokens_in_steps; /* mean batch size = seqs_in_steps / steps */
    int peak_pages, preemptions;
    int free_pages_at_end; /* the pool's free pages once every request finished (all of them) */
    double end_s, busy_s;  /* the last token's time; the sum of step durations */
    double host_sched_s;   /* host wall time (CLOCK_MONOTONIC) of the scheduler's own work: the run less the
                              executor's calls; beside busy_s when the executor returns wall time, the scheduling
                              overhead (the GPU idle between synchronous steps) */
    /* disaggregated runs (serve_disagg.h): each GPU's steps and busy seconds (busy_s is their sum), the decode
     * pool's peak and free pages at the end (peak_pages and free_pages_at_end are the prefill pool's), and the KV
     * transfers: count, bytes, seconds of copy (the sum of each one's measured duration) */
    int disaggregated;
    int64_t prefill_steps, decode_steps;
    double prefill_busy_s, decode_busy_s;
    int decode_pages, peak_decode_pages, free_decode_pages_at_end;
    int64_t transfers, transfer_bytes;
    double transfer_s;
} pl_serve_run;

/* Serves reqs[0..n) (arrival order, ids 0..n-1) under cfg through ex. 0, -1 with one line in err (a bad config,
 * a request that cannot fit the pool, no host memory, a stalled schedule), or the executor's nonzero code. out is
 * filled on 0 (free it with pl_serve_run_free) and empty otherwise. */
int pl_serve_simulate(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, const pl_serve_executor *ex,
                      pl_serve_run *out, char *err, size_t errlen);
void pl_serve_run_free(pl_serve_run *run);

/* The checks pl_serve_simulate makes before a run: a config in range, requests well formed and in arrival order,
 * each fitting cfg's pool alone (input + output − 1 tokens). 0, or -1 with one line in err. */
int pl_serve_config_check(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, char *err, size_t errlen);

#endif
