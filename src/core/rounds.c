/* The interleaved schedule: perflab run's power-bound targets (target_child.c) and perflab gemm --rounds
 * (bench_child.c). */
#include "core/measure.h"

#include <string.h>

size_t pl_round_slot(size_t n, int round, size_t j)
{
    return n ? (j + (size_t)(round < 0 ? 0 : round)) % n : 0;
}

pl_round_quota pl_round_quota_for(const pl_run_settings *s, int rounds, int round)
{
    pl_round_quota q;
    memset(&q, 0, sizeof q);
    if (rounds < 1)
        rounds = 1;
    q.keep = round > 0; /* round 0 runs at load only: every variant starts from the same warm GPU */
    if (q.keep && s->iterations > 0) /* exactly `iterations` in all (rounds <= iterations): the first rounds take
                                        one more where it does not divide */
        q.samples = (size_t)(s->iterations / rounds + (round - 1 < s->iterations % rounds ? 1 : 0));
    else {
        q.min_s = s->min_time_s;
        q.min_samples = s->min_samples > rounds ? (size_t)((s->min_samples + rounds - 1) / rounds) : 1;
    }
    q.max_s = s->max_time_s / rounds;
    return q;
}
