/* Split-K WGMMA (sm_90a) for the shapes the persistent 128-row kernels (wgmma_ws_sm90a.cu) leave the GPU idle on:
 * few output tiles — decode (M = 1-128), small prefill against a narrow weight, a long K — where a 128×256 tile
 * wastes most of its rows and N/256 tiles cover a fraction of the 132 SMs. Written without a GPU, validated on an
 * H200 (every split 1-8 on odd shapes, compute-sanitizer memcheck clean): enumerated by default.
 *
 * Small CTAs, many of them. A CTA (160 threads) computes a 64 × TILE block of X·Yᵀ from K-major X and Y: one
 * consumer warpgroup issues wgmma m64nTILEk16 from a ring of TMA-filled, 128-byte-swizzled stages (the stage and
 * descriptor layout of the other sm_90a kernels); one producer warp (warp 4, after the warpgroup so that the
 * warpgroup stays aligned) issues the loads. Shared memory (60-72 KB) and registers (at most 128: 15 warps on an
 * SM's four sub-partitions of 16384) are sized for three CTAs per SM, which overlap one another's fill, drain and
 * fix-up instead of a persistent schedule. Two ways to map the GEMM onto X and Y:
 *   plain:   X = A, Y = B: a 64 × TILE tile of D (TILE 64 for narrow N, 128).
 *   swapped: X = B, Y = A: Dᵀ = B·Aᵀ, a TILE × 64 tile of D (TILE 16-128 ≥ M): the wide N fills wgmma's 64 rows
 *            and the few tokens become its narrow N, so no tensor-core row is spent on padding M up to 64 or 128.
 *            With two warpgroups (WG = 2), a 200 × 128 tile of D: M ≈ 200 with no padded token (cuBLAS's tile there).
 *
 * Deep rings (DEEP = 1, the _deep entries): the same CTA alone on its SM with every byte of shared memory a stage
 * (14 of 64×64, 9 of 64×128, 16 of the swapped 16- and 32-token tiles), for the few-tile long-K shapes where three
 * CTAs' 4-6-stage rings leave HBM and L2 latency exposed; like every one-CTA-an-SM kernel here its split is lowered
 * until the clusters all run at once.
 *
 * Split-K with a deterministic fix-up. The S CTAs of a cluster (1-8 along grid x, up to 16 in the _w1 entries'
 * non-portable clusters; S chosen so that every cluster runs in the first wave: gemm/host/splitk.h) take consecutive
 * ranges of K for the same output tile. When the mainloop is done the stages are free, and each CTA owns 1/S of the
 * tile's rows: the fp32 partials of those rows reach it through distributed shared memory (pushed with st.async by
 * the one-warpgroup kernels, pulled with DSMEM loads by the others: see the fix-up in the kernel), and it adds them
 * in rank order 0, 1, …, S-1 (the same bits every run, whichever CTA finished first; no workspace, no atomics, no
 * second kernel), applies the epilogue (bias, GELU, residual) and stores bf16 quads.
 * Its pieces are wgmma_sk_fixup.cuh.
 *
 * B K×N (BKN = 1, the _kn launchers). B is then N-major: as Y (plain) its panel is 64-column TMA boxes, as X
 * (swapped) 64-row ones, read through the MN-major descriptor with wgmma's imm-trans-b (plain) or imm-trans-a
 * (swapped) set (gemm/device/sm90_operand.cuh, sk_operands); stages, splits and the fix-up are the same. The plain
 * 64-wide tile has no half-width edge wgmma there (32 columns are less than a box).
 *
 * Edges. TMA zero-fills rows and columns past M, N and K, and stores are predicated: any M, N and K % 8 == 0.
 * Edge-aware: a tile whose Y rows (N plain, M swapped) end in its first half issues the half-width wgmma
 * (m64n(TILE/2)) and leaves the other half of the tensor-core work undone (power-of-two tiles: 100 is no width). */
#include "gemm/device/epilogue.cuh"
#include "gemm/device/sm90_operand.cuh"
#include "gemm/gemm.h"
#include "gemm/host/heuristic.h"
#include "common/sm90_common.cuh"
#include "gemm/host/splitk.h"
#include "gemm/host/tensor_map.h"
#include "gemm/sm90/wgmma_sk_fixup.cuh"

/* X's and Y's layouts (gemm/device/sm90_operand.cuh): A is K-major; B is K-major given N×K, MN-major given K×N
 * (BKN), as Y in the plain kernels and as X in the swapped ones. */
template <int SWAP, int BKN> struct sk_operands {
    typedef sm90_k_major x;
    typedef sm90_k_major y;
};
template <> struct sk_operands<0, 1> {
    typedef sm90_k_major x;
    typedef sm90_mn_major y;
};
template <> struct sk_operands<1, 1> {
    typedef sm90_mn_major x;
    typedef sm90_k_major y;
};

/* D[64 × N] += X[64 × 16] · Y[N × 16]ᵀ for the tile's width N; TX, TY: wgmma's imm-trans-a and imm-trans-b. */
template <int N, int TX, int TY> __device__ __forceinline__ void sk_wgmma(float (&acc)[N / 2], uint64_t dx, uint64_t dy)
{
    if constexpr (N == 16)
        pl_wgmma_m64n16k16_bf16<TY, TX>(acc, dx, dy, 1);
    else if constexpr (N == 32)
        pl_wgmma_m64n32k16_bf16<TY, TX>(acc, dx, dy, 1);
    else if constexpr (N == 64)
        pl_wgmma_m64n64k16_bf16<TY, TX>(acc, dx, dy, 1);
    else if constexpr (N == 128)
        pl_wgmma_m64n128k16_bf16<TY, TX>(acc, dx, dy, 1);
    else if constexpr (N == 200)
        pl_wgmma_m64n200k16_bf16<TY, TX>(acc, dx, dy, 1);
    else
        pl_wgmma_m64n256k16_bf16<TY, TX>(acc, dx, dy, 1);
}

/* The consumer warpgroup's mainloop over k-blocks kb0 .. kb1 - 1 with wgmma m64nNk16, N the tile's width or, on
 * an edge tile, half of it (then acc is the first N/2 accumulators of the tile's: register 4j + i is column chunk
 * j). One loop per width, so that no branch sits between two wgmma on the same accumulators. XL, YL: the layouts of X
 * and Y (sk_operands). */
template <int N, int STAGES, int STAGE_BYTES, int X_BYTES, typename XL, typename YL>
__device__ __forceinline__ void sk_mainloop(float (&acc)[N / 2], uint32_t base, uint32_t full, uint32_t empty, int kb0,
                                            int kb1, int lane, uint32_t x_off)
{
    int held = -1; /* the stage whose wgmma group may still be reading it */
    uint32_t kcount = 0;
    for (int kb = kb0; kb < kb1; kb++, kcount++) {
        const int stage = (int)(kcount % STAGES);
        mbar_wait(full + 8 * stage, (kcount / STAGES) & 1);
        const uint32_t st = base + stage * STAGE_BYTES;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < PL_SK_BK / 16; j++)
            sk_wgmma<N, XL::trans, YL::trans>(acc, XL::desc(st + x_off, j), YL::desc(st + X_BYTES, j));
        wgmma_commit();
        wgmma_wait<1>(); /* the previous k-block's group is done: its stage can be refilled */
        if (held >= 0)
            release_stage<1>(empty, held, lane);
        held = stage;
    }
    wgmma_wait<0>();
    accumulators_fence(acc);
}

/* The producer (lane 0 of the producer warp): k-blocks kb0 .. kb1 - 1 of the tile's X and Y rows into the ring. */
template <int STAGES, int STAGE_BYTES, int X_BYTES, int X_ROWS, int TILE, typename XL, typename YL>
__device__ __forceinline__ void sk_produce(const CUtensorMap *tma_x, const CUtensorMap *tma_y, uint32_t base,
                                           uint32_t full, uint32_t empty, int kb0, int kb1, int x0, int y0)
{
    tma_prefetch_descriptor(tma_x);
    tma_prefetch_descriptor(tma_y);
    int stage = 0;
    uint32_t phase = 0;
    for (int kb = kb0; kb < kb1; kb++) {
        mbar_wait(empty + 8 * stage, phase ^ 1);
        const uint32_t st = base + stage * STAGE_BYTES, bar = full + 8 * stage;
        mbar_arrive_expect_tx(bar, STAGE_BYTES);
        XL::template load<X_ROWS>(st, tma_x, bar, kb * PL_SK_BK, x0);
        YL::template load<TILE>(st + X_BYTES, tma_y, bar, kb * PL_SK_BK, y0);
        if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
        }
    }
}

/* grid (S, X tiles, Y tiles), clusters of (S, 1, 1): a cluster is one output tile, its CTA rank blockIdx.x. */
template <int TILE, int SWAP, int WG, int DEEP, int BKN>
__global__ void __maxnreg__(WG == 1 ? SK_MAX_REGS : SK_WG2_REGS)
    gemm_sk_kernel(const __grid_constant__ CUtensorMap tma_x, const __grid_constant__ CUtensorMap tma_y, pl_gemm_out o,
                   int y_rows, int k_blocks)
{
    typedef sk_config<TILE, SWAP, WG, DEEP> cfg;
    typedef typename sk_operands<SWAP, BKN>::x XL;
    typedef typename sk_operands<SWAP, BKN>::y YL;
    constexpr int STAGES = cfg::stages;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u; /* 128-byte swizzle wants 1024-byte alignment */
    const uint32_t full = base + STAGES * cfg::stage_bytes, empty = full + 8 * STAGES, recv = empty + 8 * STAGES;
    const int split = (int)gridDim.x, rank = (int)blockIdx.x;
    const int x0 = (int)blockIdx.y * cfg::x_rows, y0 = (int)blockIdx.z * TILE;
    const int kb0 = (int)((long long)k_blocks * rank / split), kb1 = (int)((long long)k_blocks * (rank + 1) / split);
    /* n = TILE/2 is a wgmma width (not 100), and of whole boxes where Y is MN-major */
    constexpr bool HAS_HALF = TILE >= 32 && (TILE & (TILE - 1)) == 0 && (!YL::trans || TILE / 2 >= SM90_MN_BOX_ROWS);
    const bool half = HAS_HALF && y_rows - y0 <= TILE / 2;
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x & 31;
    const int cw = warp / 4; /* the consumer warpgroup: rows 64·cw.. of X */
    const uint32_t x_off = WG == 1 ? 0u : (uint32_t)cw * PL_SK_ROWS * 128;

    sk_init_barriers(full, empty, recv, STAGES, 4 * WG, SK_PUSH(WG)); /* empty: lane 0 of each consumer warp */

    float acc[TILE / 2];
#pragma unroll
    for (int i = 0; i < TILE / 2; i++)
        acc[i] = 0.0f;
    if (warp == cfg::producer) {
        if (lane == 0)
            sk_produce<STAGES, cfg::stage_bytes, cfg::x_bytes, cfg::x_rows, TILE, XL, YL>(&tma_x, &tma_y, base, full,
                                                                                          empty, kb0, kb1, x0, y0);
    } else if (half) {
        if constexpr (HAS_HALF)
            sk_mainloop<TILE / 2, STAGES, cfg::stage_bytes, cfg::x_bytes, XL, YL>(
                *reinterpret_cast<float(*)[TILE / 4]>(&acc[0]), base, full, empty, kb0, kb1, lane, x_off);
    } else {
        sk_mainloop<TILE, STAGES, cfg::stage_bytes, cfg::x_bytes, XL, YL>(acc, base, full, empty, kb0, kb1, lane,
                                                                          x_off);
    }
    /* every load has landed (the consumers waited for each) and every wgmma is done: the stages are free */
    __syncthreads();

    sk_reduce<cfg, TILE, SWAP, WG>(acc, o, base, recv, split, rank, x0, y0, warp, lane);
}

/* The largest split <= s whose clusters all run at once, where s would put every tile's CTAs in one wave of one CTA
 * an SM: the GPCs, not only the SM count, decide how many clusters of s such CTAs fit (measured on the H100: 16
 * tiles of 128×128 split 8, 128 CTAs, ran 44% slower than split 6; the H200 48%). Cached per device and split. */
template <int TILE, int SWAP, int WG, int DEEP, int BKN> static int sk_fitting_split(int s, long long tiles, int sms)
{
    typedef sk_config<TILE, SWAP, WG, DEEP> cfg;
    static int fits[16][PL_SK_PORTABLE_SPLIT + 1]; /* clusters of each size that fit at once; 0: not asked yet */
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 16) {
        (void)cudaGetLastError();
        return s; /* unknown: the rule's split */
    }
    while (s > 1 && s <= PL_SK_PORTABLE_SPLIT && tiles * s <= sms) {
        if (fits[device][s] == 0)
            fits[device][s] = max_active_clusters((const void *)gemm_sk_kernel<TILE, SWAP, WG, DEEP, BKN>, cfg::threads,
                                                  cfg::smem_bytes, (unsigned)s, (unsigned)s, sms);
        if (tiles <= fits[device][s])
            break;
        s--;
    }
    return s;
}

/* split > 0: that split; else the rule of the entry: w1 (one CTA an SM, up to 16), WG == 2 (by waves, up to 8),
 * or the default (three CTAs an SM, up to 8). */
template <int TILE, int SWAP, int WG = 1, int DEEP = 0, int BKN = 0>
static cudaError_t launch_sk(const pl_gemm_problem *p, int split, int w1, cudaStream_t stream)
{
    typedef sk_config<TILE, SWAP, WG, DEEP> cfg;
    static_assert(cfg::stage_bytes % 1024 == 0, "stages must stay 1024-byte aligned");
    static_assert(cfg::pitch % 4 == 0 && cfg::out_cols % 4 == 0, "the fix-up reads 16-byte pieces of the partials");
    static_assert(cfg::partial_bytes <= cfg::stages * cfg::stage_bytes, "the partial tile must fit in the stages");
    static_assert(cfg::smem_bytes <= SK_SMEM_LIMIT, "shared memory over the limit");
    static_assert(cfg::ctas_per_sm * (cfg::smem_bytes + SK_RESERVED) <= SK_SMEM_PER_SM,
                  "the resident CTAs must fit an SM's shared memory");
    const int x_rows = SWAP ? p->n : p->m, y_rows = SWAP ? p->m : p->n;
    const long long tiles_x = (x_rows + cfg::x_rows - 1) / cfg::x_rows, tiles_y = (y_rows + TILE - 1) / TILE;
    const int k_blocks = (p->k + PL_SK_BK - 1) / PL_SK_BK;
    /* one CTA an SM (two warpgroups, or a deep ring): a cluster past the portable 8 may not fit a GPC */
    const int max_split = cfg::one_cta ? PL_SK_PORTABLE_SPLIT : PL_SK_MAX_SPLIT;
    if (tiles_x > 65535 || tiles_y > 65535 || split < 0 || split > max_split)
        return cudaErrorInvalidValue;
    typedef sk_operands<SWAP, BKN> ops;
    CUtensorMap tx, ty;
    cudaError_t e = pl_tensor_map_operand_bf16(&tx, SWAP ? p->b : p->a, (uint64_t)x_rows, (uint64_t)p->k, cfg::x_rows,
                                               ops::x::trans);
    if (e == cudaSuccess)
        e = pl_tensor_map_operand_bf16(&ty, SWAP ? p->a : p->b, (uint64_t)y_rows, (uint64_t)p->k, TILE, ops::y::trans);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(gemm_sk_kernel<TILE, SWAP, WG, DEEP, BKN>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 cfg::smem_bytes);
    if (e == cudaSuccess) /* all of the SM's 228 KB as shared memory, so that three CTAs fit */
        e = cudaFuncSetAttribute(gemm_sk_kernel<TILE, SWAP, WG, DEEP, BKN>,
                                 cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    pl_gemm_gpu g;
    if (e == cudaSuccess)
        e = pl_gemm_gpu_query(&g);
    if (e != cudaSuccess)
        return e;
    int s = split > 0 ? split
            : WG == 2 ? pl_gemm_sk_split_waves(tiles_x * tiles_y, k_blocks, g.sms)
            : DEEP    ? pl_gemm_sk_split_deep(tiles_x * tiles_y, k_blocks, g.sms)
            : w1      ? pl_gemm_sk_split_w1(tiles_x * tiles_y, k_blocks, g.sms)
                      : pl_gemm_sk_split(tiles_x * tiles_y, k_blocks, g.sms);
    if (s > k_blocks)
        s = k_blocks; /* every CTA of a cluster gets at least one k-block */
    if (cfg::one_cta && split == 0)
        s = sk_fitting_split<TILE, SWAP, WG, DEEP, BKN>(s, tiles_x * tiles_y, g.sms);
    if (s > PL_SK_PORTABLE_SPLIT) /* a cluster of 9-16 CTAs */
        e = cudaFuncSetAttribute(gemm_sk_kernel<TILE, SWAP, WG, DEEP, BKN>,
                                 cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess)
        return e;

    /* pushed: the fix-up's S slots of ceil(rows / S) rows fit in the stages (S·ceil(rows/S) < rows + S; checked, not
     * assumed) */
    if (SK_PUSH(WG) && s > 1 &&
        (long long)s * ((cfg::out_rows + s - 1) / s) * cfg::pitch * 4 > (long long)cfg::stages * cfg::stage_bytes)
        return cudaErrorInvalidValue;
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t lc = sk_launch_config(s, tiles_x, tiles_y, cfg::threads, cfg::smem_bytes, stream, &attr);
    e = cudaLaunchKernelEx(&lc, gemm_sk_kernel<TILE, SWAP, WG, DEEP, BKN>, tx, ty, pl_gemm_out_of(p), y_rows, k_blocks);
    return e != cudaSuccess ? e : cudaGetLastError();
}

/* B K×N: the configurations with a _kn row */
static cudaError_t launch_sk_kn(const pl_gemm_problem *p, int tile, int swap, int split, cudaStream_t stream)
{
    switch (swap ? tile : -tile) {
    case 16: return launch_sk<16, 1, 1, 0, 1>(p, split, 0, stream);
    case 32: return launch_sk<32, 1, 1, 0, 1>(p, split, 0, stream);
    case 64: return launch_sk<64, 1, 1, 0, 1>(p, split, 0, stream);
    case 128: return launch_sk<128, 1, 1, 0, 1>(p, split, 0, stream);
    case -64: return launch_sk<64, 0, 1, 0, 1>(p, split, 0, stream);
    case -128: return launch_sk<128, 0, 1, 0, 1>(p, split, 0, stream);
    case 16 | PL_SK_DEEP: return launch_sk<16, 1, 1, 1, 1>(p, split, 0, stream);
    case 32 | PL_SK_DEEP: return launch_sk<32, 1, 1, 1, 1>(p, split, 0, stream);
    case -(64 | PL_SK_DEEP): return launch_sk<64, 0, 1, 1, 1>(p, split, 0, stream);
    case -(128 | PL_SK_DEEP): return launch_sk<128, 0, 1, 1, 1>(p, split, 0, stream);
    case -(128 | PL_SK_WG2): return launch_sk<128, 0, 2, 0, 1>(p, split, 0, stream);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t pl_gemm_wgmma_sk(const pl_gemm_problem *p, int tile, int swap, int split, cudaStream_t stream)
{
    if (p->b_layout == PL_GEMM_B_KN)
        return launch_sk_kn(p, tile, swap, split, stream);
    switch (swap ? tile : -tile) {
    case 16: return launch_sk<16, 1>(p, split, 0, stream);
    case 32: return launch_sk<32, 1>(p, split, 0, stream);
    case 64: return launch_sk<64, 1>(p, split, 0, stream);
    case 128: return launch_sk<128, 1>(p, split, 0, stream);
    case 200 | PL_SK_WG2: return launch_sk<200, 1, 2>(p, split, 0, stream);
    case -64: return launch_sk<64, 0>(p, split, 0, stream);
    case -128: return launch_sk<128, 0>(p, split, 0, stream);
    case 16 | PL_SK_DEEP: return launch_sk<16, 1, 1, 1>(p, split, 0, stream);
    case 32 | PL_SK_DEEP: return launch_sk<32, 1, 1, 1>(p, split, 0, stream);
    case 64 | PL_SK_DEEP: return launch_sk<64, 1, 1, 1>(p, split, 0, stream);
    case -(64 | PL_SK_DEEP): return launch_sk<64, 0, 1, 1>(p, split, 0, stream);
    case -(128 | PL_SK_DEEP): return launch_sk<128, 0, 1, 1>(p, split, 0, stream);
    case -(128 | PL_SK_WG2): return launch_sk<128, 0, 2>(p, split, 0, stream);
    case -(256 | PL_SK_WG2): return launch_sk<256, 0, 2>(p, split, 0, stream);
    default: return cudaErrorInvalidValue;
    }
}

/* The kernel table's launchers: the split chosen at launch. */
extern "C" cudaError_t pl_gemm_wgmma_sk_swap16(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<16, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_swap32(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<32, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_swap64(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<64, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_swap128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<128, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_64x64(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<64, 0>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_64x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<128, 0>(p, 0, 0, stream);
}

/* The split sized for one CTA per SM (pl_gemm_sk_split_w1): for 32 tiles 4 instead of 8, for 4-9 tiles up to 16. */
extern "C" cudaError_t pl_gemm_wgmma_sk_swap32_w1(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<32, 1>(p, 0, 1, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_swap64_w1(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<64, 1>(p, 0, 1, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_64x64_w1(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<64, 0>(p, 0, 1, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_64x128_w1(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<128, 0>(p, 0, 1, stream);
}

/* One CTA an SM with a ring as deep as the shared memory holds (14 stages of 64×64, 9 of 64×128), split for one wave
 * of whole clusters (pl_gemm_sk_split_deep, then sk_fitting_split). */
extern "C" cudaError_t pl_gemm_wgmma_sk_64x64_deep(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<64, 0, 1, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_64x128_deep(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<128, 0, 1, 1>(p, 0, 0, stream);
}

/* Swapped with a deep ring, one CTA an SM (16 stages of 64 rows of B and 16 or 32 of A): at M = 16 and N/64 tiles
 * under the SM count, one unsplit CTA a tile streaming 160 KB ahead (cuBLAS's nvjet 64x16_64x16 on 16×4608×3584). */
extern "C" cudaError_t pl_gemm_wgmma_sk_swap16_deep(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<16, 1, 1, 1>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_swap32_deep(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<32, 1, 1, 1>(p, 0, 0, stream);
}

/* Swapped with two consumer warpgroups: 128 rows of B (N) × 200 of A (M) a CTA, wgmma m64n200, 5 stages, split by
 * waves: at M ≈ 200 every tensor-core column is a token (a 128-row tile of M pads 200 to 256), and N/128 tiles. */
extern "C" cudaError_t pl_gemm_wgmma_sk_swap200(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<200, 1, 2>(p, 0, 0, stream);
}

/* Two consumer warpgroups (128 rows of A), one CTA an SM with as many stages as fit, split by waves (up to 8). */
extern "C" cudaError_t pl_gemm_wgmma_sk_128x128(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<128, 0, 2>(p, 0, 0, stream);
}

extern "C" cudaError_t pl_gemm_wgmma_sk_128x256(const pl_gemm_problem *p, cudaStream_t stream)
{
    return launch_sk<256, 0, 2>(p, 0, 0, stream);
}

/* ---- B K×N (BKN = 1): the same kernels reading B N-major, the split chosen by the same rules ---- */
#define SK_KN_LAUNCHER(name, tile, swap, wg, deep)                                                                     \
    extern "C" cudaError_t name(const pl_gemm_problem *p, cudaStream_t stream)                                         \
    {                                                                                                                  \
        return launch_sk<tile, swap, wg, deep, 1>(p, 0, 0, stream);                                                    \
    }

SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap16_kn, 16, 1, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap32_kn, 32, 1, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap64_kn, 64, 1, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap128_kn, 128, 1, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_64x64_kn, 64, 0, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_64x128_kn, 128, 0, 1, 0)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_64x64_deep_kn, 64, 0, 1, 1)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_64x128_deep_kn, 128, 0, 1, 1)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap16_deep_kn, 16, 1, 1, 1)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_swap32_deep_kn, 32, 1, 1, 1)
SK_KN_LAUNCHER(pl_gemm_wgmma_sk_128x128_kn, 128, 0, 2, 0)
