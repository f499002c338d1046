/* How a fabric job reaches its GPUs. Threaded (perflab): one child process, a thread per local GPU, one rank
 * each. MPI (perflab-mpi under mpirun/srun): every MPI process forks one child for its GPU (chosen from the
 * local rank); MPI carries the NCCL unique id out and the results back. The parent processes never initialise
 * CUDA; the children never call MPI. Either way the root process ends up with every rank's messages. */
#ifndef PERFLAB_COMM_LAUNCH_H
#define PERFLAB_COMM_LAUNCH_H

#include <jansson.h>

#include "comm/job.h"

typedef struct pl_comm_outcome {
    /* in */
    void (*on_message)(void *user, json_t *msg); /* each message of this process's child, as it arrives */
    void *user;
    /* out */
    int is_root;      /* this process reports (threaded: always; MPI: world rank 0) */
    int world_rank;   /* MPI: this process's rank; threaded: 0 */
    const char *mode; /* "threads" | "mpi" */
    json_t *messages; /* root: every message of every rank (each carries "rank"), and one {"t":"process_end"}
                         per GPU process: {"process", "description", "clean"} */
    char error[512];  /* the launch itself failed (nothing could run) */
} pl_comm_outcome;

typedef struct pl_comm_launcher {
    const char *name;
    /* Sets job->nranks, runs the job, fills out. Returns 0, or -1 with out->error when it could not start. */
    int (*run)(pl_comm_job *job, pl_comm_outcome *out);
    /* The exit code the root decided, for every process (MPI broadcasts it). */
    int (*agree_exit)(int code);
} pl_comm_launcher;

extern const pl_comm_launcher pl_comm_threads_launcher;

/* The launcher the verbs use: threads unless a main (perflab-mpi) installed another. */
const pl_comm_launcher *pl_comm_launcher_get(void);
void pl_comm_launcher_set(const pl_comm_launcher *l);

/* job->nccl_env ("NCCL_NAME=VALUE,..."): checked (apply 0), or set in the GPU process before NCCL reads its
 * environment (apply 1). Returns -1 with a message on a malformed list. */
int pl_comm_nccl_env(const char *list, int apply, char *err, size_t errlen);

/* Collect a child's messages until it closes its end or the deadline passes; append them to `into` (each
 * with "process": proc added) and one process_end message. Returns 0 when the child ended cleanly. */
struct pl_child;
int pl_comm_collect_child(struct pl_child *c, double deadline, int proc, pl_comm_outcome *out, json_t *into);

#endif
