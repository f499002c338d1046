/* What the multi-GPU tests share (test_engine_tp, test_allreduce_gpu): how many GPUs the machine has without a CUDA
 * context in the test process, whether they reach each other's memory, and a thread per rank. */
#ifndef PERFLAB_TESTS_MULTIGPU_H
#define PERFLAB_TESTS_MULTIGPU_H

#include <stddef.h>

/* The GPUs of this machine (a probe in a child process: no CUDA context here, so that Check's forked tests can make
 * their own). Below `need` it prints "SKIP: <what> needs N or more GPUs; this machine has M" and returns 0. */
int pl_test_gpu_count(int need, const char *what);

/* 1 when each of GPUs 0..n-1 can access every other's memory; else 0 with the first pair in why. */
int pl_test_peers_ok(int n, char *why, size_t whylen);

/* fn(args + r·arg_size) on a thread for each rank r < n, joined. */
void pl_test_on_ranks(int n, void *(*fn)(void *), void *args, size_t arg_size);

#endif
