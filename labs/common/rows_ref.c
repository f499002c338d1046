/* Float64 references of the row targets, from the exact bf16 inputs the GPU holds, and the per-element bound. */
#include <math.h>

#include "common/rows_lab.h"

void rows_ref_rmsnorm(const uint16_t *x, const uint16_t *w, size_t rows, size_t cols, double eps, double *ref)
{
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) {
            const double v = pl_bf16_to_double(xr[c]);
            ss += v * v;
        }
        const double inv = 1.0 / sqrt(ss / (double)cols + eps);
        for (size_t c = 0; c < cols; c++)
            ref[r * cols + c] = pl_bf16_to_double(xr[c]) * inv * pl_bf16_to_double(w[c]);
    }
}

void rows_ref_layernorm(const uint16_t *x, const uint16_t *w, const uint16_t *b, size_t rows, size_t cols, double eps,
                        double *ref)
{
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * cols;
        double s = 0, d2 = 0;
        for (size_t c = 0; c < cols; c++)
            s += pl_bf16_to_double(xr[c]);
        const double mean = s / (double)cols;
        for (size_t c = 0; c < cols; c++) {
            const double d = pl_bf16_to_double(xr[c]) - mean;
            d2 += d * d;
        }
        const double rstd = 1.0 / sqrt(d2 / (double)cols + eps);
        for (size_t c = 0; c < cols; c++)
            ref[r * cols + c] =
                (pl_bf16_to_double(xr[c]) - mean) * rstd * pl_bf16_to_double(w[c]) + pl_bf16_to_double(b[c]);
    }
}

void rows_ref_softmax(const uint16_t *x, size_t rows, size_t cols, double *ref)
{
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * cols;
        double m = -INFINITY, s = 0;
        for (size_t c = 0; c < cols; c++)
            m = fmax(m, pl_bf16_to_double(xr[c]));
        for (size_t c = 0; c < cols; c++) {
            ref[r * cols + c] = exp(pl_bf16_to_double(xr[c]) - m);
            s += ref[r * cols + c];
        }
        for (size_t c = 0; c < cols; c++)
            ref[r * cols + c] /= s;
    }
}

double rows_ref_gelu(double v)
{
    const double k = 0.79788456080286535588; /* sqrt(2 / pi) */
    return 0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v)));
}

void rows_ref_chain(const uint16_t *x, const uint16_t *bias, size_t rows, size_t cols, double scale, double *ref)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            ref[r * cols + c] = scale * rows_ref_gelu(pl_bf16_to_double(x[r * cols + c]) + pl_bf16_to_double(bias[c]));
}

size_t rows_outliers(const uint16_t *out, const double *ref, size_t n, size_t *first, double *rms)
{
    double s2 = 0;
    for (size_t i = 0; i < n; i++)
        s2 += ref[i] * ref[i];
    *rms = n ? sqrt(s2 / (double)n) : 0;
    const double atol = ROWS_ELEM_ATOL * *rms;
    size_t bad = 0;
    *first = 0;
    for (size_t i = 0; i < n; i++) {
        const double o = pl_bf16_to_double(out[i]);
        /* written as "not within" so that a NaN counts */
        if (!(fabs(o - ref[i]) <= ROWS_ELEM_RTOL * fabs(ref[i]) + atol)) {
            if (bad++ == 0)
                *first = i;
        }
    }
    return bad;
}
