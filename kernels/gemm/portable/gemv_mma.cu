/* Decode GEMM (M = 1-32) as a streaming GEMV on the tensor cores: mma.sync fed straight from global memory, no
 * shared-memory staging, no TMA, no clusters (sm_80+). For a few tokens a GEMM is the weight read once: 2·M FLOP
 * per 2 bytes of B, so the floor is B's bytes over the HBM ceiling and the kernel's one job is to keep enough loads
 * of B in flight. The wgmma kernels reach it only through a ring of shared-memory stages per CTA; here every lane
 * issues its own 16-byte loads of B, four of them (64 bytes) per chunk and two chunks at a time, so that an SM
 * with 16 warps resident has ~64 KB of B in flight with no barrier between the loads and the arithmetic.
 *
 * The mapping. D = A·Bᵀ is computed as Dᵀ = B·Aᵀ with mma m16n8k16: B (N×K, K-major) is the row-major 16×16 A
 * operand (16 rows of N), A (M×K) the column-major 16×8 B operand (8 tokens). A lane (g = lane/4, q = lane%4)
 * loads 16 bytes of B rows g and g+8 at k = 8q…8q+7 of a 32-k piece, and 16 bytes of token g's row of A at the
 * same k. A dot product does not care in which order K is summed as long as both operands use the same order, so
 * the 16 logical k of an mma are mapped onto 16 physical k: logical {2q, 2q+1} → physical {8q, 8q+1} and {2q+8,
 * 2q+9} → {8q+2, 8q+3} for the first mma of the piece, {8q+4 … 8q+7} for the second. The fragments are then the
 * loaded registers as they are (register x of a 16-byte load = two consecutive k), with no shuffle. A chunk is 64
 * k (two pieces): the four lanes of a row read its 128 contiguous bytes.
 *
 * The grid. A CTA (8 warps) owns 16 rows of N (one m16 tile) and all of K: warp w takes chunks w, w+8, w+16, …,
 * so that the CTA streams each row of B front to back, 1 KB at a time. The 8 warps' fp32 partial tiles are added
 * through shared memory in warp order 0…7 (the same bits every run), and the epilogue (bias, GELU, residual) runs
 * on the sum. Up to TOKENS = 8·NT tokens (NT n8 tiles; the A fragments are reused by the tile's 16 rows). A is
 * read through L1 by every CTA: M/16 bytes of A per byte of B. A 64-token tile (4×) was measured on the H200 and lost
 * to split-K on every shape it took (2-2.5× slower): 32 tokens is the widest kept.
 *
 * Edges: B rows past N and tokens past M read as zeros (predicated loads), K % 8 == 0 (a 16-byte piece is wholly
 * inside or wholly past K); stores are predicated. Needs A and B 16-byte aligned. */
#include "common/ld_global.cuh"
#include "common/ptx.cuh"
#include "gemm/device/epilogue.cuh"
#include "gemm/gemm.h"

#define GV_WARPS   8
#define GV_THREADS (GV_WARPS * 32)
#define GV_ROWS    16 /* rows of N per CTA: the mma's M */
#define GV_CHUNK   64 /* k per chunk: two 32-k pieces */

/* UNROLL: chunks whose loads are issued before their mma. */
template <int NT, int UNROLL>
__global__ void __launch_bounds__(GV_THREADS)
    gemv_mma_kernel(const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, pl_gemm_out o, int k)
{
    constexpr int TOKENS = 8 * NT;
    __shared__ float partial[GV_WARPS][NT][4][32];
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, q = lane & 3;
    const int n0 = (int)blockIdx.x * GV_ROWS;
    const bool row0_in = n0 + g < o.n, row1_in = n0 + g + 8 < o.n;
    const uint16_t *b0 = b + (size_t)(row0_in ? n0 + g : 0) * k + 8 * q;
    const uint16_t *b1 = b + (size_t)(row1_in ? n0 + g + 8 : 0) * k + 8 * q;
    const uint16_t *at[NT];
    bool tok_in[NT];
#pragma unroll
    for (int j = 0; j < NT; j++) {
        tok_in[j] = 8 * j + g < o.m;
        at[j] = a + (size_t)(tok_in[j] ? 8 * j + g : 0) * k + 8 * q;
    }

    float acc[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[j][i] = 0.0f;

    const uint4 zero = make_uint4(0, 0, 0, 0);
    const int chunks = (k + GV_CHUNK - 1) / GV_CHUNK;
    for (int c0 = warp; c0 < chunks; c0 += GV_WARPS * UNROLL) {
        uint4 rb[UNROLL][2][2];  /* [chunk][piece][row g, row g+8] */
        uint4 ra[UNROLL][2][NT]; /* [chunk][piece][token tile] */
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                /* every load is issued (a piece past K reads the row's first 16 bytes) and masked after, so
                 * that no branch separates them and all are in flight at once */
                int kk = (c0 + u * GV_WARPS) * GV_CHUNK + 32 * h; /* + 8q: the lane's piece */
                const bool kin = kk + 8 * q < k;
                kk = kin ? kk : -8 * q; /* the row's first 16 bytes: inside the row even when K < 32 */
                rb[u][h][0] = ld_stream16((const uint4 *)(b0 + kk));
                rb[u][h][1] = ld_stream16((const uint4 *)(b1 + kk));
                rb[u][h][0] = kin && row0_in ? rb[u][h][0] : zero;
                rb[u][h][1] = kin && row1_in ? rb[u][h][1] : zero;
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    ra[u][h][j] = ld_reuse16((const uint4 *)(at[j] + kk));
                    ra[u][h][j] = kin && tok_in[j] ? ra[u][h][j] : zero;
                }
            }
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint32_t f0[4] = {rb[u][h][0].x, rb[u][h][1].x, rb[u][h][0].y, rb[u][h][1].y};
                const uint32_t f1[4] = {rb[u][h][0].z, rb[u][h][1].z, rb[u][h][0].w, rb[u][h][1].w};
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    mma_bf16_16816(acc[j], f0, ra[u][h][j].x, ra[u][h][j].y);
                    mma_bf16_16816(acc[j], f1, ra[u][h][j].z, ra[u][h][j].w);
                }
            }
    }

    /* the warps' partial tiles, added in warp order */
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            partial[warp][j][i][lane] = acc[j][i];
    __syncthreads();
    /* output (token t, row r of the 16): accumulator i = 2·(r / 8) + t % 2 of lane 4·(r % 8) + (t % 8) / 2, tile
     * t / 8; threads walk the rows fastest, so that neighbours store neighbouring elements of D */
    for (int e = (int)threadIdx.x; e < TOKENS * GV_ROWS; e += GV_THREADS) {
        const int t = e / GV_ROWS, r = e % GV_ROWS;
        if (t >= o.m || n0 + r >= o.n)
            continue;
        const int j = t / 8, i = 2 * (r / 8) + (t & 1), l = 4 * (r % 8) + (t % 8) / 2;
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < GV_WARPS; w++)
            sum += partial[w][j][i][l];
        pl_gemm_store1(o, t, n0 + r, sum);
    }
}

template <int NT, int UNROLL> static cudaError_t launch_gemv(const pl_gemm_problem *p, cudaStream_t stream)
{
    if (p->m > 8 * NT || p->b_layout != PL_GEMM_B_NK || p->k % 8 != 0)
        return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)((p->n + GV_ROWS - 1) / GV_ROWS);
    gemv_mma_kernel<NT, UNROLL><<<blocks, GV_THREADS, 0, stream>>>(p->a, p->b, pl_gemm_out_of(p), p->k);
    return cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_gemv_mma_t8(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv<1, 2>(p, stream);
}

extern "C" cudaError_t pl_gemm_gemv_mma_t16(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv<2, 2>(p, stream);
}

extern "C" cudaError_t pl_gemm_gemv_mma_t32(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv<4, 2>(p, stream);
}
