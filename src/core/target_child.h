/* The target's side of the isolation: runs in the child process that the runner forks (and, with --exec-children,
 * that process executes perflab afresh first). */
#ifndef PERFLAB_CORE_TARGET_CHILD_H
#define PERFLAB_CORE_TARGET_CHILD_H

#include "perflab/results.h"
#include "perflab/target.h"

/* Set up, verify and time every variant of t, sending to fd: {"t":"progress"}, one {"t":"variant", ...} per
 * variant (a pl_variant_result), {"t":"target","status","reason"} when the target as a whole fails, and
 * {"t":"done"} at the end. Returns; the caller _exits. */
struct pl_capabilities;
/* caps: what `perflab probe` measured (may be NULL), for the variants' feature requirements. run_dir: the run's
 * folder (NULL: none), where a roofline run's ncu replays leave their reports. */
void pl_child_run_target(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                         const struct pl_capabilities *caps, const char *run_dir, int fd);
/* The same on the caller's stream (it must belong to GPU s->device), in whatever process calls it: a target built
 * from a Python process's callables runs in that process (runner.h, pl_runner_run_here). stream NULL: one of its
 * own. state: what the variants get when t has no setup (a setup's state replaces it). */
void pl_child_run_target_on(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                            const struct pl_capabilities *caps, const char *run_dir, int fd, cudaStream_t stream,
                            void *state);
/* {"t":"target","status","reason"}: the target as a whole failed (setup, or its process could not start). */
void pl_child_send_target_failure(int fd, pl_status st, const char *reason);

/* ---- the same target's process started by exec (target_exec.c): `--exec-children` ---- */

/* The runner's side, before the fork: everything pl_child_run_target takes, as one line of JSON (malloc'd). NULL
 * when a parameter's value cannot be passed on (it holds both kinds of quote). */
char *pl_child_job_encode(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                          const struct pl_capabilities *caps, const char *run_dir);
/* In the forked process: execute `exe __run-target --fd fd --job job`. Returns only on failure, after reporting it
 * as the target's failure on fd: it then _exits 127. */
void pl_child_exec(const char *exe, const char *job, int fd) __attribute__((noreturn));
/* `perflab __run-target --fd N --job JSON`: decode the job and run the target, reporting on fd. */
int pl_child_target_main(int argc, char **argv);

#endif
