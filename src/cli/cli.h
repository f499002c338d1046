/* The verbs of the perflab command. Each takes the arguments after its name and returns the exit code. */
#ifndef PERFLAB_CLI_CLI_H
#define PERFLAB_CLI_CLI_H

#include "perflab/target.h"

int pl_cmd_list(int argc, char **argv);
int pl_cmd_run(int argc, char **argv);
int pl_cmd_verify(int argc, char **argv);
int pl_cmd_compare(int argc, char **argv);
int pl_cmd_expectations(int argc, char **argv);
int pl_cmd_hw(int argc, char **argv);
int pl_cmd_probe(int argc, char **argv);
int pl_cmd_peak(int argc, char **argv);
int pl_cmd_comm(int argc, char **argv);
int pl_cmd_moe(int argc, char **argv);
int pl_cmd_gemm(int argc, char **argv);
int pl_cmd_profile(int argc, char **argv);
int pl_cmd_report(int argc, char **argv);
int pl_cmd_calc(int argc, char **argv);
int pl_cmd_serve(int argc, char **argv);
int pl_cmd_scenario(int argc, char **argv);

/* The whole command line, for provenance. */
extern int pl_cli_argc;
extern char **pl_cli_argv;

/* "GPU sm_90+, wgmma" or "host only". */
const char *pl_requirements_text(const pl_requirements *r, char *buf, size_t len);

#endif
