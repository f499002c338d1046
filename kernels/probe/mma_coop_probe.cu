/* FP8 tensor cores through the warp-level mma.sync (sm_89+), and cooperative launch with a grid-wide barrier. */
#include <cooperative_groups.h>
#include "common/device_cc.h"
#include "probe/probe_kernels.h"

namespace cg = cooperative_groups;

/* Four consecutive fp8 bytes, the lowest k in the lowest byte. */
__device__ __forceinline__ unsigned pack4(const uint8_t *p)
{
    return (unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16) | ((unsigned)p[3] << 24);
}

__global__ void fp8_mma_kernel(const uint8_t *a, const uint8_t *b, float *d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    /* m16n8k32 .row.col fragments (PTX ISA, "Matrix Fragments for mma.m16n8k32"): group g = lane / 4 owns rows
     * g and g + 8, thread tig = lane % 4 owns k = 4 tig .. 4 tig + 3 and the same + 16. */
    const unsigned lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
    const unsigned a0 = pack4(a + g * 32 + 4 * tig), a1 = pack4(a + (g + 8) * 32 + 4 * tig);
    const unsigned a2 = pack4(a + g * 32 + 4 * tig + 16), a3 = pack4(a + (g + 8) * 32 + 4 * tig + 16);
    const unsigned b0 = pack4(b + g * 32 + 4 * tig), b1 = pack4(b + g * 32 + 4 * tig + 16);
    float c0 = 0.f, c1 = 0.f, c2 = 0.f, c3 = 0.f;
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    d[g * 8 + 2 * tig] = c0;
    d[g * 8 + 2 * tig + 1] = c1;
    d[(g + 8) * 8 + 2 * tig] = c2;
    d[(g + 8) * 8 + 2 * tig + 1] = c3;
#else
    __trap();
#endif
}

extern "C" cudaError_t pl_probe_fp8_mma(const uint8_t *a, const uint8_t *b, float *d, cudaStream_t stream)
{
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return e;
    if (cc < 89)
        return cudaErrorNoKernelImageForDevice;
    fp8_mma_kernel<<<1, 32, 0, stream>>>(a, b, d);
    return cudaGetLastError();
}

__global__ void cooperative_kernel(unsigned *counter, unsigned *out)
{
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0)
        atomicAdd(counter, 1u);
    grid.sync(); /* every block has counted before any reads the total */
    if (threadIdx.x == 0)
        out[blockIdx.x] = atomicAdd(counter, 0u);
}

extern "C" cudaError_t pl_probe_cooperative_blocks(int *blocks)
{
    int device = 0, sms = 0, per_sm = 0, supported = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, device);
    if (e == cudaSuccess && !supported)
        e = cudaErrorNotSupported;
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cooperative_kernel, 128, 0);
    if (e == cudaSuccess)
        *blocks = sms * per_sm;
    return e;
}

extern "C" cudaError_t pl_probe_cooperative(int blocks, unsigned *counter, unsigned *out, cudaStream_t stream)
{
    void *args[] = {&counter, &out};
    return cudaLaunchCooperativeKernel((void *)cooperative_kernel, dim3((unsigned)blocks), dim3(128), args, 0, stream);
}
