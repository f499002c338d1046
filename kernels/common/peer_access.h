/* Peer access between the GPUs of one process (one thread per GPU), for kernels that read and write each other's
 * memory through peer pointers (kernels/allreduce, kernels/ep). */
#ifndef PERFLAB_KERNELS_PEER_ACCESS_H
#define PERFLAB_KERNELS_PEER_ACCESS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* With devices[i] current: enable its access to every other device of devices[0..n-1] (already enabled is fine).
 * 0, or -1 with one line in err naming `what` (the caller, e.g. "all-reduce setup") and the pair without peer access,
 * and the fix `instead` (e.g. "use NCCL's all-reduce on this machine"). */
int pl_peer_enable(const int *devices, int n, int i, const char *what, const char *instead, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
