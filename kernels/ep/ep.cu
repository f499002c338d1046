/* Expert-parallel dispatch and combine kernels (ep.h).
 *
 * Work split. A row is moved by one warp, 16 bytes a lane, four loads in flight before their stores; rows are dealt
 * to the grid's warps round-robin. A combine work item is 8 elements (16 bytes) of one token's output: its k rows'
 * packs loaded, weighted and summed in fp32 in the order j = 0..k-1, rounded to bf16 once.
 *
 * The barrier of a peer call. Rank p's flags are [PL_EP_KMAX_RANKS][PL_EP_MAX_CTAS] words; CTA b of rank r arrives at
 * call e by writing e into word [r][b] of every rank's flags, and every CTA of every rank waits until word [q][c] of
 * its own flags holds at least e for every rank q and CTA c < gridDim.x: each rank's later phase reads rows any CTA of
 * any rank wrote, so every CTA waits for all of them (grids are small: at most 8 · 64 words to poll, one a thread).
 * Epochs only grow (the calls' sequence is the same on every rank; compared as (int)(flag - e) >= 0, so a 32-bit wrap
 * is harmless), so a stale flag never satisfies a later wait. Memory ordering as in kernels/allreduce/allreduce.cu:
 * the CTA's stores, __syncthreads(), then the signalling threads' __threadfence_system() (cumulative) and
 * st.release.sys; the waiting threads' ld.acquire.sys, __threadfence_system(), __syncthreads(). Rows written by peers
 * are read with ld.global.cg (L2, never a stale L1 line).
 *
 * Reuse. The dispatch writes half e % 2 of the peers' staging buffers in call e. A rank can be at most one call ahead
 * of another (its call e + 1 waits for every rank's arrival at e + 1), so the fast rank writes the other half from the
 * one a slow rank is still expanding; half e % 2 is written again in call e + 2 only after every rank arrived at
 * e + 1, i.e. finished call e (stream order). The combine reads the peers' expert outputs after every rank arrived:
 * each had written them earlier in its stream; a rank rewrites its expert outputs only after a later dispatch's
 * barrier, which every reader passes only after finishing this combine.
 *
 * A wait that lasts PL_EP_TIMEOUT_NS (a peer that never arrives: a crashed rank, mismatched calls) prints the rank, CTA
 * and call and traps, so a test fails instead of hanging. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "common/sys_flags.cuh"
#include "ep/ep.h"

#define THREADS          512
#define WARPS            (THREADS / 32)
#define UNROLL           4
#define PL_EP_TIMEOUT_NS 30000000000ull /* 30 s: far beyond any launch skew, compute-sanitizer's included */

/* ---- rows ---- */

/* One warp copies a row of `chunks` 16-byte chunks. */
__device__ __forceinline__ void copy_row(uint4 *dst, const uint4 *src, int chunks)
{
    const int lane = threadIdx.x & 31;
    for (int c = lane; c < chunks; c += 32 * UNROLL) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (c + u * 32 < chunks)
                v[u] = __ldcg(src + c + u * 32);
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (c + u * 32 < chunks)
                dst[c + u * 32] = v[u];
    }
}

__device__ __forceinline__ int global_warp()
{
    return (int)(blockIdx.x * WARPS + threadIdx.x / 32);
}

__device__ __forceinline__ uint4 *row_at(const uint16_t *base, long long row, int hidden)
{
    return (uint4 *)(base + row * (long long)hidden);
}

__global__ void __launch_bounds__(THREADS)
    gather_kernel(uint16_t *dst, const uint16_t *src, const int *src_row, int rows, int hidden)
{
    for (int i = global_warp(); i < rows; i += gridDim.x * WARPS)
        copy_row(row_at(dst, i, hidden), row_at(src, src_row[i], hidden), hidden / 8);
}

/* ---- the barrier of a peer call ---- */

typedef struct ep_sync {
    unsigned *flags[PL_EP_KMAX_RANKS];
    int rank, nranks;
    unsigned epoch;
} ep_sync;

__device__ void all_ranks_barrier(const ep_sync &s)
{
    __syncthreads();
    const int t = threadIdx.x, ctas = (int)gridDim.x;
    if (t < s.nranks) {
        __threadfence_system();
        pl_st_release_sys(s.flags[t] + s.rank * PL_EP_MAX_CTAS + blockIdx.x, s.epoch);
    }
    for (int i = t; i < s.nranks * ctas; i += blockDim.x) {
        const unsigned *mine = s.flags[s.rank] + (i / ctas) * PL_EP_MAX_CTAS + i % ctas;
        const unsigned long long start = pl_globaltimer_ns();
        while ((int)(pl_ld_acquire_sys(mine) - s.epoch) < 0) {
            if (pl_globaltimer_ns() - start > PL_EP_TIMEOUT_NS) {
                printf("pl_ep: rank %d CTA %d waited 30 s in call %u for rank %d CTA %d\n", s.rank, (int)blockIdx.x,
                       s.epoch, i / ctas, i % ctas);
                __trap();
            }
            __nanosleep(64);
        }
    }
    __threadfence_system();
    __syncthreads();
}

/* ---- dispatch ---- */

typedef struct dispatch_args {
    ep_sync sync;
    uint16_t *stage[PL_EP_KMAX_RANKS]; /* this call's half of every rank's staging buffer */
    const uint16_t *x;
    const int *send_token, *send_dest, *send_dest_row, *recv_stage_row;
    uint16_t *recv;
    int hidden, send_rows, recv_rows;
} dispatch_args;

__global__ void __launch_bounds__(THREADS) dispatch_peer_kernel(dispatch_args a)
{
    const int chunks = a.hidden / 8;
    for (int i = global_warp(); i < a.send_rows; i += gridDim.x * WARPS)
        copy_row(row_at(a.stage[a.send_dest[i]], a.send_dest_row[i], a.hidden), row_at(a.x, a.send_token[i], a.hidden),
                 chunks);
    all_ranks_barrier(a.sync);
    const uint16_t *own = a.stage[a.sync.rank];
    for (int i = global_warp(); i < a.recv_rows; i += gridDim.x * WARPS)
        copy_row(row_at(a.recv, i, a.hidden), row_at(own, a.recv_stage_row[i], a.hidden), chunks);
}

/* ---- combine ---- */

typedef struct combine_args {
    ep_sync sync;
    const uint16_t *bufs[PL_EP_KMAX_RANKS]; /* the rows' buffers: one (local) or every rank's expert outputs */
    const int *row_rank;                    /* NULL: every row in bufs[0] */
    const int *row;
    const float *weight;
    uint16_t *out;
    int tokens, topk, hidden;
} combine_args;

__device__ void combine_rows(const combine_args &a)
{
    const int chunks = a.hidden / 8;
    const long long items = (long long)a.tokens * chunks;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < items;
         i += (long long)gridDim.x * blockDim.x) {
        const int t = (int)(i / chunks), c = (int)(i % chunks);
        float acc[8];
#pragma unroll
        for (int e = 0; e < 8; e++)
            acc[e] = 0.0f;
#pragma unroll 4
        for (int j = 0; j < a.topk; j++) {
            const long long slot = (long long)t * a.topk + j;
            const uint16_t *base = a.bufs[a.row_rank ? a.row_rank[slot] : 0];
            const uint4 v = __ldcg(row_at(base, a.row[slot], a.hidden) + c);
            const float w = a.weight[slot];
            const __nv_bfloat162 *h = (const __nv_bfloat162 *)&v;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float2 f = __bfloat1622float2(h[e]);
                acc[2 * e] += w * f.x;
                acc[2 * e + 1] += w * f.y;
            }
        }
        uint4 o;
        __nv_bfloat162 *oh = (__nv_bfloat162 *)&o;
#pragma unroll
        for (int e = 0; e < 4; e++)
            oh[e] = __floats2bfloat162_rn(acc[2 * e], acc[2 * e + 1]);
        row_at(a.out, t, a.hidden)[c] = o;
    }
}

__global__ void __launch_bounds__(THREADS) combine_kernel(combine_args a)
{
    combine_rows(a);
}

__global__ void __launch_bounds__(THREADS) combine_peer_kernel(combine_args a)
{
    all_ranks_barrier(a.sync);
    combine_rows(a);
}

/* ---- the launchers ---- */

static int blocks_for(long long work, long long per_block)
{
    long long b = (work + per_block - 1) / per_block;
    return b < 1 ? 1 : b > 1024 ? 1024 : (int)b;
}

static cudaError_t refuse_capture(cudaStream_t stream)
{
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &capturing);
    if (e != cudaSuccess)
        return e;
    return capturing != cudaStreamCaptureStatusNone ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

static int rank_ok(const pl_ep_rank *r, int hidden, int ctas)
{
    return r && r->nranks >= 2 && r->nranks <= PL_EP_KMAX_RANKS && r->rank >= 0 && r->rank < r->nranks && hidden >= 8 &&
           hidden % 8 == 0 && ctas >= 1 && ctas <= PL_EP_MAX_CTAS;
}

static ep_sync sync_for(pl_ep_rank *r, unsigned epoch)
{
    ep_sync s;
    for (int q = 0; q < PL_EP_KMAX_RANKS; q++)
        s.flags[q] = q < r->nranks ? r->flags[q] : NULL;
    s.rank = r->rank;
    s.nranks = r->nranks;
    s.epoch = epoch;
    return s;
}

extern "C" cudaError_t pl_ep_gather_rows(uint16_t *dst, const uint16_t *src, const int *src_row, int rows, int hidden,
                                         cudaStream_t stream)
{
    if (rows < 0 || hidden < 8 || hidden % 8 != 0 || (rows > 0 && (!dst || !src || !src_row)))
        return cudaErrorInvalidValue;
    if (rows == 0)
        return cudaSuccess;
    gather_kernel<<<blocks_for(rows, WARPS), THREADS, 0, stream>>>(dst, src, src_row, rows, hidden);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_ep_dispatch_peer(pl_ep_rank *r, const uint16_t *x, int hidden, int send_rows,
                                           const int *send_token, const int *send_dest, const int *send_dest_row,
                                           int stage_rows, uint16_t *recv, int recv_rows, const int *recv_stage_row,
                                           int ctas, cudaStream_t stream)
{
    if (!rank_ok(r, hidden, ctas) || send_rows < 0 || recv_rows < 0 || stage_rows < 0 ||
        (size_t)stage_rows * (size_t)hidden * 2 > r->stage_bytes)
        return cudaErrorInvalidValue;
    cudaError_t e = refuse_capture(stream);
    if (e != cudaSuccess)
        return e;
    const unsigned epoch = r->epoch + 1;
    const size_t half = (size_t)(epoch & 1u) * (r->stage_bytes / 2); /* in elements */
    dispatch_args a;
    a.sync = sync_for(r, epoch);
    for (int q = 0; q < PL_EP_KMAX_RANKS; q++)
        a.stage[q] = q < r->nranks ? r->stage[q] + half : NULL;
    a.x = x;
    a.send_token = send_token;
    a.send_dest = send_dest;
    a.send_dest_row = send_dest_row;
    a.recv_stage_row = recv_stage_row;
    a.recv = recv;
    a.hidden = hidden;
    a.send_rows = send_rows;
    a.recv_rows = recv_rows;
    dispatch_peer_kernel<<<ctas, THREADS, 0, stream>>>(a);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        r->epoch = epoch;
    return e;
}

static combine_args combine_common(const int *row, const float *weight, int tokens, int topk, int hidden, uint16_t *out)
{
    combine_args a;
    memset(&a, 0, sizeof a);
    a.row = row;
    a.weight = weight;
    a.out = out;
    a.tokens = tokens;
    a.topk = topk;
    a.hidden = hidden;
    return a;
}

extern "C" cudaError_t pl_ep_combine(const uint16_t *rows, const int *row, const float *weight, int tokens, int topk,
                                     int hidden, uint16_t *out, cudaStream_t stream)
{
    if (tokens < 1 || topk < 1 || hidden < 8 || hidden % 8 != 0 || !rows || !row || !weight || !out)
        return cudaErrorInvalidValue;
    combine_args a = combine_common(row, weight, tokens, topk, hidden, out);
    a.bufs[0] = rows;
    combine_kernel<<<blocks_for((long long)tokens * (hidden / 8), THREADS), THREADS, 0, stream>>>(a);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_ep_combine_peer(pl_ep_rank *r, const int *pull_rank, const int *pull_row, const float *weight,
                                          int tokens, int topk, int hidden, int out_rows, uint16_t *out, int ctas,
                                          cudaStream_t stream)
{
    if (!rank_ok(r, hidden, ctas) || tokens < 1 || topk < 1 || out_rows < 0 ||
        (size_t)out_rows * (size_t)hidden * 2 > r->out_bytes || !pull_rank || !pull_row || !weight || !out)
        return cudaErrorInvalidValue;
    cudaError_t e = refuse_capture(stream);
    if (e != cudaSuccess)
        return e;
    const unsigned epoch = r->epoch + 1;
    combine_args a = combine_common(pull_row, weight, tokens, topk, hidden, out);
    a.sync = sync_for(r, epoch);
    for (int q = 0; q < r->nranks; q++)
        a.bufs[q] = r->expert_out[q];
    a.row_rank = pull_rank;
    combine_peer_kernel<<<ctas, THREADS, 0, stream>>>(a);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        r->epoch = epoch;
    return e;
}
