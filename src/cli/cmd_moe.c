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
#include "comm/ep_report.h"
#include "comm/launch.h"
#include "comm/session.h"
#include "core/provenance.h"
#include "core/results_json.h"
#include "core/util.h"

typedef struct moe_args {
    const char *sizes, *skews, *model, *dtype, *out_dir;
    const char *ep_tokens, *ep_impls;
    double max_p99_ms, min_bw_gbps;
    int iters, warmup;
    int ep, hidden, topk, experts;
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
           "One rank per GPU: threads here, or mpirun/srun with perflab-mpi.\n\n"
           "--ep measures expert-parallel dispatch and combine instead (docs/fabric.md): T tokens per rank of\n"
           "--hidden bf16, top-k of --experts experts (expert e on rank e / (E / ranks)), the choice Zipf-skewed\n"
           "by each --skews alpha; dispatch sends a token once to each rank among its experts and lands it\n"
           "expert-major, combine returns each expert's row and sums the k rows with the router's weights (fp32,\n"
           "then bf16). Variants: nccl (pack, counts and rows as all-to-all(v), expand) and peer (one kernel\n"
           "each writing or reading through NVLink peer pointers; threads only). Every point is checked (rows\n"
           "bit for bit, sums against float64) and timed: p50/p99 per phase, GB/s of the bytes that crossed.\n"
           "SLO flags do not apply to --ep.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexamples:\n  perflab moe-readiness --message-sizes 48k,192k,768k,2m --skews 1.0,1.25,1.5 \\\n"
           "      --max-p99-ms 6.0 --min-bw-gbps 16.0\n"
           "  perflab moe-readiness --ep --tokens 128,4096   # decode and prefill, 7168 hidden, top-8 of 256\n"
           "\nexit codes: 0 every point met the SLOs (or none was set) and verified; 1 a point missed an SLO,\n"
           "a result was wrong or a rank failed; 2 bad usage; 3 no usable GPU.\n");
}

static int parse_ep_impls(const char *text, pl_comm_job *job, char *err, size_t errlen)
{
    int v[PL_EP_IMPL_COUNT], n = 0;
    char bad[64];
    if (pl_options_name_list(text, pl_ep_impl_from_name, v, PL_EP_IMPL_COUNT, &n, bad, sizeof bad) != 0) {
        pl_snprintf(err, errlen, "--ep-impl: '%s' is not nccl or peer (or a list: nccl,peer)", PL_ESC(bad));
        return -1;
    }
    if (n == 0) {
        pl_snprintf(err, errlen, "--ep-impl is empty: name nccl, peer or both");
        return -1;
    }
    for (int i = 0; i < n; i++)
        job->ep_impls[job->n_ep_impls++] = (pl_ep_impl)v[i];
    return 0;
}

/* --ep: token counts x skews x variants, checked as far as can be without the GPUs (the rank count where --gpus
 * gives it). */
static int build_ep_job(const moe_args *a, pl_comm_job *job, char *err, size_t errlen)
{
    job->kind = PL_JOB_EP;
    job->ep_hidden = a->hidden;
    job->ep_topk = a->topk;
    job->ep_experts = a->experts;
    if (pl_parse_size_list(a->ep_tokens, "--tokens", &job->ep_tokens, &job->n_ep_tokens, err, errlen) != 0 ||
        pl_parse_double_list(a->skews, "--skews", 0.0, 8.0, &job->skews, &job->n_skews, err, errlen) != 0 ||
        parse_ep_impls(a->ep_impls, job, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < job->n_ep_tokens; i++)
        if (job->ep_tokens[i] > 0x7fffffff) {
            pl_snprintf(err, errlen, "--tokens %zu is more than 2^31 tokens: lower it", job->ep_tokens[i]);
            return -1;
        }
    return pl_comm_job_check_ep(job, job->gpus, pl_comm_launcher_get() == &pl_comm_threads_launcher, err, errlen);
}

static int build_job(const moe_args *a, pl_comm_job *job, char *err, size_t errlen)
{
    job->kind = PL_JOB_MOE;
    job->iters = a->iters;
    job->warmup = a->warmup;
    if (pl_fabric_args_apply(&a->fab, job, err, errlen) != 0)
        return -1;
    if (a->ep)
        return build_ep_job(a, job, err, errlen);
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

/* --ep: report.json, summary.md and the table; exit 1 on any failed point or problem. */
/* The report as JSON on stdout (--json). */
static void put_json(const json_t *report)
{
    char *js = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    puts(js);
    free(js);
}

static int finish_ep(const moe_args *a, pl_comm_job *job, pl_comm_session *s)
{
    const pl_comm_result *r = &s->result;
    for (size_t i = 0; i < json_array_size(r->problems); i++)
        fprintf(stderr, "perflab moe-readiness: %s\n", json_string_value(json_array_get(r->problems, i)));
    json_t *report = pl_ep_report_json(job, r, &s->prov);
    pl_buf text = {0}, md = {0};
    pl_ep_report_table(job, r, &text, &md);
    int code = r->failed_points > 0 || json_array_size(r->problems) > 0 ? PL_EXIT_FAILED : PL_EXIT_OK;
    char err[512];
    if (pl_comm_report_write(a->out_dir, report, md.data, err, sizeof err) != 0) {
        fprintf(stderr, "perflab moe-readiness: %s\n", err);
        code = PL_EXIT_FAILED;
    }
    if (a->fab.json) {
        put_json(report);
    } else {
        fputs(text.data ? text.data : "", stdout);
        printf("report: %s/report.json\n", PL_ESC(a->out_dir));
    }
    for (size_t i = 0; i < r->n_points; i++)
        if (r->points[i].status == PL_POINT_FAILED_VERIFICATION)
            fprintf(stderr, "perflab moe-readiness: %d tokens, skew %g, %s %s: %s\n", r->points[i].point.ep_tokens,
                    r->points[i].point.skew, pl_ep_impl_name(r->points[i].point.ep_impl),
                    pl_ep_phase_name(r->points[i].point.ep_phase), r->points[i].reason);
    pl_buf_free(&text);
    pl_buf_free(&md);
    json_decref(report);
    return code;
}

static int finish(void *user, pl_comm_job *job, pl_comm_session *s)
{
    if (job->kind == PL_JOB_EP)
        return finish_ep(user, job, s);
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
        put_json(report);
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
                  .ep_tokens = "128",
                  .ep_impls = "nccl,peer",
                  .hidden = 7168,
                  .topk = 8,
                  .experts = 256,
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
        {"ep", 0, PL_OPT_FLAG, &a.ep, NULL, "measure EP dispatch and combine (the options below) instead", 0, 0},
        {"tokens", 0, PL_OPT_STRING, &a.ep_tokens, "LIST", "--ep: tokens per rank (default 128; prefill e.g. 4096)", 0,
         0},
        {"hidden", 0, PL_OPT_INT, &a.hidden, "H", "--ep: hidden size, a multiple of 8 (default 7168)", 1, 1 << 20},
        {"topk", 0, PL_OPT_INT, &a.topk, "K", "--ep: experts per token (default 8)", 1, 1024},
        {"experts", 0, PL_OPT_INT, &a.experts, "E", "--ep: experts, divisible by the ranks (default 256)", 1, 1 << 20},
        {"ep-impl", 0, PL_OPT_STRING, &a.ep_impls, "LIST", "--ep: nccl, peer or nccl,peer (default nccl,peer)", 0, 0},
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
            out_dir = pl_strfmt(a.ep ? "artifacts/moe_ep-%s" : "artifacts/moe_readiness-%s", id);
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
