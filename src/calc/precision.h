/* perflab calc precision: for a GEMM, an RMSNorm, a softmax or an attention of a given shape, the error of each
 * dtype against float64 on the same random inputs. Inputs are rounded to the dtype on the host (round to nearest
 * even; FP8 scaled per tensor or per block of `block` elements along the reduction dimension so that each scale's
 * largest magnitude lands on the format's largest finite value, then saturated), the arithmetic runs in fp32 (as
 * tensor cores accumulate), and the output is rounded to the output dtype (the input's; BF16 for FP8 inputs). */
#ifndef PERFLAB_CALC_PRECISION_H
#define PERFLAB_CALC_PRECISION_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "perflab/verify.h"

/* A binary floating-point format: exponent and mantissa bits, IEEE-style bias and subnormals. */
typedef struct pl_fp_format {
    const char *name;
    int exp_bits, man_bits;
    double max;  /* the largest finite value */
    int has_inf; /* overflow gives Inf (else it saturates at max, as FP8 e4m3 conversions with satfinite do) */
} pl_fp_format;

extern const pl_fp_format pl_fp_fp32, pl_fp_tf32, pl_fp_bf16, pl_fp_fp16, pl_fp_e4m3, pl_fp_e5m2;

/* x rounded to the nearest value of f (ties to even); NaN stays NaN. */
double pl_fp_round(double x, const pl_fp_format *f);

typedef enum pl_prec_op { PL_PREC_GEMM, PL_PREC_NORM, PL_PREC_SOFTMAX, PL_PREC_ATTENTION } pl_prec_op;
typedef enum pl_prec_scale { PL_SCALE_NONE, PL_SCALE_TENSOR, PL_SCALE_BLOCK } pl_prec_scale;

typedef struct pl_prec_request {
    pl_prec_op op;
    long long dims[3]; /* gemm M N K; norm and softmax ROWS COLS; attention SEQ HEAD_DIM */
    int block;         /* FP8 block scaling: elements per scale (default 128) */
    uint64_t seed;
    double input_scale; /* inputs uniform in [-scale, scale] (norm: around 0; softmax: logits) */
    const char *only;   /* comma list of variant names to run, or NULL for all */
} pl_prec_request;

typedef struct pl_prec_row {
    const char *name; /* fp32, tf32, bf16, fp16, fp8_e4m3/tensor, fp8_e4m3/block, fp8_e5m2/tensor, ... */
    const char *out;  /* the output dtype */
    double rel_l2, max_abs, max_rel;
    double tolerance; /* pl_default_tolerance of the dtype: what perflab's verification would apply */
    int safe;         /* rel_l2 <= tolerance, and every output finite */
    size_t nonfinite;
} pl_prec_row;

/* Bounds checked before any work: a dimension, the largest tensor (elements) and one dtype's multiply-adds. */
#define PL_PREC_MAX_DIM      16777216
#define PL_PREC_MAX_ELEMENTS 16777216.0
#define PL_PREC_MAX_WORK     134217728.0

/* Lowers the work bound below PL_PREC_MAX_WORK for this process (0 restores it): the fuzz test runs thousands of
 * requests, each of which must stay short. */
void pl_prec_limit_work(double max_work);

/* Parse "MxNxK" (gemm) or "AxB" (the others) into req->dims. -1 with one line. */
int pl_prec_parse_shape(pl_prec_op op, const char *text, long long dims[3], char *err, size_t errlen);
int pl_prec_op_from_name(const char *name); /* -1 when unknown */

/* Runs every variant (or those in req->only). *rows is malloc'd. -1 with one line on bad input. */
int pl_precision_run(const pl_prec_request *req, pl_prec_row **rows, size_t *n, char *err, size_t errlen);
json_t *pl_precision_json(const pl_prec_request *req, const pl_prec_row *rows, size_t n);

#endif
