/* The harness's side of the bf16 row targets (norm:rmsnorm, norm:layernorm, softmax:rows,
 * fusion:elementwise_chain): the rows x cols input and output, random inputs copied back as the GPU holds them,
 * the float64 host references, the check (relative L2 plus a per-element bound), and the cudaMemcpy reference
 * variant that moves the same bytes. */
#ifndef PERFLAB_LABS_ROWS_LAB_H
#define PERFLAB_LABS_ROWS_LAB_H

#include <stddef.h>
#include <stdint.h>

#include "perflab/perflab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-buffer seed streams of the inputs */
enum { ROWS_STREAM_X = 1, ROWS_STREAM_WEIGHT = 2, ROWS_STREAM_BIAS = 3 };

/* The per-element bound: |out - ref| <= ROWS_ELEM_RTOL |ref| + ROWS_ELEM_ATOL rms(ref). A bf16 rounding is at most
 * 2^-9 relative; the bound leaves room for the unfused versions' bf16 intermediates and for outputs that cancel
 * to near zero (LayerNorm's + b, GELU's tail), and still catches one wrong row, which the relative L2 error over
 * the whole matrix alone would not (one row of 16384 moves it by less than 1%). */
#define ROWS_ELEM_RTOL 0.0078125  /* 2^-7 */
#define ROWS_ELEM_ATOL 0.00390625 /* 2^-8 */

/* The first member of each row target's state, so that the shared poison/check/copy take the state itself. */
typedef struct rows_lab {
    int rows, cols;
    size_t n;                                          /* rows * cols */
    uint16_t *x, *y;                                   /* device, bf16 */
    uint16_t *x_host, *y_host;                         /* the input as the GPU holds it; the output copied back */
    double *ref;                                       /* float64 reference, computed at the first check */
    void (*reference)(const void *state, double *ref); /* computes it (the target's formula) */
    int ran_copy; /* the last run was the cudaMemcpy reference variant: its check is y == x bit for bit */
} rows_lab;

/* The size parameters every row target declares: 16384 x 8192 by default (268 MB each way: far beyond L2), 77 x 1001
 * small (rows not 16-byte aligned, a partial last block). */
/* The fused kernels' 16-byte vectors per thread: 0 picks by cols; the kernels take 1, 2, 4 (and 8 where max_vpt
 * is 8). choices is how the help names them ("1, 2 or 4"). */
#define ROWS_LAB_VPT_PARAM(max_vpt, choices)                                                                           \
    {                                                                                                                  \
        .name = "vpt", .type = PL_PARAM_INT, .default_value = "0",                                                     \
        .help = "16-byte vectors per thread in the fused kernel: 0 picks by cols, else " choices, .min = 0,           \
        .max = (max_vpt)                                                                                               \
    }

#define ROWS_LAB_SIZE_PARAMS(cols_help)                                                                                \
    {.name = "rows",                                                                                                   \
     .type = PL_PARAM_INT,                                                                                             \
     .default_value = "16384",                                                                                         \
     .help = "rows (tokens)",                                                                                          \
     .min = 1,                                                                                                         \
     .max = 1 << 24,                                                                                                   \
     .small_value = "77"},                                                                                             \
    {                                                                                                                  \
        .name = "cols", .type = PL_PARAM_INT, .default_value = "8192", .help = cols_help, .min = 1, .max = 1 << 26,    \
        .small_value = "1001"                                                                                          \
    }

/* The [reference] variant of every row target: the same bytes as its kernels, without their work. */
#define ROWS_LAB_COPY_VARIANT                                                                                          \
    {                                                                                                                  \
        .name = "cuda_memcpy",                                                                                         \
        .technique = "cudaMemcpyAsync D2D of x into y: the bytes of the optimized kernels without their work, the "    \
                     "ceiling",                                                                                        \
        .run = rows_lab_run_copy, .flags = PL_VARIANT_REFERENCE                                                        \
    }

/* For a row target's check_params, before any work: x and y (bf16) with `extra_per_row` bytes a row and
 * `extra_per_elem` an element of the target's other buffers within the GPU's memory (pl_check_device_memory). */
int rows_lab_check_memory(const pl_params *p, const struct pl_gpu_record *gpu, double extra_per_row,
                          double extra_per_elem, char *err, size_t errlen);
/* rows and cols from the parameters, x filled with uniform [lo, hi) and copied back, y allocated. `extra_bytes`:
 * the target's other device buffers, for the one-line error when the GPU is too small. */
int rows_lab_init(pl_ctx *ctx, const pl_params *p, rows_lab *io, float lo, float hi, size_t extra_bytes,
                  void (*reference)(const void *state, double *ref));
/* A bf16 vector of n elements, uniform [lo, hi), and its host copy. NULL on failure (reason in ctx). */
uint16_t *rows_lab_vector(pl_ctx *ctx, size_t n, float lo, float hi, uint64_t stream_id, uint16_t **host);

/* Counters: x read and y written once, `vectors` cols-sized parameter vectors read, `flops` per element. */
void rows_lab_counters(const pl_params *p, int vectors, double flops, pl_counters *c);

/* pl_target callbacks; `state` starts with a rows_lab. */
int rows_lab_poison(pl_ctx *ctx, void *state);
int rows_lab_check(pl_ctx *ctx, void *state, pl_verification *v);
/* The [reference] variant: cudaMemcpyAsync D2D of x into y, the bytes of the row kernels without their work. */
int rows_lab_run_copy(pl_ctx *ctx, void *state);

/* The vectors-per-thread parameter (0 picks by cols), checked against the row kernels' shapes; -1 with a one-line
 * error naming the fix. */
int rows_lab_check_vpt(pl_ctx *ctx, const rows_lab *io, int vpt, int vpt_max);

/* ---- float64 references from the bf16 bits the GPU holds (rows_ref.c) ---- */
void rows_ref_rmsnorm(const uint16_t *x, const uint16_t *w, size_t rows, size_t cols, double eps, double *ref);
void rows_ref_layernorm(const uint16_t *x, const uint16_t *w, const uint16_t *b, size_t rows, size_t cols, double eps,
                        double *ref);
void rows_ref_softmax(const uint16_t *x, size_t rows, size_t cols, double *ref);
double rows_ref_gelu(double v); /* tanh form */
void rows_ref_chain(const uint16_t *x, const uint16_t *bias, size_t rows, size_t cols, double scale, double *ref);

/* Elements beyond the per-element bound (ROWS_ELEM_*); *first the first of them, *rms the reference's RMS. */
size_t rows_outliers(const uint16_t *out, const double *ref, size_t n, size_t *first, double *rms);

#ifdef __cplusplus
}
#endif
#endif
