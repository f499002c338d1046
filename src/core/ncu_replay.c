/* `perflab __ncu-replay`: one variant run once under a profiler, with profiling switched on around that run alone
 * (see ncu.h). The process ncu (or nsys) launches. */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/devprobe.h"
#include "core/exit.h"
#include "core/ncu.h"
#include "core/util.h"
#include "perflab/target_registry.h"

typedef struct replay_args {
    const char *target, *variant, *params;
    int device;
    unsigned long long seed;
} replay_args;

static int parse(int argc, char **argv, replay_args *a)
{
    memset(a, 0, sizeof *a);
    a->params = "";
    for (int i = 0; i < argc; i++) {
        const char *k = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "perflab __ncu-replay: %s needs a value\n", k);
            return -1;
        }
        const char *v = argv[++i];
        if (strcmp(k, "--target") == 0)
            a->target = v;
        else if (strcmp(k, "--variant") == 0)
            a->variant = v;
        else if (strcmp(k, "--params") == 0)
            a->params = v;
        else if (strcmp(k, "--device") == 0)
            a->device = atoi(v);
        else if (strcmp(k, "--seed") == 0)
            a->seed = strtoull(v, NULL, 10);
        else {
            fprintf(stderr, "perflab __ncu-replay: unknown option %s\n", k);
            return -1;
        }
    }
    if (!a->target || !a->variant) {
        fprintf(stderr, "perflab __ncu-replay: needs --target and --variant (it is run by perflab itself)\n");
        return -1;
    }
    return 0;
}

static int run_once(pl_ctx *ctx, const pl_variant *v, void *state)
{
    PL_TRY(v->run(ctx, state));
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    PL_CUDA(ctx, cudaGetLastError());
    return 0;
}

/* Setup, one untimed run, the profiled run, teardown. */
static int replay(const pl_target *t, const pl_variant *v, const pl_params *p, const replay_args *a, pl_ctx *ctx,
                  pl_device_info *dev)
{
    char err[256];
    PL_CUDA(ctx, cudaSetDevice(a->device));
    PL_CUDA(ctx, cudaGetDeviceCount(&ctx->device_count));
    if (pl_device_info_query(a->device, dev, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    ctx->device = dev;
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    void *state = NULL;
    if (t->setup && t->setup(ctx, p, &state) != 0)
        return -1;
    int rc = run_once(ctx, v, state);
    if (rc == 0) {
        PL_CUDA(ctx, cudaProfilerStart());
        rc = run_once(ctx, v, state);
        cudaProfilerStop();
    }
    if (t->teardown)
        t->teardown(ctx, state);
    return rc;
}

int pl_ncu_replay_main(int argc, char **argv)
{
    replay_args a;
    if (parse(argc, argv, &a) != 0)
        return PL_EXIT_USAGE;
    const pl_target *t = pl_registry_find(a.target);
    const pl_variant *v = NULL;
    for (size_t i = 0; t && t->variants[i].name && !v; i++)
        if (strcmp(t->variants[i].name, a.variant) == 0)
            v = &t->variants[i];
    if (!v) {
        fprintf(stderr, "perflab __ncu-replay: no variant '%s' of target '%s'\n", a.variant, a.target);
        return PL_EXIT_USAGE;
    }
    pl_params p;
    char err[512];
    if (pl_params_init(&p, t->params, a.target, a.params, 0, err, sizeof err) != 0) {
        fprintf(stderr, "perflab __ncu-replay: %s\n", err);
        return PL_EXIT_USAGE;
    }
    pl_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.seed = a.seed;
    pl_device_info dev;
    int rc = replay(t, v, &p, &a, &ctx, &dev);
    if (rc != 0)
        fprintf(stderr, "perflab __ncu-replay: %s / %s: %s\n", a.target, a.variant,
                ctx.error[0] ? ctx.error : "failed");
    pl_free_all(&ctx);
    if (ctx.stream)
        cudaStreamDestroy(ctx.stream);
    pl_params_free(&p);
    return rc == 0 ? PL_EXIT_OK : PL_EXIT_FAILED;
}
