#include "comm/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/exit.h"
#include "core/provenance.h"
#include "core/util.h"

#define PROBE_TIMEOUT_S 60.0

/* The world size the MPI launcher announces in the environment (0 when none does). */
static int env_world_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

int pl_comm_env_is_root(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    if (strcmp(pl_comm_launcher_get()->name, "mpi") != 0)
        return 1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v) == 0;
    }
    return 1;
}

/* Progress on stderr when it is a terminal: the points rank 0 finished. */
static void on_message(void *user, json_t *msg)
{
    pl_comm_session *s = user;
    const char *t = json_string_value(json_object_get(msg, "t"));
    if (s->quiet || !t || strcmp(t, "point") != 0 || json_integer_value(json_object_get(msg, "rank")) != 0)
        return;
    s->points_seen++;
    fprintf(stderr, "\rperflab %s: %zu/%zu points, %.0f s ", s->verb, s->points_seen, s->n_points,
            pl_now_s() - s->started);
    fflush(stderr);
}

int pl_comm_session_run(pl_comm_session *s, pl_comm_job *job, int argc, char **argv)
{
    const pl_comm_launcher *l = pl_comm_launcher_get();
    const int threads = strcmp(l->name, "threads") == 0;
    s->quiet = s->quiet || !isatty(2) || !pl_comm_env_is_root();
    if (pl_gpu_inventory_probe(&s->inv, PROBE_TIMEOUT_S) != 0 || !s->inv.usable) {
        if (pl_comm_env_is_root())
            fprintf(stderr, "perflab %s: no usable GPU: %s\n", s->verb, s->inv.error[0] ? s->inv.error : "unknown");
        return PL_EXIT_NO_GPU;
    }
    if (threads) {
        if (job->gpus > s->inv.device_count) {
            fprintf(stderr, "perflab %s: --gpus %d, but this machine shows %d GPU%s: pass --gpus %d or fewer\n",
                    s->verb, job->gpus, s->inv.device_count, s->inv.device_count == 1 ? "" : "s", s->inv.device_count);
            return PL_EXIT_USAGE;
        }
        if (job->gpus == 0)
            job->gpus = s->inv.device_count;
        if (job->kind == PL_JOB_COLL && job->root >= job->gpus) {
            fprintf(stderr, "perflab %s: --root %d is not a rank of %d: pass a root below %d\n", s->verb, job->root,
                    job->gpus, job->gpus);
            return PL_EXIT_USAGE;
        }
    }
    /* an all-to-all of one rank moves nothing between GPUs: refused, not measured */
    const int ranks = threads ? job->gpus : env_world_size();
    if ((job->kind == PL_JOB_MOE || job->kind == PL_JOB_EP) && ranks == 1) {
        if (pl_comm_env_is_root())
            fprintf(stderr,
                    "perflab %s: an all-to-all needs 2 or more ranks, and this one would have 1 (%s): run it on "
                    "a machine with several GPUs, or with more MPI processes\n",
                    s->verb, threads ? "one GPU" : "one MPI process");
        return threads && s->inv.device_count == 1 ? PL_EXIT_NO_GPU : PL_EXIT_USAGE;
    }
    char err[512];
    if (job->kind == PL_JOB_EP && pl_comm_job_check_ep(job, ranks, threads, err, sizeof err) != 0) {
        if (pl_comm_env_is_root())
            fprintf(stderr, "perflab %s: %s\n", s->verb, err);
        return PL_EXIT_USAGE;
    }
    pl_provenance_collect(&s->prov, argc, argv, &s->inv);
    s->outcome.on_message = on_message;
    s->outcome.user = s;
    s->started = pl_now_s();
    s->n_points = pl_comm_job_npoints(job);
    int rc = l->run(job, &s->outcome);
    if (!s->quiet)
        fprintf(stderr, "\r%60s\r", "");
    if (rc != 0 && s->outcome.is_root) {
        fprintf(stderr, "perflab %s: %s\n", s->verb, s->outcome.error);
    }
    if (s->outcome.is_root)
        pl_comm_result_build(&s->result, job, &s->outcome);
    return -1;
}

void pl_comm_session_free(pl_comm_session *s)
{
    json_decref(s->outcome.messages);
    pl_comm_result_free(&s->result);
    pl_provenance_free(&s->prov);
    pl_gpu_inventory_free(&s->inv);
}
