/* `perflab peak`: measured ceilings of one GPU (and the links between GPUs). The GPU work runs as tasks in
 * child processes (hwchild.h); each task sends "figures", JSON objects with the measured value, how it was
 * measured and which datasheet figure it is judged against. The parent (peak_report.c) adds the datasheet
 * figure and the % of it, prints the table and writes peak.json and the ceilings file. */
#ifndef PERFLAB_HW_PEAK_H
#define PERFLAB_HW_PEAK_H

#include <jansson.h>
#include <stddef.h>

#include "hw/hwchild.h"
#include "perflab/stats.h"

/* The groups `--only` selects from, one bit each. */
enum {
    PL_PEAK_MEMORY = 1u << 0,  /* device memory: read, write, copy kernels, cudaMemcpy D2D, load latency */
    PL_PEAK_CACHE = 1u << 1,   /* L2 and shared-memory bandwidth */
    PL_PEAK_COMPUTE = 1u << 2, /* FP32 and FP64 FMA on CUDA cores */
    PL_PEAK_TENSOR = 1u << 3,  /* mma.sync and wgmma microkernels, cuBLASLt BF16/FP16/TF32/FP8, cuBLAS BF16 */
    PL_PEAK_HOST = 1u << 4,    /* host <-> device copies, pinned and pageable, each way and both */
    PL_PEAK_LAUNCH = 1u << 5,  /* empty-kernel launch latency, plain and in a CUDA graph */
    PL_PEAK_P2P = 1u << 6,     /* GPU <-> GPU bandwidth matrix and latency (2+ GPUs) */
    PL_PEAK_ALL = (1u << 7) - 1,
};

/* "memory,tensor" -> bits; -1 with the unknown name (and a suggestion) in err. */
int pl_peak_parse_groups(const char *list, unsigned *groups, char *err, size_t errlen);
const char *pl_peak_group_names(void); /* "memory, cache, ..." for help texts */

typedef struct pl_peak_options {
    int device;
    int quick;        /* fewer samples, smaller buffers, fewer algorithms tried */
    unsigned groups;  /* PL_PEAK_* */
    int gemm_n;       /* M = N = K of the library GEMMs (default 8192) */
    size_t hbm_bytes; /* per buffer of the device-memory kernels */
    size_t host_bytes;
    size_t p2p_bytes;
} pl_peak_options;

void pl_peak_options_default(pl_peak_options *o, int quick);

/* The tasks (all groups, in order); a task skips itself when its group is not selected. */
const pl_hw_task *pl_peak_tasks(size_t *count);

/* ---- for the tasks (child side) ---- */

/* A new figure: id, group, label, unit ("GB/s", "TFLOP/s", "us"), how bytes are counted ("read", "written",
 * "read+write", "each direction", "both directions", or NULL), the method in a sentence, and the datasheet
 * figure it is judged against (a key of peak_report.c's table, or NULL). */
json_t *pl_peak_figure(const char *id, const char *group, const char *label, const char *unit, const char *counted,
                       const char *method, const char *datasheet);
/* The measured value, with the timing statistics it came from (st may be NULL for host-timed figures). */
void pl_peak_set_value(json_t *f, double value, const pl_stats *st, double sm_clock_mhz);
/* Not measured: status "skipped" (the GPU or machine lacks it) or "failed" (an error, a wrong result). */
void pl_peak_set_status(json_t *f, const char *status, const char *reason);
/* A derived reference (no datasheet figure exists): the value and where it comes from. */
void pl_peak_set_reference(json_t *f, double value, const char *source);

/* Time run(ctx, state) with the core's loop on GPU g; statistics of the time per run in *st. -1 on an error
 * (g->ctx.error says which). */
int pl_peak_measure(pl_hw_gpu *g, int (*run)(pl_ctx *, void *), void *state, unsigned variant_flags, pl_stats *st);
/* The same, appending the samples (ms per run) to a pool, for figures measured over interleaved rounds. */
typedef struct pl_sample_pool {
    double *x;
    size_t n, cap;
} pl_sample_pool;
int pl_peak_measure_into(pl_hw_gpu *g, int (*run)(pl_ctx *, void *), void *state, unsigned variant_flags,
                         pl_sample_pool *pool);
/* Short settings for comparing configurations, then back to the full ones. */
void pl_peak_settings(pl_hw_gpu *g, const pl_peak_options *o, int tuning);
/* The SM clock now (NVML), NAN without NVML. */
double pl_peak_sm_clock(const pl_hw_gpu *g);
/* GPU `ordinal`, opened; when it cannot be, a failed figure says why and NULL is returned. */
pl_hw_gpu *pl_peak_gpu(pl_hw_child *c, int ordinal);

/* A task's frame: skip unless `group` is selected, open the GPU with the full settings, run figures(), free
 * what it allocated; on an error a failed figure named after the task says why. */
int pl_peak_run_group(pl_hw_child *c, unsigned group, const char *label, int (*figures)(pl_hw_child *c, pl_hw_gpu *g));
/* ns per dependent load over n entries of `next` (memory of any GPU the current one can reach); NAN with why
 * when the chase ended in the wrong place. */
int pl_peak_chase_ns(pl_hw_gpu *g, unsigned *next, size_t n, int hops, double *ns, char *why, size_t whylen);

/* The tasks. */
int pl_peak_task_memory(pl_hw_child *c);
int pl_peak_task_cache(pl_hw_child *c);
int pl_peak_task_compute(pl_hw_child *c);
int pl_peak_task_tensor_micro(pl_hw_child *c);
int pl_peak_task_tensor_blas(pl_hw_child *c);
int pl_peak_task_host(pl_hw_child *c);
int pl_peak_task_launch(pl_hw_child *c);
int pl_peak_task_p2p(pl_hw_child *c);

#endif
