/* The sm_90a-only building blocks of the warp-specialized kernels: the pipeline's stage release, register
 * reallocation between warpgroups, wgmma shared-memory descriptors and fences. The plain sm_90 wrappers (mbarriers,
 * TMA, clusters) are kernels/common/sm90_ptx.cuh. Include only from files compiled for sm_90a. */
#ifndef PERFLAB_COMMON_SM90_COMMON_CUH
#define PERFLAB_COMMON_SM90_COMMON_CUH

#include <stdint.h>
#include <cuda.h>

#include "common/sm90_ptx.cuh"
#include "common/sm90_wgmma_ops.cuh"

/* A consumer warp is done reading stage `s` of a ring whose "empty" barriers start at `empty` (8 bytes apart): lane r
 * tells CTA r of the cluster, whose producer may write into this CTA's stage (multicast). */
template <int CLUSTER> __device__ __forceinline__ void release_stage(uint32_t empty, int s, int lane)
{
    if (lane < CLUSTER) {
        if (CLUSTER == 1)
            mbar_arrive(empty + 8 * s);
        else
            mbar_arrive_cluster(empty + 8 * s, (uint32_t)lane);
    }
}

/* ---- register reallocation between warpgroups ---- */

template <int REGS> __device__ __forceinline__ void regs_dealloc()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int REGS> __device__ __forceinline__ void regs_alloc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

/* ---- wgmma ---- */

/* Shared-memory matrix descriptor of a K-major tile written by TMA with 128-byte swizzle: rows of 64 bf16
 * (128 B), 8-row core groups 1024 B apart (the stride byte offset), the leading byte offset unused by this
 * layout (1 by convention), swizzle mode 1 = 128 B in bits 62-63. The tile must start 1024-byte aligned; a
 * k-step of 16 elements inside the 128-byte row is a plain +32 B on the start address, since the hardware
 * applies the swizzle to the final address bits. */
__host__ __device__ __forceinline__ uint64_t wgmma_desc_k128(uint32_t smem_addr)
{
    uint64_t desc = 0;
    desc |= (uint64_t)((smem_addr & 0x3FFFF) >> 4);
    desc |= (uint64_t)1 << 16;           /* leading byte offset: 16 B (unused for this layout) */
    desc |= (uint64_t)(1024 >> 4) << 32; /* stride byte offset: 8 rows × 128 B */
    desc |= (uint64_t)1 << 62;           /* 128-byte swizzle */
    return desc;
}

/* The launch of a 1-D grid of `grid` CTAs of `threads` (`smem` bytes of dynamic shared memory) in clusters of
 * `cluster` CTAs along x, on `stream`; its one attribute lives in *attr. Host code. */
static inline cudaLaunchConfig_t cluster_launch_config(unsigned grid, unsigned threads, size_t smem, unsigned cluster,
                                                       cudaStream_t stream, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t lc = {};
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    lc.gridDim = dim3(grid);
    lc.blockDim = dim3(threads);
    lc.dynamicSmemBytes = smem;
    lc.stream = stream;
    lc.attrs = attr;
    lc.numAttrs = 1;
    return lc;
}

/* Clusters of `cluster` CTAs of `kernel` (`threads` a CTA, `smem` bytes of dynamic shared memory, asked for a grid of
 * `grid` CTAs) the current GPU holds at once: the GPCs decide, not only the SM count. `fallback` when the runtime
 * cannot tell. Host code. */
static inline int max_active_clusters(const void *kernel, unsigned threads, size_t smem, unsigned cluster,
                                      unsigned grid, int fallback)
{
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t lc = cluster_launch_config(grid, threads, smem, cluster, 0, &attr);
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &lc) != cudaSuccess || n < 1) {
        (void)cudaGetLastError();
        return fallback;
    }
    return n;
}

/* max_active_clusters for a grid of whole clusters over `sms` SMs, cached per device in cache[64] (a kernel's own
 * static array): sms / cluster where the runtime cannot tell or the device number is past 64. Host code. */
static inline int max_active_clusters_cached(int *cache, const void *kernel, unsigned threads, size_t smem,
                                             unsigned cluster, int device, int sms)
{
    const int whole = sms / (int)cluster;
    if (device < 0 || device >= 64)
        return whole;
    if (cache[device] == 0)
        cache[device] = max_active_clusters(kernel, threads, smem, cluster, cluster * (unsigned)whole, whole);
    return cache[device];
}

/* Opts `kernel` into `smem` bytes of dynamic shared memory and reads the current device and its SM count: what every
 * persistent launch asks first. Host code. */
static inline cudaError_t kernel_launch_prepare(const void *kernel, size_t smem, int *device, int *sms)
{
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaGetDevice(device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, *device);
    return e;
}

/* The low word of wgmma_desc_k128(addr) (the address field and the leading byte offset; the high word is the same for
 * every address), and the descriptor back from it: a ring's stage-0 descriptor kept in one register. */
__host__ __device__ __forceinline__ uint32_t wgmma_desc_k128_lo(uint32_t smem_addr)
{
    return (uint32_t)wgmma_desc_k128(smem_addr);
}

__device__ __forceinline__ uint64_t wgmma_desc_k128_from_lo(uint32_t lo)
{
    return (wgmma_desc_k128(0) & 0xFFFFFFFF00000000ull) | lo;
}

/* wgmma_desc_k128(addr + 32·j) from desc = wgmma_desc_k128(addr): a k-step inside a 128-byte row moves the 14-bit
 * address field by 2·j, and shared-memory addresses stay below 2^18, so the field never carries into the rest:
 * one 32-bit add instead of the mask, shift and merge for every wgmma. */
__device__ __forceinline__ uint64_t wgmma_desc_step(uint64_t desc, int j)
{
    return (desc & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)desc + 2u * (uint32_t)j);
}

/* Shared-memory matrix descriptor of an MN-major operand (B given K×N: wgmma's TRANS_B = 1) written by TMA with
 * 128-byte swizzle in boxes of 64 elements along N × `k_rows` rows along K: each K row of a box is 128 B (64 bf16
 * of N), and the swizzle atom is 64 N × 8 K = 1024 B. For MN-major the offsets mean other things than for K-major
 * (PTX ISA, "Matrix Descriptor"): the stride byte offset steps from one group of 8 K rows to the next (1024 B),
 * the leading byte offset from one 64-element group of N to the next, here the next box (k_rows · 128 B). A k-step
 * of 16 rows is a plain +2048 B on the start address (two whole atoms). The tile must start 1024-byte aligned. */
__device__ __forceinline__ uint64_t wgmma_desc_mn128(uint32_t smem_addr, uint32_t box_bytes)
{
    uint64_t desc = 0;
    desc |= (uint64_t)((smem_addr & 0x3FFFF) >> 4);
    desc |= (uint64_t)((box_bytes >> 4) & 0x3FFF) << 16; /* leading byte offset: the next 64 columns of N */
    desc |= (uint64_t)(1024 >> 4) << 32;                 /* stride byte offset: the next 8 rows of K */
    desc |= (uint64_t)1 << 62;                           /* 128-byte swizzle */
    return desc;
}

/* Order earlier register writes (zeroing, epilogue reads) before the next wgmma of this warpgroup. */
__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Wait until at most N committed wgmma groups of this warpgroup are pending. */
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Tell the compiler the accumulators changed here, so it reads them only after the wgmma that writes them has been
 * waited for (the asm of the wgmma itself returns before the tensor cores are done). */
template <int R> __device__ __forceinline__ void accumulators_fence(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

#endif
