/* Rung 4 of the GEMM ladder — WGMMA fed by TMA (sm_90a). The copy engine moves 128×64 tiles of A and B into
 * shared memory in the 128-byte-swizzled layout the tensor cores read directly (no ldmatrix, no registers in
 * between), completing on an mbarrier per stage; each warpgroup issues asynchronous wgmma.m64n128k16 on its
 * 64 rows. Three stages deep, and two CTAs per SM so that one's epilogue and barrier waits overlap the
 * other's math. Every thread still waits for the tensor cores at each k-step (no producer/consumer split):
 * the next rung removes that.
 *
 * Takes B N×K with K % 8 == 0 and 16-byte aligned A and B (TMA's row pitch rule); others fall back. */
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"
#include "common/sm90_common.cuh"
#include "gemm/host/tensor_map.h"

#define BM          128
#define BN          128
#define BK          64 /* one 128-byte swizzle row of bf16 */
#define STAGES      3
#define THREADS     256 /* two warpgroups, 64 rows of D each */
#define A_BYTES     (BM * BK * 2)
#define B_BYTES     (BN * BK * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define SMEM_BYTES  (STAGES * STAGE_BYTES + 1024 /* alignment slack */ + STAGES * 8 /* barriers */)

__global__ void __launch_bounds__(THREADS, 2)
    gemm_wgmma_tma_kernel(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                          pl_gemm_out o, int k_blocks)
{
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u; /* 128-byte swizzle wants 1024-byte alignment */
    const uint32_t full = base + STAGES * STAGE_BYTES;
    const int wg = threadIdx.x / 128, lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++)
            mbar_init(full + 8 * s, 1);
        mbar_fence_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        tma_prefetch_descriptor(&tma_a);
        tma_prefetch_descriptor(&tma_b);
        for (int s = 0; s < STAGES && s < k_blocks; s++) {
            const uint32_t st = base + s * STAGE_BYTES;
            mbar_arrive_expect_tx(full + 8 * s, STAGE_BYTES);
            tma_load_2d(st, &tma_a, full + 8 * s, s * BK, m0);
            tma_load_2d(st + A_BYTES, &tma_b, full + 8 * s, s * BK, n0);
        }
    }

    float acc[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
        acc[i] = 0.0f;

    for (int kb = 0; kb < k_blocks; kb++) {
        const int s = kb % STAGES;
        const uint32_t st = base + s * STAGE_BYTES;
        mbar_wait(full + 8 * s, (kb / STAGES) & 1);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 16; j++)
            pl_wgmma_m64n128k16_bf16<0>(acc, wgmma_desc_k128(st + wg * 64 * 128 + j * 32),
                                        wgmma_desc_k128(st + A_BYTES + j * 32), 1);
        wgmma_commit();
        wgmma_wait<0>();
        __syncthreads(); /* both warpgroups are done reading stage s: refill it */
        if (threadIdx.x == 0 && kb + STAGES < k_blocks) {
            mbar_arrive_expect_tx(full + 8 * s, STAGE_BYTES);
            tma_load_2d(st, &tma_a, full + 8 * s, (kb + STAGES) * BK, m0);
            tma_load_2d(st + A_BYTES, &tma_b, full + 8 * s, (kb + STAGES) * BK, n0);
        }
    }
    accumulators_fence(acc);

    const int row0 = m0 + wg * 64;
    pl_gemm_store_m64<BN>(o, acc, row0 + warp * 16 + (lane >> 2), n0, pl_gemm_plain_interior(o, row0, n0, 64, BN));
}

extern "C" cudaError_t pl_gemm_wgmma_tma_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    CUtensorMap ta, tb;
    cudaError_t e = pl_tensor_map_bf16(&ta, p->a, (uint64_t)p->m, (uint64_t)p->k, BM, BK);
    if (e == cudaSuccess)
        e = pl_tensor_map_bf16(&tb, p->b, (uint64_t)p->n, (uint64_t)p->k, BN, BK);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(gemm_wgmma_tma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess)
        return e;
    dim3 grid((p->n + BN - 1) / BN, (p->m + BM - 1) / BM);
    gemm_wgmma_tma_kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(ta, tb, pl_gemm_out_of(p), (p->k + BK - 1) / BK);
    return cudaGetLastError();
}
