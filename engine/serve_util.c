/* The serving schedulers' shared helpers (serve_util.h). */
#define _POSIX_C_SOURCE 200809L
#include "engine/serve_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int pl_serve_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int pl_serve_records_fill(pl_serve_run *out, const pl_serve_request *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        pl_serve_record *rec = &out->rec[i];
        rec->id = i;
        rec->input_len = reqs[i].input_len;
        rec->output_len = reqs[i].output_len;
        rec->arrival_s = reqs[i].arrival_s;
        if (!(rec->token_s = malloc((size_t)reqs[i].output_len * sizeof *rec->token_s)))
            return -1;
    }
    return 0;
}

double pl_serve_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
