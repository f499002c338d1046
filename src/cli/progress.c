#include "cli/progress.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

void pl_progress_init(pl_progress *p, int enabled)
{
    memset(p, 0, sizeof *p);
    p->enabled = enabled;
    p->started = pl_now_s();
}

/* What is left, from the mean time of the targets done so far. */
static void estimate(const pl_progress *p, size_t count, char *buf, size_t len)
{
    double elapsed = pl_now_s() - p->started;
    if (p->done == 0) {
        pl_snprintf(buf, len, "%.0f s elapsed", elapsed);
        return;
    }
    double left = elapsed / (double)p->done * (double)(count - p->done);
    pl_snprintf(buf, len, "%.0f s elapsed, ~%.0f s left", elapsed, left);
}

void pl_progress_on_event(void *user, size_t index, size_t count, const char *target, const char *variant,
                          const char *phase)
{
    pl_progress *p = user;
    if (strcmp(phase, "start") == 0)
        p->target_started = pl_now_s();
    if (!p->enabled)
        return;
    char eta[96];
    estimate(p, count, eta, sizeof eta);
    fprintf(stderr, "\r\033[K[%zu/%zu] %s%s%s · %s · %s", index + 1, count, target, *variant ? " · " : "", variant,
            phase, eta);
    fflush(stderr);
}

void pl_progress_on_target_done(void *user, size_t index, size_t count, const pl_target_result *r)
{
    pl_progress *p = user;
    p->done++;
    if (!p->enabled)
        return;
    fprintf(stderr, "\r\033[K[%zu/%zu] %s %s (%.1f s)\n", index + 1, count, r->name, pl_status_name(r->status),
            r->duration_s);
}

void pl_progress_finish(pl_progress *p)
{
    if (p->enabled)
        fflush(stderr);
}
