/* The data movement of expert parallelism (a MoE layer with its experts spread over GPUs), over NVLink peer pointers
 * or beside NCCL: rows of `hidden` bf16 elements (hidden a multiple of 8: rows move 16 bytes at a time), placed by
 * row tables that the caller computed (comm/ep_plan.h says what each table holds).
 *
 *   pl_ep_gather_rows:  dst[i] = src[src_row[i]], locally (the NCCL path's pack before and expand after an
 *                       all-to-allv, and the combine's pack);
 *   pl_ep_dispatch_peer: one kernel: every row this rank sends is written straight into its destination's staging
 *                       buffer through a peer pointer, every rank signals every other and waits for all of them
 *                       (flags in device memory, no host synchronisation), then the rank expands its staging rows into
 *                       its expert-major receive buffer;
 *   pl_ep_combine:      out[t] = bf16(Σ_j weight[t·k + j] · row j of token t), the sum in fp32 in the order j = 0..k-1,
 *                       the rows read from a local buffer (the NCCL path, after the all-to-allv) ...
 *   pl_ep_combine_peer: ... or straight from the expert ranks' output buffers through peer pointers, after every rank
 *                       signalled that its expert outputs are written (one kernel, no host synchronisation).
 *
 * Setup (pl_ep_setup): one process, a thread per GPU. Each rank's staging buffer (two halves, used by alternate calls),
 * expert output buffer and flags are allocated once on its GPU, peer access is enabled between every pair and the
 * peer pointers are exchanged in the ranks' structs. Up to PL_EP_KMAX_RANKS ranks; nothing assumes a count.
 *
 * The peer calls: every rank makes the same sequence of calls with the same `ctas`, each rank's calls ordered on one
 * stream (kernels/ep/ep.cu gives the ordering argument). Not capturable into a CUDA graph (the call's epoch is a kernel
 * argument): a call on a capturing stream returns cudaErrorStreamCaptureUnsupported. */
#ifndef PERFLAB_EP_H
#define PERFLAB_EP_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PL_EP_KMAX_RANKS 8
/* CTAs of one peer call at most (flags are per CTA, and every CTA of every rank must be resident at once): 512 threads
 * each, 64 of them fit an H100/H200's 132 SMs with room to spare. */
#define PL_EP_MAX_CTAS 64

typedef struct pl_ep_rank {
    int rank, nranks, device;
    size_t stage_bytes;                     /* one half of each staging buffer */
    size_t out_bytes;                       /* each expert output buffer */
    uint16_t *stage[PL_EP_KMAX_RANKS];      /* every rank's staging buffer (two halves), bf16 */
    uint16_t *expert_out[PL_EP_KMAX_RANKS]; /* every rank's expert outputs (expert-major rows), bf16 */
    unsigned *flags[PL_EP_KMAX_RANKS];      /* every rank's flags: [PL_EP_KMAX_RANKS][PL_EP_MAX_CTAS] */
    unsigned epoch;                         /* peer calls made so far */
} pl_ep_rank;

/* Allocates on each devices[r] its staging buffer (2 · stage_bytes), expert output buffer (out_bytes) and flags
 * (zeroed), enables peer access between every pair and fills ranks[0..nranks-1]. From one thread before the ranks'
 * threads start; the calling thread's device is left as found. 0, or -1 with one line in err (nothing left allocated):
 * nranks outside 2..PL_EP_KMAX_RANKS, a pair without peer access (named), a CUDA call failing. */
int pl_ep_setup(pl_ep_rank *ranks, int nranks, const int *devices, size_t stage_bytes, size_t out_bytes, char *err,
                size_t errlen);
void pl_ep_teardown(pl_ep_rank *ranks, int nranks);

/* dst[i · hidden ...] = src[src_row[i] · hidden ...] for i < rows (rows may be 0: nothing is launched). */
cudaError_t pl_ep_gather_rows(uint16_t *dst, const uint16_t *src, const int *src_row, int rows, int hidden,
                              cudaStream_t stream);

/* The peer dispatch of rank r: row i < send_rows (token send_token[i] of x) goes to row send_dest_row[i] of rank
 * send_dest[i]'s staging half of this call; after every rank's rows landed, recv[i] = own staging row
 * recv_stage_row[i] for i < recv_rows. stage_rows: the most staging rows of any rank (checked against the capacity).
 * ctas: 1..PL_EP_MAX_CTAS, the same on every rank for the call. */
cudaError_t pl_ep_dispatch_peer(pl_ep_rank *r, const uint16_t *x, int hidden, int send_rows, const int *send_token,
                                const int *send_dest, const int *send_dest_row, int stage_rows, uint16_t *recv,
                                int recv_rows, const int *recv_stage_row, int ctas, cudaStream_t stream);

/* out[t] for t < tokens from rows[row[t · topk + j]] of a local buffer. */
cudaError_t pl_ep_combine(const uint16_t *rows, const int *row, const float *weight, int tokens, int topk, int hidden,
                          uint16_t *out, cudaStream_t stream);

/* out[t] for t < tokens from row pull_row[t · topk + j] of rank pull_rank[t · topk + j]'s expert output buffer, read
 * once every rank arrived (its expert outputs written before the call, in its stream order). out_rows: the most
 * expert-major rows of any rank (checked against the capacity). ctas as for the dispatch. */
cudaError_t pl_ep_combine_peer(pl_ep_rank *r, const int *pull_rank, const int *pull_row, const float *weight,
                               int tokens, int topk, int hidden, int out_rows, uint16_t *out, int ctas,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
