/* The one-shot and two-shot bf16 all-reduce over peer pointers (allreduce.h).
 *
 * Work split. A call of n elements is cut into packs of 8 elements (16 bytes; the last pack may be partial). One-shot:
 * CTA b of every rank owns the same pack range of the whole message. Two-shot: the message is cut into N chunks of
 * whole packs (chunk q owned by rank q), and CTA b owns the same pack range within every chunk. Every rank launches
 * the same grid for the same n, so CTA b of one rank only ever waits for CTA b of the others, and only reads what
 * CTA b of the others wrote: the barriers below are per CTA index, never across the CTAs of one GPU.
 *
 * Flags. Rank p's flags are [2 barriers][PL_AR_MAX_CTAS][PL_AR_MAX_RANKS] unsigned words; rank r's CTA b arrives at
 * barrier k of call e by writing e into word [k][b][r] of every rank's flags (its own included), and waits until
 * word [k][b][q] of its own flags holds at least e for every q. Epochs only grow (1, 2, ... per rank, the same
 * sequence on every rank; compared as (int)(flag - e) >= 0, so a 32-bit wrap is harmless), so a stale flag from an
 * earlier call never satisfies a later wait, and a flag already advanced by a peer one call ahead satisfies it (see
 * below why that is safe).
 *
 * Memory ordering (the PTX memory model, scope .sys because the observers are other GPUs):
 *   release: every thread of the CTA stores its part of the buffer, then __syncthreads() (bar.sync orders those
 *     stores before what the CTA's threads do next), then each signalling thread runs __threadfence_system()
 *     (fence.sc.sys: cumulative, so it orders the stores the barrier made visible to it too) and writes the flag with
 *     st.release.sys. A peer that observes the flag therefore observes the buffer.
 *   acquire: the waiting thread polls with ld.acquire.sys until the flag is reached, runs __threadfence_system(),
 *     then __syncthreads() orders every thread's following loads after the acquire. Peer data is loaded with
 *     ld.global.cg (cached in L2, not L1), so no L1 line from an earlier call can be served.
 *
 * Buffer reuse. Call e uses half e % 2 of every rank's buffer. Rank r's call e + 2 overwrites half e % 2 only after
 * its call e + 1 kernel completed (stream order), and that kernel passed barrier 0 of call e + 1, which needs every
 * peer to have started its call e + 1 kernel, hence (stream order on the peer) finished its call e kernel: no peer is
 * still reading half e % 2 of call e. The same argument covers a peer one call ahead: it writes half (e + 1) % 2,
 * never the half the slower rank is still reading. A rank cannot run two calls ahead (barrier 0 of call e + 2 waits
 * for the slower rank's arrival at call e + 2).
 *
 * A wait that lasts PL_AR_TIMEOUT_NS (a peer that never arrives: a crashed rank, mismatched calls) prints the rank,
 * CTA and barrier and traps, so a test fails instead of hanging. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#include "allreduce/allreduce.h"
#include "common/sys_flags.cuh"

#define THREADS          512
#define PACK             8              /* bf16 elements in 16 bytes */
#define PL_AR_TIMEOUT_NS 30000000000ull /* 30 s: far beyond any launch skew, compute-sanitizer's included */

typedef struct ar_args {
    const uint16_t *bufs[PL_AR_MAX_RANKS]; /* every rank's half for this call */
    unsigned *flags[PL_AR_MAX_RANKS];
    const uint16_t *in, *residual;
    uint16_t *out;
    size_t n;
    int rank, nranks, vec;
    unsigned epoch;
} ar_args;

/* ---- the flag protocol ---- */

__device__ __forceinline__ size_t flag_index(int barrier, int cta, int src)
{
    return ((size_t)barrier * PL_AR_MAX_CTAS + (size_t)cta) * PL_AR_MAX_RANKS + (size_t)src;
}

/* Barrier `barrier` of CTA blockIdx.x across the ranks (the ordering argument is at the top of the file). Thread t <
 * nranks signals rank t and waits for rank t's signal. */
__device__ void rank_barrier(const ar_args &a, int barrier)
{
    __syncthreads();
    const int t = threadIdx.x;
    if (t < a.nranks) {
        __threadfence_system();
        pl_st_release_sys(a.flags[t] + flag_index(barrier, blockIdx.x, a.rank), a.epoch);
        const unsigned *mine = a.flags[a.rank] + flag_index(barrier, blockIdx.x, t);
        const unsigned long long start = pl_globaltimer_ns();
        while ((int)(pl_ld_acquire_sys(mine) - a.epoch) < 0) {
            if (pl_globaltimer_ns() - start > PL_AR_TIMEOUT_NS) {
                printf("pl_ar_allreduce: rank %d CTA %d waited 30 s at barrier %d of call %u for rank %d\n", a.rank,
                       (int)blockIdx.x, barrier, a.epoch, t);
                __trap();
            }
            __nanosleep(64);
        }
        __threadfence_system();
    }
    __syncthreads();
}

/* ---- element ranges, 16 bytes at a time where aligned ---- */

__device__ __forceinline__ float bf16_f(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

__device__ __forceinline__ uint16_t f_bf16(float f)
{
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

typedef enum range_op {
    OP_COPY_IN, /* own half <- in */
    OP_REDUCE,  /* out (and, with keep, own half) <- Σ ranks' halves in rank order (+ residual) */
    OP_GATHER,  /* out <- rank src's half */
} range_op;

/* Elements e..e+cnt-1 (cnt ≤ 8) of one pack, loaded from p (peer memory through L2: ld.global.cg). */
__device__ __forceinline__ void load_pack(const uint16_t *p, size_t e, int cnt, int vec, uint16_t (&v)[PACK])
{
    if (vec && cnt == PACK) {
        const uint4 u = __ldcg((const uint4 *)(p + e));
        const uint16_t *h = (const uint16_t *)&u;
#pragma unroll
        for (int j = 0; j < PACK; j++)
            v[j] = h[j];
        return;
    }
#pragma unroll
    for (int j = 0; j < PACK; j++)
        v[j] = j < cnt ? __ldcg((const unsigned short *)(p + e + j)) : (uint16_t)0;
}

__device__ __forceinline__ void store_pack(uint16_t *p, size_t e, int cnt, int vec, const uint16_t (&v)[PACK])
{
    if (vec && cnt == PACK) {
        uint4 u;
        uint16_t *h = (uint16_t *)&u;
#pragma unroll
        for (int j = 0; j < PACK; j++)
            h[j] = v[j];
        *(uint4 *)(p + e) = u;
        return;
    }
#pragma unroll
    for (int j = 0; j < PACK; j++)
        if (j < cnt)
            p[e + j] = v[j];
}

/* One operation over the packs [p0, p1) of the message (elements clipped at n). keep: OP_REDUCE also stores the sum
 * into the rank's own half (two-shot's reduce-scatter); src: OP_GATHER's source rank. */
__device__ void run_range(const ar_args &a, range_op op, size_t p0, size_t p1, int keep, int src)
{
    uint16_t *own = (uint16_t *)a.bufs[a.rank];
    for (size_t p = p0 + threadIdx.x; p < p1; p += blockDim.x) {
        const size_t e = p * PACK;
        if (e >= a.n)
            break;
        const int cnt = a.n - e < PACK ? (int)(a.n - e) : PACK;
        uint16_t v[PACK];
        if (op == OP_COPY_IN) {
            load_pack(a.in, e, cnt, a.vec, v);
            store_pack(own, e, cnt, 1, v);
        } else if (op == OP_GATHER) {
            load_pack(a.bufs[src], e, cnt, 1, v);
            store_pack(a.out, e, cnt, a.vec, v);
        } else {
            float acc[PACK];
#pragma unroll
            for (int j = 0; j < PACK; j++)
                acc[j] = 0.0f;
            for (int q = 0; q < a.nranks; q++) { /* the fixed rank order: every rank sums the same way */
                load_pack(a.bufs[q], e, cnt, 1, v);
#pragma unroll
                for (int j = 0; j < PACK; j++)
                    acc[j] += bf16_f(v[j]);
            }
            if (a.residual) {
                uint16_t res[PACK];
                load_pack(a.residual, e, cnt, a.vec, res);
#pragma unroll
                for (int j = 0; j < PACK; j++)
                    acc[j] += bf16_f(res[j]);
            }
#pragma unroll
            for (int j = 0; j < PACK; j++)
                v[j] = f_bf16(acc[j]);
            if (keep)
                store_pack(own, e, cnt, 1, v);
            store_pack(a.out, e, cnt, a.vec, v);
        }
    }
}

/* CTA b's share [lo, hi) of `packs` packs split over the grid. */
__device__ __forceinline__ void cta_share(size_t packs, size_t *lo, size_t *hi)
{
    *lo = packs * blockIdx.x / gridDim.x;
    *hi = packs * (blockIdx.x + 1) / gridDim.x;
}

/* ---- the kernels ---- */

__global__ void __launch_bounds__(THREADS) oneshot_kernel(ar_args a)
{
    size_t lo, hi;
    cta_share((a.n + PACK - 1) / PACK, &lo, &hi);
    run_range(a, OP_COPY_IN, lo, hi, 0, 0);
    rank_barrier(a, 0);
    run_range(a, OP_REDUCE, lo, hi, 0, 0);
}

/* Chunk q is packs [q·chunk, (q + 1)·chunk) (the last ones may be short or empty). */
__global__ void __launch_bounds__(THREADS) twoshot_kernel(ar_args a)
{
    const size_t packs = (a.n + PACK - 1) / PACK, chunk = (packs + a.nranks - 1) / a.nranks;
    size_t lo, hi;
    cta_share(chunk, &lo, &hi);
    for (int q = 0; q < a.nranks; q++)
        run_range(a, OP_COPY_IN, q * chunk + lo, q * chunk + hi, 0, 0);
    rank_barrier(a, 0);
    /* reduce-scatter: this rank's chunk, summed from every rank, kept in its own half for the others to read */
    run_range(a, OP_REDUCE, a.rank * chunk + lo, a.rank * chunk + hi, 1, 0);
    rank_barrier(a, 1);
    /* all-gather: every other chunk from its owner */
    for (int q = 0; q < a.nranks; q++)
        if (q != a.rank)
            run_range(a, OP_GATHER, q * chunk + lo, q * chunk + hi, 0, q);
}

/* ---- the launcher ---- */

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

extern "C" cudaError_t pl_ar_allreduce(pl_ar_rank *r, pl_ar_algo algo, const uint16_t *in, uint16_t *out, size_t n,
                                       const uint16_t *residual, cudaStream_t stream)
{
    if (!r || r->nranks < 2 || r->nranks > PL_AR_MAX_RANKS || r->rank < 0 || r->rank >= r->nranks || !in || !out ||
        n == 0 || n * 2 > r->capacity || (algo != PL_AR_ONESHOT && algo != PL_AR_TWOSHOT))
        return cudaErrorInvalidValue;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &capturing);
    if (e != cudaSuccess)
        return e;
    if (capturing != cudaStreamCaptureStatusNone)
        return cudaErrorStreamCaptureUnsupported;
    ar_args a;
    const unsigned epoch = r->epoch + 1;
    const size_t half = (size_t)(epoch & 1u) * (r->capacity / 2);
    for (int q = 0; q < PL_AR_MAX_RANKS; q++) {
        a.bufs[q] = q < r->nranks ? r->buf[q] + half : NULL;
        a.flags[q] = q < r->nranks ? r->flags[q] : NULL;
    }
    a.in = in;
    a.residual = residual;
    a.out = out;
    a.n = n;
    a.rank = r->rank;
    a.nranks = r->nranks;
    a.vec = aligned16(in) && aligned16(out) && (!residual || aligned16(residual));
    a.epoch = epoch;
    /* packs a CTA covers: the whole message (one-shot) or one chunk (two-shot), a pack a thread per pass */
    const size_t packs = (n + PACK - 1) / PACK;
    const size_t span = algo == PL_AR_ONESHOT ? packs : (packs + r->nranks - 1) / r->nranks;
    size_t ctas = (span + THREADS - 1) / THREADS;
    ctas = ctas < 1 ? 1 : ctas > PL_AR_MAX_CTAS ? PL_AR_MAX_CTAS : ctas;
    if (algo == PL_AR_ONESHOT)
        oneshot_kernel<<<(unsigned)ctas, THREADS, 0, stream>>>(a);
    else
        twoshot_kernel<<<(unsigned)ctas, THREADS, 0, stream>>>(a);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        r->epoch = epoch;
    return e;
}
