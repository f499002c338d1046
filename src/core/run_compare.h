/* perflab compare RUN_A RUN_B: per target and variant, the change from A to B and a noise-aware verdict. */
#ifndef PERFLAB_CORE_RUN_COMPARE_H
#define PERFLAB_CORE_RUN_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include "perflab/results.h"
#include "perflab/stats.h"

#define PL_COMPARE_DEFAULT_THRESHOLD 0.05 /* a change smaller than 5% is "same" even when it is real */

typedef enum pl_compare_verdict {
    PL_CMP_FASTER,
    PL_CMP_SLOWER,
    PL_CMP_SAME,
    PL_CMP_ONLY_A, /* the target or variant is in run A only */
    PL_CMP_ONLY_B,
    PL_CMP_NOT_COMPARABLE, /* different parameters, or either side was not timed (the note says which) */
    PL_CMP_COUNT
} pl_compare_verdict;

const char *pl_compare_verdict_name(pl_compare_verdict v);

typedef struct pl_compare_row {
    char *target;
    char *variant;
    pl_compare_verdict verdict;
    double median_a_ms, median_b_ms; /* NaN where absent */
    double change;                   /* median_b / median_a - 1; negative is faster */
    pl_interval ratio;               /* median_b / median_a with its bootstrap interval */
    double energy_ratio;             /* joules per run, B / A: NaN unless both runs metered the variant */
    char *note;
} pl_compare_row;

typedef struct pl_compare_result {
    pl_compare_row *rows;
    size_t n_rows;
    int counts[PL_CMP_COUNT];
} pl_compare_result;

/* Faster/slower only when the bootstrap interval of the ratio excludes 1 AND |change| > threshold. */
void pl_compare_runs(const pl_run *a, const pl_run *b, double threshold, uint64_t seed, pl_compare_result *out);
/* Whether some row has an energy ratio (both runs metered that variant): the tables add its column only then. */
int pl_compare_has_energy(const pl_compare_result *c);
void pl_compare_result_free(pl_compare_result *r);

#endif
