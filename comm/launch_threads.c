/* The threaded launcher: one child process, a thread per GPU, every thread a rank of one communicator. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allreduce/allreduce.h"
#include "ep/ep.h"
#include "comm/coll.h"
#include "comm/launch.h"
#include "comm/rank.h"
#include "core/piped_child.h"
#include "core/util.h"

static const pl_comm_launcher *active = &pl_comm_threads_launcher;

const pl_comm_launcher *pl_comm_launcher_get(void)
{
    return active;
}

void pl_comm_launcher_set(const pl_comm_launcher *l)
{
    active = l;
}

int pl_comm_nccl_env(const char *list, int apply, char *err, size_t errlen)
{
    if (!list || !*list)
        return 0;
    char *copy = pl_strdup(list), *save = NULL;
    int rc = 0;
    for (char *kv = strtok_r(copy, ",", &save); kv && rc == 0; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv || strncmp(kv, "NCCL_", 5) != 0) {
            pl_snprintf(err, errlen, "--nccl-env: '%s' is not NCCL_NAME=VALUE (e.g. NCCL_MIN_NCHANNELS=16)",
                        PL_ESC(kv));
            rc = -1;
            break;
        }
        *eq = '\0';
        if (apply)
            setenv(kv, eq + 1, 1);
    }
    free(copy);
    return rc;
}

int pl_comm_collect_child(pl_child *c, double deadline, int proc, pl_comm_outcome *out, json_t *into)
{
    json_t *msg = NULL;
    int r;
    while ((r = pl_child_next(c, deadline, &msg)) == 1) {
        if (out->on_message)
            out->on_message(out->user, msg);
        json_object_set_new(msg, "process", json_integer(proc));
        json_array_append_new(into, msg);
    }
    pl_child_end end;
    pl_child_finish(c, r != 0, &end);
    if (r == -1)
        pl_snprintf(end.description, sizeof end.description, "did not finish within the timeout and was killed");
    else if (r == -2)
        pl_snprintf(end.description, sizeof end.description, "was interrupted");
    const int clean = r == 0 && end.exited && end.exit_code == 0;
    json_array_append_new(into, json_pack("{s:s, s:i, s:s, s:b}", "t", "process_end", "process", proc, "description",
                                          end.description, "clean", clean));
    return clean ? 0 : -1;
}

typedef struct rank_thread {
    pthread_t tid;
    const pl_comm_job *job;
    int rank;
    ncclUniqueId id;
    pl_comm_sink *sink;
    volatile int *abort_flag;
    pl_ar_rank *ar; /* perflab's all-reduce, or NULL */
    pl_ep_rank *ep; /* the EP peer buffers, or NULL */
} rank_thread;

static void *rank_thread_main(void *arg)
{
    rank_thread *t = arg;
    pl_comm_rank_main(t->job, t->rank, t->job->nranks, t->rank, &t->id, t->sink, t->abort_flag, t->ar, t->ep);
    return NULL;
}

/* perflab's all-reduce on GPUs 0..nranks-1 when the job times it (its buffers sized for the largest point): 0, or -1
 * with the reason in err (no peer access, no memory). */
static int ar_setup(const pl_comm_job *job, pl_ar_rank *ar, int *on, char *err, size_t errlen)
{
    *on = 0;
    for (int c = 0; c < job->n_colls; c++)
        *on |= pl_coll_is_perflab(job->colls[c]);
    if (!*on)
        return 0;
    int devices[PL_AR_MAX_RANKS];
    for (int r = 0; r < job->nranks && r < PL_AR_MAX_RANKS; r++)
        devices[r] = r;
    size_t most = 2;
    for (size_t i = 0; i < job->n_sizes; i++)
        most = job->sizes[i] > most ? job->sizes[i] : most;
    return pl_ar_setup(ar, job->nranks, devices, most, err, errlen);
}

/* The EP peer buffers on GPUs 0..nranks-1 when an EP job times the peer variant (sized for its largest plan). */
static int ep_setup(const pl_comm_job *job, pl_ep_rank *ep, int *on, char *err, size_t errlen)
{
    *on = 0;
    for (int i = 0; job->kind == PL_JOB_EP && i < job->n_ep_impls; i++)
        *on |= job->ep_impls[i] == PL_EP_PEER;
    if (!*on)
        return 0;
    pl_ep_capacity c;
    if (pl_ep_job_capacity(job, job->nranks, &c, err, errlen) != 0)
        return -1;
    int devices[PL_EP_KMAX_RANKS];
    for (int r = 0; r < job->nranks && r < PL_EP_KMAX_RANKS; r++)
        devices[r] = r;
    const size_t row = (size_t)job->ep_hidden * 2;
    return pl_ep_setup(ep, job->nranks, devices, (size_t)c.stage_rows * row, (size_t)c.recv_rows * row, err, errlen);
}

/* The GPU process. */
static void threads_child(const pl_comm_job *job, int fd)
{
    pl_comm_sink sink;
    pl_comm_sink_init(&sink, fd);
    char err[256];
    ncclUniqueId id;
    ncclResult_t nr;
    if (pl_comm_nccl_env(job->nccl_env, 1, err, sizeof err) != 0) {
        pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", err));
        return;
    }
    if ((nr = ncclGetUniqueId(&id)) != ncclSuccess) {
        pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", ncclGetErrorString(nr)));
        return;
    }
    pl_ar_rank ar[PL_AR_MAX_RANKS];
    int ar_on = 0;
    if (ar_setup(job, ar, &ar_on, err, sizeof err) != 0) {
        pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", err));
        return;
    }
    pl_ep_rank ep[PL_EP_KMAX_RANKS];
    int ep_on = 0;
    if (ep_setup(job, ep, &ep_on, err, sizeof err) != 0) {
        pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", err));
        if (ar_on)
            pl_ar_teardown(ar, job->nranks);
        return;
    }
    volatile int abort_flag = 0;
    rank_thread *t = pl_xcalloc((size_t)job->nranks, sizeof *t);
    int started = 0;
    for (; started < job->nranks; started++) {
        t[started] = (rank_thread){.job = job,
                                   .rank = started,
                                   .id = id,
                                   .sink = &sink,
                                   .abort_flag = &abort_flag,
                                   .ar = ar_on ? &ar[started] : NULL,
                                   .ep = ep_on ? &ep[started] : NULL};
        if (pthread_create(&t[started].tid, NULL, rank_thread_main, &t[started]) != 0) {
            abort_flag = 1;
            pl_comm_sink_send(&sink, json_pack("{s:s, s:s}", "t", "child_error", "reason", "cannot start a thread"));
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(t[i].tid, NULL);
    free(t);
    if (ar_on)
        pl_ar_teardown(ar, job->nranks);
    if (ep_on)
        pl_ep_teardown(ep, job->nranks);
}

static int threads_run(pl_comm_job *job, pl_comm_outcome *out)
{
    job->nranks = job->gpus;
    out->is_root = 1;
    out->world_rank = 0;
    out->mode = "threads";
    out->messages = json_array();
    pl_child c;
    if (pl_child_spawn(&c, NULL) != 0) {
        pl_snprintf(out->error, sizeof out->error, "cannot start the GPU process (fork failed)");
        return -1;
    }
    if (c.pid == 0) {
        threads_child(job, c.fd);
        _exit(0);
    }
    pl_comm_collect_child(&c, pl_now_s() + job->timeout_s, 0, out, out->messages);
    return 0;
}

static int threads_agree_exit(int code)
{
    return code;
}

const pl_comm_launcher pl_comm_threads_launcher = {
    .name = "threads",
    .run = threads_run,
    .agree_exit = threads_agree_exit,
};
