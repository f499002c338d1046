/* perflab comm <collective>[,...]|all: NCCL collective sweeps with nccl-tests semantics (sizes, in/out-of-place,
 * algbw and busbw), each size checked, then timed per operation on every rank: p50, p99 and max. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fabric_options.h"
#include "cli/options.h"
#include "comm/comm_report.h"
#include "comm/launch.h"
#include "comm/session.h"
#include "core/results_json.h"
#include "core/util.h"

typedef struct comm_args {
    const char *min_bytes, *max_bytes, *step_bytes, *dtypes, *op, *placement, *a2a_api, *out_dir;
    double factor;
    int iters, warmup, root;
    pl_fabric_args fab;
} comm_args;

static void usage(const pl_option *opts)
{
    printf("usage: perflab comm <collective>[,<collective>...]|all [options]\n\n"
           "Collectives: alltoall, allreduce, allgather, reducescatter, sendrecv, broadcast. One NCCL rank per\n"
           "GPU: a thread per local GPU here, or one process per GPU under mpirun/srun with perflab-mpi. Each\n"
           "size (nccl-tests' -b/-e/-f) is run out of place and in place, checked once against values every rank\n"
           "can recompute, then timed per operation with CUDA events on every rank: p50, p99 and max across\n"
           "iterations and ranks. algbw = S / t(p50); busbw = algbw * factor (allreduce 2(n-1)/n; allgather,\n"
           "reducescatter, alltoall (n-1)/n; broadcast, sendrecv 1), as nccl-tests defines them.\n"
           "allreduce_oneshot and allreduce_twoshot time perflab's own bf16 sum all-reduce over NVLink peer pointers\n"
           "(kernels/allreduce) beside NCCL's: threads only, --dtype bf16, --op sum, sizes up to 256m; `all` is\n"
           "NCCL's six.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexamples:\n  perflab comm allreduce -b 8k -e 1g -f 2\n  perflab comm all -d bf16 --json > comm.json\n"
           "  mpirun -np 8 perflab-mpi comm alltoall -b 1m -e 1g\n"
           "\nexit codes: 0 ok; 1 a result was wrong or a rank failed; 2 bad usage; 3 no usable GPU.\n");
}

static int parse_size_opt(const char *name, const char *text, size_t *out, char *err, size_t errlen)
{
    long long v;
    if (pl_parse_size(text, &v) != 0 || v <= 0) {
        pl_snprintf(err, errlen, "--%s: '%s' is not a size in bytes (e.g. 8k, 64m, 1g)", name, PL_ESC(text));
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

static int parse_colls(const char *text, pl_comm_job *job, char *err, size_t errlen)
{
    if (strcmp(text, "all") == 0) { /* NCCL's collectives; perflab's all-reduce by name */
        for (int c = 0; c < PL_COLL_NCCL_COUNT; c++)
            job->colls[job->n_colls++] = (pl_coll)c;
        return 0;
    }
    int v[PL_COLL_COUNT], n = 0;
    char bad[64];
    if (pl_options_name_list(text, pl_coll_from_name, v, PL_COLL_COUNT, &n, bad, sizeof bad) != 0) {
        pl_snprintf(err, errlen,
                    "unknown collective '%s': name alltoall, allreduce, allgather, reducescatter, sendrecv, "
                    "broadcast, allreduce_oneshot, allreduce_twoshot, a comma list of them, or all",
                    PL_ESC(bad));
        return -1;
    }
    for (int i = 0; i < n; i++)
        job->colls[job->n_colls++] = (pl_coll)v[i];
    return 0;
}

static int parse_dtypes(const char *text, pl_comm_job *job, char *err, size_t errlen)
{
    char *copy = pl_strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int d = pl_dtype_from_name(tok);
        if (d < 0 || !pl_comm_dtype_supported((pl_dtype)d) || job->n_dtypes >= PL_COMM_MAX_DTYPES) {
            pl_snprintf(err, errlen, "--dtype: '%s' is not one of fp32, fp16, bf16, fp64, int32", PL_ESC(tok));
            free(copy);
            return -1;
        }
        job->dtypes[job->n_dtypes++] = (pl_dtype)d;
    }
    free(copy);
    if (job->n_dtypes == 0) {
        pl_snprintf(err, errlen, "--dtype is empty: name fp32, fp16, bf16, fp64 or int32");
        return -1;
    }
    return 0;
}

/* Everything that can be checked without a GPU. */
static int build_job(const comm_args *a, const char *colls, pl_comm_job *job, char *err, size_t errlen)
{
    job->kind = PL_JOB_COLL;
    job->iters = a->iters;
    job->warmup = a->warmup;
    job->root = a->root;
    if (pl_fabric_args_apply(&a->fab, job, err, errlen) != 0)
        return -1;
    if (parse_colls(colls, job, err, errlen) != 0 || parse_dtypes(a->dtypes, job, err, errlen) != 0)
        return -1;
    int op, api;
    if (pl_comm_choice("--op", a->op, pl_redop_from_name, "sum, max or min", &op, err, errlen) != 0 ||
        pl_comm_choice("--alltoall-api", a->a2a_api, pl_a2a_api_from_name, "auto, group or native", &api, err,
                       errlen) != 0)
        return -1;
    job->op = (pl_redop)op;
    job->a2a_api = (pl_a2a_api)api;
    if (strcmp(a->placement, "both") == 0)
        job->placements = PL_PLACE_OUT | PL_PLACE_IN;
    else if (strcmp(a->placement, "out") == 0)
        job->placements = PL_PLACE_OUT;
    else if (strcmp(a->placement, "in") == 0)
        job->placements = PL_PLACE_IN;
    else {
        pl_snprintf(err, errlen, "--placement must be out, in or both, not '%s'", PL_ESC(a->placement));
        return -1;
    }
    size_t lo, hi, step = 0;
    if (parse_size_opt("min-bytes", a->min_bytes, &lo, err, errlen) != 0 ||
        parse_size_opt("max-bytes", a->max_bytes, &hi, err, errlen) != 0 ||
        (a->step_bytes && parse_size_opt("step-bytes", a->step_bytes, &step, err, errlen) != 0))
        return -1;
    if (lo > hi) {
        pl_snprintf(err, errlen, "--min-bytes %zu exceeds --max-bytes %zu: swap them", lo, hi);
        return -1;
    }
    if (!step && !(a->factor > 1)) {
        pl_snprintf(err, errlen, "--step-factor must be above 1 (or give --step-bytes), not %g", a->factor);
        return -1;
    }
    job->n_sizes = pl_comm_size_series(lo, hi, a->factor, step, PL_COMM_MAX_SIZES, &job->sizes);
    if (job->n_sizes > PL_COMM_MAX_SIZES) {
        pl_snprintf(err, errlen,
                    "more than %d sizes from --min-bytes to --max-bytes: raise --step-factor or --step-bytes",
                    PL_COMM_MAX_SIZES);
        return -1;
    }
    int only_in = job->placements == PL_PLACE_IN;
    for (int c = 0; only_in && c < job->n_colls; c++)
        if (!pl_coll_has_in_place(job->colls[c])) {
            pl_snprintf(err, errlen, "%s has no in-place form: use --placement out or both",
                        pl_coll_name(job->colls[c]));
            return -1;
        }
    return pl_comm_job_check_perflab(job, pl_comm_launcher_get() == &pl_comm_threads_launcher, err, errlen);
}

static int finish(void *user, pl_comm_job *job, pl_comm_session *s)
{
    const comm_args *a = user;
    const pl_comm_result *r = &s->result;
    for (size_t i = 0; i < json_array_size(r->problems); i++)
        fprintf(stderr, "perflab comm: %s\n", json_string_value(json_array_get(r->problems, i)));
    int code = r->failed_points > 0 || json_array_size(r->problems) > 0 ? PL_EXIT_FAILED : PL_EXIT_OK;
    json_t *report = pl_comm_report_json(job, r, &s->prov);
    pl_buf text = {0}, md = {0};
    pl_comm_report_tables(job, r, &text, &md);
    if (a->fab.json) {
        char *js = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(js);
        free(js);
    } else {
        fputs(text.data ? text.data : "", stdout);
    }
    if (a->out_dir) {
        char err[512];
        if (pl_comm_report_write(a->out_dir, report, md.data, err, sizeof err) != 0) {
            fprintf(stderr, "perflab comm: %s\n", err);
            code = PL_EXIT_FAILED;
        }
    }
    for (size_t i = 0; i < r->n_points; i++) {
        const pl_comm_point_result *p = &r->points[i];
        if (p->status == PL_POINT_FAILED_VERIFICATION || (p->status == PL_POINT_ERROR && i < 8))
            fprintf(stderr, "perflab comm: %s %s %zu B%s: %s: %s\n", pl_coll_name(p->point.coll),
                    pl_dtype_name(p->point.dtype), p->point.nominal_bytes, p->point.in_place ? " in place" : "",
                    pl_point_status_name(p->status), p->reason ? p->reason : "");
    }
    pl_buf_free(&text);
    pl_buf_free(&md);
    json_decref(report);
    return code;
}

int pl_cmd_comm(int argc, char **argv)
{
    comm_args a = {.min_bytes = "8k",
                   .max_bytes = "256m",
                   .factor = 2,
                   .dtypes = "fp32",
                   .op = "sum",
                   .placement = "both",
                   .a2a_api = "auto",
                   .iters = 100,
                   .warmup = 10};
    pl_fabric_args_defaults(&a.fab, 900);
    const pl_option own[] = {
        {"min-bytes", 'b', PL_OPT_STRING, &a.min_bytes, "SIZE", "smallest size (default 8k)", 0, 0},
        {"max-bytes", 'e', PL_OPT_STRING, &a.max_bytes, "SIZE", "largest size (default 256m)", 0, 0},
        {"step-factor", 'f', PL_OPT_DOUBLE, &a.factor, "F", "multiply the size by F each step (default 2)", 0, 0},
        {"step-bytes", 'i', PL_OPT_STRING, &a.step_bytes, "SIZE", "add SIZE each step instead of -f", 0, 0},
        {"dtype", 'd', PL_OPT_STRING, &a.dtypes, "LIST", "fp32, fp16, bf16, fp64, int32 or a list (default fp32)", 0,
         0},
        {"op", 'o', PL_OPT_STRING, &a.op, "OP", "reduction of allreduce/reducescatter: sum, max, min (default sum)", 0,
         0},
        {"iters", 'n', PL_OPT_INT, &a.iters, "N", "timed operations per size and rank (default 100)", 1, 1e6},
        {"warmup", 'w', PL_OPT_INT, &a.warmup, "N", "untimed operations first (default 10)", 0, 1e6},
        {"placement", 0, PL_OPT_STRING, &a.placement, "P", "out, in or both (default both)", 0, 0},
        {"root", 'r', PL_OPT_INT, &a.root, "R", "broadcast root (default 0)", 0, 1e6},
        {"alltoall-api", 0, PL_OPT_STRING, &a.a2a_api, "A",
         "auto (native where NCCL has it) | group (ncclSend/ncclRecv) | native (ncclAlltoAll)", 0, 0},
        {"out-dir", 0, PL_OPT_STRING, &a.out_dir, "D", "also write D/report.json and D/summary.md", 0, 0},
    };
    pl_option opts[sizeof own / sizeof own[0] + PL_FABRIC_OPTION_COUNT + 1];
    pl_fabric_options_join(opts, own, sizeof own / sizeof own[0], &a.fab);
    pl_strlist pos = {0};
    char err[512];
    int code = pl_fabric_verb_options("comm", opts, argc, argv, &a.fab.help, usage, &pos);
    if (code >= 0) {
        pl_strlist_free(&pos);
        return code;
    }
    pl_comm_job job;
    memset(&job, 0, sizeof job);
    int rc = 0;
    if (pos.n != 1) {
        pl_snprintf(err, sizeof err,
                    "name one collective (alltoall, allreduce, allgather, reducescatter, sendrecv, "
                    "broadcast), a comma list or all; see 'perflab comm --help'");
        rc = -1;
    } else {
        rc = build_job(&a, pos.items[0], &job, err, sizeof err);
    }
    if (rc == 0 && a.out_dir && !pl_dir_usable(a.out_dir, "output directory", "--out-dir", err, sizeof err))
        rc = -1;
    pl_strlist_free(&pos);
    if (rc != 0) {
        pl_comm_job_free(&job);
        return pl_comm_env_is_root() ? pl_usage_error("comm", err) : PL_EXIT_USAGE;
    }
    code = pl_fabric_verb_run("comm", a.fab.quiet, &job, finish, &a);
    pl_comm_job_free(&job);
    return code;
}
