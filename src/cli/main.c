/* perflab: a GPU performance-engineering lab. `perflab <verb> [options]`, git-style. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "core/ncu.h"
#include "core/target_child.h"
#include "core/util.h"
#include "labs.h"
#include "perflab_build_info.h"

int pl_cli_argc;
char **pl_cli_argv;

typedef struct verb {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
} verb;

static const verb verbs[] = {
    {"list", pl_cmd_list, "the targets: summary, variants, requirements, parameters"},
    {"run", pl_cmd_run, "verify and time targets (default: the quick suite); table + artifacts"},
    {"verify", pl_cmd_verify, "run every variant once, verified, untimed"},
    {"compare", pl_cmd_compare, "compare two runs: per variant, the change and a noise-aware verdict"},
    {"expectations", pl_cmd_expectations, "check, show, compare with or update the per-GPU expectations"},
    {"hw", pl_cmd_hw, "the GPUs: inventory, clocks, links, topology (CUDA runtime + NVML)"},
    {"probe", pl_cmd_probe, "feature probes (clusters, TMA, wgmma, tcgen05, FP8, cooperative launch)"},
    {"peak", pl_cmd_peak, "measured ceilings vs the datasheet; stored for --profile roofline"},
    {"comm", pl_cmd_comm, "NCCL collective sweeps (nccl-tests semantics): p50/p99 latency, algbw, busbw"},
    {"moe-readiness", pl_cmd_moe, "skewed all-to-all over sizes x skews against SLOs: report, heatmaps, verdict"},
    {"gemm", pl_cmd_gemm, "pick the fastest GEMM per shape: cuBLAS, cuBLASLt, perflab, CUTLASS, JSON files"},
    {"calc", pl_cmd_calc, "calculators: kv-cache sizing, cost per token, precision of each dtype (no GPU needed)"},
    {"report", pl_cmd_report, "one self-contained report.html over runs, gemm, comm, moe-readiness, profile folders"},
    {"profile", pl_cmd_profile, "Nsight Compute report of a target's variants (fixed metric set) and findings"},
    {"serve", pl_cmd_serve, "serving benchmark on the engine: TTFT/TPOT/ITL percentiles, tok/s, J/token, SLO gate"},
    {"scenario", pl_cmd_scenario, "scenario fullstack: hw, peak, the quick suite, e2e, moe-readiness, serve; one page"},
};

/* The seed lab's names for perflab's verbs (its CLI's list-targets and `utils --tool NAME`): the verb, and its first
 * argument when the name stands for a subcommand. */
static const struct {
    const char *name, *verb, *sub;
} verb_aliases[] = {
    {"list-targets", "list", NULL},
    {"compare-precision", "calc", "precision"},
    {"dump-hw", "hw", NULL},
    {"probe-hw", "probe", NULL},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: perflab <verb> [options]      (perflab <verb> --help for a verb's options)\n"
                 "       perflab --version | --help\n\n"
                 "A GPU performance-engineering lab: verified baseline/optimized pairs timed with sound\n"
                 "statistics, artifacts you can compare, and per-GPU expectations for CI.\n\nverbs:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-14s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\nthe seed lab's names for verbs:\n");
    for (size_t i = 0; i < sizeof verb_aliases / sizeof verb_aliases[0]; i++)
        fprintf(out, "  %-18s perflab %s%s%s\n", verb_aliases[i].name, verb_aliases[i].verb,
                verb_aliases[i].sub ? " " : "", verb_aliases[i].sub ? verb_aliases[i].sub : "");
    fprintf(out, "\noptions:\n"
                 "  --version      the version and the git commit it was built from\n"
                 "  -h, --help     this help\n");
    fprintf(out, "\nexit codes:\n"
                 "  0    success\n"
                 "  1    a target failed, failed verification, regressed or an SLO was missed\n"
                 "  2    bad usage or bad input file\n"
                 "  3    no usable GPU or driver for a verb that needs one\n"
                 "  130  interrupted (Ctrl-C); the artifacts hold what finished\n");
}

int main(int argc, char **argv)
{
    pl_cli_argc = argc;
    pl_cli_argv = argv;
    pl_labs_register_all();
    if (argc < 2) {
        fprintf(stderr, "perflab: needs a verb (e.g. perflab run); 'perflab --help' lists them\n");
        return PL_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return PL_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
        printf("perflab %s (%s)\n", PERFLAB_VERSION, PERFLAB_GIT_COMMIT);
        return PL_EXIT_OK;
    }
    if (strcmp(name, "__ncu-replay") == 0) /* perflab's own: the process a profiler launches (core/ncu.h) */
        return pl_ncu_replay_main(argc - 2, argv + 2);
    if (strcmp(name, "__run-target") == 0) /* perflab's own: a target's process under --exec-children (core/child.h) */
        return pl_child_target_main(argc - 2, argv + 2);
    char *shifted[256]; /* an alias with a subcommand: perflab verb sub args... */
    for (size_t i = 0; i < sizeof verb_aliases / sizeof verb_aliases[0]; i++) {
        if (strcmp(name, verb_aliases[i].name) != 0)
            continue;
        name = verb_aliases[i].verb;
        if (verb_aliases[i].sub && argc + 1 < (int)(sizeof shifted / sizeof shifted[0])) {
            shifted[0] = argv[0];
            shifted[1] = (char *)name;
            shifted[2] = (char *)verb_aliases[i].sub;
            memcpy(shifted + 3, argv + 2, (size_t)(argc - 2) * sizeof *argv);
            shifted[++argc] = NULL;
            argv = shifted;
        }
        break;
    }
    const char *names[sizeof verbs / sizeof verbs[0]];
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        if (strcmp(name, verbs[i].name) == 0)
            return verbs[i].main(argc - 2, argv + 2);
        names[i] = verbs[i].name;
    }
    char sugg[128];
    if (pl_suggest(name, names, sizeof verbs / sizeof verbs[0], 2, sugg, sizeof sugg) > 0)
        fprintf(stderr, "perflab: unknown verb '%s' (did you mean %s?); 'perflab --help' lists them\n", PL_ESC(name),
                sugg);
    else
        fprintf(stderr, "perflab: unknown verb '%s'; 'perflab --help' lists them\n", PL_ESC(name));
    return PL_EXIT_USAGE;
}
