/* perflab run as its own child process (perflab_child.h), over core/piped_child's fork, process group and reaping. */
#include "serve/perflab_child.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ncu.h"
#include "core/util.h"

int pl_perflab_child_run(const char *const *args, const char *env, const char *log_path, double timeout_s,
                         pl_child_end *end)
{
    memset(end, 0, sizeof *end);
    char *exe = pl_self_exe();
    if (!exe) {
        pl_snprintf(end->description, sizeof end->description, "this process's executable is unknown");
        return -1;
    }
    size_t n = 0;
    while (args[n])
        n++;
    char **argv = pl_xcalloc(n + 2, sizeof *argv);
    argv[0] = exe;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    pl_child c;
    if (pl_child_spawn(&c, log_path) != 0) {
        pl_snprintf(end->description, sizeof end->description, "fork failed");
        free(argv);
        free(exe);
        return -1;
    }
    if (c.pid == 0) {
        if (env)
            putenv((char *)env);
        execv(exe, argv);
        _exit(127);
    }
    double deadline = pl_now_s() + timeout_s;
    int got;
    json_t *msg;
    while ((got = pl_child_next(&c, deadline, &msg)) == 1)
        json_decref(msg);
    pl_child_finish(&c, got != 0, end);
    end->timed_out = got == -1;
    end->interrupted = got == -2;
    if (got == -1)
        pl_snprintf(end->description, sizeof end->description, "timed out after %.0f s", timeout_s);
    else if (got == -2)
        pl_snprintf(end->description, sizeof end->description, "interrupted");
    free(argv);
    free(exe);
    return 0;
}
