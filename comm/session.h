/* What both fabric verbs do around a job: find the GPUs (in a child process), pick the ranks, launch, show
 * progress, gather provenance and merge the results. */
#ifndef PERFLAB_COMM_SESSION_H
#define PERFLAB_COMM_SESSION_H

#include "comm/launch.h"
#include "comm/result.h"
#include "core/devprobe.h"
#include "perflab/results.h"

typedef struct pl_comm_session {
    const char *verb;
    int quiet;
    pl_comm_outcome outcome;
    pl_gpu_inventory inv;
    pl_provenance prov;
    pl_comm_result result;
    double started;
    size_t points_seen, n_points;
} pl_comm_session;

/* Run the job. Returns -1 when it ran (the root then holds s->result; other MPI processes hold nothing), or an
 * exit code to stop with at once: PL_EXIT_USAGE (a message was printed) or PL_EXIT_NO_GPU. */
int pl_comm_session_run(pl_comm_session *s, pl_comm_job *job, int argc, char **argv);
void pl_comm_session_free(pl_comm_session *s);

/* Whether this process should print: the root under MPI (known before MPI starts from the launcher's
 * environment: OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), always otherwise. */
int pl_comm_env_is_root(void);

#endif
