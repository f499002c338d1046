/* The token routing of a mixture-of-experts layer, as the grouped GEMM sees it: how many of the T·k routed token
 * slots (T tokens, top-k experts each) land on each of E experts, and the row offsets of the experts' groups in the
 * permuted activations. Skewed like real routing: the Zipf split of the fabric verbs (comm/skew.h, hotspot model:
 * the r-th most popular expert gets weight 1/r^alpha), each expert capped at T (a token picks an expert at most
 * once, the excess going to the next most popular experts with room), and which expert is the r-th most popular
 * drawn by a seeded shuffle. The counts' multiset depends on (E, T, k, alpha) alone; the seed only places them.
 * Host code only. */
#ifndef PERFLAB_LABS_MOE_ROUTING_H
#define PERFLAB_LABS_MOE_ROUTING_H

#include <stddef.h>
#include <stdint.h>

typedef struct pl_moe_routing {
    int experts, tokens, topk;
    double alpha;
    int rows;      /* T·k: the rows of the grouped GEMM */
    int *counts;   /* [experts] tokens per expert (may be 0) */
    int *offsets;  /* [experts + 1] prefix sums: expert e owns rows offsets[e] .. offsets[e+1] - 1 */
    int empty;     /* experts with no token */
    int max_count; /* the busiest expert's tokens */
    double gini;   /* of the counts: 0 = even */
    double max_over_mean;
} pl_moe_routing;

/* The checks pl_moe_routing_make makes of its arguments, alone (no allocation): 0, or -1 with the fix in err. */
int pl_moe_routing_check(int experts, int tokens, int topk, double alpha, char *err, size_t errlen);
/* 0, or -1 with a one-line reason naming the fix (k > E, T·k over 2^31, alpha < 0). Free with pl_moe_routing_free. */
int pl_moe_routing_make(pl_moe_routing *r, int experts, int tokens, int topk, double alpha, uint64_t seed, char *err,
                        size_t errlen);
void pl_moe_routing_free(pl_moe_routing *r);

#endif
