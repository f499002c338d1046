/* On-device tuning of the BF16 pick. The pick (gemm/host/heuristic.h) ranks the kernels by a model of their time;
 * tuning times the model's fastest few on the problem itself, on this GPU, and remembers the fastest, so that
 * pl_gemm_bf16 runs it for that problem from then on: what users of cuBLASLt do when they time its heuristic's
 * candidates. Nothing is timed unless asked.
 *
 *     pl_gemm_tune_result r;
 *     pl_gemm_bf16_tune(&p, stream, NULL, &r);          // times up to 6 candidates on p (synchronises the stream)
 *     pl_gemm_tune_save("h200.tune", err, sizeof err);  // the tuned problems of this process, for later ones
 *     ...
 *     pl_gemm_tune_load("h200.tune", &skipped, err, sizeof err);
 *     pl_gemm_bf16(&p, stream);                         // the tuned kernel
 *
 * A tuned entry holds for exactly one problem class: M, N, K, B's layout, which epilogue inputs are given, whether
 * every operand is 16-byte aligned, and the GPU (compute capability, SM count and L2 size). Other shapes go to the
 * table and the model as before. With pl_gemm_set_autotune(1), pl_gemm_bf16 tunes a problem class the first time it
 * meets it (that call synchronises its stream: a start-up cost); never while the stream is being captured.
 *
 * Tuning writes D (into scratch memory when D overlaps an input, so an in-place residual add stays right) and, in
 * cold mode, a buffer of twice the L2 size between runs; both are freed before it returns. Thread-safe. */
#ifndef PERFLAB_GEMM_TUNE_H
#define PERFLAB_GEMM_TUNE_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#include "gemm/gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_GEMM_TUNE_MAX_CANDIDATES 16

typedef struct pl_gemm_tune_options {
    int candidates; /* the model's fastest this many (0: 6; at most PL_GEMM_TUNE_MAX_CANDIDATES) */
    int rounds;     /* rounds over the candidates, each timing every candidate once (0: 5); the median decides */
    int hot;        /* 0 (default): L2 flushed before each timed run, as perflab gemm times; 1: back to back */
} pl_gemm_tune_options;

typedef struct pl_gemm_tune_result {
    const pl_gemm_kernel *kernel;     /* the fastest: the smallest median */
    double us;                        /* its median, µs */
    const pl_gemm_kernel *model_pick; /* the kernel the pick chose before tuning (table or model) */
    double model_pick_us;             /* its median */
    int timed;                        /* candidates timed */
} pl_gemm_tune_result;

/* Times the candidates on p (on `stream`, then synchronises it) and remembers the fastest for p's class on this GPU.
 * o may be NULL (the defaults). cudaErrorInvalidValue for a bad problem, one no kernel takes, or a capturing stream;
 * else the first CUDA error met (nothing is remembered then). */
cudaError_t pl_gemm_bf16_tune(const pl_gemm_problem *p, cudaStream_t stream, const pl_gemm_tune_options *o,
                              pl_gemm_tune_result *out);

/* 1: pl_gemm_bf16 tunes each problem class the first time it meets it (default options); 0 (default): never. */
void pl_gemm_set_autotune(int on);

/* The tuned entries of this process into a text file (one line each; written to PATH.tmp, then renamed). 0, or -1
 * with one line in err. */
int pl_gemm_tune_save(const char *path, char *err, size_t errlen);

/* Adds a tune file's entries (replacing those of the same class). Entries naming a kernel this build does not have
 * are skipped and counted in *skipped (may be NULL). Returns the entries added, or -1 with one line in err naming the
 * file and line (a malformed line: nothing is added). */
int pl_gemm_tune_load(const char *path, int *skipped, char *err, size_t errlen);

/* Forgets every tuned entry. */
void pl_gemm_tune_clear(void);

#ifdef __cplusplus
}
#endif
#endif
