/* 16-byte global loads of read-only data for streaming kernels (the decode GEMVs, the paged-decode read references):
 * one that bypasses L1 for bytes read once, one that keeps them in L1 for bytes every CTA reads. */
#ifndef PERFLAB_COMMON_LD_GLOBAL_CUH
#define PERFLAB_COMMON_LD_GLOBAL_CUH

#include <stdint.h>

/* 16 bytes read once: not kept in L1. volatile, as the mma.sync wrapper is: the loads of a batch stay ahead
 * of its arithmetic, all in flight together (ptxas otherwise interleaves them and keeps fewer in flight). */
__device__ __forceinline__ uint4 ld_stream16(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* 16 bytes that every CTA reads: through L1. */
__device__ __forceinline__ uint4 ld_reuse16(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

#endif
