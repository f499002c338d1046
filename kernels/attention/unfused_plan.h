/* The unfused attention pipelines' cuBLAS calls (unfused.cu, the forward; bwd_unfused.cu, the backward): which
 * strided-batched calls cover every (batch, query head) of a problem, and each call's offsets and strides. */
#ifndef PERFLAB_ATTENTION_UNFUSED_PLAN_H
#define PERFLAB_ATTENTION_UNFUSED_PLAN_H

#include "attention/attention.h"

/* One strided-batched call's operands: element offsets of its first matrices and the strides between batches. */
typedef struct call_plan {
    long long q0, kv0, s0, o0;
    long long q_stride, kv_stride, s_stride, o_stride;
    int count;
} call_plan;

/* The calls covering every (batch, query head): `calls` of them, call c described by plan_of(p, c). */
static inline int call_count(const pl_attn_problem *p)
{
    const int g = p->heads / p->kv_heads;
    return p->layout == PL_ATTN_BHSD ? g : g * p->batch;
}

static inline call_plan plan_of(const pl_attn_problem *p, int c)
{
    const int g = p->heads / p->kv_heads;
    const pl_attn_strides qs = pl_attn_strides_of(p, p->heads), ks = pl_attn_strides_of(p, p->kv_heads);
    const long long ss = (long long)p->seq * p->seq;
    call_plan pl;
    /* batch index i of the call walks kv heads (and, for bhsd, batches: b·kv_heads + kvh, which is linear in
     * memory because the bhsd batch stride is heads × the head stride) */
    const int j = c % g, b = p->layout == PL_ATTN_BHSD ? 0 : c / g;
    pl.count = p->layout == PL_ATTN_BHSD ? p->batch * p->kv_heads : p->kv_heads;
    pl.q0 = b * qs.b + j * qs.h;
    pl.o0 = pl.q0;
    pl.kv0 = b * ks.b;
    pl.s0 = ((long long)b * p->heads + j) * ss;
    pl.q_stride = g * qs.h;
    pl.o_stride = g * qs.h;
    pl.kv_stride = ks.h;
    pl.s_stride = g * ss;
    return pl;
}

#endif
