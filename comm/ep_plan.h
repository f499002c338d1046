/* Expert parallelism (EP) on the host: the routing of a MoE layer whose experts are spread over ranks, and the plan
 * of its dispatch and combine that every rank computes alike from the seed (no GPU, no exchange).
 *
 * Routing. Rank s holds T tokens of hidden size H (bf16). Each token picks k distinct experts of E; expert e lives on
 * rank e / (E / n). The choice is Zipf-skewed as `perflab moe-readiness` skews its splits (comm/skew.h, hotspot model:
 * the r-th most popular expert has weight 1/r^alpha; alpha 0 is uniform), which expert is the r-th most popular drawn
 * by a seeded shuffle shared by every rank, and each token's k experts drawn without replacement from those weights
 * by a generator seeded by (seed, rank, token): the same on every machine. The router's weights are a softmax over k
 * seeded logits, in fp32.
 *
 * Dispatch. A token goes once to each distinct rank among its k experts (as DeepEP's normal kernels send it), so the
 * rows crossing the fabric are the distinct (token, rank) pairs. On arrival they sit in a staging buffer, source-major
 * (source 0's rows, source 1's, ...; each source's in token order), and are expanded into the layout a grouped GEMM
 * reads: rows of local expert 0, then local expert 1, ... ("expert-major"), one row per (token, expert), each
 * expert's rows in (source, token) order. A token with two experts on one rank crosses once and is copied twice there.
 *
 * Combine. Each expert-major row (the expert's output) returns to its token's rank, one row per (token, expert), and
 * the token's output is the router-weighted sum of its k rows, in fp32, rounded to bf16 once.
 *
 * All row indices are int32 (the shape check keeps every count below 2^31). Host code only. */
#ifndef PERFLAB_COMM_EP_PLAN_H
#define PERFLAB_COMM_EP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "comm/skew.h"

#define PL_EP_MAX_RANKS 8
/* The most device memory the EP buffers of one rank may take, counted for the worst routing (every token's every
 * expert on one rank): a shape past it is refused before any GPU work. */
#define PL_EP_MAX_RANK_BYTES ((size_t)64 << 30)

typedef struct pl_ep_shape {
    int nranks, tokens, hidden, topk, experts;
    double alpha;
    uint64_t seed;
} pl_ep_shape;

/* One rank's tables (device-ready int32/float arrays; `rows` counts are in rows of H elements). */
typedef struct pl_ep_rank_plan {
    /* its tokens' routing, [T * k]: global expert, router weight, and where the expert's row is (rank, its
     * expert-major row there) */
    int *expert;
    float *weight;
    int *pull_rank, *pull_row;
    /* dispatch, sending side: the distinct (token, rank) rows in destination-major order (the NCCL send buffer),
     * each row's token, destination and row in the destination's staging buffer */
    int send_rows;
    int *send_token, *send_dest, *send_dest_row;
    /* dispatch, receiving side: rows staged, rows expert-major, and per expert-major row its staging row, source
     * rank, source token and local expert; the local experts' first rows [L + 1] */
    int stage_rows, recv_rows;
    int *recv_stage_row, *recv_src, *recv_token, *recv_expert;
    int *expert_offset;
    /* combine: the rows this rank returns (source-major chunks, each in the source's (token, k) order) as
     * expert-major rows; and for each of its own (token, k) the row in its combine receive buffer */
    int comb_send_rows, comb_recv_rows;
    int *comb_send_row;
    int *comb_recv_row;
} pl_ep_rank_plan;

typedef struct pl_ep_plan {
    pl_ep_shape shape;
    int local_experts;     /* E / n */
    pl_ep_rank_plan *rank; /* [n] */
    /* the all-to-alls in bf16 elements (rows * H): dispatch s -> d, combine d -> s */
    pl_a2a_plan dispatch, combine;
    /* rows crossing the fabric (to another rank), summed over ranks */
    size_t dispatch_fabric_rows, combine_fabric_rows;
    /* the largest of each per-rank table over ranks, in rows (buffers to allocate) */
    int max_send_rows, max_stage_rows, max_recv_rows, max_comb_send_rows;
    double expert_gini, expert_max_mean; /* of the tokens per expert, over every rank's tokens */
} pl_ep_plan;

/* The checks pl_ep_plan_make makes of a shape, alone: 0, or -1 with a one-line reason and fix in err (ranks outside
 * 2..PL_EP_MAX_RANKS (nranks 0: not known yet, those checks left out and the memory bound taken at PL_EP_MAX_RANKS),
 * experts not divisible by ranks, top-k above experts, hidden not a positive multiple of 8, counts past int32,
 * worst-case buffers past PL_EP_MAX_RANK_BYTES). */
int pl_ep_shape_check(const pl_ep_shape *s, char *err, size_t errlen);
/* Worst-case device bytes of one rank's EP buffers (what the shape check compares with PL_EP_MAX_RANK_BYTES). */
double pl_ep_worst_rank_bytes(const pl_ep_shape *s);
/* Device bytes of one rank's EP buffers for this plan (the largest rank's tables). */
size_t pl_ep_plan_rank_bytes(const pl_ep_plan *p);

/* 0, or -1 with err (the shape check's reasons). Free with pl_ep_plan_free. */
int pl_ep_plan_make(pl_ep_plan *p, const pl_ep_shape *s, char *err, size_t errlen);
void pl_ep_plan_free(pl_ep_plan *p);

/* The stand-in expert (PL_EP_EXPERT_SCALE of comm/kernels.h): expert e's output row is its input row times
 * (1 + e % 8) / 8. */
double pl_ep_expert_scale(int expert);

#endif
