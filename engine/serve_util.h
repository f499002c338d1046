/* What the serving schedulers (serve_sched.c, serve_disagg.c) share besides their types: the error line, the
 * run's records and the host's monotonic clock. */
#ifndef PERFLAB_ENGINE_SERVE_UTIL_H
#define PERFLAB_ENGINE_SERVE_UTIL_H

#include <stddef.h>

#include "engine/serve_sched.h"

/* Formats the one-line error into err; returns -1. */
int pl_serve_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Each request's record in out->rec[0..n) (calloc'd by the caller): its id, lengths and arrival, and room for its
 * output tokens' times. 0, or -1 when the host is out of memory (pl_serve_run_free frees a partial run). */
int pl_serve_records_fill(pl_serve_run *out, const pl_serve_request *reqs, int n);
/* Seconds on the host's monotonic clock. */
double pl_serve_mono_s(void);

#endif
