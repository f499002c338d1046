/* A target is one piece of work (group:name) with two or more variants that compute the same result:
 * `baseline` first, then optimized ones. The harness sets it up once, verifies every variant against the
 * target's reference, then times each. A target knows nothing of the CLI; the core knows no target. */
#ifndef PERFLAB_TARGET_H
#define PERFLAB_TARGET_H

#include "perflab/ctx.h"
#include "perflab/params.h"
#include "perflab/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

struct pl_gpu_record; /* perflab/results.h */

/* Features a target or variant may require beyond a compute capability. */
enum pl_feature {
    PL_FEAT_WGMMA = 1u << 0,    /* sm_90a warpgroup MMA */
    PL_FEAT_TMA = 1u << 1,      /* bulk tensor copies (sm_90+) */
    PL_FEAT_CLUSTERS = 1u << 2, /* thread-block clusters and DSMEM (sm_90+) */
    PL_FEAT_TCGEN05 = 1u << 3,  /* sm_100a tensor memory MMA */
    PL_FEAT_FP8 = 1u << 4,      /* FP8 tensor cores (sm_89+) */
};

typedef struct pl_requirements {
    int needs_gpu;     /* 0 for host-only targets (the self-tests) */
    int min_cc;        /* major*10+minor, e.g. 90; 0 = any */
    int max_cc;        /* for architecture-specific code (wgmma: 90); 0 = no limit */
    unsigned features; /* pl_feature bits */
    int min_gpus;      /* 0 or 1 = one GPU */
} pl_requirements;

typedef struct pl_counters {
    double flops;
    double bytes_read; /* the fewest bytes the work must read from device memory */
    double bytes_written;
    double elements;
} pl_counters;

enum pl_variant_flags {
    PL_VARIANT_NO_GRAPH = 1u << 0,  /* never capture into a CUDA graph (--graph leaves it as is) */
    PL_VARIANT_REFERENCE = 1u << 1, /* a ceiling to compare with (e.g. cudaMemcpy): others get "% of ref" */
    /* The host's cost of issuing the work is part of the lesson (launch overhead): time it as the host issues
     * it, without the latch that otherwise holds the stream until a whole sample is enqueued. */
    PL_VARIANT_HOST_BOUND = 1u << 2,
    /* Its time is mostly the host's work (the CPU issuing launches, the driver serving page faults, the CPU staging
     * pageable copies), so it moves with the host as much as with the GPU: expectations gate it only against a
     * figure stored on the same named host (docs/expectations.md), and report it ungated elsewhere. */
    PL_VARIANT_HOST_TIMED = 1u << 3,
};

enum pl_target_flags {
    PL_TARGET_QUICK = 1u << 0,    /* part of the default quick suite */
    PL_TARGET_SELFTEST = 1u << 1, /* harness self-test: not in "all", run only when named */
    /* Its variants run at the power limit, where the clock depends on how long and how hot the GPU has run: the
     * harness times them in interleaved rounds (PL_POWER_BOUND_ROUNDS unless --rounds says otherwise), so that
     * no variant gets a cooler GPU than another, and keeps samples down to PL_POWER_BOUND_THROTTLE of the maximum
     * SM clock unless --throttle-threshold says otherwise (the power cap lowers the clock of such a kernel by
     * design: discarding the samples of the variant that draws the most power would bias the comparison). */
    PL_TARGET_POWER_BOUND = 1u << 2,
};

#define PL_POWER_BOUND_ROUNDS 5
#define PL_POWER_BOUND_THROTTLE 0.5

typedef struct pl_variant {
    const char *name;      /* "baseline" for the first */
    const char *technique; /* one line: what this variant does differently */
    /* The timed work, once. Launches on ctx->stream and must not synchronize (unless NO_GRAPH). */
    int (*run)(pl_ctx *ctx, void *state);
    unsigned flags;
    pl_requirements req; /* requirements beyond the target's; zero for none */
} pl_variant;

typedef struct pl_target {
    const char *group;
    const char *name;
    const char *summary;
    pl_requirements req;
    const pl_param_def *params; /* terminated by an entry with name == NULL; may be NULL */
    const pl_variant *variants; /* terminated by an entry with name == NULL; baseline first */
    unsigned flags;
    /* Workload counters computed from the parameters alone (no GPU needed). */
    void (*counters)(const pl_params *p, pl_counters *out);
    /* Allocate, fill inputs with random data, compute or prepare the reference. When it fails, teardown is not
     * called: free what you made yourself before returning -1 (pl_device_alloc'd memory is freed anyway). */
    int (*setup)(pl_ctx *ctx, const pl_params *p, void **state);
    /* Poison the outputs before the checked run (pl_poison). */
    int (*poison)(pl_ctx *ctx, void *state);
    /* Compare the outputs of the run just made with the reference. Returns -1 only on an error (CUDA). */
    int (*check)(pl_ctx *ctx, void *state, pl_verification *out);
    /* Free what pl_device_alloc did not track (after a successful setup only). May be NULL. */
    void (*teardown)(pl_ctx *ctx, void *state);
    /* Optional: reject values the setup would refuse (combinations that each pass their own bounds, e.g. heads %
     * kv_heads; sizes the kernels cannot take; more device memory than the GPU has), before any work: -1 with one
     * line in err naming the problem and the fix (exit code 2). Runs in the parent, twice: once with gpu NULL
     * when the parameters are parsed, once with the GPU the target will run on (as probed: memory, compute
     * capability, SMs) before any target starts. Checks that need the GPU are skipped while it is NULL. */
    int (*check_params)(const pl_params *p, const struct pl_gpu_record *gpu, char *err, size_t errlen);
    /* Optional: judge the measured median of one variant (harness self-tests). Returns 0 to pass, else writes
     * why into msg. Runs in the parent, after the statistics. */
    int (*check_timing)(const pl_params *p, const pl_variant *v, double median_ms, char *msg, size_t msglen);
} pl_target;

/* For check_params: writes the one line (printf-style) into err and returns -1. */
int pl_params_refuse(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* For check_params: the GPU's memory in bytes; 0 when gpu is NULL (not probed yet) or it is unknown. */
double pl_gpu_memory_bytes(const struct pl_gpu_record *gpu);

/* For check_params: -1 with "needs 812.0 GiB of device memory; NVIDIA H200 has 139.8 GiB: <fix>" when `bytes`
 * exceed the GPU's memory, else 0 (also when gpu is NULL: not probed yet). */
int pl_check_device_memory(const struct pl_gpu_record *gpu, double bytes, const char *fix, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
