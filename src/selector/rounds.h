/* The interleaved rounds of perflab gemm --rounds N: every configuration of a shape, of every provider, is verified
 * first, then timed in N rounds after one round at load, each round starting with another configuration, so that
 * none gets a cooler (faster, at the power limit) GPU for being timed first. Pure functions, tested on the host. */
#ifndef PERFLAB_SELECTOR_ROUNDS_H
#define PERFLAB_SELECTOR_ROUNDS_H

#include <stddef.h>

#include "core/measure.h"
#include "perflab/results.h"

/* The configuration timed j-th (0 <= j < n) in round `round` (0: the round at load, then 1..rounds): round r
 * starts with configuration r mod n and goes on in order, so each round times every configuration once and any n
 * consecutive rounds start with n different ones. */
size_t pl_gemm_round_slot(size_t n, int round, size_t j);

/* How long configuration slots of round `round` of `rounds` run: the round at load (0) keeps nothing; a kept round
 * takes --iterations / rounds samples (the first rounds one more where it does not divide) or, adaptive, at least
 * --min-time-s and --min-samples / rounds samples; any round stops at --max-time-s / rounds once it has a sample.
 * The same quotas as perflab run's interleaved targets. */
pl_round_quota pl_gemm_round_quota(const pl_run_settings *s, int rounds, int round);

#endif
