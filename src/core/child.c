/* The child process of one target: set up, verify and time every variant, and report each result to the
 * parent as it completes, so that a later crash or hang loses only what had not finished. */
#include "core/child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/childproc.h"
#include "core/devprobe.h"
#include "core/measure.h"
#include "core/results_json.h"
#include "core/telemetry.h"
#include "core/util.h"

#define PL_TELEMETRY_PERIOD_S 0.02

typedef struct child {
    int fd;
    const pl_target *t;
    const pl_run_settings *s;
    pl_ctx ctx;
    pl_device_info dev;
    int host;
    pl_sampler *sampler;
} child;

static void send_progress(child *c, const char *variant, const char *phase)
{
    json_t *m = json_pack("{s:s, s:s, s:s}", "t", "progress", "variant", variant, "phase", phase);
    pl_child_send(c->fd, m);
    json_decref(m);
}

/* A CUDA failure leaves the context unusable more often than not: tell the two apart. */
static pl_status failure_status(child *c)
{
    if (strncmp(c->ctx.error, "CUDA error", 10) == 0)
        return PL_STATUS_CUDA_ERROR;
    if (!c->host && cudaDeviceSynchronize() != cudaSuccess)
        return PL_STATUS_CUDA_ERROR;
    return PL_STATUS_ERROR;
}

static void send_target_failure(child *c, pl_status st, const char *reason)
{
    json_t *m = json_pack("{s:s, s:s, s:s}", "t", "target", "status", pl_status_name(st), "reason", reason);
    pl_child_send(c->fd, m);
    json_decref(m);
}

static void send_variant(child *c, pl_variant_result *r)
{
    json_t *m = pl_variant_result_to_json(r);
    json_object_set_new(m, "t", json_string("variant"));
    pl_child_send(c->fd, m);
    json_decref(m);
}

static int sync_and_check(child *c)
{
    if (c->host)
        return 0;
    pl_ctx *ctx = &c->ctx;
    PL_CUDA(ctx, cudaStreamSynchronize(ctx->stream));
    PL_CUDA(ctx, cudaGetLastError());
    return 0;
}

/* Poison, run once, compare. Returns -1 on an error (not on a wrong result). */
static int verify_variant(child *c, const pl_variant *v, void *state, pl_verification *ver)
{
    const pl_target *t = c->t;
    memset(ver, 0, sizeof *ver);
    if (t->poison)
        PL_TRY(t->poison(&c->ctx, state));
    PL_TRY(v->run(&c->ctx, state));
    PL_TRY(sync_and_check(c));
    PL_TRY(t->check(&c->ctx, state, ver));
    PL_TRY(sync_and_check(c));
    return 0;
}

/* Returns 0 to go on with the next variant, -1 to stop the target (its context may be broken). */
static int run_variant(child *c, pl_measure_env *env, const pl_variant *v, void *state)
{
    pl_variant_result r;
    memset(&r, 0, sizeof r);
    r.name = pl_strdup(v->name);
    r.technique = pl_strdup(v->technique);
    r.is_reference = (v->flags & PL_VARIANT_REFERENCE) != 0;
    r.reps_per_sample = 1;
    char why[256];
    int keep_going = 0;

    if (!pl_requirements_met(&v->req, c->host ? NULL : &c->dev, c->ctx.device_count, why, sizeof why)) {
        r.status = PL_STATUS_SKIPPED;
        r.reason = pl_strdup(why);
        goto report;
    }
    c->ctx.error[0] = '\0';
    if (!c->s->skip_verify) {
        send_progress(c, v->name, "verify");
        if (verify_variant(c, v, state, &r.verification) != 0) {
            r.status = failure_status(c);
            r.reason = pl_strdup(c->ctx.error);
            keep_going = r.status == PL_STATUS_CUDA_ERROR ? -1 : 0;
            goto report;
        }
        if (!r.verification.passed) {
            r.status = PL_STATUS_FAILED_VERIFICATION;
            r.reason = pl_strdup(r.verification.message);
            goto report;
        }
    }
    if (c->s->verify_only) {
        r.status = PL_STATUS_OK;
        goto report;
    }
    send_progress(c, v->name, "measure");
    if (c->sampler)
        pl_sampler_begin_window(c->sampler);
    int rc = pl_measure_variant(env, v, state, &r);
    if (c->sampler) {
        pl_sampler_end_window(c->sampler, &r.telemetry);
        r.has_telemetry = 1;
    }
    if (rc != 0) {
        r.status = failure_status(c);
        r.reason = pl_strdup(c->ctx.error);
        keep_going = r.status == PL_STATUS_CUDA_ERROR ? -1 : 0;
        goto report;
    }
    r.status = c->s->skip_verify ? PL_STATUS_UNVERIFIED : PL_STATUS_OK;
report:
    send_variant(c, &r);
    pl_variant_result_free(&r);
    return keep_going;
}

static int init_gpu(child *c)
{
    pl_ctx *ctx = &c->ctx;
    char err[256];
    PL_CUDA(ctx, cudaSetDevice(c->s->device));
    PL_CUDA(ctx, cudaGetDeviceCount(&ctx->device_count));
    if (pl_device_info_query(c->s->device, &c->dev, err, sizeof err) != 0)
        return pl_fail(ctx, "%s", err);
    ctx->device = &c->dev;
    PL_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    if (c->s->profile && strcmp(c->s->profile, "none") != 0) {
        char why[256];
        c->sampler = pl_sampler_start(c->dev.pci_bus_id, PL_TELEMETRY_PERIOD_S, why, sizeof why);
        if (!c->sampler)
            fprintf(stderr, "perflab: no telemetry for this target: %s\n", why);
    }
    return 0;
}

void pl_child_run_target(const pl_target *t, const pl_params *p, const pl_run_settings *s, int fd)
{
    child c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    c.t = t;
    c.s = s;
    c.host = !t->req.needs_gpu;
    c.ctx.seed = s->seed;
    void *state = NULL;
    pl_measure_env env;

    send_progress(&c, "", "setup");
    if ((!c.host && init_gpu(&c) != 0) || pl_measure_env_init(&env, &c.ctx, s, c.host) != 0) {
        send_target_failure(&c, failure_status(&c), c.ctx.error);
        return;
    }
    if (t->setup && (t->setup(&c.ctx, p, &state) != 0 || sync_and_check(&c) != 0)) {
        send_target_failure(&c, failure_status(&c), c.ctx.error[0] ? c.ctx.error : "setup failed");
        return;
    }
    for (size_t i = 0; t->variants[i].name; i++)
        if (run_variant(&c, &env, &t->variants[i], state) != 0)
            break; /* a CUDA error: the next variants would only fail the same way */
    if (t->teardown)
        t->teardown(&c.ctx, state);
    pl_measure_env_free(&env);
    pl_free_all(&c.ctx);
    pl_sampler_stop(c.sampler);
    if (!c.host)
        cudaStreamDestroy(c.ctx.stream);
    json_t *done = json_pack("{s:s}", "t", "done");
    pl_child_send(fd, done);
    json_decref(done);
}
