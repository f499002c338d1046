/* The MPI launcher: every MPI process (one per GPU) forks its GPU process first, then starts MPI, so that no
 * process both forks after MPI_Init and uses CUDA, and no MPI process initialises CUDA. Rank 0's GPU process
 * makes the NCCL unique id; MPI broadcasts it; each parent passes it to its child through a pipe; at the end the
 * parents gather every rank's messages on rank 0. The GPU is the local rank's: OMPI_COMM_WORLD_LOCAL_RANK,
 * MV2_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). */
#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/launch.h"
#include "comm/rank.h"
#include "core/piped_child.h"
#include "core/util.h"

#define ID_TIMEOUT_S 120.0

typedef struct hello {
    int rank, nranks, local_rank;
} hello;

/* What the parent tells its child: who it is, then (for ranks other than 0) the unique id. */
static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void child_fail(pl_comm_sink *sink, const char *reason)
{
    pl_comm_sink_send(sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", reason));
}

static void mpi_child(const pl_comm_job *job, int fd, int from_parent)
{
    pl_comm_sink sink;
    pl_comm_sink_init(&sink, fd);
    hello h;
    if (read_full(from_parent, &h, sizeof h) != 0)
        return; /* the parent went away before MPI started */
    char err[256];
    if (pl_comm_nccl_env(job->nccl_env, 1, err, sizeof err) != 0) {
        child_fail(&sink, err);
        return;
    }
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count == 0) {
        child_fail(&sink, ce != cudaSuccess ? cudaGetErrorString(ce) : "no GPU visible");
        return;
    }
    ncclUniqueId id;
    if (h.rank == 0) {
        ncclResult_t nr = ncclGetUniqueId(&id);
        if (nr != ncclSuccess) {
            child_fail(&sink, ncclGetErrorString(nr));
            return;
        }
        char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
        for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
            snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
        pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "nccl_id", "id", hex));
    } else if (read_full(from_parent, &id, sizeof id) != 0) {
        return; /* rank 0 failed: its error is reported there */
    }
    /* one GPU per process: with CUDA_VISIBLE_DEVICES narrowed to one (srun --gpus-per-task=1) that is device 0 */
    if (count > 1 && h.local_rank >= count) {
        pl_snprintf(err, sizeof err, "local rank %d, but only %d GPUs are visible: start at most %d processes per node",
                    h.local_rank, count, count);
        child_fail(&sink, err);
        return;
    }
    const int device = count == 1 ? 0 : h.local_rank;
    /* perflab's all-reduce and the EP peer variant: threads only */
    pl_comm_rank_main(job, h.rank, h.nranks, device, &id, &sink, NULL, NULL, NULL);
}

static int local_rank_of(int world_rank)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local;
}

/* Rank 0's parent: the id from its child's first messages (kept for the report), within the deadline. */
static int wait_for_id(pl_child *c, pl_comm_outcome *out, json_t *mine, unsigned char id[NCCL_UNIQUE_ID_BYTES])
{
    double deadline = pl_now_s() + ID_TIMEOUT_S;
    json_t *msg;
    while (pl_child_next(c, deadline, &msg) == 1) {
        const char *t = json_string_value(json_object_get(msg, "t"));
        const char *hex = json_string_value(json_object_get(msg, "id"));
        if (t && strcmp(t, "nccl_id") == 0 && hex && strlen(hex) == 2 * NCCL_UNIQUE_ID_BYTES) {
            for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
                unsigned v = 0;
                sscanf(hex + 2 * i, "%2x", &v);
                id[i] = (unsigned char)v;
            }
            json_decref(msg);
            return 0;
        }
        if (out->on_message)
            out->on_message(out->user, msg);
        json_object_set_new(msg, "process", json_integer(0));
        json_array_append_new(mine, msg);
    }
    return -1;
}

/* Every process's messages, as JSON text, gathered on rank 0 and appended to out->messages there. */
static void gather_messages(json_t *mine, int rank, int size, pl_comm_outcome *out)
{
    char *text = json_dumps(mine, JSON_COMPACT);
    int len = (int)strlen(text) + 1;
    int *lens = rank == 0 ? pl_xcalloc((size_t)size, sizeof *lens) : NULL;
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *displs = NULL;
    char *all = NULL;
    if (rank == 0) {
        displs = pl_xcalloc((size_t)size, sizeof *displs);
        size_t total = 0;
        for (int i = 0; i < size; i++) {
            displs[i] = (int)total;
            total += (size_t)lens[i];
        }
        all = pl_xmalloc(total);
    }
    MPI_Gatherv(text, len, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < size; i++) {
            json_error_t je;
            json_t *arr = json_loads(all + displs[i], 0, &je);
            size_t k;
            json_t *m;
            json_array_foreach(arr, k, m) json_array_append(out->messages, m);
            if (!arr)
                json_array_append_new(out->messages, json_pack("{s:s, s:i, s:s}", "t", "child_error", "process", i,
                                                               "reason", "its messages could not be read back"));
            json_decref(arr);
        }
    }
    free(text);
    free(lens);
    free(displs);
    free(all);
}

static int mpi_run(pl_comm_job *job, pl_comm_outcome *out)
{
    out->mode = "mpi";
    out->messages = json_array();
    int to_child[2];
    if (pipe(to_child) != 0) {
        pl_snprintf(out->error, sizeof out->error, "cannot create a pipe: %s", strerror(errno));
        return -1;
    }
    pl_child c;
    if (pl_child_spawn(&c, NULL) != 0) {
        pl_snprintf(out->error, sizeof out->error, "cannot start the GPU process (fork failed)");
        return -1;
    }
    if (c.pid == 0) {
        close(to_child[1]);
        mpi_child(job, c.fd, to_child[0]);
        _exit(0);
    }
    close(to_child[0]);
    int initialized = 0, rank = 0, size = 1;
    MPI_Initialized(&initialized);
    if (!initialized)
        MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    job->nranks = size;
    out->world_rank = rank;
    out->is_root = rank == 0;
    hello h = {.rank = rank, .nranks = size, .local_rank = local_rank_of(rank)};
    write_full(to_child[1], &h, sizeof h);
    json_t *mine = json_array();
    struct {
        int ok;
        unsigned char id[NCCL_UNIQUE_ID_BYTES];
    } bcast = {0};
    if (rank == 0)
        bcast.ok = wait_for_id(&c, out, mine, bcast.id) == 0;
    MPI_Bcast(&bcast, (int)sizeof bcast, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank != 0 && bcast.ok)
        write_full(to_child[1], bcast.id, sizeof bcast.id);
    close(to_child[1]); /* without the id, the child sees the pipe close and ends */
    pl_comm_collect_child(&c, pl_now_s() + job->timeout_s, rank, out, mine);
    gather_messages(mine, rank, size, out);
    json_decref(mine);
    if (rank == 0 && !bcast.ok)
        pl_snprintf(out->error, sizeof out->error, "rank 0 could not make the NCCL unique id (see its error)");
    return 0;
}

static int mpi_agree_exit(int code)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return code;
}

const pl_comm_launcher pl_comm_mpi_launcher = {
    .name = "mpi",
    .run = mpi_run,
    .agree_exit = mpi_agree_exit,
};
