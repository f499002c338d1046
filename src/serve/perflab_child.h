/* Another perflab command run as a child process of this one (the same executable, /proc/self/exe), its stdout and
 * stderr appended to a log file, under a timeout: how `perflab scenario` runs its phases and how `perflab serve`
 * measures the ceilings it needs with `perflab peak`. A crash, a hang or a failure is the child's exit status. */
#ifndef PERFLAB_SERVE_PERFLAB_CHILD_H
#define PERFLAB_SERVE_PERFLAB_CHILD_H

#include "core/piped_child.h"

/* Runs `perflab args[0] args[1] ...` (args NULL-terminated), with env ("NAME=value", or NULL) added to the child's
 * environment. end says how it ended (end->exited and
 * end->exit_code, or timed out, interrupted, killed by a signal). 0, or -1 when the process could not start (the
 * reason in end->description). */
int pl_perflab_child_run(const char *const *args, const char *env, const char *log_path, double timeout_s,
                         pl_child_end *end);

#endif
