#include "core/piped_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/results_json.h"

volatile sig_atomic_t pl_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    pl_interrupted = 1;
}

void pl_child_install_interrupt_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int pl_child_spawn(pl_child *c, const char *log_path)
{
    memset(c, 0, sizeof *c);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout); /* or the child would print the parent's buffered output a second time */
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        /* No orphans: the child dies with its parent, whatever kills the parent (kill -9 included), so that no
         * GPU process outlives the run. The parent may already have died before this line: check. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(128 + SIGKILL);
        setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (log_path) {
            int lf = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (lf >= 0) {
                dup2(lf, STDOUT_FILENO);
                dup2(lf, STDERR_FILENO);
                close(lf);
            }
        }
        c->pid = 0;
        c->fd = fds[1];
        return 0;
    }
    close(fds[1]);
    setpgid(pid, pid); /* also here: whichever runs first, the group exists before we may kill it */
    c->pid = pid;
    c->fd = fds[0];
    return 0;
}

int pl_child_send(int fd, json_t *msg)
{
    char *line = pl_json_dumps_line(msg);
    if (!line)
        return -1;
    size_t len = strlen(line);
    line[len] = '\n'; /* replaces the terminator: we write len + 1 bytes exactly */
    size_t off = 0;
    int rc = 0;
    while (off < len + 1) {
        ssize_t w = write(fd, line + off, len + 1 - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        off += (size_t)w;
    }
    free(line);
    return rc;
}

/* A complete line in the pending buffer -> parsed message. */
static json_t *take_line(pl_child *c)
{
    char *nl = c->pending.data ? memchr(c->pending.data, '\n', c->pending.len) : NULL;
    if (!nl)
        return NULL;
    size_t n = (size_t)(nl - c->pending.data);
    json_error_t je;
    json_t *msg = json_loadb(c->pending.data, n, 0, &je);
    memmove(c->pending.data, nl + 1, c->pending.len - n - 1);
    c->pending.len -= n + 1;
    c->pending.data[c->pending.len] = '\0';
    if (!msg) /* a torn or garbled line: report it as a message the reader will not recognise */
        msg = json_pack("{s:s, s:s}", "t", "garbled", "text", je.text);
    return msg;
}

int pl_child_next(pl_child *c, double deadline, json_t **msg)
{
    *msg = NULL;
    for (;;) {
        json_t *m = take_line(c);
        if (m) {
            json_decref(c->last);
            c->last = json_incref(m);
            *msg = m;
            return 1;
        }
        if (c->eof)
            return 0;
        if (pl_interrupted)
            return -2;
        double left = deadline - pl_now_s();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int timeout_ms = left > 1.0 ? 1000 : (int)(left * 1000) + 1;
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno != EINTR)
            return 0;
        if (r <= 0)
            continue;
        char chunk[65536];
        ssize_t n = read(c->fd, chunk, sizeof chunk);
        if (n > 0)
            pl_buf_appendn(&c->pending, chunk, (size_t)n);
        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
            c->eof = 1;
    }
}

json_t *pl_child_last(pl_child *c)
{
    return c->last ? json_incref(c->last) : NULL;
}

void pl_child_finish(pl_child *c, int kill_it, pl_child_end *end)
{
    memset(end, 0, sizeof *end);
    if (c->pid > 0) {
        if (kill_it)
            kill(-c->pid, SIGKILL);
        int status = 0;
        while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (kill_it)
            kill(-c->pid, SIGKILL); /* whatever the child itself started */
        if (WIFSIGNALED(status)) {
            end->signaled = 1;
            end->signal = WTERMSIG(status);
            pl_snprintf(end->description, sizeof end->description, "was killed by signal %d (%s)", end->signal,
                        strsignal(end->signal));
        } else if (WIFEXITED(status)) {
            end->exited = 1;
            end->exit_code = WEXITSTATUS(status);
            pl_snprintf(end->description, sizeof end->description, "exited with code %d", end->exit_code);
        }
    }
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    json_decref(c->last);
    c->last = NULL;
    pl_buf_free(&c->pending);
}
