/* Disaggregated serving: prompts prefill on one GPU, their decode runs on another, and each prompt's KV pages move
 * from the first GPU's pool to the second's when its prefill finishes. The scheduler of serve_sched.h split in two
 * lanes, each with its own pool, executor and clock, composed on one simulated timeline:
 *
 *   prefill lane (the prefill GPU's pool): arrivals are sent as serve_sched.h sends them (--max-concurrency); waiting
 *     requests are admitted first come first served when the pages of their whole prefill are free (all taken at
 *     admission, so the prefill side never preempts) and fewer than max_num_seqs prefill at once; a step gives the
 *     prefilling requests, oldest first, chunks under the token budget. The step that completes a prompt emits its
 *     first token at the step's end (its "ready" time); a request of one output token finishes there.
 *   handoff: the decode lane's scheduler takes ready requests at its next step boundary at or after their ready
 *     time, first come first served, when the decode pool has the pages of their KV (prompt, and for a recompute the
 *     tokens emitted before); it begins the copy there (the launch). Copies run one after another on one copy lane:
 *     a copy starts at max(launch, the previous copy's end) and lasts what the transfer measured (a GPU: CUDA events
 *     around the peer copies on their own stream) or computed (the link model below). The request's prefill pages
 *     return to the prefill pool when its copy has arrived, at the prefill lane's first boundary after that.
 *   decode lane (the decode GPU's pool): arrived requests join the decode batch at its boundaries (at most
 *     max_num_seqs decoding); a step decodes one token of each, oldest first, under the token budget; a request
 *     whose next token needs a page when none is free preempts the newest decoding one, which goes back to the front
 *     of the prefill lane's waiting queue (recompute: its prompt and emitted tokens prefilled again, its KV moved
 *     again) from the preemption's time on.
 *
 * The lane whose clock is earlier runs next (ties to the prefill lane), so that each lane sees only what the other
 * did before its own clock: a lane with nothing to run sleeps until the earliest event that could give it work (an
 * arrival, a client slot, a preempted request, pages coming back, a ready prompt, an arrived copy). Each step's
 * duration is its executor's, as in serve_sched.h; the lanes' steps are run one at a time on the host (the prefill
 * GPU's copy engine works beside the step after a launch) and the two clocks model the GPUs working at once. */
#ifndef PERFLAB_ENGINE_SERVE_DISAGG_H
#define PERFLAB_ENGINE_SERVE_DISAGG_H

#include <stddef.h>
#include <stdint.h>

#include "engine/serve_sched.h"

/* The KV mover: begin() starts moving request req's KV, held in src's pages of the prefill pool, into dst's pages
 * of the decode pool (the same token count) and sets the bytes it moves; end() waits for that copy and sets its
 * duration in seconds (>= 0). Called in begin order, end() once per begin(), before the scheduler needs the time.
 * Nonzero: the run stops and returns that code. */
typedef struct pl_serve_transfer {
    void *ctx;
    int (*begin)(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes);
    int (*end)(void *ctx, int req, double *seconds);
} pl_serve_transfer;

/* A computed link for host tests and the floor: a copy of `pages` pages takes latency_s + pages · page_bytes /
 * bytes_per_s. */
typedef struct pl_serve_link {
    double latency_s, bytes_per_s;
    uint64_t page_bytes; /* one page in every layer, K and V (memory_plan's pl_kv_page_bytes) */
    double *seconds;     /* per request, the copy begun last; grown as needed, free with pl_serve_link_free */
    int cap;
} pl_serve_link;
int pl_serve_link_begin(void *ctx, int req, const pl_kv_seq *src, const pl_kv_seq *dst, int64_t *bytes);
int pl_serve_link_end(void *ctx, int req, double *seconds);
void pl_serve_link_free(pl_serve_link *l);

typedef struct pl_serve_disagg {
    pl_serve_executor prefill, decode; /* each lane's steps (step->pool: that lane's pool) */
    pl_serve_transfer transfer;
    int decode_pages; /* the decode pool; the config's num_pages is the prefill pool */
} pl_serve_disagg;

/* Serves reqs[0..n) under cfg (its budget, max_num_seqs and concurrency for both lanes, num_pages and page_size
 * the prefill pool's) and d. As pl_serve_simulate: 0, -1 with one line in err (a request that cannot fit either
 * pool alone, a stalled schedule, no host memory), or an executor's or the transfer's nonzero code. out's
 * disaggregated fields are set; steps, busy_s and the batch counts are both lanes'. */
int pl_serve_disagg_simulate(const pl_serve_request *reqs, int n, const pl_serve_config *cfg, const pl_serve_disagg *d,
                             pl_serve_run *out, char *err, size_t errlen);

#endif
