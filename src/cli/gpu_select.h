/* What every GPU verb does first: find the GPUs in a child process and check --device against them. */
#ifndef PERFLAB_CLI_GPU_SELECT_H
#define PERFLAB_CLI_GPU_SELECT_H

#include "core/devprobe.h"

/* PL_EXIT_OK with *inv filled; otherwise one line on stderr and the exit code (3: no usable GPU, 2: --device out
 * of range; *inv is then freed). device < 0 accepts any. */
int pl_cli_find_gpus(const char *verb, int device, pl_gpu_inventory *inv);

#endif
