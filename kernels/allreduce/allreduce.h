/* A bf16 sum all-reduce over NVLink peer pointers, for the small messages of a tensor-parallel decode step (64 tokens ×
 * 8192 × 2 B = 1 MiB): every rank's GPU reads its peers' buffers directly, synchronised by flags in device memory,
 * with no host synchronisation and no NCCL.
 *
 *   one-shot: each rank copies its input into its registered buffer, then reads every rank's buffer and sums them
 *             (N reads of the whole message per rank: the fewest steps, the most traffic; best for small messages);
 *   two-shot: a reduce-scatter then an all-gather through the peers: rank r sums chunk r of every rank's buffer into
 *             its own buffer, then every rank copies chunk q from rank q (2 reads of the message per rank).
 *
 * Every element is summed in fp32 in the fixed rank order 0, 1, ..., N-1 (then the residual, when given) and rounded
 * to bf16 once, by one rank (two-shot) or by every rank the same way (one-shot): every rank gets bit-identical
 * results, and one-shot and two-shot give the same bits.
 *
 * Setup (pl_ar_setup): one process, a thread per GPU (the fabric verbs' threaded way). Each rank's registered buffer
 * (two halves of `capacity` bytes, used by alternate calls) and flags are allocated once on its GPU, peer access is
 * enabled between every pair (cudaDeviceEnablePeerAccess) and the peer pointers are exchanged in the ranks' structs.
 * Up to PL_AR_MAX_RANKS ranks; nothing assumes a particular count.
 *
 * Calls: every rank makes the same sequence of calls (the same n each time), each rank's calls ordered on one stream
 * (stream order is what lets a buffer half be reused two calls later: see allreduce.cu). A call is one kernel; it
 * never synchronises the host. Not capturable into a CUDA graph (the call's epoch is a kernel argument a replay
 * would repeat): a call on a capturing stream returns cudaErrorStreamCaptureUnsupported. */
#ifndef PERFLAB_ALLREDUCE_H
#define PERFLAB_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_AR_MAX_RANKS 8
/* CTAs of one call at most (flags are per CTA); 512 threads each */
#define PL_AR_MAX_CTAS 64

typedef enum pl_ar_algo {
    PL_AR_ONESHOT = 0,
    PL_AR_TWOSHOT = 1,
} pl_ar_algo;

/* One rank's view: its own buffer and flags, and every rank's (peer pointers, its own at [rank]). */
typedef struct pl_ar_rank {
    int rank, nranks, device;
    size_t capacity;                  /* bytes of one half of each buffer: the largest message */
    uint16_t *buf[PL_AR_MAX_RANKS];   /* every rank's buffer (2 halves), bf16 */
    unsigned *flags[PL_AR_MAX_RANKS]; /* every rank's flags */
    unsigned epoch;                   /* calls made so far (host side; the next call's epoch is epoch + 1) */
} pl_ar_rank;

/* Allocates on each device devices[r] its buffer (2 · capacity bytes) and flags (zeroed), enables peer access between
 * every pair of devices and fills ranks[0..nranks-1]. Call it from one thread before the ranks' threads start; it
 * leaves the calling thread's current device as it found it. 0, or -1 with one line in err (nothing left allocated):
 * nranks outside 2..PL_AR_MAX_RANKS, a pair of GPUs without peer access (name them), a CUDA call failing. */
int pl_ar_setup(pl_ar_rank *ranks, int nranks, const int *devices, size_t capacity, char *err, size_t errlen);
void pl_ar_teardown(pl_ar_rank *ranks, int nranks);

/* out[i] = bf16(Σ over ranks r in order of in_r[i] (+ residual[i])) for i < n, on every rank; n ≥ 1, n · 2 ≤
 * capacity. Call with the rank's device current. out may be in or residual (in place); in, out and residual need no
 * alignment (16-byte aligned ones take 16-byte accesses). residual may be NULL; when given it must hold the same
 * values on every rank for the results to be identical across ranks (two-shot adds the chunk owner's). Returns the
 * launch's error; cudaErrorInvalidValue for a bad size or rank. */
cudaError_t pl_ar_allreduce(pl_ar_rank *r, pl_ar_algo algo, const uint16_t *in, uint16_t *out, size_t n,
                            const uint16_t *residual, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
