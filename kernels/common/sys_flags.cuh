/* Flags between GPUs in device memory (peer pointers over NVLink): a release store and an acquire load at system scope
 * (the observers are other GPUs), and the global timer a wait measures its timeout with. The ordering argument of a
 * protocol built on them is the caller's (kernels/allreduce/allreduce.cu, kernels/ep/ep.cu). */
#ifndef PERFLAB_KERNELS_SYS_FLAGS_CUH
#define PERFLAB_KERNELS_SYS_FLAGS_CUH

__device__ __forceinline__ void pl_st_release_sys(unsigned *p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned pl_ld_acquire_sys(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned long long pl_globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
    return t;
}

#endif
