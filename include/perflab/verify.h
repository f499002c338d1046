/* Verification: every variant's output is compared with a reference in higher precision before it is timed.
 * Relative L2 error against a per-dtype tolerance; NaN/Inf and unwritten (still poisoned) elements fail. */
#ifndef PERFLAB_VERIFY_H
#define PERFLAB_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_dtype {
    PL_DTYPE_F64,
    PL_DTYPE_F32,
    PL_DTYPE_TF32,
    PL_DTYPE_BF16,
    PL_DTYPE_F16,
    PL_DTYPE_FP8,
    PL_DTYPE_I32,
    PL_DTYPE_COUNT
} pl_dtype;

extern const char *const pl_dtype_names[PL_DTYPE_COUNT];
const char *pl_dtype_name(pl_dtype d);
/* -1 when the name is unknown. */
int pl_dtype_from_name(const char *name);
/* SPEC.md's tolerances: fp32 1e-5, tf32 5e-4, bf16/fp16 1e-2, fp8 5e-2, exact types 0. */
double pl_default_tolerance(pl_dtype d);

typedef struct pl_verification {
    int checked; /* 0: not verified (--skip-verify, or the variant never ran) */
    int passed;
    pl_dtype dtype;
    double rel_l2_error; /* ||out - ref|| / ||ref|| over the finite, written elements */
    double tolerance;
    double max_abs_error;
    size_t max_error_index;
    size_t elements;
    size_t nonfinite;  /* NaN or Inf in the output (written, but wrong) */
    size_t unwritten;  /* still carrying the poison pattern */
    char message[256]; /* why it failed, or a short summary when it passed */
} pl_verification;

/* Compare outputs with a float64 reference. tolerance <= 0 selects the dtype's default. The poison pattern
 * is all-ones bytes (what pl_poison writes): such elements count as unwritten. */
void pl_verify_f32(const float *out, const double *ref, size_t n, pl_dtype dtype, double tolerance, pl_verification *v);
void pl_verify_bf16(const uint16_t *out, const double *ref, size_t n, double tolerance, pl_verification *v);
void pl_verify_f16(const uint16_t *out, const double *ref, size_t n, double tolerance, pl_verification *v);
/* Exact comparison for integer outputs. */
void pl_verify_i32(const int32_t *out, const int32_t *ref, size_t n, pl_verification *v);
/* The verdict on errors measured elsewhere (rel_l2_error, max_abs_error, elements, nonfinite, unwritten, dtype and
 * tolerance set): passed and the message, as the comparisons above judge. */
void pl_verify_judge(pl_verification *v);
/* A verdict computed by the target itself (e.g. a self-test): sets checked=1 and the message. */
void pl_verify_set(pl_verification *v, int passed, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

double pl_bf16_to_double(uint16_t bits);
double pl_f16_to_double(uint16_t bits);

#ifdef __cplusplus
}
#endif
#endif
