/* Hopper (sm_90+) building blocks shared by every kernel family, one thin wrapper per PTX instruction: mbarriers,
 * TMA bulk tensor loads and stores (multicast too), bulk copies, proxy fences, named barriers, stmatrix, cluster
 * barriers and distributed shared memory addressing. Plain sm_90 PTX: usable from files built for 90a and 100a. */
#ifndef PERFLAB_KERNELS_SM90_PTX_CUH
#define PERFLAB_KERNELS_SM90_PTX_CUH

#include <stdint.h>
#include <cuda.h>

/* ---- mbarriers (shared::cta addresses as 32-bit integers) ---- */

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* Make initialised barriers visible to the async proxy (TMA) and to the other CTAs of the cluster. */
__device__ __forceinline__ void mbar_fence_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* One arrival that also announces `bytes` of TMA traffic the current phase must wait for. */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Arrive on the barrier at the same offset in CTA `cta_rank` of the cluster (this CTA included). Default
 * semantics (release at CTA scope), as for a local arrive: what the arrival announces, that this CTA's tensor
 * cores are done reading a stage, is already ordered by wgmma.wait_group; a cluster-scope release would add a
 * fence to every arrival for nothing. */
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t cta_rank)
{
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                 "}\n" ::"r"(bar),
                 "r"(cta_rank)
                 : "memory");
}

/* Wait until the phase of parity `parity` has completed. A fresh barrier is in phase 0, so waiting on parity 1
 * returns at once: producers start with parity 1 on their "slot free" barriers. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n"
                     ".reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n"
                     "}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* ---- TMA: 2-D tiles, completion counted on an mbarrier ---- */

__device__ __forceinline__ void tma_prefetch_descriptor(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)map) : "memory");
}

/* Box at (inner, outer) element coordinates of `map` into shared memory at dst. */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, uint32_t bar, int inner, int outer)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];\n" ::"r"(dst),
        "l"((uint64_t)map), "r"(inner), "r"(outer), "r"(bar)
        : "memory");
}

/* The same box written to the same shared-memory offset, and counted on the same barrier offset, in every CTA of
 * the cluster named by cta_mask: one L2 read feeds several SMs. */
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap *map, uint32_t bar, int inner,
                                                      int outer, uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(inner), "r"(outer), "r"(bar), "h"(cta_mask)
                 : "memory");
}

/* `bytes` (a multiple of 16, both addresses 16-byte aligned) from global memory into shared memory at dst, counted
 * on `bar` like a tensor load: a plain bulk copy, no tensor map. */
__device__ __forceinline__ void bulk_load_1d(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"((uint64_t)src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* Bring the box at (inner, outer) of `map` into L2, nothing into shared memory: a TMA load issued later hits L2. */
__device__ __forceinline__ void tma_prefetch_l2_2d(const CUtensorMap *map, int inner, int outer)
{
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"((uint64_t)map), "r"(inner),
                 "r"(outer)
                 : "memory");
}

/* Shared memory to global through TMA: the box at (inner, outer) of `map` from `src`; elements outside the
 * tensor are not written. Completion is tracked by bulk groups of the issuing thread. */
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, uint32_t src, int inner, int outer)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"((uint64_t)map),
        "r"(inner), "r"(outer), "r"(src)
        : "memory");
}

__device__ __forceinline__ void bulk_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* Wait until at most N bulk groups of this thread still read their shared-memory source. */
template <int N> __device__ __forceinline__ void bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

/* Wait until at most N bulk groups of this thread are incomplete (their global writes done). */
template <int N> __device__ __forceinline__ void bulk_wait()
{
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Make this thread's ordinary shared-memory writes visible to the async proxy (TMA reads them next). */
__device__ __forceinline__ void fence_proxy_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* A barrier among `threads` threads (a warpgroup) under id (1..15; 0 is __syncthreads). */
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* Four 8×8 bf16 matrices from registers to shared memory: lane l gives the address of row l%8 of matrix l/8. */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

/* The same, each matrix transposed on the way: lane l's register holds elements (l/4, 2·(l%4)) and (l/4, 2·(l%4) + 1)
 * of matrix l/8's fragment, which land in rows 2·(l%4) and 2·(l%4) + 1 of it, at position l/4 (a tile computed as Dᵀ
 * stored as D). */
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
                 "r"(r1), "r"(r2), "r"(r3)
                 : "memory");
}

/* Two matrices, transposed: lanes 0-15 give the row addresses. */
__device__ __forceinline__ void stmatrix_x2_trans(uint32_t addr, uint32_t r0, uint32_t r1)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1)
                 : "memory");
}

/* ---- clusters ---- */

__device__ __forceinline__ uint32_t cluster_cta_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* The cluster barrier in its two halves: every thread of every CTA of the cluster arrives once, then waits until all
 * have arrived. A release arrive orders this thread's memory operations before it (its shared-memory writes, its
 * arrivals on other CTAs' barriers) for whoever passes the wait, which acquires; ptxas makes it a MEMBAR.GPU, i.e.
 * it first waits for this thread's outstanding global stores. A relaxed arrive orders nothing: for when there is
 * nothing to order (the caller says why), or after fence.mbarrier_init, which releases the barrier inits itself. */
__device__ __forceinline__ void cluster_arrive_release()
{
    asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
}

__device__ __forceinline__ void cluster_arrive_relaxed()
{
    asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}

__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory");
}

/* Every thread of every CTA of the cluster arrives (release), then waits (acquire): shared-memory writes before it
 * are visible to the cluster after it. */
__device__ __forceinline__ void cluster_sync()
{
    cluster_arrive_release();
    cluster_wait();
}

/* The same with a relaxed arrive (see above). */
__device__ __forceinline__ void cluster_sync_relaxed()
{
    cluster_arrive_relaxed();
    cluster_wait();
}

#endif
