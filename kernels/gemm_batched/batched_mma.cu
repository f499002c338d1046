/* gemm:batched's native kernel — the whole batch of small GEMMs in one launch (kernels/gemm_batched/gemm_batched.h).
 *
 * Small problems (a 128×128×64 attention head is 2 MFLOP) give a 128×128-tile kernel one or two blocks each: the
 * GPU is then mostly idle and the time is the latency of loading one tile and draining it. So: a 64×64 tile of
 * D per block (four warps, each a 32×32 tile of mma.sync m16n8k16, bf16 in, fp32 accumulate), blockIdx.z the
 * problem, every tile of every problem a block of one grid: a 40-head batch is 160 blocks, more than a wave of
 * 132 multiprocessors. K is taken 64 at a time (one 128-byte row of A and of B per tile row, which is a whole
 * K = 64 problem in one step), double-buffered with cp.async when K is longer. Shared memory rows are XOR-swizzled
 * on their 16-byte chunks (chunk ^ row % 8), so that neither the cp.async stores nor the ldmatrix reads of eight
 * consecutive rows conflict on banks. The store of D is the GEMM library's predicated pair store. */
#include "common/ptx.cuh"
#include "common/bf16_epilogue.cuh"
#include "common/ldmatrix.cuh"
#include "gemm_batched/gemm_batched.h"

#define BM          64
#define BN          64
#define BK          64 /* bf16: 128 bytes, 8 chunks of 16 bytes per row */
#define THREADS     128
#define MI          2 /* m16 tiles per warp: 32 rows */
#define NI          4 /* n8 tiles per warp: 32 columns */
#define TILE_BYTES  (BM * BK * 2)
#define STAGE_BYTES (2 * TILE_BYTES) /* A then B */
#define MAX_Z       65535

__device__ __forceinline__ uint32_t swizzled(int row, int chunk)
{
    return (uint32_t)(row * (BK * 2) + ((chunk ^ (row & 7)) << 4));
}

/* Rows [r0, r0 + 64) × chunks [c0, c0 + CHUNKS) of the columns [k0, k0 + 64) of a rows×k K-major operand into a
 * swizzled tile, zeros outside. */
template <bool VEC, int CHUNKS>
__device__ __forceinline__ void load_tile(uint32_t tile, const uint16_t *__restrict__ src, int rows, int k, int r0,
                                          int k0, int c0)
{
#pragma unroll
    for (int i = 0; i < BM * CHUNKS / THREADS; i++) {
        const int c = threadIdx.x + i * THREADS, row = c / CHUNKS, chunk = c0 + c % CHUNKS;
        const int gr = r0 + row, gk = k0 + chunk * 8;
        if (VEC) {
            const bool in = gr < rows && gk < k;
            cp_async16(tile + swizzled(row, chunk), in ? src + (size_t)gr * k + gk : src, in ? 16 : 0);
        } else {
            uint32_t w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k_lo = gk + 2 * e, k_hi = k_lo + 1;
                const uint32_t lo = gr < rows && k_lo < k ? src[(size_t)gr * k + k_lo] : 0u;
                const uint32_t hi = gr < rows && k_hi < k ? src[(size_t)gr * k + k_hi] : 0u;
                w[e] = lo | hi << 16;
            }
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(tile + swizzled(row, chunk)), "r"(w[0]),
                         "r"(w[1]), "r"(w[2]), "r"(w[3])
                         : "memory");
        }
    }
}

/* One commit group: chunks [c0, c0 + CHUNKS) of the A and B tiles of the k-tile at k0 into `stage`. */
template <bool VEC, int CHUNKS>
__device__ __forceinline__ void load_stage(uint32_t stage, const uint16_t *a, const uint16_t *b, int m, int n, int k,
                                           int m0, int n0, int k0, int c0)
{
    load_tile<VEC, CHUNKS>(stage, a, m, k, m0, k0, c0);
    load_tile<VEC, CHUNKS>(stage + TILE_BYTES, b, n, k, n0, k0, c0);
    cp_async_commit();
}

/* kk-steps [kk0, kk1) of 16 of the k-tile in stage sa: ldmatrix and mma.sync into the warp's 32×32 accumulators */
__device__ __forceinline__ void mma_steps(float (&acc)[MI][NI][4], uint32_t sa, int warp_m, int warp_n, int lane,
                                          int kk0, int kk1)
{
    const uint32_t sb = sa + TILE_BYTES;
#pragma unroll
    for (int kk = kk0; kk < kk1; kk++) {
        uint32_t af[MI][4], bf[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; mi++) /* lanes 0-15: rows at k 0-7 of the step; 16-31: the same rows, k 8-15 */
            ldmatrix_x4(af[mi], sa + swizzled(warp_m * 32 + mi * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
        for (int ni = 0; ni < NI; ni += 2) {
            /* four 8×8 matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15) */
            uint32_t r[4];
            const int nrow = warp_n * 32 + ni * 8 + (lane & 7) + ((lane >> 4) << 3);
            ldmatrix_x4(r, sb + swizzled(nrow, kk * 2 + ((lane >> 3) & 1)));
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

/* D's 64×64 tile through shared memory (bf16, the operands' swizzle): 16-byte stores, eight threads a 128-byte row,
 * element by element at the edges or when rows are not 16-byte aligned. */
__device__ __forceinline__ void store_tile_staged(const float (&acc)[MI][NI][4], uint32_t tile, uint8_t *tile_ptr,
                                                  uint16_t *d, int m, int n, int m0, int n0, int warp_m, int warp_n,
                                                  int lane)
{
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = warp_m * 32 + mi * 16 + (lane >> 2) + 8 * h,
                          col = warp_n * 32 + ni * 8 + (lane & 3) * 2;
                const uint32_t v = pl_pack_bf16x2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(tile + swizzled(row, col >> 3) + (col & 7) * 2), "r"(v)
                             : "memory");
            }
    __syncthreads();
    const bool rows_aligned = (n & 7) == 0 && ((uintptr_t)d & 15) == 0;
#pragma unroll
    for (int i = 0; i < BM * 8 / THREADS; i++) {
        const int c = threadIdx.x + i * THREADS, row = c >> 3, chunk = c & 7;
        const int gr = m0 + row, gc = n0 + chunk * 8;
        if (gr >= m || gc >= n)
            continue;
        const uint8_t *from = tile_ptr + swizzled(row, chunk);
        uint16_t *to = d + (size_t)gr * n + gc;
        if (rows_aligned && gc + 8 <= n) {
            *reinterpret_cast<uint4 *>(to) = *reinterpret_cast<const uint4 *>(from);
        } else {
            for (int e = 0; e < 8 && gc + e < n; e++)
                to[e] = reinterpret_cast<const uint16_t *>(from)[e];
        }
    }
}

/* EPI: D staged through shared memory (16-byte stores) rather than stored from the fragments; HALVES: each k-tile in
 * two commit groups, the mma of the first half running while the second lands; PDL: launched as a programmatic
 * dependent (the next launch is allowed at once; inputs are read only after griddepcontrol.wait). */
template <bool VEC, bool EPI, bool HALVES, bool PDL>
__global__ void __launch_bounds__(THREADS)
    gemm_batched_mma_kernel(const uint16_t *__restrict__ a_all, const uint16_t *__restrict__ b_all, uint16_t *d_all,
                            int m, int n, int k)
{
    __shared__ __align__(1024) uint8_t smem[2 * STAGE_BYTES];
    if (PDL) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warp_m = warp >> 1, warp_n = warp & 1;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const size_t z = blockIdx.z;
    const uint16_t *a = a_all + z * (size_t)m * k, *b = b_all + z * (size_t)n * k;
    uint16_t *d = d_all + z * (size_t)m * n;
    const int k_tiles = (k + BK - 1) / BK;
    float acc[MI][NI][4] = {};

    if (HALVES) {
        load_stage<VEC, 4>(base, a, b, m, n, k, m0, n0, 0, 0);
        load_stage<VEC, 4>(base, a, b, m, n, k, m0, n0, 0, 4);
    } else {
        load_stage<VEC, 8>(base, a, b, m, n, k, m0, n0, 0, 0);
    }
    for (int kt = 0; kt < k_tiles; kt++) {
        const uint32_t sa = base + (kt & 1) * STAGE_BYTES, next = base + ((kt + 1) & 1) * STAGE_BYTES;
        const int k1 = (kt + 1) * BK;
        if (HALVES) {
            cp_async_wait<1>(); /* the first half of tile kt has landed */
            __syncthreads();  /* ... for every warp; and every warp is done with the other stage */
            if (kt + 1 < k_tiles) {
                load_stage<VEC, 4>(next, a, b, m, n, k, m0, n0, k1, 0);
                load_stage<VEC, 4>(next, a, b, m, n, k, m0, n0, k1, 4);
            } else {
                cp_async_commit(); /* empty groups keep the count above uniform */
                cp_async_commit();
            }
            mma_steps(acc, sa, warp_m, warp_n, lane, 0, BK / 32);
            cp_async_wait<2>(); /* the second half of tile kt */
            __syncthreads();
            mma_steps(acc, sa, warp_m, warp_n, lane, BK / 32, BK / 16);
        } else {
            cp_async_wait<0>();
            __syncthreads();
            if (kt + 1 < k_tiles)
                load_stage<VEC, 8>(next, a, b, m, n, k, m0, n0, k1, 0);
            mma_steps(acc, sa, warp_m, warp_n, lane, 0, BK / 16);
        }
    }

    if (EPI) {
        cp_async_wait<0>();
        __syncthreads(); /* every warp is done reading the operands: stage 0 takes D */
        store_tile_staged(acc, base, smem, d, m, n, m0, n0, warp_m, warp_n, lane);
        return;
    }
    pl_gemm_out o;
    o.d = d;
    o.bias = o.residual = NULL;
    o.m = m;
    o.n = n;
    o.gelu = 0;
    o.fused = 0;
    /* accumulator of m16n8: c0, c1 at (lane/4, 2·(lane%4) + {0, 1}), c2, c3 eight rows below */
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        const int row = m0 + warp_m * 32 + mi * 16 + (lane >> 2);
#pragma unroll
        for (int ni = 0; ni < NI; ni++) {
            const int col = n0 + warp_n * 32 + ni * 8 + (lane & 3) * 2;
            pl_gemm_store2(o, row, col, acc[mi][ni][0], acc[mi][ni][1]);
            pl_gemm_store2(o, row + 8, col, acc[mi][ni][2], acc[mi][ni][3]);
        }
    }
}

template <bool VEC, bool EPI, bool HALVES, bool PDL>
static cudaError_t launch_version(const pl_gemm_batch *p, dim3 grid, cudaStream_t stream)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(THREADS);
    cfg.stream = stream;
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = PDL ? &attr : NULL;
    cfg.numAttrs = PDL ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, gemm_batched_mma_kernel<VEC, EPI, HALVES, PDL>, p->a, p->b, p->d, p->m, p->n, p->k);
}

template <bool EPI, bool HALVES, bool PDL> static cudaError_t launch_either(const pl_gemm_batch *p, cudaStream_t stream)
{
    const dim3 grid((unsigned)((p->n + BN - 1) / BN), (unsigned)((p->m + BM - 1) / BM), (unsigned)p->count);
    const bool vec = p->k % 8 == 0 && (uintptr_t)p->a % 16 == 0 && (uintptr_t)p->b % 16 == 0;
    cudaError_t e = vec ? launch_version<true, EPI, HALVES, PDL>(p, grid, stream)
                        : launch_version<false, EPI, HALVES, PDL>(p, grid, stream);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_batched_mma(const pl_gemm_batch *p, unsigned options, cudaStream_t stream)
{
    if (p->m < 1 || p->n < 1 || p->k < 1 || p->count < 1 || p->count > MAX_Z || !p->a || !p->b || !p->d)
        return cudaErrorInvalidValue;
    const bool staged = options & PL_BATCHED_STAGED_STORE, halves = options & PL_BATCHED_K_HALVES,
               pdl = options & PL_BATCHED_PDL;
    if (!staged && !halves && !pdl)
        return launch_either<false, false, false>(p, stream);
    if (staged && !halves && !pdl)
        return launch_either<true, false, false>(p, stream);
    if (staged && halves && !pdl)
        return launch_either<true, true, false>(p, stream);
    if (staged && halves && pdl)
        return launch_either<true, true, true>(p, stream);
    return cudaErrorInvalidValue; /* the rungs of the ladder only: each adds one technique to the one before */
}
