/* The float64 reference of the attention backward, and its FLOP count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/attention_host.h"
#include "perflab/verify.h"

double pl_attn_bwd_flops(int batch, int heads, int seq, int head_dim, int causal)
{
    return 2.5 * pl_attn_fwd_flops(batch, heads, seq, head_dim, causal);
}

/* The scratch of one (batch, kv head): K, V in float64 and dK, dV accumulated over the group. */
typedef struct bwd_scratch {
    double *kd, *vd, *dkd, *dvd;         /* seq × d */
    double *qrow, *dorow, *orow, *dqrow; /* d */
    double *pr;                          /* seq */
} bwd_scratch;

/* One query row i of head h: P from the scores, O = P·V, D = dO·O (O the given row when o_given is not NULL),
 * dS = P ∘ (dO·Vⱼ − D), dQ = scale·dS·K, and its share of dK += scale·dSᵀ·q and dV += Pᵀ·dO. */
static void row_backward(const pl_attn_problem *p, const bwd_scratch *w, int i, const uint16_t *o_given, float *dq_out)
{
    const int d = p->head_dim, n = p->seq, visible = p->causal ? i + 1 : n;
    const double scale = (double)p->scale;
    double mx = -INFINITY, l = 0;
    for (int j = 0; j < visible; j++) {
        double s = 0;
        for (int e = 0; e < d; e++)
            s += w->qrow[e] * w->kd[(size_t)j * d + e];
        w->pr[j] = s * scale;
        if (w->pr[j] > mx)
            mx = w->pr[j];
    }
    for (int j = 0; j < visible; j++) {
        w->pr[j] = exp(w->pr[j] - mx);
        l += w->pr[j];
    }
    memset(w->orow, 0, (size_t)d * sizeof *w->orow);
    for (int j = 0; j < visible; j++) {
        w->pr[j] /= l;
        for (int e = 0; e < d; e++)
            w->orow[e] += w->pr[j] * w->vd[(size_t)j * d + e];
    }
    double dsum = 0;
    for (int e = 0; e < d; e++)
        dsum += w->dorow[e] * (o_given ? pl_bf16_to_double(o_given[e]) : w->orow[e]);
    memset(w->dqrow, 0, (size_t)d * sizeof *w->dqrow);
    for (int j = 0; j < visible; j++) {
        double dp = 0;
        for (int e = 0; e < d; e++)
            dp += w->dorow[e] * w->vd[(size_t)j * d + e];
        const double ds = w->pr[j] * (dp - dsum);
        for (int e = 0; e < d; e++) {
            w->dqrow[e] += ds * w->kd[(size_t)j * d + e];
            w->dkd[(size_t)j * d + e] += scale * ds * w->qrow[e];
            w->dvd[(size_t)j * d + e] += w->pr[j] * w->dorow[e];
        }
    }
    for (int e = 0; e < d; e++)
        dq_out[e] = (float)(scale * w->dqrow[e]);
}

void pl_attn_bwd_reference_host(const pl_attn_problem *p, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                const uint16_t *o, const uint16_t *dout, float *dq, float *dk, float *dv)
{
    const int d = p->head_dim, n = p->seq, g = p->heads / p->kv_heads;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    const size_t nd = (size_t)n * d;
    bwd_scratch w = {
        .kd = malloc(nd * sizeof(double)),
        .vd = malloc(nd * sizeof(double)),
        .dkd = malloc(nd * sizeof(double)),
        .dvd = malloc(nd * sizeof(double)),
        .qrow = malloc((size_t)d * sizeof(double)),
        .dorow = malloc((size_t)d * sizeof(double)),
        .orow = malloc((size_t)d * sizeof(double)),
        .dqrow = malloc((size_t)d * sizeof(double)),
        .pr = malloc((size_t)n * sizeof(double)),
    };
    if (!w.kd || !w.vd || !w.dkd || !w.dvd || !w.qrow || !w.dorow || !w.orow || !w.dqrow || !w.pr) {
        fprintf(stderr, "perflab: out of host memory for the attention backward reference\n");
        abort();
    }
    for (int b = 0; b < p->batch; b++)
        for (int kvh = 0; kvh < p->kv_heads; kvh++) {
            for (int j = 0; j < n; j++)
                for (int e = 0; e < d; e++) {
                    const long long off = b * ks.b + kvh * ks.h + j * ks.s + e;
                    w.kd[(size_t)j * d + e] = pl_bf16_to_double(k[off]);
                    w.vd[(size_t)j * d + e] = pl_bf16_to_double(v[off]);
                }
            memset(w.dkd, 0, nd * sizeof(double));
            memset(w.dvd, 0, nd * sizeof(double));
            for (int h = kvh * g; h < (kvh + 1) * g; h++)
                for (int i = 0; i < n; i++) {
                    const long long qoff = b * qs.b + h * qs.h + i * qs.s;
                    for (int e = 0; e < d; e++) {
                        w.qrow[e] = pl_bf16_to_double(q[qoff + e]);
                        w.dorow[e] = pl_bf16_to_double(dout[qoff + e]);
                    }
                    row_backward(p, &w, i, o ? o + qoff : NULL, dq + qoff);
                }
            for (int j = 0; j < n; j++)
                for (int e = 0; e < d; e++) {
                    const long long off = b * ks.b + kvh * ks.h + j * ks.s + e;
                    dk[off] = (float)w.dkd[(size_t)j * d + e];
                    dv[off] = (float)w.dvd[(size_t)j * d + e];
                }
        }
    free(w.kd);
    free(w.vd);
    free(w.dkd);
    free(w.dvd);
    free(w.qrow);
    free(w.dorow);
    free(w.orow);
    free(w.dqrow);
    free(w.pr);
}
