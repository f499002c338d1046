/* Nsight Compute (ncu) under perflab: one fixed metric set, each variant replayed once in a process of its own
 * (`perflab __ncu-replay`) with profiling switched on around that one run alone (cudaProfilerStart/Stop with
 * --profile-from-start off: setup, fills and references are never profiled), clocks left as they are
 * (--clock-control none), the report exported (.ncu-rep) and read back as CSV (--page raw --print-units base).
 *
 * Used by `perflab run --profile roofline` (each verified variant replayed in its target's process, the counters
 * stored in run.json beside the counted bytes) and by `perflab profile` (reports and findings). */
#ifndef PERFLAB_CORE_NCU_H
#define PERFLAB_CORE_NCU_H

#include <jansson.h>
#include <stddef.h>

#include "core/util.h"
#include "perflab/results.h"

/* The metric set, NULL-terminated: DRAM bytes, L2/L1/shared throughput, achieved occupancy, SM and tensor-pipe
 * throughput, shared-memory wavefronts and bank conflicts, kernel time. */
extern const char *const pl_ncu_metric_set[];

void pl_ncu_metrics_init(pl_ncu_metrics *m); /* every figure NaN, no kernels, no strings */

/* $PERFLAB_NCU when set (an empty value: none), else `ncu` on the PATH. malloc'd, NULL when absent. */
char *pl_ncu_find(void);
/* This process's own executable (the perflab that runs `__ncu-replay`). malloc'd, NULL when unknown. */
char *pl_self_exe(void);
/* An executable of that name on the PATH. malloc'd, NULL when none. */
char *pl_which(const char *name);
/* fork + exec argv with stdout (and stderr, when err_too) into out_path (NULL: inherited). own_group: a process
 * group of its own, killed whole after timeout_s (> 0). Returns the exit code, 124 on a timeout, 127 when it could
 * not start, 128+signal when killed. */
int pl_exec_wait(char *const *argv, const char *out_path, int err_too, int own_group, double timeout_s);

/* For run.json's "profiler" of a roofline run: "ncu <version> (<path>)", or one line saying why no counters are
 * measured. malloc'd. */
char *pl_ncu_describe(void);

/* Reads ncu's raw CSV page (--csv --page raw --print-units base: a header row of metric names, a units row, one
 * row per kernel) into *out: counts summed over the kernels, percentages weighted by each kernel's duration.
 * -1 with a message when no kernel row is found. */
int pl_ncu_parse_csv(const char *csv, pl_ncu_metrics *out, char *err, size_t errlen);

/* One replay of a variant under ncu. */
typedef struct pl_ncu_job {
    const char *ncu;    /* the ncu binary */
    const char *exe;    /* the perflab binary that runs `__ncu-replay` */
    const char *target; /* group:name */
    const char *variant;
    const char *params; /* the target's parameters as arguments: "--n 4096 --stride 32" */
    int device;
    unsigned long long seed;
    const char *out_base; /* files written: <out_base>.ncu-rep, <out_base>.log (ncu's messages), <out_base>.csv */
    double timeout_s;     /* > 0: run ncu in a process group of its own and kill it after that; 0: no limit of its
                             own (inside a target's process, whose group the runner kills on its timeout) */
} pl_ncu_job;

/* Runs the replay under ncu and reads the counters back. A metric this ncu or GPU does not know is dropped and
 * the replay tried again (its figure stays NaN). -1 with one line (ncu's own error where it gave one) on
 * failure; 1 where the variant launched no kernel (a copy engine did its work: no counters, not a failure); out->error
 * is then set too. */
int pl_ncu_profile(const pl_ncu_job *job, pl_ncu_metrics *out, char *err, size_t errlen);

/* A target's parameters as the arguments that reproduce them ("--name value ..."). malloc'd. */
char *pl_ncu_params_args(const pl_params *p);

/* The lines worth reading first, most important first: measured DRAM bytes against the counted ones, the
 * busiest unit and how close it runs to its peak (or that none is near one: latency-bound), low occupancy, bank
 * conflicts. `counted_bytes` may be NaN. */
void pl_ncu_findings(const pl_ncu_metrics *m, double counted_bytes, pl_buf *out);

/* Measured DRAM bytes (read + written) over the counted bytes; NaN when either is missing. */
double pl_ncu_dram_ratio(const pl_ncu_metrics *m, double counted_bytes);

/* ---- the hooks of a roofline run ---- */

/* The target's process: which variants to replay (those verified and timed), then the replays, each reported to
 * the parent as {"t":"ncu", "variant": name, "metrics": {...}}. NULL (and every call a no-op) unless the run's
 * profile is roofline, the target needs a GPU and ncu is found. */
typedef struct pl_ncu_replays pl_ncu_replays;
pl_ncu_replays *pl_ncu_replays_new(const pl_target *t, const pl_run_settings *s, const char *run_dir);
void pl_ncu_replays_note(pl_ncu_replays *r, const pl_variant_result *v);
void pl_ncu_replays_run(pl_ncu_replays *r, const pl_params *p, int fd);
void pl_ncu_replays_free(pl_ncu_replays *r);

/* The parent: a {"t":"ncu"} message's counters onto the variant it names. */
void pl_ncu_attach(json_t *msg, pl_target_result *r);

/* `perflab __ncu-replay --target T --variant V [--params ARGS] [--device N] [--seed S]`: set the target up, run the
 * variant once untimed (module loading, first-call work), then once more between cudaProfilerStart and
 * cudaProfilerStop, and tear down. The exit code says whether it ran. */
int pl_ncu_replay_main(int argc, char **argv);

#endif
