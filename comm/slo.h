/* Service-level objectives of an all-to-all sweep: a ceiling on p99 latency and a floor on bandwidth, judged per
 * point and overall. A point that failed (error, wrong result) misses whatever the thresholds. Host code. */
#ifndef PERFLAB_COMM_SLO_H
#define PERFLAB_COMM_SLO_H

#include <stddef.h>

typedef struct pl_slo {
    double max_p99_ms;  /* <= 0: not set */
    double min_bw_gbps; /* <= 0: not set; judged on the bandwidth at p50 latency */
} pl_slo;

typedef enum pl_slo_verdict {
    PL_SLO_PASS,
    PL_SLO_MISS,
    PL_SLO_UNGATED, /* no threshold set: the point is measured, not judged */
    PL_SLO_COUNT
} pl_slo_verdict;

const char *pl_slo_verdict_name(pl_slo_verdict v);
int pl_slo_is_set(const pl_slo *s);

/* One point: its p99 latency (ms) and bandwidth (GB/s), and whether it ran and verified. `why` gets the missed
 * objectives ("p99 7.1 ms > 6 ms; 12.3 GB/s < 16 GB/s"), or the failure, or "". */
pl_slo_verdict pl_slo_judge(const pl_slo *s, int point_ok, double p99_ms, double bw_gbps, char *why, size_t whylen);

/* Overall: MISS if any point missed, else PASS if any was judged, else UNGATED. */
pl_slo_verdict pl_slo_overall(const pl_slo_verdict *v, size_t n);

#endif
