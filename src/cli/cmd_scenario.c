/* perflab scenario fullstack: the whole arc in one folder and one page (src/serve/scenario). Parses and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/piped_child.h"
#include "core/util.h"
#include "serve/scenario.h"

static void usage(const pl_option *opts)
{
    printf("usage: perflab scenario fullstack [options]\n\n"
           "Runs the arc in one go, each phase a perflab process of its own writing into one folder,\n"
           "<artifacts-dir>/scenario-<run_id>/: hw; peak --quick; the quick suite (run); the e2e: targets when this\n"
           "build has them; moe-readiness with 2 GPUs or more; a short serve sweep (64 requests, 512 in / 128 out,\n"
           "rates 2, 8, inf). Then one page, summary.md and report.json: each phase's status (ok, failed, skipped,\n"
           "no_gpu) and headline figures. A phase that fails is a status, not the end.\n\noptions:\n");
    pl_options_help(stdout, opts);
    printf("\nexit codes: 0 every phase that could run passed; 1 a phase failed; 2 bad usage; 3 no phase could run\n"
           "on a GPU (no usable GPU); 130 interrupted (the page holds what finished).\n");
}

int pl_cmd_scenario(int argc, char **argv)
{
    pl_scenario_options o = {.artifacts_dir = "artifacts", .phase_timeout_s = 3600, .serve_model = "llama3-8b"};
    int help = 0, json = 0;
    const pl_option opts[] = {
        {"device", 'd', PL_OPT_INT, &o.device, "N", "the GPU of the one-GPU phases (default 0)", 0, 1024},
        {"phase-timeout-s", 0, PL_OPT_DOUBLE, &o.phase_timeout_s, "S", "kill a phase after S seconds (default 3600)", 1,
         86400},
        {"serve-model", 0, PL_OPT_STRING, &o.serve_model, "NAME", "the serve sweep's model (default llama3-8b)", 0, 0},
        {"artifacts-dir", 0, PL_OPT_STRING, &o.artifacts_dir, "D",
         "where the scenario folder goes (default ./artifacts)", 0, 0},
        {"json", 0, PL_OPT_FLAG, &json, NULL, "print report.json to stdout instead of the page", 0, 0},
        {"quiet", 'q', PL_OPT_FLAG, &o.quiet, NULL, "no progress on stderr", 0, 0},
        {"help", 'h', PL_OPT_FLAG, &help, NULL, "show this help", 0, 0},
        {0},
    };
    pl_strlist pos = {0};
    char err[1024];
    if (pl_options_parse("scenario", opts, argc, argv, &pos, err, sizeof err) != 0)
        return pl_usage_error("scenario", err);
    if (help) {
        usage(opts);
        pl_strlist_free(&pos);
        return PL_EXIT_OK;
    }
    int rc = 0;
    if (pos.n != 1 || strcmp(pos.items[0], "fullstack") != 0) {
        pl_snprintf(err, sizeof err, "%s%s%s; the one scenario is fullstack (perflab scenario fullstack)",
                    pos.n ? "unknown scenario '" : "needs a scenario", pos.n ? PL_ESC(pos.items[0]) : "",
                    pos.n ? "'" : "");
        rc = -1;
    }
    pl_strlist_free(&pos);
    if (rc == 0 && !pl_dir_usable(o.artifacts_dir, "artifacts directory", "--artifacts-dir", err, sizeof err))
        rc = -1;
    if (rc != 0)
        return pl_usage_error("scenario", err);
    pl_scenario s;
    pl_child_install_interrupt_handler();
    int rc_run = pl_scenario_fullstack(&o, &s, err, sizeof err);
    if (rc_run != 0) {
        pl_scenario_free(&s);
        if (rc_run == -2)
            return pl_usage_error("scenario", err);
        fprintf(stderr, "perflab scenario: %s\n", err);
        return PL_EXIT_FAILED;
    }
    if (json) {
        json_t *doc = pl_scenario_report_json(&s);
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        puts(text);
        free(text);
        json_decref(doc);
    } else {
        char *md = pl_scenario_summary_md(&s);
        fputs(md, stdout);
        printf("\npage: %s/summary.md, %s/report.json\n", PL_ESC(s.dir), PL_ESC(s.dir));
        free(md);
    }
    int code = s.exit_code;
    pl_scenario_free(&s);
    return code;
}
