/* Rung 2 of the GEMM ladder — shared-memory tiling with register blocking: a block stages a 64×16 slice of A
 * and a 16×64 slice of B in shared memory (converted to fp32 once), and each thread computes a 4×4 patch of D
 * from registers. Every element fetched from global memory now serves 64 FMAs instead of one; the kernel is
 * still plain fp32 FMA (no tensor cores), which caps it near the FP32 rate (~60 TFLOP/s on an H100). */
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"

#define TILE_M  64
#define TILE_N  64
#define TILE_K  16
#define THREADS 256 /* 16×16 threads, 4×4 outputs each */
#define MICRO   4

__global__ void __launch_bounds__(THREADS) gemm_smem_tiled_kernel(pl_gemm_out o, const uint16_t *__restrict__ a,
                                                                  const uint16_t *__restrict__ b, int k, int b_kn)
{
    /* A is stored transposed (k-major) so that a thread reads its 4 rows as one float4; the 4-float pad spreads
     * the transposing stores (16 threads, one row, 16 k) over 8 banks instead of one */
    __shared__ __align__(16) float as[TILE_K][TILE_M + 4];
    __shared__ __align__(16) float bs[TILE_K][TILE_N + 4];
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.y * TILE_M, n0 = blockIdx.x * TILE_N;
    float acc[MICRO][MICRO] = {};

    for (int k0 = 0; k0 < k; k0 += TILE_K) {
        /* 1024 elements of each operand, 4 per thread; neighbouring threads read neighbouring k (A, B N×K) or
         * neighbouring n (B K×N), so a warp's loads stay in a few 32-byte sectors */
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int e = tid + i * THREADS;
            int r = e / TILE_K, kk = e % TILE_K;
            int gr = m0 + r, gk = k0 + kk;
            as[kk][r] = (gr < o.m && gk < k) ? pl_bf16_bits_to_float(a[(size_t)gr * k + gk]) : 0.0f;
            if (b_kn) {
                int bk = e / TILE_N, bn = e % TILE_N;
                int gbk = k0 + bk, gbn = n0 + bn;
                bs[bk][bn] = (gbk < k && gbn < o.n) ? pl_bf16_bits_to_float(b[(size_t)gbk * o.n + gbn]) : 0.0f;
            } else {
                int gn = n0 + r;
                bs[kk][r] = (gn < o.n && gk < k) ? pl_bf16_bits_to_float(b[(size_t)gn * k + gk]) : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TILE_K; kk++) {
            float4 av = *reinterpret_cast<const float4 *>(&as[kk][ty * MICRO]);
            float4 bv = *reinterpret_cast<const float4 *>(&bs[kk][tx * MICRO]);
            float ar[MICRO] = {av.x, av.y, av.z, av.w};
            float br[MICRO] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < MICRO; i++)
#pragma unroll
                for (int j = 0; j < MICRO; j++)
                    acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < MICRO; i++)
#pragma unroll
        for (int j = 0; j < MICRO; j += 2)
            pl_gemm_store2(o, m0 + ty * MICRO + i, n0 + tx * MICRO + j, acc[i][j], acc[i][j + 1]);
}

extern "C" cudaError_t pl_gemm_smem_tiled(const pl_gemm_problem *p, cudaStream_t stream)
{
    dim3 grid((p->n + TILE_N - 1) / TILE_N, (p->m + TILE_M - 1) / TILE_M);
    gemm_smem_tiled_kernel<<<grid, THREADS, 0, stream>>>(pl_gemm_out_of(p), p->a, p->b, p->k,
                                                         p->b_layout == PL_GEMM_B_KN);
    return cudaGetLastError();
}
