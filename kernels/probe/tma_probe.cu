/* TMA: one bulk tensor copy (cp.async.bulk.tensor.2d) of a box from global to shared memory, completed on an
 * mbarrier with an expected transaction count. The box may stick out of the matrix: the copy engine fills
 * those elements with zeros, which the host check expects. The tensor map is made by the driver's
 * cuTensorMapEncodeTiled, reached through the runtime's entry-point query so that perflab need not link
 * libcuda (and still starts on a machine without a driver). */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>
#include "probe/probe_kernels.h"

#define BOX_ELEMS (PL_PROBE_TMA_BOX_W * PL_PROBE_TMA_BOX_H)

__global__ void __launch_bounds__(128)
    tma_box_kernel(const __grid_constant__ CUtensorMap map, int x0, int y0, float *out)
{
    __shared__ __align__(128) float box[BOX_ELEMS];
    __shared__ __align__(8) unsigned long long barrier;
    const unsigned bar = (unsigned)__cvta_generic_to_shared(&barrier);
    const unsigned dst = (unsigned)__cvta_generic_to_shared(box);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
        /* the copy engine (the async proxy) must see the initialised barrier */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
                     "r"((unsigned)(BOX_ELEMS * sizeof(float)))
                     : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, "
                     "{%2, %3}], [%4];\n" ::"r"(dst),
                     "l"((unsigned long long)&map), "r"(x0), "r"(y0), "r"(bar)
                     : "memory");
    }
    unsigned done = 0;
    while (!done)
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar)
            : "memory");
    for (unsigned i = threadIdx.x; i < BOX_ELEMS; i += blockDim.x)
        out[i] = box[i];
}

extern "C" cudaError_t pl_probe_tma_box(const float *src, int width, int height, int x0, int y0, float *out, char *why,
                                        size_t whylen, cudaStream_t stream)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
        snprintf(why, whylen, "the driver has no cuTensorMapEncodeTiled (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
        return e != cudaSuccess ? e : cudaErrorNotSupported;
    }
    CUtensorMap map;
    const cuuint64_t dims[2] = {(cuuint64_t)width, (cuuint64_t)height};
    const cuuint64_t strides[1] = {(cuuint64_t)width * sizeof(float)};
    const cuuint32_t box[2] = {PL_PROBE_TMA_BOX_W, PL_PROBE_TMA_BOX_H};
    const cuuint32_t element_strides[2] = {1, 1};
    CUresult r = ((PFN_cuTensorMapEncodeTiled_v12000)fn)(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)src, dims,
                                                         strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                         CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        snprintf(why, whylen, "cuTensorMapEncodeTiled failed with CUresult %d", (int)r);
        return cudaErrorInvalidValue;
    }
    tma_box_kernel<<<1, 128, 0, stream>>>(map, x0, y0, out);
    return cudaGetLastError();
}
