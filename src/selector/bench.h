/* The GPU providers of perflab gemm (cublas, cublaslt, perflab), timed through the harness in child processes.
 * The parent never initialises CUDA: it forks a child that walks the shapes, and starts a new one from the next
 * shape when a child crashes, hangs past --timeout-s or loses its CUDA context. */
#ifndef PERFLAB_SELECTOR_BENCH_H
#define PERFLAB_SELECTOR_BENCH_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "core/devprobe.h"
#include "core/measure.h"
#include "gemm/gemm.h"
#include "common/gemm_host.h"
#include "perflab/results.h"
#include "selector/provider_comparison.h"

typedef struct pl_gemm_bench_request {
    const pl_gemm_shape *shapes;
    size_t n_shapes;
    int cublas, cublaslt, perflab; /* which GPU providers were asked for */
    const char *dtype;             /* bf16 | fp16 | fp8 */
    pl_gemm_b_layout layout;
    int max_algos;                   /* cuBLASLt heuristic results timed per shape */
    const pl_run_settings *settings; /* timing (mode, warm-up, stopping, throttle), device and seed */
    double timeout_s;                /* per shape */
    double budget_s;       /* per shape: the interleaved rounds share it (bench_rounds.c); 0: --min/--max-time-s rule */
    int progress;          /* a line per finished cell on stderr */
    int tune;              /* bf16: the heuristic's pick tuned on the device first (gemm/tune.h) */
    const char *tune_file; /* tuned picks loaded from it (when it exists) and, with tune, saved to it */
} pl_gemm_bench_request;

/* Fill the comparison's cells of the GPU providers. Returns 0, or -2 when interrupted (the cells not reached stay
 * missing). The children's output goes to log_path. */
int pl_gemm_bench_run(const pl_gemm_bench_request *req, pl_gemm_comparison *cmp, const char *log_path);

/* ---- inside the child (bench_child.c, bench_lt.c) ---- */

/* One set of operands; the timed runs rotate over several so that small shapes do not run from L2. */
typedef struct pl_gemm_operands {
    void *a, *b; /* dtype bits */
    uint16_t *d; /* bf16 (fp16 for fp16 inputs) */
} pl_gemm_operands;

typedef struct pl_gemm_bench_shape {
    pl_ctx alloc; /* this shape's allocations, freed when it is done */
    const pl_gemm_shape *shape;
    pl_dtype in_dtype, out_dtype;
    pl_gemm_operands *sets;
    int n_sets;
    pl_gemm_reference ref;
    /* cuBLASLt's descriptors of the problem, kept until the shape is done (its configurations may be timed in
     * rounds after every provider was verified): pl_gemm_bench_lt_release */
    cublasLtMatmulDesc_t lt_op;
    cublasLtMatrixLayout_t lt_a, lt_b, lt_d;
    char pick[96]; /* the perflab provider: the heuristic's kernel (gemm/host/heuristic.h), "" when none */
} pl_gemm_bench_shape;

typedef struct pl_gemm_bench pl_gemm_bench;

/* A configuration to verify and time: `launch` runs it once on a set of operands. */
typedef struct pl_gemm_candidate {
    pl_gemm_bench *bench;
    pl_gemm_bench_shape *shape;
    int next_set;
    int (*launch)(struct pl_gemm_candidate *c, pl_ctx *ctx, const pl_gemm_operands *ops);
    const pl_gemm_kernel *kernel; /* perflab */
    cublasLtMatmulAlgo_t lt_algo; /* cublaslt; its descriptors are the shape's */
} pl_gemm_candidate;

/* Verify c on operand set 0 and append its record (ok or failed) to out. With one round (--rounds 1) it is timed
 * through pl_measure_variant at once; with more, it waits for the shape's interleaved rounds (its record filled
 * then). Returns -1 when the CUDA context is lost (nothing further can run in this process). */
int pl_gemm_bench_evaluate(pl_gemm_bench *b, pl_gemm_candidate *c, const char *provider, const char *kernel,
                           json_t *config, pl_gemm_record_list *out);
/* cuBLASLt: every heuristic algorithm up to max_algos. Returns -1 when the context is lost; *why says why nothing
 * was tried (unsupported) when out stays empty. */
int pl_gemm_bench_cublaslt(pl_gemm_bench *b, pl_gemm_bench_shape *s, pl_gemm_record_list *out, char *why,
                           size_t whylen);
void pl_gemm_bench_lt_release(pl_gemm_bench_shape *s);
cublasLtHandle_t pl_gemm_bench_lt_handle(pl_gemm_bench *b, void **workspace, size_t *workspace_bytes, int *max_algos);
pl_gemm_b_layout pl_gemm_bench_layout(pl_gemm_bench *b);

/* The child's main: shapes first..n-1 of the request, messages on fd. */
void pl_gemm_bench_child(const pl_gemm_bench_request *req, size_t first, int fd);

#endif
