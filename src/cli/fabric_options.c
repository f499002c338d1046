#include "cli/fabric_options.h"

#include <string.h>

#include "cli/cli.h"
#include "comm/session.h"
#include "core/util.h"

void pl_fabric_args_defaults(pl_fabric_args *f, double timeout_s)
{
    memset(f, 0, sizeof *f);
    f->reg = "none";
    f->timeout_s = timeout_s;
    f->seed = 20261121;
    pl_snprintf(f->help_timeout, sizeof f->help_timeout, "stop the GPU process after S seconds (default %g)",
                timeout_s);
}

void pl_fabric_options_join(pl_option *out, const pl_option *own, size_t n_own, pl_fabric_args *f)
{
    const pl_option fabric[PL_FABRIC_OPTION_COUNT] = {
        {"gpus", 'g', PL_OPT_INT, &f->gpus, "N", "threaded mode: use GPUs 0..N-1 (default: all)", 1, 1024},
        {"register", 'R', PL_OPT_STRING, &f->reg, "M",
         "none | buffer (ncclMemAlloc + ncclCommRegister) | window (symmetric) (default none)", 0, 0},
        {"nccl-env", 0, PL_OPT_STRING, &f->nccl_env, "LIST",
         "NCCL_X=V,... set in the GPU process before NCCL starts (recorded)", 0, 0},
        {"timeout-s", 0, PL_OPT_DOUBLE, &f->timeout_s, "S", f->help_timeout, 1, 86400},
        {"seed", 0, PL_OPT_DOUBLE, &f->seed, "N", "seed of the input values (default 20261121)", 0, 9e15},
        {"json", 0, PL_OPT_FLAG, &f->json, NULL, "print report.json to stdout instead of the tables", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &f->quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &f->help, NULL, "show this help", 0, 0},
    };
    memcpy(out, own, n_own * sizeof *own);
    memcpy(out + n_own, fabric, sizeof fabric);
    memset(out + n_own + PL_FABRIC_OPTION_COUNT, 0, sizeof *out);
}

int pl_fabric_args_apply(const pl_fabric_args *f, pl_comm_job *job, char *err, size_t errlen)
{
    job->gpus = f->gpus;
    job->seed = (uint64_t)f->seed;
    job->timeout_s = f->timeout_s;
    job->nccl_env = f->nccl_env;
    int reg;
    if (pl_comm_choice("--register", f->reg, pl_register_mode_from_name, "none, buffer or window", &reg, err,
                       errlen) != 0)
        return -1;
    job->reg = (pl_register_mode)reg;
    return pl_comm_nccl_env(f->nccl_env, 0, err, errlen);
}

int pl_fabric_verb_options(const char *verb, const pl_option *opts, int argc, char **argv, const int *help,
                           void (*usage)(const pl_option *opts), pl_strlist *positional)
{
    char err[512];
    const int root = pl_comm_env_is_root();
    if (pl_options_parse(verb, opts, argc, argv, positional, err, sizeof err) != 0)
        return root ? pl_usage_error(verb, err) : PL_EXIT_USAGE;
    if (*help) {
        if (root)
            usage(opts);
        return PL_EXIT_OK;
    }
    return -1;
}

int pl_fabric_verb_run(const char *verb, int quiet, pl_comm_job *job, pl_fabric_finish_fn finish, void *user)
{
    pl_comm_session s;
    memset(&s, 0, sizeof s);
    s.verb = verb;
    s.quiet = quiet;
    int code = pl_comm_session_run(&s, job, pl_cli_argc, pl_cli_argv);
    if (code < 0)
        code = s.outcome.is_root ? finish(user, job, &s) : PL_EXIT_OK;
    code = pl_comm_launcher_get()->agree_exit(code);
    pl_comm_session_free(&s);
    return code;
}
