/* Progress of a long run on stderr, when it is a terminal: target i of n, the variant and phase, the time
 * spent and an estimate of what is left. Tables stay on stdout, so piped output is unaffected. */
#ifndef PERFLAB_CLI_PROGRESS_H
#define PERFLAB_CLI_PROGRESS_H

#include <stddef.h>
#include "perflab/results.h"

typedef struct pl_progress {
    int enabled;
    double started;
    double target_started;
    size_t done;
} pl_progress;

void pl_progress_init(pl_progress *p, int enabled);
void pl_progress_on_event(void *user, size_t index, size_t count, const char *target, const char *variant,
                          const char *phase);
void pl_progress_on_target_done(void *user, size_t index, size_t count, const pl_target_result *r);
void pl_progress_finish(pl_progress *p);

#endif
