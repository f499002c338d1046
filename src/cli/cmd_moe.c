/* perflab moe-readiness: before an expert-parallel job, does the fabric hold its latency and bandwidth when token
 * routing is skewed? All-to-all with real unequal splits over message sizes x Zipf skews, p50/p99 latency and
 * bandwidth per point, SLO verdicts that set the exit code, report.json, two heatmaps and a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/fabric_options.h"
#include "cli/options.h"
#include "comm/comm_report.h"
#include "comm/session.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"

typedef struct moe_args {
    const char *sizes, *skews, *model, *dtype, *out_dir;
    double max_p99_ms, min_bw_gbps;
    int iters, warmup;
    pl_fabric_args fab;
} moe_args;

static void usage(const pl_option *opts)
{
    printf("usage: perflab moe-readiness [options]\n\n"
           "Gates a fabric before an expert-parallel (MoE) job: an all-to-all whose chunks follow token routing\n"
           "skew (Zipf: destination at rank distance r gets weight 1/r^alpha; counts floored, the remainder to the\n"
           "largest fractions), swept over message sizes x skews. Per point: the split's Gini and max/mean, p50 and\n"
           "p99 latency across iterations and ranks, bandwidth (message bytes / latency) at p50 and at p99, and the\n"
           "SLO verdict. Writes report.json, heatmap_p99_latency.svg, heatmap_bandwidth.svg and summary.md.\n"
           "One rank per GPU: threads here, or mpirun/srun with perflab-mpi.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexample:\n  perflab moe-readiness --message-sizes 48k,192k,768k,2m --skews 1.0,1.25,1.5 \\\n"
           "      --max-p99-ms 6.0 --min-bw-gbps 16.0\n"
           "\nexit codes: 0 every point met the SLOs (or none was set) and verified; 1 a point missed an SLO,\n"
           "a result was wrong or a rank failed; 2 bad usage; 3 no usable GPU.\n");
}

static int build_job(const moe_args *a, pl_comm_job *job, char *err, size_t errlen)
{
    job->kind = PL_JOB_MOE;
    job->iters = a->iters;
    job->warmup = a->warmup;
    if (pl_fabric_args_apply(&a->fab, job, err, errlen) != 0)
        return -1;
    int d = pl_dtype_from_name(a->dtype), model;
    if (d != PL_DTYPE_BF16 && d != PL_DTYPE_F16 && d != PL_DTYPE_F32) {
        pl_snprintf(err, errlen, "--dtype must be bf16, fp16 or fp32, not '%s'", PL_ESC(a->dtype));
        return -1;
    }
    if (pl_comm_choice("--skew-model", a->model, pl_skew_model_from_name, "distance or hotspot", &model, err, errlen) !=
        0)
        return -1;
    job->moe_dtype = (pl_dtype)d;
    job->skew_model = (pl_skew_model)model;
    if (pl_parse_size_list(a->sizes, "--message-sizes", &job->msg_sizes, &job->n_msg_sizes, err, errlen) != 0 ||
        pl_parse_double_list(a->skews, "--skews", 0.0, 8.0, &job->skews, &job->n_skews, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < job->n_msg_sizes; i++)
        if (job->msg_sizes[i] < pl_dtype_size(job->moe_dtype)) {
            pl_snprintf(err, errlen, "--message-sizes: %zu bytes is less than one %s element", job->msg_sizes[i],
                        a->dtype);
            return -1;
        }
    return 0;
}

static int write_outputs(const char *dir, json_t *report, const char *md, const char *svg_lat, const char *svg_bw)
{
    char err[512];
    int rc = pl_moe_report_write(dir, report, md, svg_lat, svg_bw, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "perflab moe-readiness: %s\n", err);
    return rc;
}

static int finish(void *user, pl_comm_job *job, pl_comm_session *s)
{
    const moe_args *a = user;
    const char *out_dir = a->out_dir;
    const pl_comm_result *r = &s->result;
    for (size_t i = 0; i < json_array_size(r->problems); i++)
        fprintf(stderr, "perflab moe-readiness: %s\n", json_string_value(json_array_get(r->problems, i)));
    const pl_slo slo = {.max_p99_ms = a->max_p99_ms, .min_bw_gbps = a->min_bw_gbps};
    pl_moe_summary sum;
    pl_moe_summarize(job, r, &slo, &sum);
    json_t *report = pl_moe_report_json(job, r, &sum, &s->prov);
    json_object_set_new(report, "files",
                        json_pack("{s:s, s:s, s:s, s:s}", "dir", out_dir, "p99_latency_heatmap",
                                  "heatmap_p99_latency.svg", "bandwidth_heatmap", "heatmap_bandwidth.svg", "table",
                                  "summary.md"));
    pl_buf text = {0}, md = {0};
    pl_moe_report_table(job, r, &sum, &text, &md);
    char *svg_lat = pl_moe_heatmap_svg(job, r, &sum, 0), *svg_bw = pl_moe_heatmap_svg(job, r, &sum, 1);
    int code = sum.overall == PL_SLO_MISS || r->failed_points > 0 || json_array_size(r->problems) > 0 ? PL_EXIT_FAILED
                                                                                                      : PL_EXIT_OK;
    if (write_outputs(out_dir, report, md.data, svg_lat, svg_bw) != 0)
        code = PL_EXIT_FAILED;
    if (a->fab.json) {
        char *js = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(js);
        free(js);
    } else {
        fputs(text.data, stdout);
        printf("report: %s/report.json, heatmaps: %s/heatmap_p99_latency.svg, %s/heatmap_bandwidth.svg\n",
               PL_ESC(out_dir), PL_ESC(out_dir), PL_ESC(out_dir));
    }
    free(svg_lat);
    free(svg_bw);
    pl_buf_free(&text);
    pl_buf_free(&md);
    json_decref(report);
    pl_moe_summary_free(&sum);
    return code;
}

int pl_cmd_moe(int argc, char **argv)
{
    moe_args a = {.sizes = "48k,192k,768k,2m",
                  .skews = "1.0,1.25,1.5",
                  .model = "distance",
                  .dtype = "bf16",
                  .iters = 200,
                  .warmup = 20};
    pl_fabric_args_defaults(&a.fab, 600);
    const pl_option own[] = {
        {"message-sizes", 0, PL_OPT_STRING, &a.sizes, "LIST",
         "bytes each rank sends per all-to-all (default 48k,192k,768k,2m)", 0, 0},
        {"skews", 0, PL_OPT_STRING, &a.skews, "LIST", "Zipf alphas, 0 = uniform (default 1.0,1.25,1.5)", 0, 0},
        {"skew-model", 0, PL_OPT_STRING, &a.model, "M",
         "distance (r = (dst - src) mod n + 1) | hotspot (r = dst + 1: hot experts) (default distance)", 0, 0},
        {"dtype", 'd', PL_OPT_STRING, &a.dtype, "T", "bf16, fp16 or fp32 (default bf16)", 0, 0},
        {"iters", 'n', PL_OPT_INT, &a.iters, "N", "timed all-to-alls per point and rank (default 200)", 1, 1e6},
        {"warmup", 'w', PL_OPT_INT, &a.warmup, "N", "untimed all-to-alls first (default 20)", 0, 1e6},
        {"max-p99-ms", 0, PL_OPT_DOUBLE, &a.max_p99_ms, "MS", "SLO: p99 latency at most MS (default: not gated)", 0,
         1e9},
        {"min-bw-gbps", 0, PL_OPT_DOUBLE, &a.min_bw_gbps, "GBPS",
         "SLO: bandwidth at p50 at least GBPS (default: not gated)", 0, 1e9},
        {"out-dir", 'o', PL_OPT_STRING, &a.out_dir, "D", "where the report goes (default artifacts/moe_readiness-<id>)",
         0, 0},
    };
    pl_option opts[sizeof own / sizeof own[0] + PL_FABRIC_OPTION_COUNT + 1];
    pl_fabric_options_join(opts, own, sizeof own / sizeof own[0], &a.fab);
    pl_strlist pos = {0};
    char err[512];
    int code = pl_fabric_verb_options("moe-readiness", opts, argc, argv, &a.fab.help, usage, &pos);
    if (code >= 0) {
        pl_strlist_free(&pos);
        return code;
    }
    pl_comm_job job;
    memset(&job, 0, sizeof job);
    int rc = 0;
    if (pos.n) {
        pl_snprintf(err, sizeof err, "unexpected argument '%s'; see 'perflab moe-readiness --help'",
                    PL_ESC(pos.items[0]));
        rc = -1;
    }
    pl_strlist_free(&pos);
    if (rc == 0)
        rc = build_job(&a, &job, err, sizeof err);
    char *out_dir = NULL;
    if (rc == 0) {
        if (a.out_dir) {
            out_dir = pl_strdup(a.out_dir);
        } else {
            char *id = pl_new_run_id();
            out_dir = pl_strfmt("artifacts/moe_readiness-%s", id);
            free(id);
        }
        if (!pl_dir_usable(out_dir, "output directory", "--out-dir", err, sizeof err))
            rc = -1;
    }
    if (rc != 0) {
        free(out_dir);
        pl_comm_job_free(&job);
        return pl_comm_env_is_root() ? pl_usage_error("moe-readiness", err) : PL_EXIT_USAGE;
    }
    a.out_dir = out_dir;
    code = pl_fabric_verb_run("moe-readiness", a.fab.quiet, &job, finish, &a);
    pl_comm_job_free(&job);
    free(out_dir);
    return code;
}
