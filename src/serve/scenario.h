/* `perflab scenario fullstack`: the whole arc in one go, each phase a child process of perflab itself writing into
 * a subfolder of one scenario folder — the machine (`hw`, `peak --quick`), the kernels (the quick suite, the `e2e:`
 * targets when the build has them), the fabric (`moe-readiness`, with 2 GPUs or more) and serving (a short `serve`
 * sweep) — then one page (summary.md and report.json, schema perflab.scenario/1) with each phase's status and
 * headline figures. A phase that fails is a status; the next one runs. Without a GPU every GPU phase is skipped with
 * the reason. */
#ifndef PERFLAB_SERVE_SCENARIO_H
#define PERFLAB_SERVE_SCENARIO_H

#include <jansson.h>
#include <stddef.h>

#include "core/devprobe.h"

#define PL_SCENARIO_SCHEMA "perflab.scenario/1"

typedef struct pl_scenario_options {
    const char *artifacts_dir; /* the scenario folder goes under it */
    int device;
    double phase_timeout_s;
    const char *serve_model; /* the serve sweep's model */
    int quiet;               /* no progress lines on stderr */
} pl_scenario_options;

typedef enum pl_phase_status {
    PL_PHASE_OK,
    PL_PHASE_FAILED,  /* exit 1, a crash or a timeout */
    PL_PHASE_SKIPPED, /* not run: the reason says why (no e2e targets, one GPU, ...) */
    PL_PHASE_NO_GPU,  /* not run or exit 3: no usable GPU */
} pl_phase_status;

typedef struct pl_scenario_phase {
    const char *name;
    int needs_gpu;
    pl_phase_status status;
    char reason[256];
    char *command; /* "perflab ..." as run, or NULL when not run */
    char *folder;  /* its subfolder (relative to the scenario folder) */
    int exit_code; /* -1 when not run or not exited */
    double seconds;
    json_t *headline; /* its figures, an object (may be empty) */
    char headline_text[512];
} pl_scenario_phase;

enum { PL_SCENARIO_PHASES = 6 };

typedef struct pl_scenario {
    char *run_id, *dir;
    pl_gpu_inventory inv; /* inv.usable: a GPU was found */
    int device;           /* the GPU of the one-GPU phases (within inv when usable) */
    pl_scenario_phase phases[PL_SCENARIO_PHASES];
    int exit_code; /* 0 every phase that could run passed and one ran on a GPU; 1 a phase failed; 3 none ran on a GPU;
                      130 interrupted (Ctrl-C: the phase running is stopped, the rest not run, the page written) */
} pl_scenario;

/* Runs every phase and writes the page. -1 with err only when the scenario folder cannot be made or the page cannot be
 * written (a phase's failure is its status); -2 with err when --device is not one of this machine's GPUs. */
int pl_scenario_fullstack(const pl_scenario_options *o, pl_scenario *s, char *err, size_t errlen);
void pl_scenario_free(pl_scenario *s);
const char *pl_phase_status_name(pl_phase_status st);
/* The page (markdown), also printed by the verb. malloc'd. */
char *pl_scenario_summary_md(const pl_scenario *s);
json_t *pl_scenario_report_json(const pl_scenario *s);

#endif
