/* The runner: each target in a child process of its own, with a timeout; results streamed back over a pipe.
 * A crash, a hang or a CUDA error becomes that target's status, and the suite goes on. The parent process
 * never initialises CUDA. */
#ifndef PERFLAB_CORE_RUNNER_H
#define PERFLAB_CORE_RUNNER_H

#include "core/capabilities.h"
#include "core/devprobe.h"
#include "perflab/results.h"
#include "perflab/target.h"

typedef struct pl_runner_hooks {
    /* A target's child reports a phase ("setup", "verify", "measure") of a variant. */
    void (*on_progress)(void *user, size_t index, size_t count, const char *target, const char *variant,
                        const char *phase);
    void (*on_target_done)(void *user, size_t index, size_t count, const pl_target_result *r);
    void *user;
} pl_runner_hooks;

typedef struct pl_runner_input {
    const pl_target *const *targets;
    size_t n_targets;
    const pl_params *params; /* one per target, parsed and validated */
    const pl_run_settings *settings;
    const pl_gpu_inventory *inv; /* may be NULL for host-only selections */
    const struct pl_capabilities *caps; /* what `perflab probe` measured, for feature requirements; may be NULL */
    const char *run_dir;         /* logs go to run_dir/logs/ */
    pl_runner_hooks hooks;
} pl_runner_input;

/* Runs every target and appends its result to run->targets. Returns 0, or -2 when interrupted (Ctrl-C): the
 * targets not reached are recorded as not run. */
int pl_runner_run(const pl_runner_input *in, pl_run *run);

/* One target run in this process, on the caller's stream (of GPU s->device), without a child: for targets whose work
 * lives in this process (a Python process's callables, src/py). The same setup, verification, timing, interleaving
 * and statistics as pl_runner_run; a crash is the caller's. state: what the variants get when t has no setup;
 * counters: the work's counters when t has no counters function (NULL: none). Fills *r (free it with
 * pl_target_result_free); returns 0, or -1 when the messages could not be kept (r says why). */
int pl_runner_run_here(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                       const struct pl_capabilities *caps, cudaStream_t stream, void *state,
                       const pl_counters *counters, pl_target_result *r);

/* A target's result before it runs: name, summary, parameters and counters. */
void pl_target_result_init(pl_target_result *r, const pl_target *t, const pl_params *p);

#endif
