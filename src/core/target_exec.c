/* A target's process started by exec (`perflab run/verify --exec-children`): the runner forks as always (process
 * group, death signal, log file, pipe), and the forked process executes perflab afresh as
 * `perflab __run-target --fd N --job JSON`, which runs the target exactly as a plain fork would. compute-sanitizer
 * and nsys follow processes that exec, never plain forks: without this they check or trace the runner alone, which
 * runs no kernel.
 *
 * The job is one JSON object: {"target": "group:name", "params": the arguments the user gave ("--n 5"),
 * "settings": run.json's settings, "throttle_given": bool, "run_dir": string or null, "capabilities": what
 * `perflab probe` measured or null}. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/capabilities.h"
#include "core/exit.h"
#include "core/results_json.h"
#include "core/target_child.h"
#include "core/util.h"
#include "perflab/target_registry.h"

/* The parameters the user set, as arguments pl_params_init reads back (each value quoted); the rest come from the
 * defaults or the small values again, as in the runner. NULL when a value holds both kinds of quote. */
static char *given_args(const pl_params *p)
{
    pl_buf b = {0};
    pl_buf_append(&b, "");
    for (size_t i = 0; i < p->count; i++) {
        const pl_param_value *v = &p->values[i];
        if (!v->overridden)
            continue;
        char q = strchr(v->text, '\'') ? '"' : '\'';
        if (strchr(v->text, q)) {
            pl_buf_free(&b);
            return NULL;
        }
        pl_buf_printf(&b, "%s--%s %c%s%c", b.len ? " " : "", v->def->name, q, v->text, q);
    }
    return b.data;
}

char *pl_child_job_encode(const pl_target *t, const pl_params *p, const pl_run_settings *s,
                          const struct pl_capabilities *caps, const char *run_dir)
{
    char name[256];
    char *args = given_args(p);
    if (!args)
        return NULL;
    json_t *job = json_object();
    json_object_set_new(job, "target", json_string(pl_target_full_name(t, name, sizeof name)));
    json_object_set_new(job, "params", json_string(args));
    json_object_set_new(job, "settings", pl_run_settings_to_json(s));
    json_object_set_new(job, "throttle_given", json_boolean(s->throttle_given));
    json_object_set_new(job, "run_dir", run_dir ? json_string(run_dir) : json_null());
    json_object_set_new(job, "capabilities", caps && caps->n_gpus ? pl_capabilities_to_json(caps) : json_null());
    char *text = pl_json_dumps_line(job);
    json_decref(job);
    free(args);
    return text;
}

void pl_child_exec(const char *exe, const char *job, int fd)
{
    char fd_text[16];
    snprintf(fd_text, sizeof fd_text, "%d", fd);
    if (exe) {
        char *const argv[] = {(char *)exe, "__run-target", "--fd", fd_text, "--job", (char *)job, NULL};
        execv(exe, argv);
    }
    char *why = pl_strfmt("cannot start the target's process: exec of %s failed (%s)", exe ? exe : "perflab",
                          exe ? strerror(errno) : "this process's executable is unknown: /proc/self/exe unreadable");
    pl_child_send_target_failure(fd, PL_STATUS_ERROR, why);
    free(why);
    _exit(127);
}

/* ---- the executed side: `perflab __run-target` ---- */

typedef struct job {
    const pl_target *t;
    pl_params params;
    int params_ok;
    pl_run_settings settings;
    pl_capabilities caps;
    int has_caps;
    char *run_dir;
} job;

static int decode(json_t *j, job *out, char *err, size_t errlen)
{
    const char *name = json_string_value(json_object_get(j, "target"));
    const char *args = json_string_value(json_object_get(j, "params"));
    json_t *run_dir = json_object_get(j, "run_dir"), *caps = json_object_get(j, "capabilities");
    out->t = name ? pl_registry_find(name) : NULL;
    if (!out->t || !args) {
        pl_snprintf(err, errlen, "the job names no known target (%s)", name ? name : "no \"target\"");
        return -1;
    }
    char sub[512];
    if (pl_run_settings_from_json(json_object_get(j, "settings"), &out->settings, sub, sizeof sub) != 0) {
        pl_snprintf(err, errlen, "the job's settings: %s", sub);
        return -1;
    }
    out->settings.throttle_given = json_is_true(json_object_get(j, "throttle_given"));
    out->settings.exec_children = 1;
    if (json_is_string(run_dir))
        out->run_dir = pl_strdup(json_string_value(run_dir));
    if (json_is_object(caps)) {
        out->has_caps = 1;
        if (pl_capabilities_from_json(caps, &out->caps, sub, sizeof sub) != 0) {
            pl_snprintf(err, errlen, "the job's capabilities: %s", sub);
            return -1;
        }
    }
    if (pl_params_init(&out->params, out->t->params, name, args, out->settings.small, err, errlen) != 0)
        return -1;
    out->params_ok = 1;
    return 0;
}

static void job_free(job *j)
{
    if (j->params_ok)
        pl_params_free(&j->params);
    pl_run_settings_free(&j->settings);
    pl_capabilities_free(&j->caps);
    free(j->run_dir);
}

/* --fd N: the write end of the runner's pipe, open in this process. -1 when not. */
static int parse_fd(const char *text)
{
    char *end;
    long fd = text ? strtol(text, &end, 10) : -1;
    if (!text || *end || fd < 0 || fd > 65535 || fcntl((int)fd, F_GETFD) < 0)
        return -1;
    return (int)fd;
}

int pl_child_target_main(int argc, char **argv)
{
    const char *fd_text = NULL, *job_text = NULL;
    for (int i = 0; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--fd") == 0)
            fd_text = argv[i + 1];
        else if (strcmp(argv[i], "--job") == 0)
            job_text = argv[i + 1];
    }
    int fd = parse_fd(fd_text);
    if (fd < 0 || !job_text || argc != 4) {
        fprintf(stderr, "perflab __run-target: needs --fd N (an open pipe) and --job JSON; it is run by perflab "
                        "run/verify --exec-children itself\n");
        return PL_EXIT_USAGE;
    }
    job j;
    memset(&j, 0, sizeof j);
    char err[1024];
    json_error_t je;
    json_t *doc = json_loads(job_text, 0, &je);
    int rc = PL_EXIT_OK;
    if (!doc)
        pl_snprintf(err, sizeof err, "the job is not JSON: %s", je.text);
    if (!doc || decode(doc, &j, err, sizeof err) != 0) {
        char *why = pl_strfmt("perflab __run-target: %s", err);
        fprintf(stderr, "%s\n", why);
        pl_child_send_target_failure(fd, PL_STATUS_ERROR, why);
        free(why);
        rc = PL_EXIT_USAGE;
    } else {
        pl_child_run_target(j.t, &j.params, &j.settings, j.has_caps ? &j.caps : NULL, j.run_dir, fd);
    }
    json_decref(doc);
    job_free(&j);
    close(fd);
    return rc;
}
