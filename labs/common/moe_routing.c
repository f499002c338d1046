#include "common/moe_routing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/skew.h"
#include "engine/mix64.h"

void pl_moe_routing_free(pl_moe_routing *r)
{
    free(r->counts);
    free(r->offsets);
    memset(r, 0, sizeof *r);
}

int pl_moe_routing_check(int experts, int tokens, int topk, double alpha, char *err, size_t errlen)
{
    if (experts < 1 || tokens < 1 || topk < 1) {
        snprintf(err, errlen, "experts, tokens and topk must be at least 1");
        return -1;
    }
    if (topk > experts) {
        snprintf(err, errlen, "--topk %d exceeds --experts %d: a token picks distinct experts; lower --topk", topk,
                 experts);
        return -1;
    }
    if ((long long)tokens * topk > 0x7fffffffLL) {
        snprintf(err, errlen, "tokens·topk = %lld exceeds 2^31 rows; lower --tokens", (long long)tokens * topk);
        return -1;
    }
    if (!(alpha >= 0.0)) {
        snprintf(err, errlen, "--alpha must be >= 0 (0: uniform routing); got %g", alpha);
        return -1;
    }
    return 0;
}

int pl_moe_routing_make(pl_moe_routing *r, int experts, int tokens, int topk, double alpha, uint64_t seed, char *err,
                        size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (pl_moe_routing_check(experts, tokens, topk, alpha, err, errlen) != 0)
        return -1;
    r->experts = experts;
    r->tokens = tokens;
    r->topk = topk;
    r->alpha = alpha;
    r->rows = tokens * topk;
    size_t *by_rank = calloc((size_t)experts, sizeof *by_rank);
    int *perm = malloc((size_t)experts * sizeof *perm);
    r->counts = calloc((size_t)experts, sizeof *r->counts);
    r->offsets = calloc((size_t)experts + 1, sizeof *r->offsets);
    if (!by_rank || !perm || !r->counts || !r->offsets) {
        free(by_rank);
        free(perm);
        pl_moe_routing_free(r);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    /* rank 0 is the most popular expert (the hotspot model's destination 0 as seen from any source) */
    pl_skew_split(PL_SKEW_HOTSPOT, (size_t)r->rows, experts, 0, alpha, by_rank);
    size_t excess = 0;
    for (int i = 0; i < experts; i++)
        if (by_rank[i] > (size_t)tokens) {
            excess += by_rank[i] - (size_t)tokens;
            by_rank[i] = (size_t)tokens;
        }
    for (int i = 0; i < experts && excess > 0; i++) { /* topk <= experts: there is room for all of it */
        const size_t room = (size_t)tokens - by_rank[i], take = room < excess ? room : excess;
        by_rank[i] += take;
        excess -= take;
    }
    for (int i = 0; i < experts; i++)
        perm[i] = i;
    uint64_t state = seed;
    for (int i = experts - 1; i > 0; i--) { /* Fisher-Yates */
        const int j = (int)(pl_splitmix64(&state) % (uint64_t)(i + 1));
        const int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < experts; i++)
        r->counts[perm[i]] = (int)by_rank[i];
    for (int e = 0; e < experts; e++) {
        r->offsets[e + 1] = r->offsets[e] + r->counts[e];
        r->empty += r->counts[e] == 0;
        if (r->counts[e] > r->max_count)
            r->max_count = r->counts[e];
    }
    r->gini = pl_gini(by_rank, (size_t)experts);
    r->max_over_mean = pl_max_over_mean(by_rank, (size_t)experts);
    free(by_rank);
    free(perm);
    return 0;
}
