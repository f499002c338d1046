#include "comm/skew.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static const char *const model_names[PL_SKEW_MODEL_COUNT] = {
    [PL_SKEW_DISTANCE] = "distance", [PL_SKEW_HOTSPOT] = "hotspot"};

const char *pl_skew_model_name(pl_skew_model m)
{
    return pl_name_of(model_names, PL_SKEW_MODEL_COUNT, (int)m);
}

int pl_skew_model_from_name(const char *name)
{
    return pl_index_of(model_names, PL_SKEW_MODEL_COUNT, name);
}

int pl_skew_rank_distance(pl_skew_model m, int nranks, int src, int dst)
{
    if (m == PL_SKEW_HOTSPOT)
        return dst + 1;
    return ((dst - src) % nranks + nranks) % nranks + 1;
}

typedef struct share {
    int dst;
    int distance;
    double fraction;
} share;

/* Largest fraction first; ties to the smaller distance (the heavier weight), then the lower rank. */
static int by_fraction(const void *a, const void *b)
{
    const share *x = a, *y = b;
    if (x->fraction != y->fraction)
        return x->fraction > y->fraction ? -1 : 1;
    if (x->distance != y->distance)
        return x->distance < y->distance ? -1 : 1;
    return x->dst - y->dst;
}

void pl_skew_split(pl_skew_model m, size_t total, int nranks, int src, double alpha, size_t *counts)
{
    share *s = pl_xcalloc((size_t)nranks, sizeof *s);
    double wsum = 0;
    for (int d = 0; d < nranks; d++) {
        s[d].dst = d;
        s[d].distance = pl_skew_rank_distance(m, nranks, src, d);
        wsum += pow((double)s[d].distance, -alpha);
    }
    size_t assigned = 0;
    for (int d = 0; d < nranks; d++) {
        const double exact = (double)total * pow((double)s[d].distance, -alpha) / wsum;
        double whole = floor(exact);
        if (whole > (double)total) /* rounding of exact near total */
            whole = (double)total;
        counts[d] = (size_t)whole;
        s[d].fraction = exact - whole;
        assigned += counts[d];
    }
    /* the floors can overshoot only through rounding of exact; give back from the smallest fractions */
    while (assigned > total) {
        int worst = -1;
        for (int d = 0; d < nranks; d++)
            if (counts[d] > 0 && (worst < 0 || s[d].fraction < s[worst].fraction))
                worst = d;
        counts[worst]--;
        assigned--;
    }
    size_t left = total - assigned;
    qsort(s, (size_t)nranks, sizeof *s, by_fraction);
    for (size_t i = 0; left > 0; i = (i + 1) % (size_t)nranks, left--)
        counts[s[i].dst]++;
    free(s);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

double pl_gini(const size_t *x, size_t n)
{
    if (n <= 1)
        return 0;
    size_t *v = pl_xmalloc(n * sizeof *v);
    memcpy(v, x, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_size);
    /* sorted ascending: G = sum_i (2i - n - 1) x_i / (n sum x), i = 1..n */
    double num = 0, sum = 0;
    for (size_t i = 0; i < n; i++) {
        num += (2.0 * (double)(i + 1) - (double)n - 1.0) * (double)v[i];
        sum += (double)v[i];
    }
    free(v);
    return sum > 0 ? num / ((double)n * sum) : 0;
}

double pl_max_over_mean(const size_t *x, size_t n)
{
    double sum = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        sum += (double)x[i];
        if ((double)x[i] > max)
            max = (double)x[i];
    }
    return sum > 0 ? max / (sum / (double)n) : 0;
}

void pl_a2a_plan_from_counts(pl_a2a_plan *p, int nranks, const size_t *counts)
{
    memset(p, 0, sizeof *p);
    const size_t n = (size_t)nranks;
    p->nranks = nranks;
    p->counts = pl_xcalloc(n * n, sizeof *p->counts);
    p->send_offset = pl_xcalloc(n * n, sizeof *p->send_offset);
    p->recv_offset = pl_xcalloc(n * n, sizeof *p->recv_offset);
    p->recv_total = pl_xcalloc(n, sizeof *p->recv_total);
    memcpy(p->counts, counts, n * n * sizeof *counts);
    for (size_t s = 0; s < n; s++) {
        size_t off = 0;
        for (size_t d = 0; d < n; d++) {
            p->send_offset[s * n + d] = off;
            off += p->counts[s * n + d];
        }
        if (off > p->total_per_rank)
            p->total_per_rank = off;
    }
    for (size_t d = 0; d < n; d++) {
        size_t off = 0;
        for (size_t s = 0; s < n; s++) {
            p->recv_offset[s * n + d] = off;
            off += p->counts[s * n + d];
        }
        p->recv_total[d] = off;
    }
    p->split_gini = pl_gini(p->counts, n);
    p->split_max_mean = pl_max_over_mean(p->counts, n);
    p->recv_gini = pl_gini(p->recv_total, n);
    p->recv_max_mean = pl_max_over_mean(p->recv_total, n);
}

void pl_a2a_plan_make(pl_a2a_plan *p, pl_skew_model m, size_t total_per_rank, int nranks, double alpha)
{
    const size_t n = (size_t)nranks;
    size_t *counts = pl_xcalloc(n * n, sizeof *counts);
    for (size_t s = 0; s < n; s++)
        pl_skew_split(m, total_per_rank, nranks, (int)s, alpha, counts + s * n);
    pl_a2a_plan_from_counts(p, nranks, counts);
    p->total_per_rank = total_per_rank;
    free(counts);
}

void pl_a2a_plan_free(pl_a2a_plan *p)
{
    free(p->counts);
    free(p->send_offset);
    free(p->recv_offset);
    free(p->recv_total);
    memset(p, 0, sizeof *p);
}

size_t pl_a2a_plan_max_recv(const pl_a2a_plan *p)
{
    size_t max = 0;
    for (int d = 0; d < p->nranks; d++)
        if (p->recv_total[d] > max)
            max = p->recv_total[d];
    return max;
}
