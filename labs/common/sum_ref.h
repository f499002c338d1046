/* The float64 reference of a sum of n fp32 or bf16 values, and the check of an fp32 result against it.
 *
 * Tolerance. Every variant accumulates in fp32 (unit roundoff u = 2^-24); each addition s = a + b rounds with an
 * error of at most u·|s|, and the error of the result is the sum of those errors over the order the variant chose.
 * The worst common order is one element after another (an atomic chain), whose partial sums are the prefix sums
 * s_j; rounding errors of random sign then add up to about 0.6·u·sqrt(Σ s_j²) (one standard deviation; a rounding
 * error is uniform within half an ulp, and an ulp is at most 2u·|s|). The check allows
 *
 *     |result − sum| ≤ 10 · u · sqrt(Σ_j s_j²),
 *
 * about 17 standard deviations of the sequential order; tree orders (blocks, warps, CUB) have far smaller partial
 * sums and land far below it. The figure is reported relative to Σ|x| (the scale of the condition of the sum): for
 * zero-mean inputs |sum| is ~sqrt(n) times smaller than Σ|x|, so an error relative to |sum| would say little. */
#ifndef PERFLAB_LABS_SUM_REF_H
#define PERFLAB_LABS_SUM_REF_H

#include <stddef.h>
#include <stdint.h>
#include "perflab/verify.h"

typedef struct pl_sum_reference {
    double sum;     /* in float64, in index order */
    double abs_sum; /* Σ|x| */
    double tol;     /* the absolute tolerance above */
    size_t n;
} pl_sum_reference;

void pl_sum_reference_f32(const float *x, size_t n, pl_sum_reference *r);
void pl_sum_reference_bf16(const uint16_t *x, size_t n, pl_sum_reference *r);

/* Passes when `got` is finite and within r->tol of r->sum. rel_l2_error and tolerance are relative to Σ|x|. */
void pl_sum_verify(float got, const pl_sum_reference *r, pl_verification *v);

#endif
