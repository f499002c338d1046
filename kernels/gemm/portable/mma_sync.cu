/* Rung 3 of the GEMM ladder — tensor cores through mma.sync (m16n8k16, bf16 in, fp32 accumulate), operands
 * moved from shared memory to registers by ldmatrix, and a 4-stage cp.async pipeline: global loads for the
 * tile three steps ahead are in flight while the tensor cores work on this one. Shared memory is XOR-swizzled
 * so that neither the 16-byte cp.async stores nor the ldmatrix reads conflict on banks.
 *
 * Any M, N, K and both B layouts: with K % 8 == 0 (and N % 8 == 0 for B K×N) and 16-byte aligned operands,
 * 16-byte cp.async with zero fill covers the edges; otherwise a slower path gathers elements one by one with
 * bounds checks into the same shared-memory layout. This is the fallback of every faster kernel. */
#include "common/ptx.cuh"
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"
#include "common/ldmatrix.cuh"

#define BM            128
#define BN            128
#define BK            32
#define STAGES        4
#define THREADS       256 /* 8 warps: 2 along M × 4 along N, each a 64×32 tile of D */
#define MI            4   /* m16 tiles per warp */
#define NI            4   /* n8 tiles per warp */

#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BN * BK * 2)
#define STAGE_BYTES   (A_STAGE_BYTES + B_STAGE_BYTES)
#define SMEM_BYTES    (STAGES * STAGE_BYTES)

/* A and B N×K: 128 rows of 64 bytes (4 chunks of 16 B). The chunk index is XORed with bits 1-2 of the row, so
 * that 8 consecutive rows of one chunk (an ldmatrix 8×8 matrix) land in 8 different 16-byte bank groups. */
__device__ __forceinline__ uint32_t k_major_offset(int row, int chunk)
{
    return (uint32_t)(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}

/* B K×N: 32 k-rows of 256 bytes (16 chunks). XOR with the row's low 3 bits: 8 consecutive k-rows of one chunk
 * (an ldmatrix.trans matrix) hit 8 different bank groups. */
__device__ __forceinline__ uint32_t n_major_offset(int krow, int chunk)
{
    return (uint32_t)(krow * 256 + ((chunk ^ (krow & 7)) << 4));
}

__device__ __forceinline__ void st_shared_v4(uint32_t dst, uint4 v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

/* Eight consecutive bf16 of a row starting at `first` (of `len`), zeros past the end: the unaligned path. */
__device__ __forceinline__ uint4 gather8(const uint16_t *row, int first, int len, int stride_elems)
{
    uint16_t v[8];
#pragma unroll
    for (int e = 0; e < 8; e++)
        v[e] = first + e < len ? row[(size_t)(first + e) * stride_elems] : (uint16_t)0;
    return make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16, v[4] | (uint32_t)v[5] << 16,
                      v[6] | (uint32_t)v[7] << 16);
}

/* Stage the k-slice [k0, k0 + BK) of the block's A rows and B columns into shared memory at `stage`. */
template <bool B_KN, bool VEC>
__device__ __forceinline__ void load_stage(uint32_t stage, const uint16_t *__restrict__ a,
                                           const uint16_t *__restrict__ b, int m, int n, int k, int m0, int n0, int k0)
{
    const uint32_t sa = stage, sb = stage + A_STAGE_BYTES;
#pragma unroll
    for (int i = 0; i < 2; i++) { /* 512 chunks of 16 B per operand, 2 per thread */
        const int c = threadIdx.x + i * THREADS;
        {
            const int row = c >> 2, ch = c & 3, gr = m0 + row, gk = k0 + ch * 8;
            const bool in = gr < m && gk < k;
            if (VEC)
                cp_async16(sa + k_major_offset(row, ch), in ? a + (size_t)gr * k + gk : a, in ? 16 : 0);
            else
                st_shared_v4(sa + k_major_offset(row, ch),
                             gr < m ? gather8(a + (size_t)gr * k, gk, k, 1) : make_uint4(0, 0, 0, 0));
        }
        if (!B_KN) {
            const int row = c >> 2, ch = c & 3, gn = n0 + row, gk = k0 + ch * 8;
            const bool in = gn < n && gk < k;
            if (VEC)
                cp_async16(sb + k_major_offset(row, ch), in ? b + (size_t)gn * k + gk : b, in ? 16 : 0);
            else
                st_shared_v4(sb + k_major_offset(row, ch),
                             gn < n ? gather8(b + (size_t)gn * k, gk, k, 1) : make_uint4(0, 0, 0, 0));
        } else {
            const int krow = c >> 4, ch = c & 15, gk = k0 + krow, gn = n0 + ch * 8;
            const bool in = gk < k && gn < n;
            if (VEC)
                cp_async16(sb + n_major_offset(krow, ch), in ? b + (size_t)gk * n + gn : b, in ? 16 : 0);
            else
                st_shared_v4(sb + n_major_offset(krow, ch),
                             gk < k ? gather8(b + (size_t)gk * n, gn, n, 1) : make_uint4(0, 0, 0, 0));
        }
    }
}

template <bool B_KN, bool VEC>
__global__ void __launch_bounds__(THREADS, 2)
    gemm_mma_sync_kernel(pl_gemm_out o, const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, int k)
{
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t smem_base = (uint32_t)__cvta_generic_to_shared(smem);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_m = warp >> 2, warp_n = warp & 3;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int k_tiles = (k + BK - 1) / BK;
    float acc[MI][NI][4] = {};

    /* prologue: the first STAGES-1 k-tiles in flight */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < k_tiles)
            load_stage<B_KN, VEC>(smem_base + s * STAGE_BYTES, a, b, o.m, o.n, k, m0, n0, s * BK);
        cp_async_commit();
    }

    for (int kt = 0; kt < k_tiles; kt++) {
        /* groups committed so far: STAGES-1 + kt; allowing STAGES-2 pending means tile kt has landed */
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* tile kt visible to all; every warp is done with the stage refilled below */
        const int next = kt + STAGES - 1;
        if (next < k_tiles)
            load_stage<B_KN, VEC>(smem_base + (next % STAGES) * STAGE_BYTES, a, b, o.m, o.n, k, m0, n0, next * BK);
        cp_async_commit(); /* an empty group past the end keeps the count above uniform */

        const uint32_t sa = smem_base + (kt % STAGES) * STAGE_BYTES, sb = sa + A_STAGE_BYTES;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            uint32_t af[MI][4], bf[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                /* lanes 0-15 address rows of k 0-7, lanes 16-31 the same rows at k 8-15 */
                const int row = warp_m * 64 + mi * 16 + (lane & 15);
                ldmatrix_x4(af[mi], sa + k_major_offset(row, kk * 2 + (lane >> 4)));
            }
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                uint32_t r[4];
                if (!B_KN) {
                    /* matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
                    const int nrow = warp_n * 32 + ni * 8 + (lane & 7) + ((lane >> 4) << 3);
                    ldmatrix_x4(r, sb + k_major_offset(nrow, kk * 2 + ((lane >> 3) & 1)));
                } else {
                    /* the same four matrices from k-rows, transposed on the way to registers */
                    const int krow = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
                    const int chunk = (warp_n * 32 + ni * 8 + ((lane >> 4) << 3)) >> 3;
                    ldmatrix_x4_trans(r, sb + n_major_offset(krow, chunk));
                }
                bf[ni][0] = r[0];
                bf[ni][1] = r[1];
                bf[ni + 1][0] = r[2];
                bf[ni + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_bf16_16816(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
    }
    cp_async_wait<0>();

    /* accumulator layout of m16n8: c0,c1 at (lane/4, 2·(lane%4) + {0,1}), c2,c3 eight rows below */
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int row = m0 + warp_m * 64 + mi * 16 + (lane >> 2);
#pragma unroll
        for (int ni = 0; ni < NI; ni++) {
            const int col = n0 + warp_n * 32 + ni * 8 + (lane & 3) * 2;
            pl_gemm_store2(o, row, col, acc[mi][ni][0], acc[mi][ni][1]);
            pl_gemm_store2(o, row + 8, col, acc[mi][ni][2], acc[mi][ni][3]);
        }
    }
}

/* The 16-byte path needs whole, aligned 16-byte chunks along every row it copies. */
static int vector_loads_ok(const pl_gemm_problem *p)
{
    int ok = p->k % 8 == 0 && ((uintptr_t)p->a % 16) == 0 && ((uintptr_t)p->b % 16) == 0;
    if (p->b_layout == PL_GEMM_B_KN)
        ok = ok && p->n % 8 == 0;
    return ok;
}

template <bool B_KN, bool VEC> static cudaError_t launch(const pl_gemm_problem *p, cudaStream_t stream)
{
    cudaError_t e =
        cudaFuncSetAttribute(gemm_mma_sync_kernel<B_KN, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    dim3 grid((p->n + BN - 1) / BN, (p->m + BM - 1) / BM);
    gemm_mma_sync_kernel<B_KN, VEC><<<grid, THREADS, SMEM_BYTES, stream>>>(pl_gemm_out_of(p), p->a, p->b, p->k);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_mma_sync(const pl_gemm_problem *p, cudaStream_t stream)
{
    const bool kn = p->b_layout == PL_GEMM_B_KN, vec = vector_loads_ok(p) != 0;
    if (kn)
        return vec ? launch<true, true>(p, stream) : launch<true, false>(p, stream);
    return vec ? launch<false, true>(p, stream) : launch<false, false>(p, stream);
}
