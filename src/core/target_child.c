/* The child process of one target: set up, verify and time every variant, and report each result to the
 * parent as it completes, so that a later crash or hang loses only what had not finished. */
#include "core/target_child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/devprobe.h"
#include "core/measure.h"
#include "core/ncu.h"
#include "core/piped_child.h"
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
    const struct pl_capabilities *caps;
    pl_ncu_replays *ncu; /* roofline with ncu: the variants to replay under it at the end */
    cudaStream_t given;  /* the caller's stream (a target run in the caller's process), NULL: one of its own */
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

void pl_child_send_target_failure(int fd, pl_status st, const char *reason)
{
    json_t *m = json_pack("{s:s, s:s, s:s}", "t", "target", "status", pl_status_name(st), "reason", reason);
    pl_child_send(fd, m);
    json_decref(m);
}


static void send_variant(child *c, pl_variant_result *r)
{
    pl_ncu_replays_note(c->ncu, r);
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

static void variant_result_init(pl_variant_result *r, const pl_variant *v)
{
    memset(r, 0, sizeof *r);
    r->name = pl_strdup(v->name);
    r->technique = pl_strdup(v->technique);
    r->is_reference = (v->flags & PL_VARIANT_REFERENCE) != 0;
    r->reps_per_sample = 1;
}

/* r failed with ctx->error: 0 to go on with the next variant, -1 to stop the target (its context may be broken). */
static int variant_failed(child *c, pl_variant_result *r)
{
    r->status = failure_status(c);
    r->reason = pl_strdup(c->ctx.error);
    return r->status == PL_STATUS_CUDA_ERROR ? -1 : 0;
}

/* Requirements and verification. 1: the variant is to be timed; 0: r is final (skipped, wrong, verify only);
 * -1: r is final and the target must stop. */
static int check_variant(child *c, const pl_variant *v, void *state, pl_variant_result *r)
{
    char why[256];
    c->ctx.variant = v->name;
    if (!pl_requirements_met(&v->req, c->host ? NULL : &c->dev, c->ctx.device_count, c->caps, why, sizeof why)) {
        r->status = PL_STATUS_SKIPPED;
        r->reason = pl_strdup(why);
        return 0;
    }
    c->ctx.error[0] = '\0';
    if (!c->s->skip_verify) {
        send_progress(c, v->name, "verify");
        if (verify_variant(c, v, state, &r->verification) != 0)
            return variant_failed(c, r);
        if (!r->verification.passed) {
            r->status = PL_STATUS_FAILED_VERIFICATION;
            r->reason = pl_strdup(r->verification.message);
            return 0;
        }
    }
    if (c->s->verify_only) {
        r->status = PL_STATUS_OK;
        return 0;
    }
    return 1;
}

/* Verify and time one variant, then report it. Returns 0 to go on, -1 to stop the target. */
static int run_variant(child *c, pl_measure_env *env, const pl_variant *v, void *state)
{
    pl_variant_result r;
    variant_result_init(&r, v);
    int go = check_variant(c, v, state, &r);
    if (go == 1) {
        go = 0;
        send_progress(c, v->name, "measure");
        if (c->sampler)
            pl_sampler_begin_window(c->sampler);
        int rc = pl_measure_variant(env, v, state, &r);
        if (c->sampler) {
            pl_sampler_end_window(c->sampler, &r.telemetry);
            r.has_telemetry = 1;
        }
        if (rc != 0)
            go = variant_failed(c, &r);
        else
            r.status = c->s->skip_verify ? PL_STATUS_UNVERIFIED : PL_STATUS_OK;
    }
    send_variant(c, &r);
    pl_variant_result_free(&r);
    return go;
}

/* Every variant verified first, then timed in `rounds` interleaved rounds after one round at load, each round
 * starting with another variant: power-capped work runs at a clock that depends on how long the GPU has been
 * loaded and how hot it is, and one variant after another would hand the first a cooler, faster GPU. Each
 * variant's samples are those of all its rounds; its telemetry covers its own windows only. Results are reported
 * when every round is done. */
static void run_interleaved(child *c, pl_measure_env *env, void *state, int rounds)
{
    const pl_target *t = c->t;
    size_t n = 0;
    while (t->variants[n].name)
        n++;
    pl_variant_result *r = calloc(n, sizeof *r);
    pl_timing **tm = calloc(n, sizeof *tm);
    if (!r || !tm) {
        free(r);
        free(tm);
        pl_child_send_target_failure(c->fd, PL_STATUS_ERROR, "out of host memory");
        return;
    }
    int stop = 0;
    size_t checked = 0; /* variants with a result in r (all but those after a stop) */
    for (; checked < n && !stop; checked++) {
        const pl_variant *v = &t->variants[checked];
        pl_variant_result *ri = &r[checked];
        variant_result_init(ri, v);
        int go = check_variant(c, v, state, ri);
        if (go == 1) {
            send_progress(c, v->name, "warm-up");
            tm[checked] = pl_timing_begin(env, v, state, ri);
            go = tm[checked] ? 1 : variant_failed(c, ri);
        }
        stop = go < 0;
    }
    for (int round = 0; round <= rounds && !stop; round++) {
        const pl_round_quota q = pl_round_quota_for(c->s, rounds, round);
        char phase[48];
        if (round)
            snprintf(phase, sizeof phase, "round %d/%d", round, rounds);
        else
            snprintf(phase, sizeof phase, "round at load");
        for (size_t j = 0; j < n && !stop; j++) {
            const size_t i = pl_round_slot(n, round, j);
            if (!tm[i])
                continue;
            send_progress(c, t->variants[i].name, phase);
            c->ctx.variant = t->variants[i].name;
            if (c->sampler && q.keep)
                pl_sampler_begin_window(c->sampler);
            int rc = pl_timing_round(env, tm[i], &r[i], &q);
            if (c->sampler && q.keep) {
                pl_telemetry w;
                pl_sampler_end_window(c->sampler, &w);
                pl_telemetry_merge(&r[i].telemetry, &w);
                r[i].has_telemetry = 1;
            }
            if (rc != 0) {
                stop = variant_failed(c, &r[i]) < 0;
                pl_timing_free(tm[i]);
                tm[i] = NULL;
            }
        }
    }
    for (size_t i = 0; i < checked; i++) {
        if (tm[i] && stop) {
            pl_timing_free(tm[i]);
            r[i].status = PL_STATUS_NOT_RUN;
            r[i].reason = pl_strdup("not finished: a CUDA error in another variant stopped the target");
        } else if (tm[i]) {
            pl_timing_end(tm[i], &r[i], pl_strfmt("%d interleaved rounds after one at load", rounds));
            r[i].status = c->s->skip_verify ? PL_STATUS_UNVERIFIED : PL_STATUS_OK;
        }
        send_variant(c, &r[i]);
        pl_variant_result_free(&r[i]);
    }
    free(r);
    free(tm);
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
    if (c->given)
        ctx->stream = c->given;
    else
        PL_CUDA(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    if (c->s->profile && strcmp(c->s->profile, "none") != 0) {
        char why[256];
        c->sampler = pl_sampler_start(c->dev.pci_bus_id, PL_TELEMETRY_PERIOD_S, why, sizeof why);
        if (!c->sampler)
            fprintf(stderr, "perflab: no telemetry for this target: %s\n", why);
    }
    return 0;
}

void pl_child_run_target(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                         const struct pl_capabilities *caps, const char *run_dir, int fd)
{
    pl_child_run_target_on(t, p, s, caps, run_dir, fd, NULL, NULL);
}

void pl_child_run_target_on(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                            const struct pl_capabilities *caps, const char *run_dir, int fd, cudaStream_t stream,
                            void *state)
{
    child c;
    memset(&c, 0, sizeof c);
    c.given = stream;
    c.fd = fd;
    c.caps = caps;
    c.t = t;
    c.s = s;
    c.host = !t->req.needs_gpu;
    c.ctx.seed = s->seed;
    pl_measure_env env;

    send_progress(&c, "", "setup");
    /* a power-bound target keeps the samples its own power draw slows (target.h); the settings are the run's */
    pl_run_settings own = *s;
    if ((t->flags & PL_TARGET_POWER_BOUND) && !s->throttle_given && own.throttle_threshold > PL_POWER_BOUND_THROTTLE)
        own.throttle_threshold = PL_POWER_BOUND_THROTTLE;
    if ((!c.host && init_gpu(&c) != 0) || pl_measure_env_init(&env, &c.ctx, &own, c.host) != 0) {
        pl_child_send_target_failure(c.fd, failure_status(&c), c.ctx.error);
        return;
    }
    pl_measure_env_meter_energy(&env);
    if (t->setup && (t->setup(&c.ctx, p, &state) != 0 || sync_and_check(&c) != 0)) {
        pl_child_send_target_failure(c.fd, failure_status(&c), c.ctx.error[0] ? c.ctx.error : "setup failed");
        return;
    }
    c.ncu = pl_ncu_replays_new(t, s, run_dir);
    int rounds = s->rounds > 0 ? s->rounds : (t->flags & PL_TARGET_POWER_BOUND) ? PL_POWER_BOUND_ROUNDS : 1;
    if (s->iterations > 0 && rounds > s->iterations)
        rounds = s->iterations; /* every round takes at least one of the exact --iterations samples */
    if (rounds > 1 && !s->verify_only)
        run_interleaved(&c, &env, state, rounds);
    else
        for (size_t i = 0; t->variants[i].name; i++)
            if (run_variant(&c, &env, &t->variants[i], state) != 0)
                break; /* a CUDA error: the next variants would only fail the same way */
    c.ctx.variant = NULL;
    if (t->teardown)
        t->teardown(&c.ctx, state);
    pl_measure_env_free(&env);
    pl_free_all(&c.ctx);
    pl_sampler_stop(c.sampler);
    if (!c.host && !c.given)
        cudaStreamDestroy(c.ctx.stream);
    pl_ncu_replays_run(c.ncu, p, fd); /* after teardown: the replays get the GPU's memory back */
    pl_ncu_replays_free(c.ncu);
    if (c.ctx.gate_set) {
        json_t *gate = json_pack("{s:s, s:b, s:s}", "t", "gate", "met", c.ctx.gate_met, "detail", c.ctx.gate);
        pl_child_send(fd, gate);
        json_decref(gate);
    }
    json_t *done = json_pack("{s:s}", "t", "done");
    pl_child_send(fd, done);
    json_decref(done);
}
