/* The GPU side of `perflab probe` and `perflab peak` runs in child processes (the parent never initialises
 * CUDA). Work is a list of tasks; each reports its results as JSON messages the moment they are known. A task
 * that crashes, hangs or leaves the CUDA context broken costs only itself: the parent records why and starts a
 * fresh child for the tasks after it. */
#ifndef PERFLAB_HW_HWCHILD_H
#define PERFLAB_HW_HWCHILD_H

#include <jansson.h>

#include "core/measure.h"
#include "perflab/ctx.h"

/* One GPU as a task sees it: a context (stream, tracked allocations, error text) and its description. */
typedef struct pl_hw_gpu {
    int open;
    pl_ctx ctx;
    pl_device_info dev;
    pl_measure_env env; /* timing with the core's loop (warm-up, latch, adaptive stopping) */
    pl_run_settings settings;
} pl_hw_gpu;

typedef struct pl_hw_child {
    int fd;
    const char *task; /* the task running now */
    const void *user; /* the verb's options */
    int device_count;
    pl_hw_gpu *gpus; /* device_count of them, opened on first use */
} pl_hw_child;

typedef struct pl_hw_task {
    const char *name;
    /* Do the work, pl_hw_emit each result. Return 0, or -1 when the CUDA context may be broken: the child then
     * exits and the next task starts in a fresh process. */
    int (*run)(pl_hw_child *c);
} pl_hw_task;

/* Child side: send one result (the task's name is added as "task"); the message is consumed. */
void pl_hw_emit(pl_hw_child *c, json_t *msg);
/* Child side: the GPU `ordinal`, opened on first use (stream, timing environment with adaptive stopping:
 * at least 10 samples over 0.1 s, at most 1 s, 2% noise; a task may change gpu->settings) and made current.
 * NULL, with the reason in why, when it cannot be opened. */
pl_hw_gpu *pl_hw_gpu_get(pl_hw_child *c, int ordinal, char *why, size_t whylen);
/* Whether the context still works after a failure (a sticky error means the process must go). */
int pl_hw_context_ok(void);

/* Parent side: run the tasks in order. Every message a task sends reaches on_message (which owns it); when a
 * child dies or outlives task_timeout_s in one task, on_message gets {"task": name, "lost": "why"} for that
 * task and the rest continue in a new child. Returns 0, or -2 when interrupted (Ctrl-C). */
int pl_hw_run_tasks(const pl_hw_task *tasks, size_t n, const void *user, double task_timeout_s,
                    void (*on_message)(void *arg, json_t *msg), void *arg);

#endif
