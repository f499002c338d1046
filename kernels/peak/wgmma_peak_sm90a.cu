/* sm_90a only (built in its own object library for that one architecture): warpgroup MMA, wgmma.mma_async
 * m64n128k16 bf16 -> f32 with A from registers and B from shared memory, the instruction Hopper's full tensor
 * rate needs (mma.sync reaches only part of it). One warpgroup per block issues all its wgmma into the same
 * accumulators and commits them as one group. Block 0 writes its 64x128 result for the check. */
#include "peak/peak_kernels.h"

/* B (PL_WGMMA_N rows of 16 k, "K-major") in the canonical no-swizzle layout: 8x8 core matrices of 128
 * contiguous bytes (8 rows x 16 B); the two k-halves of a row block are LBO = 128 B apart, row blocks are
 * SBO = 256 B apart. */
#define CORE_LBO 128u
#define CORE_SBO 256u

__device__ __forceinline__ unsigned b_offset(unsigned n, unsigned k)
{
    return (n / 8) * CORE_SBO + (k / 8) * CORE_LBO + (n % 8) * 16 + (k % 8) * 2;
}

/* The 64-bit shared-memory matrix descriptor: start address, LBO and SBO in 16-byte units, no swizzle. */
__device__ __forceinline__ unsigned long long smem_descriptor(const void *smem)
{
    unsigned long long addr = (unsigned long long)__cvta_generic_to_shared(smem);
    return ((addr & 0x3FFFFull) >> 4) | ((unsigned long long)(CORE_LBO >> 4) << 16) |
           ((unsigned long long)(CORE_SBO >> 4) << 32);
}

__device__ __forceinline__ unsigned pack_bf16_pair(const uint16_t *p)
{
    return (unsigned)p[0] | ((unsigned)p[1] << 16);
}

/* D = A * B, then `iterations - 1` times D += A * B, in one asm statement: the loop lives in PTX so that the
 * compiler cannot touch the accumulators between two wgmma (it would have to fence them, a pipeline drain). One
 * call site per kernel: the label must be unique in the function. */
__device__ __forceinline__ void wgmma_loop(float *d, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                           unsigned long long desc_b, int iterations)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred more, overwrite, accumulate;\n.reg .b32 left;\n"
                 "setp.ne.b32 overwrite, %68, %68;\n" /* scale-d false: D = A * B */
                 "setp.eq.b32 accumulate, %68, %68;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%"
                 "27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%"
                 "52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %69, overwrite, 1, 1, 0;\n"
                 "sub.s32 left, %68, 1;\n"
                 "setp.gt.s32 more, left, 0;\n"
                 "@!more bra.uni PL_WGMMA_DONE;\n"
                 "PL_WGMMA_NEXT:\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%"
                 "27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%"
                 "52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64,%65,%66,%67}, %69, accumulate, 1, 1, 0;\n"
                 "sub.s32 left, left, 1;\n"
                 "setp.gt.s32 more, left, 0;\n"
                 "@more bra.uni PL_WGMMA_NEXT;\n"
                 "PL_WGMMA_DONE:\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(iterations), "l"(desc_b));
#else
    __trap();
#endif
}

__global__ void __launch_bounds__(PL_WGMMA_BLOCK)
    wgmma_bf16_kernel(const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, int iterations, float *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(128) uint16_t b_smem[PL_WGMMA_N * 16];
    for (unsigned i = threadIdx.x; i < PL_WGMMA_N * 16; i += blockDim.x) {
        unsigned n = i / 16, k = i % 16;
        b_smem[b_offset(n, k) / 2] = b[i];
    }
    /* ordinary stores that the tensor core's async proxy reads next */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    /* A fragments: warp w of the warpgroup holds rows 16w..16w+15, laid out as for mma.m16n8k16 */
    const unsigned warp = threadIdx.x / 32, lane = threadIdx.x & 31, g = lane >> 2, tig = lane & 3;
    const uint16_t *arow = a + (16 * warp + g) * 16, *arow8 = arow + 8 * 16;
    const unsigned a0 = pack_bf16_pair(arow + 2 * tig), a1 = pack_bf16_pair(arow8 + 2 * tig);
    const unsigned a2 = pack_bf16_pair(arow + 2 * tig + 8), a3 = pack_bf16_pair(arow8 + 2 * tig + 8);
    const unsigned long long desc = smem_descriptor(b_smem);

    float d[64];
#pragma unroll
    for (int i = 0; i < 64; i++)
        d[i] = 0.f;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma_loop(d, a0, a1, a2, a3, desc, iterations);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    if (blockIdx.x == 0) {
        /* accumulator i of a thread: row 16w + g + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * tig + i % 2 */
#pragma unroll
        for (int i = 0; i < 64; i++) {
            unsigned row = 16 * warp + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * tig + (i % 2);
            out[row * PL_WGMMA_N + col] = d[i];
        }
    }
#else
    __trap();
#endif
}

extern "C" cudaError_t pl_wgmma_bf16(const uint16_t *a, const uint16_t *b, int iterations, unsigned grid, float *d,
                                     cudaStream_t stream)
{
    int cc = 0;
    cudaError_t e = pl_current_cc(&cc);
    if (e != cudaSuccess)
        return e;
    if (cc != 90) /* sm_90a machine code runs on compute capability 9.0 alone */
        return cudaErrorNoKernelImageForDevice;
    if (iterations < 1 || grid == 0)
        return cudaErrorInvalidValue;
    wgmma_bf16_kernel<<<grid, PL_WGMMA_BLOCK, 0, stream>>>(a, b, iterations, d);
    return cudaGetLastError();
}

extern "C" double pl_wgmma_bf16_flops(int iterations, unsigned grid)
{
    return 2.0 * 64 * PL_WGMMA_N * 16 * (double)iterations * grid;
}
