/* The all-reduce's setup in one process (allreduce.h): buffers and flags on every GPU, peer access between every
 * pair, the peer pointers in every rank's struct. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "allreduce/allreduce.h"
#include "common/peer_access.h"

/* Flag words of one rank: 2 barriers × PL_AR_MAX_CTAS × PL_AR_MAX_RANKS (allreduce.cu's flag_index). */
#define FLAG_BYTES ((size_t)2 * PL_AR_MAX_CTAS * PL_AR_MAX_RANKS * sizeof(unsigned))

static int fail(const char *what, int device, cudaError_t e, char *err, size_t errlen)
{
    snprintf(err, errlen, "all-reduce setup: %s on GPU %d: %s", what, device, cudaGetErrorString(e));
    return -1;
}

static int setup_rank(pl_ar_rank *ranks, int nranks, const int *devices, int i, char *err, size_t errlen)
{
    cudaError_t e = cudaSetDevice(devices[i]);
    if (e != cudaSuccess)
        return fail("cudaSetDevice", devices[i], e, err, errlen);
    if (pl_peer_enable(devices, nranks, i, "all-reduce setup", "use NCCL's all-reduce on this machine", err, errlen) !=
        0)
        return -1;
    void *buf = NULL, *flags = NULL;
    if ((e = cudaMalloc(&buf, 2 * ranks[0].capacity)) != cudaSuccess)
        return fail("cudaMalloc of the buffer", devices[i], e, err, errlen);
    ranks[0].buf[i] = buf; /* recorded at once, so that a failure below frees it */
    if ((e = cudaMalloc(&flags, FLAG_BYTES)) != cudaSuccess)
        return fail("cudaMalloc of the flags", devices[i], e, err, errlen);
    ranks[0].flags[i] = flags;
    if ((e = cudaMemset(flags, 0, FLAG_BYTES)) != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess)
        return fail("zeroing the flags", devices[i], e, err, errlen);
    return 0;
}

int pl_ar_setup(pl_ar_rank *ranks, int nranks, const int *devices, size_t capacity, char *err, size_t errlen)
{
    if (nranks < 2 || nranks > PL_AR_MAX_RANKS || capacity == 0) {
        snprintf(err, errlen, "all-reduce setup: %d ranks and %zu bytes: use 2 to %d ranks and a capacity >= 2 bytes",
                 nranks, capacity, PL_AR_MAX_RANKS);
        return -1;
    }
    int prev = 0;
    cudaGetDevice(&prev);
    memset(ranks, 0, (size_t)nranks * sizeof *ranks);
    ranks[0].nranks = nranks;
    ranks[0].capacity = (capacity + 255) & ~(size_t)255; /* each half starts 256-byte aligned */
    int rc = 0;
    for (int i = 0; i < nranks && rc == 0; i++)
        rc = setup_rank(ranks, nranks, devices, i, err, errlen);
    for (int i = 1; i < nranks; i++) {
        memcpy(ranks[i].buf, ranks[0].buf, sizeof ranks[0].buf);
        memcpy(ranks[i].flags, ranks[0].flags, sizeof ranks[0].flags);
    }
    for (int i = 0; i < nranks; i++) {
        ranks[i].rank = i;
        ranks[i].nranks = nranks;
        ranks[i].device = devices[i];
        ranks[i].capacity = ranks[0].capacity;
        ranks[i].epoch = 0;
    }
    cudaSetDevice(prev);
    if (rc != 0)
        pl_ar_teardown(ranks, nranks);
    return rc;
}

void pl_ar_teardown(pl_ar_rank *ranks, int nranks)
{
    if (nranks < 1 || nranks > PL_AR_MAX_RANKS)
        return;
    int prev = 0;
    cudaGetDevice(&prev);
    for (int i = 0; i < nranks; i++) {
        if (ranks[0].buf[i] || ranks[0].flags[i]) {
            cudaSetDevice(ranks[i].device);
            cudaFree(ranks[0].buf[i]);
            cudaFree(ranks[0].flags[i]);
        }
    }
    cudaSetDevice(prev);
    memset(ranks, 0, (size_t)nranks * sizeof *ranks);
}
