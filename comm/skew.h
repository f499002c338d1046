/* Skewed all-to-all splits, as MoE token routing makes them: Zipf weights 1/r^alpha over destinations, the
 * elements floored and the remainder handed out largest fraction first (so the counts always sum to the
 * total), and the measures of how uneven a split is (Gini, max/mean). Host code only. */
#ifndef PERFLAB_COMM_SKEW_H
#define PERFLAB_COMM_SKEW_H

#include <stddef.h>

typedef enum pl_skew_model {
    /* r = ((dst - src) mod n) + 1: each source favours itself, then its next neighbours. Every rank sends and
     * receives the same total; the skew is in the pairs (links). */
    PL_SKEW_DISTANCE,
    /* r = dst + 1: every source favours rank 0, then rank 1, ...: hot experts; receive totals are skewed too. */
    PL_SKEW_HOTSPOT,
    PL_SKEW_MODEL_COUNT
} pl_skew_model;

const char *pl_skew_model_name(pl_skew_model m);
int pl_skew_model_from_name(const char *name); /* -1 when unknown */

/* The rank distance r (1..n) of a destination as seen from a source. */
int pl_skew_rank_distance(pl_skew_model m, int nranks, int src, int dst);

/* Split `total` elements of source `src` over `nranks` destinations with weights 1/r^alpha (alpha >= 0;
 * 0 = uniform): counts[d] = floor(total * w_d / sum w), then one more to each of the (total - sum of floors)
 * destinations with the largest fractional parts; ties go to the smaller distance, then the lower rank. */
void pl_skew_split(pl_skew_model m, size_t total, int nranks, int src, double alpha, size_t *counts);

/* Gini coefficient of non-negative values: sum_i sum_j |x_i - x_j| / (2 n sum x); 0 = equal, (n-1)/n = all in
 * one. 0 for n <= 1 or an all-zero set. */
double pl_gini(const size_t *x, size_t n);
/* max / mean; 1 = equal. 0 for an empty or all-zero set. */
double pl_max_over_mean(const size_t *x, size_t n);

/* Every source's split: counts[s * n + d] elements from s to d, and the offsets (in elements) where each
 * chunk sits in the source's send buffer and the destination's receive buffer (chunks in rank order). */
typedef struct pl_a2a_plan {
    int nranks;
    size_t total_per_rank; /* elements each rank sends */
    size_t *counts;        /* [n * n] */
    size_t *send_offset;   /* [n * n]: offset of chunk s->d in s's send buffer */
    size_t *recv_offset;   /* [n * n]: offset of chunk s->d in d's receive buffer */
    size_t *recv_total;    /* [n]: elements each rank receives */
    double split_gini;     /* of source 0's split (every source's, for the distance model) */
    double split_max_mean;
    double recv_gini; /* of the receive totals (0 for the distance model) */
    double recv_max_mean;
} pl_a2a_plan;

void pl_a2a_plan_make(pl_a2a_plan *p, pl_skew_model m, size_t total_per_rank, int nranks, double alpha);
/* The plan of given counts[s * n + d] (copied): offsets, receive totals and measures as above; total_per_rank is the
 * largest send total. */
void pl_a2a_plan_from_counts(pl_a2a_plan *p, int nranks, const size_t *counts);
void pl_a2a_plan_free(pl_a2a_plan *p);
/* The largest receive total over ranks, in elements (the receive buffer to allocate). */
size_t pl_a2a_plan_max_recv(const pl_a2a_plan *p);

#endif
