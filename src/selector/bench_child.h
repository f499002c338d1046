/* What the child of perflab gemm shares between its files (bench_child.c: shapes and providers; bench_rounds.c:
 * the interleaved rounds and the head-to-head re-timing of the heuristic's pick). Private to src/selector. */
#ifndef PERFLAB_SELECTOR_BENCH_CHILD_H
#define PERFLAB_SELECTOR_BENCH_CHILD_H

#include "core/measure.h"
#include "selector/bench.h"

/* A configuration verified and waiting for the shape's interleaved rounds (--rounds N > 1). */
typedef struct pending {
    pl_gemm_candidate c;
    pl_gemm_record_list *list; /* its provider's records */
    size_t index;              /* its record there */
    pl_variant var;
    pl_variant_result vr;
    pl_timing *t;
    int done; /* its record holds the outcome */
} pending;

struct pl_gemm_bench {
    pl_ctx ctx; /* the timing context: stream and device */
    pl_device_info dev;
    pl_measure_env env;
    int env_ready;
    cublasHandle_t cublas;
    cublasLtHandle_t lt;
    void *lt_ws;
    const pl_gemm_bench_request *req;
    int fd;
    pending *pend; /* the shape's verified configurations, in the order they were offered */
    size_t n_pend, cap_pend;
    /* the heuristic's pick and the fastest native configuration re-timed head to head (confirm_pick) */
    int confirmed, confirm_rounds;
    double confirm_pick_ms, confirm_best_ms;
    char confirm_best[128];
};

/* N interleaved rounds (--rounds N), or 1: each configuration timed as soon as it is verified. */
int pl_gemm_bench_rounds(const pl_gemm_bench *b);
/* After a failure: 1 when the context is broken (a sticky error), after clearing a non-sticky one. */
int pl_gemm_bench_context_lost(void);
/* One run of a candidate (pl_variant.run): the next operand set. */
int pl_gemm_bench_candidate_run(pl_ctx *ctx, void *state);
/* The record's timing from its samples; a failure with its reason (taken). */
void pl_gemm_bench_record_timing(pl_gemm_record *r, const pl_gemm_shape *sh, const pl_variant_result *vr);
void pl_gemm_bench_record_failure(pl_gemm_record *r, char *reason);
/* The shape's pending configurations timed in interleaved rounds, then the heuristic's pick (`pick`, among the
 * records of `native`) re-timed head to head against the fastest; -1 when the CUDA context was lost. */
int pl_gemm_bench_time_in_rounds(pl_gemm_bench *b, const pl_gemm_record_list *native, const char *pick);
/* The pending configurations that will not run (the context was lost while verifying another). */
void pl_gemm_bench_abandon_pending(pl_gemm_bench *b);

#endif
