/* perflab-mpi: the fabric verbs with one process per GPU, under mpirun or srun:
 *   mpirun -np 8 perflab-mpi comm allreduce -b 8k -e 1g
 *   srun -N 2 --ntasks-per-node=8 --gpus-per-task=1 perflab-mpi moe-readiness --max-p99-ms 6
 * A binary of its own so that perflab never depends on an MPI library. MPI starts inside the launcher, after
 * each process has forked its GPU process (see comm/mpi/launch_mpi.c). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "comm/launch.h"
#include "comm/session.h"
#include "perflab_build_info.h"

extern const pl_comm_launcher pl_comm_mpi_launcher;

int pl_cli_argc;
char **pl_cli_argv;

static int usage(FILE *out, int code)
{
    fprintf(out, "usage: mpirun -np N perflab-mpi <comm|moe-readiness> [options]   (perflab-mpi <verb> --help)\n\n"
                 "The fabric verbs of perflab with one MPI process per GPU (the local rank picks it). The options\n"
                 "and reports are those of 'perflab comm' and 'perflab moe-readiness'; rank 0 prints and writes.\n");
    return code;
}

int main(int argc, char **argv)
{
    pl_cli_argc = argc;
    pl_cli_argv = argv;
    pl_comm_launcher_set(&pl_comm_mpi_launcher);
    int code;
    if (argc < 2)
        code = usage(stderr, PL_EXIT_USAGE);
    else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        code = usage(stdout, PL_EXIT_OK);
    else if (strcmp(argv[1], "--version") == 0)
        code = (printf("perflab-mpi %s (%s)\n", PERFLAB_VERSION, PERFLAB_GIT_COMMIT), PL_EXIT_OK);
    else if (strcmp(argv[1], "comm") == 0)
        code = pl_cmd_comm(argc - 2, argv + 2);
    else if (strcmp(argv[1], "moe-readiness") == 0)
        code = pl_cmd_moe(argc - 2, argv + 2);
    else {
        if (pl_comm_env_is_root())
            fprintf(stderr, "perflab-mpi: unknown verb '%s': perflab-mpi runs comm and moe-readiness\n", argv[1]);
        code = PL_EXIT_USAGE;
    }
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Finalize();
    return code;
}
