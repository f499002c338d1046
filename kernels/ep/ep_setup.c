/* The EP kernels' setup in one process (ep.h): staging buffers, expert output buffers and flags on every GPU, peer
 * access between every pair, the peer pointers in every rank's struct. */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common/peer_access.h"
#include "ep/ep.h"

#define FLAG_BYTES ((size_t)PL_EP_KMAX_RANKS * PL_EP_MAX_CTAS * sizeof(unsigned))

static int fail(const char *what, int device, cudaError_t e, char *err, size_t errlen)
{
    snprintf(err, errlen, "EP setup: %s on GPU %d: %s", what, device, cudaGetErrorString(e));
    return -1;
}

static int setup_rank(pl_ep_rank *ranks, int nranks, const int *devices, int i, char *err, size_t errlen)
{
    cudaError_t e = cudaSetDevice(devices[i]);
    if (e != cudaSuccess)
        return fail("cudaSetDevice", devices[i], e, err, errlen);
    if (pl_peer_enable(devices, nranks, i, "EP setup", "use the NCCL variant on this machine", err, errlen) != 0)
        return -1;
    void *p = NULL;
    if ((e = cudaMalloc(&p, 2 * ranks[0].stage_bytes)) != cudaSuccess)
        return fail("cudaMalloc of the staging buffer", devices[i], e, err, errlen);
    ranks[0].stage[i] = p; /* recorded at once, so that a failure below frees it */
    if ((e = cudaMalloc(&p, ranks[0].out_bytes)) != cudaSuccess)
        return fail("cudaMalloc of the expert output buffer", devices[i], e, err, errlen);
    ranks[0].expert_out[i] = p;
    if ((e = cudaMalloc(&p, FLAG_BYTES)) != cudaSuccess)
        return fail("cudaMalloc of the flags", devices[i], e, err, errlen);
    ranks[0].flags[i] = p;
    if ((e = cudaMemset(p, 0, FLAG_BYTES)) != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess)
        return fail("zeroing the flags", devices[i], e, err, errlen);
    return 0;
}

int pl_ep_setup(pl_ep_rank *ranks, int nranks, const int *devices, size_t stage_bytes, size_t out_bytes, char *err,
                size_t errlen)
{
    if (nranks < 2 || nranks > PL_EP_KMAX_RANKS) {
        snprintf(err, errlen, "EP setup: %d ranks: use 2 to %d", nranks, PL_EP_KMAX_RANKS);
        return -1;
    }
    int prev = 0;
    cudaGetDevice(&prev);
    memset(ranks, 0, (size_t)nranks * sizeof *ranks);
    ranks[0].stage_bytes = (stage_bytes + 255) & ~(size_t)255; /* each half starts 256-byte aligned */
    ranks[0].out_bytes = (out_bytes + 255) & ~(size_t)255;
    if (ranks[0].stage_bytes == 0)
        ranks[0].stage_bytes = 256;
    if (ranks[0].out_bytes == 0)
        ranks[0].out_bytes = 256;
    int rc = 0;
    for (int i = 0; i < nranks && rc == 0; i++)
        rc = setup_rank(ranks, nranks, devices, i, err, errlen);
    for (int i = 0; i < nranks; i++) {
        if (i > 0) {
            memcpy(ranks[i].stage, ranks[0].stage, sizeof ranks[0].stage);
            memcpy(ranks[i].expert_out, ranks[0].expert_out, sizeof ranks[0].expert_out);
            memcpy(ranks[i].flags, ranks[0].flags, sizeof ranks[0].flags);
        }
        ranks[i].rank = i;
        ranks[i].nranks = nranks;
        ranks[i].device = devices[i];
        ranks[i].stage_bytes = ranks[0].stage_bytes;
        ranks[i].out_bytes = ranks[0].out_bytes;
        ranks[i].epoch = 0;
    }
    cudaSetDevice(prev);
    if (rc != 0)
        pl_ep_teardown(ranks, nranks);
    return rc;
}

void pl_ep_teardown(pl_ep_rank *ranks, int nranks)
{
    if (nranks < 1 || nranks > PL_EP_KMAX_RANKS)
        return;
    int prev = 0;
    cudaGetDevice(&prev);
    for (int i = 0; i < nranks; i++) {
        if (ranks[0].stage[i] || ranks[0].expert_out[i] || ranks[0].flags[i]) {
            cudaSetDevice(ranks[i].device);
            cudaFree(ranks[0].stage[i]);
            cudaFree(ranks[0].expert_out[i]);
            cudaFree(ranks[0].flags[i]);
        }
    }
    cudaSetDevice(prev);
    memset(ranks, 0, (size_t)nranks * sizeof *ranks);
}
