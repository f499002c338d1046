/* libperflab.so's C API, for Python (python/perflab loads it with ctypes) and any other caller that holds its own
 * CUDA context: time callables by perflab's rules, write a run folder that `perflab compare`, `perflab report` and the
 * expectations read, and call perflab's kernels on raw device pointers.
 *
 * Stable: functions are only added. Every struct a caller fills starts with its own size (`size`), so that a caller
 * built against an older header is refused with a message instead of read past its end. Strings returned by the
 * library are freed with pl_py_free. Every function that can fail writes one line into err (naming the problem and
 * the fix) and returns -1 (or NULL). */
#ifndef PERFLAB_PY_H
#define PERFLAB_PY_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_PY_API_VERSION 1

/* The API version (PL_PY_API_VERSION) and the perflab version and commit ("0.1.0 (e9b7baa)"). */
int pl_py_api_version(void);
const char *pl_py_version(void);
void pl_py_free(void *p);

/* ---- timing callables ---- */

/* The work, once, enqueued on `stream` (the caller's stream: the one the harness's events and latch are on). 0, or
 * non-zero when it failed (the run stops there: the caller keeps its own reason, e.g. a Python exception). */
typedef int (*pl_py_run_fn)(void *user, cudaStream_t stream);

/* What a variant's check found after its checked run (verification before timing). */
typedef struct pl_py_check {
    int verdict;         /* -1: judge by rel_l2_error against the tolerance; 0 wrong; 1 right */
    double rel_l2_error; /* ||out - ref|| / ||ref|| over the finite elements */
    double max_abs_error;
    unsigned long long elements, nonfinite;
    char message[256]; /* why it is wrong, or a short summary; may be empty */
} pl_py_check;

/* 0 with *out filled, non-zero when the check itself failed (not a wrong result). */
typedef int (*pl_py_check_fn)(void *user, pl_py_check *out);

typedef struct pl_py_variant {
    size_t size;           /* sizeof(pl_py_variant) */
    const char *name;      /* "baseline" first by convention; names unique */
    const char *technique; /* one line; may be NULL */
    pl_py_run_fn run;
    pl_py_check_fn check; /* NULL when the run is not verified (every variant has one, or none) */
    void *user;           /* passed to run and check */
    const char *dtype;    /* the output's dtype for the default tolerance: fp32, tf32, bf16, fp16, fp8 (NULL: bf16) */
    double tolerance;     /* relative L2 error allowed; <= 0: the dtype's (SPEC: bf16 1e-2, ...) */
    int host_bound;       /* 1: time it as the host issues it, without the latch (its launch cost is the lesson) */
} pl_py_variant;

typedef struct pl_py_options {
    size_t size;         /* sizeof(pl_py_options); pl_py_options_init sets it */
    const char *target;  /* group:name of the result, e.g. "python:step" */
    const char *summary; /* one line; may be NULL */
    const char *mode;    /* hot | cold (L2 flushed before every sample) */
    const char *profile; /* none | minimal (clocks, power, temperature) | roofline (+ % of the measured ceilings) */
    int device;          /* the GPU the stream belongs to */
    int iterations;      /* exactly N samples each; 0: adaptive */
    int warmup, min_samples;
    double min_time_s, max_time_s, max_noise; /* adaptive stopping; max_noise a fraction */
    double throttle_threshold;                /* fraction of the maximum SM clock; < 0: perflab run's default */
    int rounds;      /* interleaved rounds (A,B,A,B): 0 the target's way (power_bound: 5), 1 one after another */
    int power_bound; /* 1: runs at the power limit (interleaved, throttle threshold 50% unless given) */
    int graph;       /* 1: replay each sample as a CUDA graph (the callable must be capturable) */
    unsigned long long seed;
    double flops, bytes_read, bytes_written; /* the work of one run, 0 when unknown: TFLOP/s, GB/s, roofline */
    const char *artifacts_dir; /* where roofline's ceilings are looked up (perflab peak stores them); NULL: artifacts */
    int host; /* 1: host work (no GPU needed): timed with the host clock, the stream NULL, no latch or flush */
} pl_py_options;

/* perflab run's defaults (hot, 3 warm-up runs, 10 samples over 0.25 s at least, 3 s at most, 2% noise, ...). */
void pl_py_options_init(pl_py_options *o);

/* The result of timing a set of variants as one target; opaque. */
typedef struct pl_py_result pl_py_result;

/* Verify, then time every variant on `stream` (of GPU o->device; NULL: the legacy default stream, which is torch's
 * unless it was given another) in this process and thread, with the harness's
 * measurement (src/core/measure.c: warm-up, latch, L2 flush in cold mode, adaptive stopping, throttled samples
 * discarded; interleaved rounds; statistics and bootstrap intervals). NULL with err on bad options; otherwise a
 * result whose variants carry their own status (a failed run or a wrong result is a status, not a NULL). */
pl_py_result *pl_py_time(const pl_py_options *o, const pl_py_variant *variants, size_t n, cudaStream_t stream,
                         char *err, size_t errlen);
/* The result as run.json holds a target (a JSON object: name, status, variants with statistics, verification,
 * telemetry, counters, TFLOP/s, GB/s, speedups). malloc'd. */
char *pl_py_result_json(const pl_py_result *r);
/* 0 when every variant was verified and timed, 1 when one failed (perflab run's exit code for the target). */
int pl_py_result_exit_code(const pl_py_result *r);
/* Write <artifacts_dir>/<run_id>/ (run.json, summary.md, results.csv) with this result as the run's one target and
 * the provenance of this process and GPU. command_line: what ran (for provenance). The run folder's path goes to
 * dir_out. 0, or -1 with err (nothing half-written: the files are written atomically). */
int pl_py_result_write(pl_py_result *r, const char *artifacts_dir, const char *command_line, char *dir_out,
                       size_t dir_len, char *err, size_t errlen);
/* The table perflab run prints, for this result (malloc'd). */
char *pl_py_result_table(const pl_py_result *r);
void pl_py_result_free(pl_py_result *r);

/* ---- kernels on raw device pointers ----
 * Each enqueues on `stream` and never synchronises. Pointers are device memory on the current device; element
 * types are bf16 unless said otherwise; every matrix is row-major and contiguous. 0, or -1 with err naming the
 * argument (and nothing launched), or -1 with the CUDA error of the launch. */

/* D (M×N) = A (M×K) · B, B N×K (b_layout 0, a linear layer's weight) or K×N (1): the heuristic's pick of perflab's
 * kernels for this GPU (a measured table, then a roofline model). */
int pl_py_gemm_bf16(int m, int n, int k, int b_layout, const void *a, const void *b, void *d, cudaStream_t stream,
                    char *err, size_t errlen);
/* D (bf16, M×N) = scale · A (e4m3, M×K) · B (e4m3, N×K). block 0: tensor scales (one float each on the device, NULL
 * reads as 1); block 1: A 1×128 and B 128×128 block scales in the layouts of kernels/gemm/fp8.h. sm_90 only. */
int pl_py_gemm_fp8(int m, int n, int k, const void *a, const void *b, void *d, const float *scale_a,
                   const float *scale_b, int block, cudaStream_t stream, char *err, size_t errlen);
/* Grouped GEMM (MoE experts): group g multiplies rows offsets[g]..offsets[g+1]-1 of A (rows×K) by B_g (N×K, groups
 * after each other) into the same rows of D (rows×N bf16). offsets: groups + 1 int32 on the device. fp8 1: A and B
 * e4m3 with block scales. sm_90 only. */
int pl_py_grouped_gemm(int groups, int n, int k, int rows, const int *offsets, const void *a, const void *b, void *d,
                       const float *scale_a, const float *scale_b, int fp8, cudaStream_t stream, char *err,
                       size_t errlen);
/* The grouped GEMM's argument checks and cluster choice without launching (no GPU needed). 1 when it takes the
 * problem, else 0 with the reason in err. */
int pl_py_grouped_gemm_supports(int groups, int n, int k, int rows, const int *offsets, const void *a, const void *b,
                                const void *d, int fp8, char *err, size_t errlen);
/* y = x / sqrt(mean(x²) + eps) · w over rows of `cols`. */
int pl_py_rms_norm(const void *x, const void *w, void *y, int rows, int cols, float eps, cudaStream_t stream, char *err,
                   size_t errlen);
/* y = (x - mean) / sqrt(var + eps) · w + b (biased variance, as PyTorch); b may be NULL (no bias). */
int pl_py_layer_norm(const void *x, const void *w, const void *b, void *y, int rows, int cols, float eps,
                     cudaStream_t stream, char *err, size_t errlen);
/* y = softmax(x) over each row. */
int pl_py_softmax(const void *x, void *y, int rows, int cols, cudaStream_t stream, char *err, size_t errlen);
/* O = softmax(scale · Q·Kᵀ (+ causal mask)) · V; layout 0 [batch][heads][seq][head_dim], 1 [batch][seq][heads][dim];
 * K and V have kv_heads heads (GQA); lse: [batch][heads][seq] fp32, may be NULL only if the caller discards it (a
 * scratch buffer is then needed: pass one). head_dim 64, 128 or 256. */
int pl_py_flash_attn(int batch, int heads, int kv_heads, int seq, int head_dim, int causal, int layout, float scale,
                     const void *q, const void *k, const void *v, void *o, float *lse, cudaStream_t stream, char *err,
                     size_t errlen);
/* Decode one token per sequence against a paged KV cache: q, o [batch][heads][head_dim]; caches
 * [pages][page_size][kv_heads][head_dim]; block_table [batch][max_pages] int32; seq_lens [batch] int32 (1 .. max_pages
 * · page_size). workspace: pl_py_paged_decode_workspace_bytes of device memory. */
size_t pl_py_paged_decode_workspace_bytes(int batch, int heads, int kv_heads, int head_dim, int page_size,
                                          int max_pages, int device);
int pl_py_paged_decode(int batch, int heads, int kv_heads, int head_dim, int page_size, int max_pages, float scale,
                       const void *q, const void *k_cache, const void *v_cache, const int *block_table,
                       const int *seq_lens, void *o, void *workspace, size_t workspace_bytes, cudaStream_t stream,
                       char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
