/* The options the fabric verbs (comm, moe-readiness) share: GPUs, NCCL buffer registration and environment, the
 * GPU process's time limit, the seed, JSON, quiet and help; one declaration and one translation into the job. A
 * verb sets its own defaults first. */
#ifndef PERFLAB_CLI_FABRIC_OPTIONS_H
#define PERFLAB_CLI_FABRIC_OPTIONS_H

#include <stddef.h>

#include "cli/options.h"
#include "comm/job.h"

#define PL_FABRIC_OPTION_COUNT 8

typedef struct pl_fabric_args {
    const char *reg, *nccl_env;
    double timeout_s, seed;
    int gpus, json, quiet, help;
    char help_timeout[96]; /* names the verb's default */
} pl_fabric_args;

/* No registration, all GPUs, seed 20261121, a GPU process stopped after timeout_s seconds. */
void pl_fabric_args_defaults(pl_fabric_args *f, double timeout_s);
/* The verb's table: own[0..n_own), then the fabric options (help last), then the terminator. `out` holds
 * n_own + PL_FABRIC_OPTION_COUNT + 1 entries. */
void pl_fabric_options_join(pl_option *out, const pl_option *own, size_t n_own, pl_fabric_args *f);
/* GPUs, seed, time limit, NCCL environment and registration into the job; -1 with err on a bad --register. */
int pl_fabric_args_apply(const pl_fabric_args *f, pl_comm_job *job, char *err, size_t errlen);

/* A fabric verb's command line: parse it; on --help print usage, on an error the one-line message (the root process
 * only, under MPI). Returns -1 to go on, else the exit code to return. */
int pl_fabric_verb_options(const char *verb, const pl_option *opts, int argc, char **argv, const int *help,
                           void (*usage)(const pl_option *opts), pl_strlist *positional);

/* Run a verb's job (comm/session.h) and, on the root, its finish (the report; returns the exit code); every process
 * returns the root's code. */
struct pl_comm_session;
typedef int (*pl_fabric_finish_fn)(void *user, pl_comm_job *job, struct pl_comm_session *s);
int pl_fabric_verb_run(const char *verb, int quiet, pl_comm_job *job, pl_fabric_finish_fn finish, void *user);

#endif
