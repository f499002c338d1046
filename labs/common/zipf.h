/* A Zipf law over `bins` ranks: P(k) ∝ 1/(k+1)^skew, k = 0..bins-1 (skew 0 is uniform). */
#ifndef PERFLAB_LABS_ZIPF_H
#define PERFLAB_LABS_ZIPF_H

/* cdf[k] = P(key <= k), with cdf[bins - 1] exactly 1. */
void pl_zipf_cdf(double *cdf, unsigned bins, double skew);

#endif
