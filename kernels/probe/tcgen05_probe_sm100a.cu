/* sm_100a only (built in its own object library for that one architecture): tensor memory, the accumulator
 * store of Blackwell's tcgen05 MMAs. Warp 0 allocates 32 columns (tcgen05.alloc writes the TMEM address to
 * shared memory), each warp stores salt ^ thread into its own quarter of the 128 lanes (warp w may touch lanes
 * 32w..32w+31 only) with tcgen05.st, loads it back with tcgen05.ld, and warp 0 frees the columns. This proves
 * that the tcgen05 instructions run and that TMEM holds data; it does not exercise tcgen05.mma itself. */
#include "common/device_cc.h"
#include "probe/probe_kernels.h"

#define TMEM_COLUMNS 32u

__global__ void __launch_bounds__(PL_PROBE_TCGEN05_THREADS) tcgen05_tmem_kernel(unsigned salt, unsigned *out)
{
#if defined(__CUDA_ARCH_FEAT_SM100_ALL)
    __shared__ unsigned tmem_base;
    const unsigned warp = threadIdx.x / 32;
    if (warp == 0) {
        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(
                         (unsigned)__cvta_generic_to_shared(&tmem_base)),
                     "r"(TMEM_COLUMNS)
                     : "memory");
        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
    }
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
    /* lane field in the upper 16 bits of a TMEM address, column in the lower */
    const unsigned taddr = tmem_base + ((warp * 32u) << 16);
    unsigned value = salt ^ threadIdx.x, back = 0;
    asm volatile("tcgen05.st.sync.aligned.32x32b.x1.b32 [%0], {%1};\n" ::"r"(taddr), "r"(value) : "memory");
    asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
    asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];\n" : "=r"(back) : "r"(taddr) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
    out[threadIdx.x] = back;
    asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
    __syncthreads();
    asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
    if (warp == 0)
        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(tmem_base), "r"(TMEM_COLUMNS)
                     : "memory");
#else
    __trap();
#endif
}

extern "C" cudaError_t pl_probe_tcgen05_tmem(unsigned salt, unsigned *out, cudaStream_t stream)
{
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return e;
    if (cc != 100) /* sm_100a machine code runs on compute capability 10.0 alone */
        return cudaErrorNoKernelImageForDevice;
    tcgen05_tmem_kernel<<<1, PL_PROBE_TCGEN05_THREADS, 0, stream>>>(salt, out);
    return cudaGetLastError();
}
