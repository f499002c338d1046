#include "hw/hwchild.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#include "core/piped_child.h"
#include "core/devprobe.h"
#include "core/util.h"

#define NO_TASK SIZE_MAX

void pl_hw_emit(pl_hw_child *c, json_t *msg)
{
    json_object_set_new(msg, "t", json_string("result"));
    json_object_set_new(msg, "task", json_string(c->task ? c->task : ""));
    pl_child_send(c->fd, msg);
    json_decref(msg);
}

int pl_hw_context_ok(void)
{
    cudaGetLastError(); /* clear a non-sticky error; a sticky one stays and shows below */
    return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
}

pl_hw_gpu *pl_hw_gpu_get(pl_hw_child *c, int ordinal, char *why, size_t whylen)
{
    if (ordinal < 0 || ordinal >= c->device_count) {
        pl_snprintf(why, whylen, "no GPU %d: the CUDA runtime sees %d", ordinal, c->device_count);
        return NULL;
    }
    pl_hw_gpu *g = &c->gpus[ordinal];
    cudaError_t e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) {
        pl_snprintf(why, whylen, "cudaSetDevice(%d): %s", ordinal, cudaGetErrorString(e));
        return NULL;
    }
    if (g->open)
        return g;
    memset(g, 0, sizeof *g);
    if (pl_device_info_query(ordinal, &g->dev, why, whylen) != 0)
        return NULL;
    g->ctx.device = &g->dev;
    g->ctx.device_count = c->device_count;
    g->ctx.seed = 20261121u + (uint64_t)ordinal;
    e = cudaStreamCreateWithFlags(&g->ctx.stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        pl_snprintf(why, whylen, "cudaStreamCreate on GPU %d: %s", ordinal, cudaGetErrorString(e));
        return NULL;
    }
    pl_run_settings *s = &g->settings;
    s->profile = (char *)"none";
    s->mode = (char *)"hot";
    s->warmup = 2;
    s->min_samples = 10;
    s->min_time_s = 0.1;
    s->max_time_s = 1.0;
    s->max_noise = 0.02;
    s->throttle_threshold = 0; /* a ceiling is what the GPU sustains: keep every sample, report the clock */
    s->device = ordinal;
    if (pl_measure_env_init(&g->env, &g->ctx, s, 0) != 0) {
        pl_snprintf(why, whylen, "%s", g->ctx.error);
        return NULL;
    }
    g->open = 1;
    return g;
}

static void send_marker(int fd, const char *t, size_t index)
{
    json_t *m = json_pack("{s:s, s:I}", "t", t, "index", (json_int_t)index);
    pl_child_send(fd, m);
    json_decref(m);
}

static void child_main(int fd, const pl_hw_task *tasks, size_t first, size_t n, const void *user)
{
    pl_hw_child c;
    memset(&c, 0, sizeof c);
    c.fd = fd;
    c.user = user;
    if (cudaGetDeviceCount(&c.device_count) != cudaSuccess)
        c.device_count = 0;
    c.gpus = pl_xcalloc((size_t)c.device_count + 1, sizeof *c.gpus);
    for (size_t i = first; i < n; i++) {
        send_marker(fd, "begin", i);
        c.task = tasks[i].name;
        int rc = tasks[i].run(&c);
        send_marker(fd, "end", i);
        if (rc != 0)
            break; /* the parent goes on with the next task in a fresh process */
    }
    /* no cleanup: the process ends here and the driver frees its context */
}

static void report_lost(const pl_hw_task *t, const char *why, void (*on_message)(void *, json_t *), void *arg)
{
    on_message(arg, json_pack("{s:s, s:s}", "task", t->name, "lost", why));
}

int pl_hw_run_tasks(const pl_hw_task *tasks, size_t n, const void *user, double task_timeout_s,
                    void (*on_message)(void *arg, json_t *msg), void *arg)
{
    size_t next = 0;
    while (next < n) {
        pl_child c;
        if (pl_child_spawn(&c, NULL) != 0) {
            for (; next < n; next++)
                report_lost(&tasks[next], "cannot start a process for it (fork failed)", on_message, arg);
            return 0;
        }
        if (c.pid == 0) {
            child_main(c.fd, tasks, next, n, user);
            _exit(0);
        }
        size_t inflight = NO_TASK, before = next;
        double deadline = pl_now_s() + task_timeout_s;
        int r;
        json_t *msg;
        while ((r = pl_child_next(&c, deadline, &msg)) == 1) {
            const char *t = json_string_value(json_object_get(msg, "t"));
            size_t index = (size_t)json_integer_value(json_object_get(msg, "index"));
            if (t && strcmp(t, "begin") == 0 && index < n) {
                inflight = index;
                deadline = pl_now_s() + task_timeout_s;
                json_decref(msg);
            } else if (t && strcmp(t, "end") == 0 && index < n) {
                inflight = NO_TASK;
                next = index + 1;
                json_decref(msg);
            } else if (t && strcmp(t, "result") == 0) {
                json_object_del(msg, "t");
                on_message(arg, msg);
            } else {
                json_decref(msg);
            }
        }
        pl_child_end end;
        pl_child_finish(&c, r != 0, &end);
        if (r == -2)
            return -2;
        if (inflight != NO_TASK) {
            char why[256];
            if (r == -1)
                pl_snprintf(why, sizeof why, "did not finish within %.0f s (its process was killed)", task_timeout_s);
            else
                pl_snprintf(why, sizeof why, "its process %s before the task finished", end.description);
            report_lost(&tasks[inflight], why, on_message, arg);
            next = inflight + 1;
        } else if (next == before) {
            /* the child died before it began anything: do not retry forever */
            char why[256];
            pl_snprintf(why, sizeof why, "its process %s before the task began", end.description);
            report_lost(&tasks[next], why, on_message, arg);
            next++;
        }
    }
    return 0;
}
