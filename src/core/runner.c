#include "core/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ncu.h"
#include "core/piped_child.h"
#include "core/results_json.h"
#include "core/target_child.h"
#include "core/util.h"
#include "perflab/target_registry.h"

void pl_target_result_init(pl_target_result *r, const pl_target *t, const pl_params *p)
{
    char name[256];
    memset(r, 0, sizeof *r);
    r->name = pl_strdup(pl_target_full_name(t, name, sizeof name));
    r->summary = pl_strdup(t->summary);
    r->status = PL_STATUS_NOT_RUN;
    r->n_params = p->count;
    r->params = pl_xcalloc(p->count ? p->count : 1, sizeof *r->params);
    for (size_t i = 0; i < p->count; i++) {
        r->params[i].name = pl_strdup(p->values[i].def->name);
        r->params[i].value = pl_strdup(p->values[i].text);
    }
    if (t->counters)
        t->counters(p, &r->counters);
}

static pl_variant_result *add_variant(pl_target_result *r)
{
    return pl_push(&r->variants, &r->n_variants, NULL, sizeof *r->variants);
}

/* Put the results in the target's declared order, adding those the child never reported: the one in flight
 * when it died gets `inflight_status`, the rest `not run`. */
static void complete_variants(pl_target_result *r, const pl_target *t, const char *inflight, pl_status inflight_status,
                              const char *why)
{
    size_t n = pl_target_variant_count(t);
    pl_variant_result *ordered = pl_xcalloc(n, sizeof *ordered);
    for (size_t i = 0; i < n; i++) {
        const pl_variant *v = &t->variants[i];
        const pl_variant_result *got = pl_target_find_variant(r, v->name);
        if (got) {
            ordered[i] = *got;
            continue;
        }
        pl_variant_result *o = &ordered[i];
        o->name = pl_strdup(v->name);
        o->technique = pl_strdup(v->technique);
        o->is_reference = (v->flags & PL_VARIANT_REFERENCE) != 0;
        o->reps_per_sample = 1;
        if (inflight && strcmp(inflight, v->name) == 0) {
            o->status = inflight_status;
            o->reason = pl_strdup(why);
        } else {
            o->status = PL_STATUS_NOT_RUN;
            o->reason = why ? pl_strfmt("not run: an earlier variant %s", pl_status_name(inflight_status)) : NULL;
        }
    }
    /* the declaration decides, not the child's report: expectations judge a host-timed variant by its host */
    for (size_t i = 0; i < n; i++)
        ordered[i].host_timed = (t->variants[i].flags & PL_VARIANT_HOST_TIMED) != 0;
    /* the parsed results were moved into `ordered`; free only the arrays and anything unmatched */
    for (size_t j = 0; j < r->n_variants; j++) {
        int used = 0;
        for (size_t i = 0; i < n; i++)
            used |= ordered[i].name == r->variants[j].name;
        if (!used)
            pl_variant_result_free(&r->variants[j]);
    }
    free(r->variants);
    r->variants = ordered;
    r->n_variants = n;
}

static void skip_all(pl_target_result *r, const pl_target *t, const char *why)
{
    r->status = PL_STATUS_SKIPPED;
    r->reason = pl_strdup(why);
    complete_variants(r, t, NULL, PL_STATUS_SKIPPED, NULL);
    for (size_t i = 0; i < r->n_variants; i++) {
        r->variants[i].status = PL_STATUS_SKIPPED;
        free(r->variants[i].reason);
        r->variants[i].reason = pl_strdup(why);
    }
}

typedef struct collected {
    char *inflight; /* the variant the child last said it was working on */
    int done;
    int target_failed;
} collected;

static void handle_message(json_t *m, pl_target_result *r, collected *col, const pl_runner_input *in, size_t index)
{
    const char *type = json_string_value(json_object_get(m, "t"));
    if (!type)
        return;
    if (strcmp(type, "progress") == 0) {
        const char *variant = json_string_value(json_object_get(m, "variant"));
        const char *phase = json_string_value(json_object_get(m, "phase"));
        free(col->inflight);
        col->inflight = pl_strdup(variant && *variant ? variant : NULL);
        if (in && in->hooks.on_progress)
            in->hooks.on_progress(in->hooks.user, index, in->n_targets, r->name, variant ? variant : "",
                                  phase ? phase : "");
    } else if (strcmp(type, "variant") == 0) {
        char err[256];
        pl_variant_result v;
        if (pl_variant_result_from_json(m, &v, err, sizeof err) == 0)
            *add_variant(r) = v;
        else
            pl_variant_result_free(&v);
        free(col->inflight);
        col->inflight = NULL;
    } else if (strcmp(type, "target") == 0) {
        int st = pl_status_from_name(json_string_value(json_object_get(m, "status")));
        r->status = st < 0 ? PL_STATUS_ERROR : (pl_status)st;
        free(r->reason);
        const char *reason = json_string_value(json_object_get(m, "reason"));
        r->reason = pl_strdup(reason ? reason : "failed");
        col->target_failed = 1;
    } else if (strcmp(type, "gate") == 0) {
        const char *detail = json_string_value(json_object_get(m, "detail"));
        r->has_gate = 1;
        r->gate_met = json_is_true(json_object_get(m, "met"));
        free(r->gate_detail);
        r->gate_detail = pl_strdup(detail ? detail : "");
    } else if (strcmp(type, "ncu") == 0) {
        pl_ncu_attach(m, r);
    } else if (strcmp(type, "done") == 0) {
        col->done = 1;
    }
}

static char *log_name(const pl_target *t)
{
    return pl_strfmt("logs/%s_%s.log", t->group, t->name);
}

/* What the forked process executes with --exec-children (both NULL without): perflab itself and the job. 0, or -1
 * with the reason in r. */
static int prepare_exec(const pl_runner_input *in, size_t index, pl_target_result *r, char **exe, char **job)
{
    *exe = *job = NULL;
    if (!in->settings->exec_children)
        return 0;
    *job = pl_child_job_encode(in->targets[index], &in->params[index], in->settings, in->caps, in->run_dir);
    if (!*job) {
        r->status = PL_STATUS_ERROR;
        r->reason = pl_strdup("a parameter's value holds both kinds of quote: it cannot be passed to a process "
                              "started by --exec-children (run without it, or change the value)");
        return -1;
    }
    *exe = pl_self_exe(); /* NULL: pl_child_exec reports it as the target's failure */
    return 0;
}

/* Run one target in a child; returns -2 when the user interrupted. */
static int run_one(const pl_runner_input *in, size_t index, pl_target_result *r)
{
    const pl_target *t = in->targets[index];
    const pl_run_settings *s = in->settings;
    double t0 = pl_now_s();
    char *exe, *job;
    if (prepare_exec(in, index, r, &exe, &job) != 0) {
        complete_variants(r, t, NULL, PL_STATUS_ERROR, NULL);
        return 0;
    }
    r->log_file = log_name(t);
    char *log_path = in->run_dir ? pl_path_join(in->run_dir, r->log_file) : NULL;
    pl_child c;
    int spawned = pl_child_spawn(&c, log_path);
    free(log_path);
    if (spawned != 0) {
        r->status = PL_STATUS_ERROR;
        r->reason = pl_strdup("cannot start a child process (fork failed)");
        free(exe);
        free(job);
        complete_variants(r, t, NULL, PL_STATUS_ERROR, NULL);
        return 0;
    }
    if (c.pid == 0) {
        if (job)
            pl_child_exec(exe, job, c.fd);
        pl_child_run_target(t, &in->params[index], s, in->caps, in->run_dir, c.fd);
        fflush(stdout);
        fflush(stderr);
        _exit(0);
    }
    free(exe);
    free(job);

    collected col = {0};
    double deadline = t0 + (s->timeout_s > 0 ? s->timeout_s : 1e9);
    json_t *m;
    int rc;
    while ((rc = pl_child_next(&c, deadline, &m)) == 1) {
        handle_message(m, r, &col, in, index);
        json_decref(m);
    }
    pl_child_end end;
    pl_child_finish(&c, rc != 0, &end);

    char *why = NULL;
    pl_status lost = PL_STATUS_CRASHED;
    if (rc == -1) {
        lost = PL_STATUS_TIMEOUT;
        why = pl_strfmt("no result within the %.0f s timeout; the process was killed (raise --timeout-s if it "
                        "only needs longer)",
                        s->timeout_s);
    } else if (rc == -2) {
        lost = PL_STATUS_ERROR;
        why = pl_strdup("interrupted by the user");
    } else if (!col.done && !col.target_failed) {
        why = pl_strfmt("the target's process %s before it finished", end.description);
    }
    if (why) {
        r->status = lost;
        free(r->reason);
        r->reason = pl_strdup(why);
    }
    complete_variants(r, t, col.inflight ? col.inflight : NULL, lost, why);
    free(why);
    free(col.inflight);
    r->duration_s = pl_now_s() - t0;
    return rc == -2 ? -2 : 0;
}

static void judge_timing(pl_target_result *r, const pl_target *t, const pl_params *p)
{
    if (!t->check_timing)
        return;
    for (size_t i = 0; i < r->n_variants; i++) {
        pl_variant_result *v = &r->variants[i];
        if (!v->has_stats)
            continue;
        char msg[256] = "";
        if (t->check_timing(p, &t->variants[i], v->stats.median, msg, sizeof msg) != 0) {
            v->status = PL_STATUS_FAILED_VERIFICATION;
            pl_verify_set(&v->verification, 0, "%s", msg);
            free(v->reason);
            v->reason = pl_strdup(msg);
        }
    }
}

/* What the parent makes of a target's reported variants: statistics, the target's own timing checks, the status. */
static void conclude(pl_target_result *r, const pl_target *t, const pl_params *p, uint64_t seed)
{
    pl_target_result_derive(r, seed);
    judge_timing(r, t, p);
    pl_status rolled = pl_target_result_rollup(r);
    if (!pl_status_is_failure(r->status))
        r->status = rolled;
    if (r->has_gate && !r->gate_met && !pl_status_is_failure(r->status)) {
        r->status = PL_STATUS_SLO_MISSED;
        free(r->reason);
        r->reason = pl_strdup(r->gate_detail);
    }
}

/* The messages the target wrote to fd (a file), read back from its start. */
static void collect_file(int fd, pl_target_result *r, collected *col)
{
    pl_buf all = {0};
    char chunk[65536];
    ssize_t got;
    lseek(fd, 0, SEEK_SET);
    while ((got = read(fd, chunk, sizeof chunk)) > 0)
        pl_buf_appendn(&all, chunk, (size_t)got);
    for (char *line = all.data, *nl; line && (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        json_t *m = json_loads(line, 0, NULL);
        if (m)
            handle_message(m, r, col, NULL, 0);
        json_decref(m);
    }
    pl_buf_free(&all);
}

int pl_runner_run_here(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                       const struct pl_capabilities *caps, cudaStream_t stream, void *state,
                       const pl_counters *counters, pl_target_result *r)
{
    pl_target_result_init(r, t, p);
    if (counters)
        r->counters = *counters;
    FILE *f = tmpfile();
    if (!f) {
        r->status = PL_STATUS_ERROR;
        r->reason = pl_strdup("cannot create a temporary file for the target's messages (is TMPDIR writable?)");
        complete_variants(r, t, NULL, PL_STATUS_ERROR, NULL);
        return -1;
    }
    double t0 = pl_now_s();
    pl_child_run_target_on(t, p, s, caps, NULL, fileno(f), stream, state);
    collected col = {0};
    collect_file(fileno(f), r, &col);
    fclose(f);
    const char *why = !col.done && !col.target_failed ? "the target stopped before it finished" : NULL;
    if (why) {
        r->status = PL_STATUS_ERROR;
        r->reason = pl_strdup(why);
    }
    complete_variants(r, t, col.inflight, PL_STATUS_ERROR, why);
    free(col.inflight);
    r->duration_s = pl_now_s() - t0;
    conclude(r, t, p, s->seed);
    return 0;
}

int pl_runner_run(const pl_runner_input *in, pl_run *run)
{
    const pl_device_info *dev = NULL;
    if (in->inv && in->inv->usable && in->settings->device < in->inv->device_count)
        dev = &in->inv->devices[in->settings->device];
    int device_count = in->inv ? in->inv->device_count : 0;
    run->targets = pl_xcalloc(in->n_targets ? in->n_targets : 1, sizeof *run->targets);
    int interrupted = 0;

    for (size_t i = 0; i < in->n_targets; i++) {
        const pl_target *t = in->targets[i];
        pl_target_result *r = &run->targets[run->n_targets++];
        pl_target_result_init(r, t, &in->params[i]);
        char why[256];
        if (interrupted) {
            r->reason = pl_strdup("the run was interrupted");
            complete_variants(r, t, NULL, PL_STATUS_NOT_RUN, NULL);
        } else if (!pl_requirements_met(&t->req, t->req.needs_gpu ? dev : NULL, device_count, in->caps, why, sizeof why)) {
            skip_all(r, t, why);
        } else {
            if (in->hooks.on_progress)
                in->hooks.on_progress(in->hooks.user, i, in->n_targets, r->name, "", "start");
            interrupted = run_one(in, i, r) == -2;
            conclude(r, t, &in->params[i], in->settings->seed);
        }
        if (in->hooks.on_target_done)
            in->hooks.on_target_done(in->hooks.user, i, in->n_targets, r);
    }
    return interrupted ? -2 : 0;
}
