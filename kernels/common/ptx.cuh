/* sm_80+ building blocks shared by every kernel family, one thin wrapper per PTX instruction: cp.async copies into
 * shared memory (16 bytes, zero-filled past src_bytes) with their commit/wait groups, and the bf16 and f16 mma.sync
 * tiles. */
#ifndef PERFLAB_KERNELS_PTX_CUH
#define PERFLAB_KERNELS_PTX_CUH

#include <stdint.h>

/* 16 bytes from global memory to the shared address dst, of which the first src_bytes (0..16) are read and the rest
 * zero-filled (the edge of a tile). Cached in L2 only. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most N committed groups of this thread are pending. */
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* d += a·b for one m16n8k16 tile: bf16 operands (a row-major 16×16 in 4 registers, b column-major 16×8 in 2),
 * fp32 accumulators. */
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* The same tile with f16 operands (fp32 accumulators): 3 more mantissa bits than bf16, 5 exponent bits. */
__device__ __forceinline__ void mma_f16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#endif
