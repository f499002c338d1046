/* Child processes that report back over a pipe, one JSON object per line: the isolation under every target
 * (a crash, a hang or a sticky CUDA error stays in the child) and under the GPU probe. */
#ifndef PERFLAB_CORE_PIPED_CHILD_H
#define PERFLAB_CORE_PIPED_CHILD_H

#include <jansson.h>
#include <signal.h>
#include <sys/types.h>

#include "core/util.h"

typedef struct pl_child {
    pid_t pid;      /* 0 in the child */
    int fd;         /* the child's write end, or the parent's read end */
    pl_buf pending; /* parent: bytes of an unfinished line */
    json_t *last;   /* parent: the last message received */
    int eof;
} pl_child;

typedef struct pl_child_end {
    int timed_out;
    int interrupted; /* the user pressed Ctrl-C */
    int signaled, signal;
    int exited, exit_code;
    char description[160]; /* "exited with code 2", "was killed by SIGSEGV (Segmentation fault)", ... */
} pl_child_end;

/* Set by SIGINT/SIGTERM in the parent (pl_child_install_interrupt_handler). */
extern volatile sig_atomic_t pl_interrupted;
void pl_child_install_interrupt_handler(void);

/* Fork. In the child (c->pid == 0) stdout and stderr go to log_path when given (appending), the child leads a
 * process group of its own, and c->fd is the write end. Returns -1 when fork or pipe fail. */
int pl_child_spawn(pl_child *c, const char *log_path);
/* Child side: one message, one line. */
int pl_child_send(int fd, json_t *msg);

/* Parent side: the next message (caller owns it; a copy stays as c->last) -> 1; the child closed its end ->
 * 0; the deadline (absolute, pl_now_s) passed -> -1; interrupted -> -2. */
int pl_child_next(pl_child *c, double deadline, json_t **msg);
/* The last message received (a new reference), NULL if none. */
json_t *pl_child_last(pl_child *c);
/* Kill the child's process group, reap it, and describe how it ended. Safe to call after EOF too. */
void pl_child_finish(pl_child *c, int kill_it, pl_child_end *end);

#endif
