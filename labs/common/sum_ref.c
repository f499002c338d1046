#include "common/sum_ref.h"

#include <math.h>
#include <string.h>

#define UNIT_ROUNDOFF_F32 (1.0 / 16777216.0) /* 2^-24 */
#define TOL_FACTOR        10.0

static void add(pl_sum_reference *r, double x, double *sq_prefix)
{
    r->sum += x;
    r->abs_sum += fabs(x);
    *sq_prefix += r->sum * r->sum;
}

static void finish(pl_sum_reference *r, size_t n, double sq_prefix)
{
    r->n = n;
    r->tol = TOL_FACTOR * UNIT_ROUNDOFF_F32 * sqrt(sq_prefix);
}

void pl_sum_reference_f32(const float *x, size_t n, pl_sum_reference *r)
{
    double sq = 0;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < n; i++)
        add(r, (double)x[i], &sq);
    finish(r, n, sq);
}

void pl_sum_reference_bf16(const uint16_t *x, size_t n, pl_sum_reference *r)
{
    double sq = 0;
    memset(r, 0, sizeof *r);
    for (size_t i = 0; i < n; i++)
        add(r, pl_bf16_to_double(x[i]), &sq);
    finish(r, n, sq);
}

void pl_sum_verify(float got, const pl_sum_reference *r, pl_verification *v)
{
    memset(v, 0, sizeof *v);
    v->dtype = PL_DTYPE_F32;
    v->elements = 1;
    const double scale = r->abs_sum > 0 ? r->abs_sum : 1.0;
    v->tolerance = r->tol / scale;
    if (!isfinite(got)) {
        uint32_t bits;
        memcpy(&bits, &got, sizeof bits);
        if (bits == 0xffffffffu)
            v->unwritten = 1;
        else
            v->nonfinite = 1;
        pl_verify_set(v, 0, "the sum is %s (%s)", isnan(got) ? "NaN" : "infinite",
                      bits == 0xffffffffu ? "still poisoned: never written" : "written, but not a number");
        return;
    }
    const double err = fabs((double)got - r->sum);
    v->max_abs_error = err;
    v->rel_l2_error = err / scale;
    const int ok = err <= r->tol;
    pl_verify_set(
        v, ok, "sum %.9g vs float64 %.9g: error %.3g, %.2f of the tolerance %.3g (10·u·sqrt(Σ prefix²)); %.2e of Σ|x|",
        (double)got, r->sum, err, r->tol > 0 ? err / r->tol : (err > 0 ? INFINITY : 0.0), r->tol, v->rel_l2_error);
}
