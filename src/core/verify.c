#include "perflab/verify.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

const char *const pl_dtype_names[PL_DTYPE_COUNT] = {
    [PL_DTYPE_F64] = "fp64", [PL_DTYPE_F32] = "fp32", [PL_DTYPE_TF32] = "tf32", [PL_DTYPE_BF16] = "bf16",
    [PL_DTYPE_F16] = "fp16", [PL_DTYPE_FP8] = "fp8",  [PL_DTYPE_I32] = "int32",
};

const char *pl_dtype_name(pl_dtype d)
{
    return pl_name_of(pl_dtype_names, PL_DTYPE_COUNT, (int)d);
}

int pl_dtype_from_name(const char *name)
{
    return pl_index_of(pl_dtype_names, PL_DTYPE_COUNT, name);
}

double pl_default_tolerance(pl_dtype d)
{
    switch (d) {
    case PL_DTYPE_F64: return 1e-12;
    case PL_DTYPE_F32: return 1e-5;
    case PL_DTYPE_TF32: return 5e-4;
    case PL_DTYPE_BF16:
    case PL_DTYPE_F16: return 1e-2;
    case PL_DTYPE_FP8: return 5e-2;
    default: return 0.0;
    }
}

double pl_bf16_to_double(uint16_t bits)
{
    uint32_t u = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double pl_f16_to_double(uint16_t bits)
{
    int sign = bits >> 15, exp = (bits >> 10) & 0x1f, frac = bits & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(frac, -24);
    else if (exp == 31)
        v = frac ? NAN : INFINITY;
    else
        v = ldexp(frac | 0x400, exp - 25);
    return sign ? -v : v;
}

/* The running sums of one comparison; the element loop is shared by every output type. */
typedef struct accum {
    double err2, ref2;
} accum;

static void begin(pl_verification *v, pl_dtype dtype, double tolerance, size_t n)
{
    memset(v, 0, sizeof *v);
    v->checked = 1;
    v->dtype = dtype;
    v->tolerance = tolerance > 0 ? tolerance : pl_default_tolerance(dtype);
    v->elements = n;
}

static void add(pl_verification *v, accum *a, size_t i, double out, double ref, int poisoned)
{
    if (poisoned) {
        v->unwritten++;
        return;
    }
    if (!isfinite(out)) {
        v->nonfinite++;
        return;
    }
    double d = out - ref;
    a->err2 += d * d;
    a->ref2 += ref * ref;
    if (fabs(d) > v->max_abs_error) {
        v->max_abs_error = fabs(d);
        v->max_error_index = i;
    }
}

static void finish(pl_verification *v, const accum *a)
{
    v->rel_l2_error = a->ref2 > 0 ? sqrt(a->err2 / a->ref2) : sqrt(a->err2);
    pl_verify_judge(v);
}

void pl_verify_judge(pl_verification *v)
{
    v->checked = 1;
    if (v->unwritten) {
        v->passed = 0;
        pl_snprintf(v->message, sizeof v->message, "%zu of %zu elements were never written (still poisoned)",
                    v->unwritten, v->elements);
    } else if (v->nonfinite) {
        v->passed = 0;
        pl_snprintf(v->message, sizeof v->message, "%zu of %zu elements are NaN or Inf", v->nonfinite, v->elements);
    } else if (!(v->rel_l2_error <= v->tolerance)) {
        v->passed = 0;
        pl_snprintf(v->message, sizeof v->message,
                    "relative L2 error %.3g exceeds the %s tolerance %.3g (largest error %.3g at element %zu)",
                    v->rel_l2_error, pl_dtype_name(v->dtype), v->tolerance, v->max_abs_error, v->max_error_index);
    } else {
        v->passed = 1;
        pl_snprintf(v->message, sizeof v->message, "relative L2 error %.3g <= %.3g (%s)", v->rel_l2_error, v->tolerance,
                    pl_dtype_name(v->dtype));
    }
}

void pl_verify_f32(const float *out, const double *ref, size_t n, pl_dtype dtype, double tolerance, pl_verification *v)
{
    accum a = {0, 0};
    begin(v, dtype, tolerance, n);
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &out[i], sizeof bits);
        add(v, &a, i, out[i], ref[i], bits == 0xffffffffu);
    }
    finish(v, &a);
}

/* 16-bit outputs differ only in how their bits decode. */
static void verify_u16(const uint16_t *out, const double *ref, size_t n, pl_dtype dtype, double (*decode)(uint16_t),
                       double tolerance, pl_verification *v)
{
    accum a = {0, 0};
    begin(v, dtype, tolerance, n);
    for (size_t i = 0; i < n; i++)
        add(v, &a, i, decode(out[i]), ref[i], out[i] == 0xffffu);
    finish(v, &a);
}

void pl_verify_bf16(const uint16_t *out, const double *ref, size_t n, double tolerance, pl_verification *v)
{
    verify_u16(out, ref, n, PL_DTYPE_BF16, pl_bf16_to_double, tolerance, v);
}

void pl_verify_f16(const uint16_t *out, const double *ref, size_t n, double tolerance, pl_verification *v)
{
    verify_u16(out, ref, n, PL_DTYPE_F16, pl_f16_to_double, tolerance, v);
}

void pl_verify_i32(const int32_t *out, const int32_t *ref, size_t n, pl_verification *v)
{
    accum a = {0, 0};
    begin(v, PL_DTYPE_I32, 0, n);
    v->tolerance = 0;
    for (size_t i = 0; i < n; i++)
        add(v, &a, i, (double)out[i], (double)ref[i], out[i] == -1 && ref[i] != -1);
    finish(v, &a);
}

void pl_verify_set(pl_verification *v, int passed, const char *fmt, ...)
{
    v->checked = 1;
    v->passed = passed;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
}
