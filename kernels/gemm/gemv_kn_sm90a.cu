/* Decode GEMM (M ≤ 16 or 32 tokens) with B given K×N: the streaming GEMV of gemv_mma.cu for the other layout,
 * split over K by the CTAs of a cluster (sm_90a). For a few tokens the GEMM is B read once, so the floor is B's bytes
 * over the HBM ceiling, and the kernel's one job is to keep enough loads of B in flight on enough SMs.
 *
 * The mapping. D = A·B with mma m16n8k16 (row.col): A (tokens × K) is the 16×16 A operand, B (K × N, N-major) the
 * 16×8 B operand. The B operand wants two consecutive k of one column in a register, where a 16-byte load of a B
 * row holds eight consecutive columns of one k. So a lane (g = lane/4, q = lane%4) loads 16 bytes (columns 8g …
 * 8g+7 of the CTA's 64) from each of eight rows, k = 8q … 8q+7 of a 32-k chunk, and pairs two rows' halves with one
 * byte permute (prmt) per register: {B[k][c], B[k+1][c]}. Mma number c' (0-7) takes column 8g + c' of every lane
 * group g, so its output column g is the CTA's column 8g + c'. The 16 logical k of an mma are mapped onto physical
 * k per lane as in gemv_mma.cu (a dot product sums K in any order, as long as A and B agree): logical {2q, 2q+1}
 * → {8q+4s, 8q+4s+1} and {2q+8, 2q+9} → {8q+4s+2, 8q+4s+3} for step s (0, 1) of the chunk, so A's fragments are
 * the registers of one 16-byte load of a token's row, as they are. A warp-chunk is 32 rows × 128 contiguous bytes:
 * each row's 128 bytes come from the 8 lanes of one q.
 *
 * The grid. A CTA (8 warps) owns 64 columns; a cluster of S CTAs (S = 1-8, chosen at launch) owns them over all of
 * K: warp w of CTA r takes chunks 8r + w, 8r + w + 8S, … Each CTA adds its warps' partial tiles in warp order
 * through shared memory; then, across the cluster, each output element is added by one thread over the CTAs in rank
 * order through distributed shared memory (the same bits every run), and the epilogue (bias, GELU, residual) runs on
 * the sum. S puts about RESIDENT CTAs on every SM (S · ⌈N/64⌉ ≈ RESIDENT · SMs), at most 8 (a portable cluster) and
 * at least two chunks a warp: narrow N (576 columns are 9 CTAs) then still spreads over the GPU. With P panels
 * (gemv_kn_t16_p4: P = 4) a CTA owns 64·P columns and warp w works on panel w % P, its 8/P warps splitting that
 * panel's K: the P warps of a chunk read 128·P contiguous bytes of each row together.
 *
 * Measured (session 17, H200, P = 1): correct, but bound by load latency, at 2.55 TB/s of B on the largest shapes and
 * under the wgmma `_kn` kernels except on narrow N (docs/perf/gemm.md). Every CTA walking a 128-byte strip down K
 * opens a DRAM row per access: the suspect, and the reason for the panels (not yet timed).
 *
 * Edges: N % 8 == 0 (16-byte loads of B rows; a lane's 8 columns are wholly inside or past N), K % 8 == 0 (a 16-byte
 * piece of A is wholly inside or past K); rows past K, columns past N and tokens past M read as zeros (loads at
 * clamped addresses, masked after, so that all of a batch are in flight together); stores are predicated. Needs A
 * and B 16-byte aligned. */
#include "common/ld_global.cuh"
#include "common/ptx.cuh"
#include "gemm/epilogue.cuh"
#include "gemm/gemm.h"
#include "gemm/sm90_common.cuh"

#define GK_WARPS   8
#define GK_THREADS (GK_WARPS * 32)
#define GK_COLS    64           /* columns of N per CTA: 8 lane groups × 8 */
#define GK_CHUNK   32           /* k per warp-chunk: 4 lanes × 8 rows */
#define GK_ITEMS   (8 * 4 * 32) /* a warp's accumulators per token tile: 8 mma × 4 registers × 32 lanes */
#define GK_PAD     33           /* the cluster's copy, lanes padded: its readers walk the columns */
#define GK_MAX_S   8            /* a portable cluster */

/* Register j (0-3) of a 16-byte load. */
__device__ __forceinline__ uint32_t u4_at(const uint4 &v, int j)
{
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

/* Column c (0-7) of two rows' 16-byte loads as one mma k-pair: {row0[c], row1[c]}, row0's in the low half. */
__device__ __forceinline__ uint32_t kpair(const uint4 &row0, const uint4 &row1, int c)
{
    return __byte_perm(u4_at(row0, c / 2), u4_at(row1, c / 2), (c & 1) ? 0x7632 : 0x5410);
}

/* One fp32 of CTA `rank` of the cluster at the shared-memory address `addr` has in this CTA. */
__device__ __forceinline__ float dsmem_load_f32(uint32_t addr, uint32_t rank)
{
    float v;
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %1, %2;\n"
                 "ld.shared::cluster.f32 %0, [remote];\n"
                 "}\n"
                 : "=f"(v)
                 : "r"(addr), "r"(rank)
                 : "memory");
    return v;
}

/* NT token tiles of 16 (16·NT tokens); P panels of 64 columns side by side, warp w on panel w % P (P = 1: the
 * CTA's 8 warps split its 64 columns' K; 4: four warps read 512 contiguous bytes of each row); UNROLL chunks whose
 * loads are issued before their mma. */
template <int NT, int P, int UNROLL>
__global__ void __launch_bounds__(GK_THREADS, NT == 1 ? 2 : 1)
    gemv_kn_kernel(const uint16_t *__restrict__ a, const uint16_t *__restrict__ b, pl_gemm_out o, int k, int split)
{
    static_assert(GK_WARPS % P == 0, "whole warps per panel");
    constexpr int COLS = GK_COLS * P, WP = GK_WARPS / P;           /* the CTA's columns; warps per panel */
    constexpr int PAD = P >= 4 ? 32 : GK_PAD, PANEL = 8 * 4 * PAD; /* static shared memory stays within 48 KB */
    __shared__ float partial[GK_WARPS][GK_ITEMS];
    __shared__ float sum[P * PANEL]; /* the CTA's tile, [panel][mma][register][lane] */
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x & 31;
    const int g = lane >> 2, q = lane & 3, panel = warp % P, kw = warp / P;
    const int rank = (int)blockIdx.x % split, n0 = (int)blockIdx.x / split * COLS;
    const bool col_in = n0 + GK_COLS * panel + 8 * g < o.n;
    const uint16_t *bl = b + (col_in ? n0 + GK_COLS * panel + 8 * g : 0);
    const uint16_t *at[NT][2];
    bool tok_in[NT][2];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int t = 16 * j + 8 * h + g;
            tok_in[j][h] = t < o.m;
            at[j][h] = a + (size_t)(tok_in[j][h] ? t : 0) * k;
        }

    float acc[NT][8][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int c = 0; c < 8; c++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[j][c][i] = 0.0f;

    /* ---- mainloop: this warp's chunks, UNROLL at a time, every load of a batch issued before its mma ---- */
    const uint4 zero = make_uint4(0, 0, 0, 0);
    const int chunks = (k + GK_CHUNK - 1) / GK_CHUNK, stride = WP * split;
    for (int c0 = rank * WP + kw; c0 < chunks; c0 += stride * UNROLL) {
        uint4 rb[UNROLL][8];     /* [chunk][row 8q + r] */
        uint4 ra[UNROLL][NT][2]; /* [chunk][token tile][token g, g + 8] */
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            const int k0 = (c0 + u * stride) * GK_CHUNK + 8 * q; /* the lane's first row */
#pragma unroll
            for (int r = 0; r < 8; r++) {
                const bool in = col_in && k0 + r < k;
                rb[u][r] = ld_stream16((const uint4 *)(bl + (size_t)(k0 + r < k ? k0 + r : 0) * o.n));
                rb[u][r] = in ? rb[u][r] : zero;
            }
            const bool kin = k0 < k; /* K % 8 == 0: the lane's 8 k of A wholly inside or past K */
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    ra[u][j][h] =
                        ld_reuse16((const uint4 *)(at[j][h] + (kin ? k0 : 0))); /* past K: the row's first 16 bytes */
                    ra[u][j][h] = kin && tok_in[j][h] ? ra[u][j][h] : zero;
                }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
#pragma unroll
            for (int s = 0; s < 2; s++) {
                uint32_t af[NT][4];
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    af[j][0] = u4_at(ra[u][j][0], 2 * s);
                    af[j][1] = u4_at(ra[u][j][1], 2 * s);
                    af[j][2] = u4_at(ra[u][j][0], 2 * s + 1);
                    af[j][3] = u4_at(ra[u][j][1], 2 * s + 1);
                }
#pragma unroll
                for (int c = 0; c < 8; c++) {
                    const uint32_t b0 = kpair(rb[u][4 * s], rb[u][4 * s + 1], c),
                                   b1 = kpair(rb[u][4 * s + 2], rb[u][4 * s + 3], c);
#pragma unroll
                    for (int j = 0; j < NT; j++)
                        mma_bf16_16816(acc[j][c], af[j], b0, b1);
                }
            }
    }

    /* ---- fix-up, one token tile at a time: warps in order, then the cluster's CTAs in rank order ---- */
    const uint32_t sum_addr = smem_u32(sum);
#pragma unroll
    for (int j = 0; j < NT; j++) {
#pragma unroll
        for (int c = 0; c < 8; c++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                partial[warp][(c * 4 + i) * 32 + lane] = acc[j][c][i];
        __syncthreads();
        for (int e = (int)threadIdx.x; e < P * GK_ITEMS; e += GK_THREADS) {
            const int pn = P == 1 ? 0 : e / GK_ITEMS, item = P == 1 ? e : e % GK_ITEMS;
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < WP; w++) /* the panel's warps in order */
                v += partial[pn + P * w][item];
            sum[pn * PANEL + (item / 32) * PAD + item % 32] = v;
        }
        if (split > 1)
            cluster_sync(); /* every CTA's sum is written (release) and visible to the cluster (acquire) */
        else
            __syncthreads();
        /* output (token t of the tile, column col of the CTA's): panel col / 64; in it (cp = col % 64) mma cp % 8,
         * its column cp / 8, which is register 2·(t / 8) + (cp / 8) % 2 of lane 4·(t % 8) + cp / 16; columns
         * fastest, so that neighbours store neighbours. With a cluster, rank r adds the elements e % split == r. */
        for (int e = (int)threadIdx.x * split + rank; e < 16 * COLS; e += GK_THREADS * split) {
            const int t = e / COLS, col = e % COLS, cp = P == 1 ? col : col % GK_COLS, c = cp % 8, oc = cp / 8;
            const int item =
                (P == 1 ? 0 : col / GK_COLS * PANEL) + (c * 4 + 2 * (t / 8) + (oc & 1)) * PAD + 4 * (t % 8) + oc / 2;
            float v = 0.0f;
            if (split > 1)
                for (int r = 0; r < split; r++)
                    v += dsmem_load_f32(sum_addr + 4u * (uint32_t)item, (uint32_t)r);
            else
                v = sum[item];
            pl_gemm_store1(o, 16 * j + t, n0 + col, v);
        }
        if (split > 1)
            cluster_sync(); /* the cluster's reads of sum are done before it is rewritten or the CTA exits */
        else
            __syncthreads();
    }
}

/* The split S for `blocks` column blocks of `chunks` warp-chunks, each chunk read by one of `wp` warps of a CTA, on
 * `sms` SMs holding `resident` CTAs each. */
static int gemv_kn_split(int blocks, int chunks, int wp, int sms, int resident)
{
    int s = (resident * sms + blocks / 2) / blocks;
    const int most = chunks / (2 * wp); /* at least two chunks a warp */
    s = s > most ? most : s;
    s = s > GK_MAX_S ? GK_MAX_S : s;
    return s < 1 ? 1 : s;
}

template <int NT, int P, int UNROLL> static cudaError_t launch_gemv_kn(const pl_gemm_problem *p, cudaStream_t stream)
{
    if (p->m > 16 * NT || p->b_layout != PL_GEMM_B_KN || p->k % 8 != 0 || p->n % 8 != 0)
        return cudaErrorInvalidValue;
    int device = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e != cudaSuccess)
        return e;
    const int blocks = (p->n + GK_COLS * P - 1) / (GK_COLS * P), chunks = (p->k + GK_CHUNK - 1) / GK_CHUNK;
    const int split = gemv_kn_split(blocks, chunks, GK_WARPS / P, sms, NT == 1 ? 2 : 1);
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t lc =
        cluster_launch_config((unsigned)(blocks * split), GK_THREADS, 0, (unsigned)split, stream, &attr);
    e = cudaLaunchKernelEx(&lc, gemv_kn_kernel<NT, P, UNROLL>, p->a, p->b, pl_gemm_out_of(p), p->k, split);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" cudaError_t pl_gemm_gemv_kn_t16(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv_kn<1, 1, 2>(p, stream);
}

extern "C" cudaError_t pl_gemm_gemv_kn_t32(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv_kn<2, 1, 2>(p, stream);
}

extern "C" cudaError_t pl_gemm_gemv_kn_t16_p4(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_gemv_kn<1, 4, 2>(p, stream);
}
