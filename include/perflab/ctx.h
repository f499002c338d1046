/* What a target sees while it runs: the stream to launch on, the device it runs on, the seed for its random
 * inputs, tracked allocations (freed by the harness after teardown) and the error it reports. */
#ifndef PERFLAB_CTX_H
#define PERFLAB_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_device_info {
    int ordinal;
    char name[256];
    char pci_bus_id[32];
    int cc_major, cc_minor;
    int sm_count;
    size_t global_mem_bytes;
    size_t l2_bytes;
    size_t smem_per_block_optin; /* largest dynamic shared memory a block may ask for */
    size_t smem_per_sm;
    int regs_per_sm;
    int max_threads_per_sm;
    int sm_clock_max_mhz; /* from NVML when present, else 0 */
    int mem_clock_max_mhz;
    int mem_bus_width_bits;
    int cluster_launch; /* device attribute: thread-block clusters supported */
} pl_device_info;

typedef struct pl_alloc_node pl_alloc_node;

typedef struct pl_ctx {
    cudaStream_t stream;          /* NULL for host-only targets */
    const pl_device_info *device; /* NULL for host-only targets */
    int device_count;             /* GPUs visible to this process */
    uint64_t seed;                /* --seed; derive per-buffer seeds from it */
    const char *variant;          /* the variant being run, checked or timed (its name); NULL in setup/teardown */
    char error[512];              /* the failure a target reports through pl_fail */
    pl_alloc_node *allocs;        /* harness-owned list of tracked allocations */
    /* A target-level verdict beyond verification (a service-level objective), set with pl_gate. */
    int gate_set, gate_met;
    char gate[512];
} pl_ctx;

/* Record a failure message and return -1, so that `return pl_fail(ctx, "...")` reads naturally. */
int pl_fail(pl_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pl_fail_cuda(pl_ctx *ctx, cudaError_t err, const char *what, const char *file, int line);
/* Judge the whole target against an objective it was given (e.g. an all-to-all sweep's p99 and bandwidth SLOs):
 * met or not, and one line saying what was found. A missed gate makes the target `slo_missed` (exit code 1). */
void pl_gate(pl_ctx *ctx, int met, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Device and pinned-host allocations freed by the harness after the target's teardown. NULL on failure, with
 * the reason recorded in ctx->error. */
void *pl_device_alloc(pl_ctx *ctx, size_t bytes);
void *pl_host_alloc(pl_ctx *ctx, size_t bytes); /* plain malloc, zeroed */
void pl_free_all(pl_ctx *ctx);

/* Check a CUDA call; on failure record it (with the call's text) and return -1 from the enclosing function. */
#define PL_CUDA(ctx, call)                                                                                             \
    do {                                                                                                               \
        cudaError_t pl_err_ = (call);                                                                                  \
        if (pl_err_ != cudaSuccess)                                                                                    \
            return pl_fail_cuda((ctx), pl_err_, #call, __FILE__, __LINE__);                                            \
    } while (0)

/* After every kernel launch: a bad configuration shows up only here. */
#define PL_CHECK_LAUNCH(ctx) PL_CUDA((ctx), cudaGetLastError())

/* Propagate a -1 from a helper that already recorded its reason. */
#define PL_TRY(expr)                                                                                                   \
    do {                                                                                                               \
        if ((expr) != 0)                                                                                               \
            return -1;                                                                                                 \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
